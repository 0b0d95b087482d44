package gear.esroot;

import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.function.Predicate;
import java.util.function.Supplier;

import org.elasticsearch.Build;
import org.elasticsearch.client.internal.node.NodeClient;
import org.elasticsearch.cluster.ClusterState;
import org.elasticsearch.cluster.metadata.IndexNameExpressionResolver;
import org.elasticsearch.cluster.node.DiscoveryNodes;
import org.elasticsearch.cluster.service.ClusterService;
import org.elasticsearch.common.io.stream.NamedWriteableRegistry;
import org.elasticsearch.common.settings.ClusterSettings;
import org.elasticsearch.common.settings.IndexScopedSettings;
import org.elasticsearch.common.settings.Settings;
import org.elasticsearch.common.settings.SettingsFilter;
import org.elasticsearch.features.NodeFeature;
import org.elasticsearch.index.IndexVersion;
import org.elasticsearch.index.analysis.TokenFilterFactory;
import org.elasticsearch.index.analysis.TokenizerFactory;
import org.elasticsearch.indices.analysis.AnalysisModule.AnalysisProvider;
import org.elasticsearch.plugins.ActionPlugin;
import org.elasticsearch.plugins.AnalysisPlugin;
import org.elasticsearch.plugins.Plugin;
import org.elasticsearch.rest.BaseRestHandler;
import org.elasticsearch.rest.RestController;
import org.elasticsearch.rest.RestHandler;
import org.elasticsearch.rest.RestRequest;
import org.elasticsearch.rest.RestResponse;
import org.elasticsearch.rest.RestStatus;
import org.elasticsearch.xcontent.XContentBuilder;

/**
 * {@code GET /} and {@code HEAD /}: the node's name, cluster and build, as the {@code rest-root}
 * module of the full distribution answers them.
 *
 * <p>The distribution on Maven Central (integ-test-zip) ships without that module, and the
 * Python client's {@code info()} (which gear-agent calls to check the server's version) needs
 * it. Also the three analysis components of the {@code analysis-common} module that
 * gear-agent's {@code word} analyzer uses ({@link PatternAnalysis}), which that distribution
 * lacks too. Everything else the tests reach is the server's own code.
 */
public final class RootPlugin extends Plugin implements ActionPlugin, AnalysisPlugin {

    @Override
    public Map<String, AnalysisProvider<TokenizerFactory>> getTokenizers() {
        return PatternAnalysis.tokenizers();
    }

    @Override
    public Map<String, AnalysisProvider<TokenFilterFactory>> getTokenFilters() {
        return PatternAnalysis.tokenFilters();
    }

    private volatile ClusterService clusterService;

    @Override
    public Collection<?> createComponents(PluginServices services) {
        clusterService = services.clusterService();
        return List.of();
    }

    @Override
    public Collection<RestHandler> getRestHandlers(
        Settings settings,
        NamedWriteableRegistry namedWriteableRegistry,
        RestController restController,
        ClusterSettings clusterSettings,
        IndexScopedSettings indexScopedSettings,
        SettingsFilter settingsFilter,
        IndexNameExpressionResolver indexNameExpressionResolver,
        Supplier<DiscoveryNodes> nodesInCluster,
        Predicate<NodeFeature> clusterSupportsFeature
    ) {
        return List.of(new RootHandler(() -> clusterService));
    }

    static final class RootHandler extends BaseRestHandler {
        private final Supplier<ClusterService> clusterService;

        RootHandler(Supplier<ClusterService> clusterService) {
            this.clusterService = clusterService;
        }

        @Override
        public String getName() {
            return "gear_test_cluster_root";
        }

        @Override
        public List<Route> routes() {
            return List.of(new Route(RestRequest.Method.GET, "/"), new Route(RestRequest.Method.HEAD, "/"));
        }

        @Override
        protected RestChannelConsumer prepareRequest(RestRequest request, NodeClient client) {
            return channel -> {
                ClusterService service = clusterService.get();
                ClusterState state = service.state();
                Build build = Build.current();
                XContentBuilder body = channel.newBuilder();
                body.startObject();
                body.field("name", service.getNodeName());
                body.field("cluster_name", state.getClusterName().value());
                body.field("cluster_uuid", state.metadata().clusterUUID());
                body.startObject("version");
                body.field("number", build.qualifiedVersion());
                body.field("build_flavor", build.flavor());
                body.field("build_type", build.type().displayName());
                body.field("build_hash", build.hash());
                body.field("build_date", build.date());
                body.field("build_snapshot", build.isSnapshot());
                body.field("lucene_version", String.valueOf(IndexVersion.current().luceneVersion()));
                body.field("minimum_wire_compatibility_version", build.minWireCompatVersion());
                body.field("minimum_index_compatibility_version", build.minIndexCompatVersion());
                body.endObject();
                body.field("tagline", "You Know, for Search");
                body.endObject();
                channel.sendResponse(new RestResponse(RestStatus.OK, body));
            };
        }
    }
}
