package gear.esroot;

import java.util.Map;
import java.util.regex.Pattern;

import org.apache.lucene.analysis.TokenStream;
import org.apache.lucene.analysis.miscellaneous.LengthFilter;
import org.apache.lucene.analysis.pattern.PatternReplaceFilter;
import org.apache.lucene.analysis.pattern.PatternTokenizer;
import org.elasticsearch.common.regex.Regex;
import org.elasticsearch.common.settings.Settings;
import org.elasticsearch.index.analysis.TokenFilterFactory;
import org.elasticsearch.index.analysis.TokenizerFactory;
import org.elasticsearch.indices.analysis.AnalysisModule.AnalysisProvider;
import org.elasticsearch.plugins.AnalysisPlugin;

/**
 * The {@code pattern} tokenizer and the {@code pattern_replace} and {@code length} token
 * filters, as the {@code analysis-common} module of the full distribution defines them
 * (same parameters, same defaults, the same Lucene classes): the integ-test distribution
 * on Maven Central ships without that module, and gear-agent's {@code word} analyzer
 * (gear_agent/store/es_mappings.py) is built from these three and the server's own
 * {@code lowercase}.
 */
final class PatternAnalysis {

    private PatternAnalysis() {}

    static Map<String, AnalysisProvider<TokenizerFactory>> tokenizers() {
        return Map.of("pattern", AnalysisPlugin.requiresAnalysisSettings((indexSettings, env, name, settings) -> {
            Pattern pattern = Regex.compile(settings.get("pattern", "\\W+"), settings.get("flags"));
            int group = settings.getAsInt("group", -1);
            return TokenizerFactory.newFactory(name, () -> new PatternTokenizer(pattern, group));
        }));
    }

    static Map<String, AnalysisProvider<TokenFilterFactory>> tokenFilters() {
        return Map.of(
            "pattern_replace", AnalysisPlugin.requiresAnalysisSettings((indexSettings, env, name, settings) -> {
                Pattern pattern = Regex.compile(required(settings, "pattern", name), settings.get("flags"));
                String replacement = settings.get("replacement", "");
                boolean all = settings.getAsBoolean("all", true);
                return filter(name, stream -> new PatternReplaceFilter(stream, pattern, replacement, all));
            }),
            "length", (indexSettings, env, name, settings) -> {
                int min = settings.getAsInt("min", 0);
                int max = settings.getAsInt("max", Integer.MAX_VALUE);
                return filter(name, stream -> new LengthFilter(stream, min, max));
            });
    }

    private static String required(Settings settings, String key, String name) {
        String value = settings.get(key);
        if (value == null) {
            throw new IllegalArgumentException("Missing required parameter [" + key + "] for filter [" + name + "]");
        }
        return value;
    }

    private static TokenFilterFactory filter(String name, java.util.function.UnaryOperator<TokenStream> make) {
        return new TokenFilterFactory() {
            @Override
            public String name() {
                return name;
            }

            @Override
            public TokenStream create(TokenStream stream) {
                return make.apply(stream);
            }
        };
    }
}
