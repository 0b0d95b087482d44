package gear.escluster;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.TimeUnit;

import org.elasticsearch.Build;
import org.elasticsearch.cluster.service.ClusterService;
import org.elasticsearch.common.logging.LogConfigurator;
import org.elasticsearch.common.settings.Settings;
import org.elasticsearch.env.Environment;
import org.elasticsearch.http.HttpServerTransport;
import org.elasticsearch.node.Node;
import org.elasticsearch.plugins.PluginBundle;
import org.elasticsearch.plugins.PluginsLoader;
import org.elasticsearch.transport.TransportService;

/**
 * Several Elasticsearch nodes in this one JVM, on free loopback ports, driven over stdin.
 *
 * <pre>
 * java -Xmx768m -cp "DIST/lib/*:gear-es-cluster.jar" gear.escluster.ClusterMain \
 *      --home DIR --dist DIST --root-plugin gear-es-cluster-root-plugin.jar [--nodes 3] [--cluster-name NAME]
 *      [--settings "key=value key=value"]
 * </pre>
 *
 * <p>Prints one JSON object per line on stdout: {@code {"event":"started","node":1,"http":..,
 * "transport":..}} per node, then {@code {"event":"ready","version":..}}. Reads commands on
 * stdin, one per line, each answered by one line: {@code stop N} (close node N gracefully),
 * {@code start N [key=value ...]} (start it again on its data, with these node settings on
 * top, e.g. {@code indexing_pressure.memory.limit=1kb}), {@code quit}. End of input means quit, so the
 * nodes never outlive the process that started them. Logs go to {@code DIR/logs/cluster.log}.
 *
 * <p>Node 1 bootstraps the cluster ({@code cluster.initial_master_nodes}); every node is
 * master-eligible and holds data; {@code node.processors: 1} keeps the thread pools small.
 * {@code --settings} puts node settings on top of these for every node (e.g. {@code node.processors=2}
 * for a one-node benchmark cluster).
 */
public final class ClusterMain {

    private final Path home;
    private final String clusterName;
    private final PluginsLoader plugins;
    private final List<Node> nodes = new ArrayList<>();
    private final List<String> transport = new ArrayList<>();
    private final PrintStream out;
    private final Map<String, String> common;

    private ClusterMain(Path home, String clusterName, PluginsLoader plugins, int count, PrintStream out,
                        Map<String, String> common) {
        this.home = home;
        this.clusterName = clusterName;
        this.plugins = plugins;
        this.out = out;
        this.common = common;
        for (int i = 0; i < count; i++) {
            nodes.add(null);
            transport.add(null);
        }
    }

    public static void main(String[] args) throws Exception {
        Map<String, String> opts = parseArgs(args);
        Path home = Path.of(opts.getOrDefault("--home", "es-home")).toAbsolutePath();
        Path dist = Path.of(require(opts, "--dist")).toAbsolutePath();
        int count = Integer.parseInt(opts.getOrDefault("--nodes", "3"));
        String name = opts.getOrDefault("--cluster-name", "gear-test");
        Map<String, String> common = keyValues(opts.getOrDefault("--settings", "").trim().split("\\s+"), 0);
        if (count < 1) {
            throw new IllegalArgumentException("--nodes must be at least 1, got " + count);
        }
        // stdout carries the protocol only; anything else printed goes to stderr.
        PrintStream out = new PrintStream(System.out, true, StandardCharsets.UTF_8);
        System.setOut(System.err);

        Path config = home.resolve("config");
        Files.createDirectories(config);
        Files.writeString(config.resolve("log4j2.properties"), String.join("\n",
            "status = error",
            "appender.file.type = File",
            "appender.file.name = file",
            "appender.file.fileName = ${sys:es.logs.base_path}/cluster.log",
            "appender.file.layout.type = PatternLayout",
            "appender.file.layout.pattern = [%d{ISO8601}][%-5p][%c{1.}] [%t] %m%n",
            "rootLogger.level = info",
            "rootLogger.appenderRef.file.ref = file",
            ""));
        Path modules = prepareModules(home, dist, Path.of(require(opts, "--root-plugin")).toAbsolutePath());
        Settings first = nodeSettings(home, name, 1, List.of(), true, common);
        LogConfigurator.registerErrorListener();
        LogConfigurator.configure(new Environment(first, config), true);
        ClusterMain cluster = null;
        try {
            // The server runs from the module path, as in the distribution (--module-path lib).
            PluginsLoader loader = PluginsLoader.createPluginsLoader(
                PluginsLoader.loadModulesBundles(modules), Set.<PluginBundle>of(), Map.of(), true);
            cluster = new ClusterMain(home, name, loader, count, out, common);
            Runtime.getRuntime().addShutdownHook(new Thread(cluster::closeAll, "gear-es-cluster-shutdown"));
            for (int i = 1; i <= count; i++) {
                cluster.start(i, i == 1, Map.of());
            }
            out.println("{\"event\":\"ready\",\"version\":\"" + Build.current().qualifiedVersion() + "\",\"nodes\":" + count + "}");
            cluster.serve(new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8)));
        } catch (Exception e) {
            out.println("{\"event\":\"error\",\"message\":" + quote(e.toString()) + "}");
            e.printStackTrace();
            System.exit(1);
        } finally {
            if (cluster != null) {
                cluster.closeAll();
            }
        }
        System.exit(0);
    }

    /** The modules every node loads: the distribution's HTTP/transport module and gear.esroot.RootPlugin. */
    private static Path prepareModules(Path home, Path dist, Path rootPlugin) throws IOException {
        Path modules = home.resolve("modules");
        Path netty = modules.resolve("transport-netty4");
        if (!Files.exists(netty)) {
            Files.createDirectories(modules);
            Files.createSymbolicLink(netty, dist.resolve("modules").resolve("transport-netty4"));
        }
        Path root = modules.resolve("gear-root");
        Files.createDirectories(root);
        Files.copy(rootPlugin, root.resolve("gear-root.jar"), java.nio.file.StandardCopyOption.REPLACE_EXISTING);
        String version = Build.current().version();
        Files.writeString(root.resolve("plugin-descriptor.properties"), String.join("\n",
            "description=GET / (the rest-root module) and the pattern analysis of analysis-common, absent from the integ-test distribution",
            "version=" + version,
            "name=gear-root",
            "classname=gear.esroot.RootPlugin",
            "java.version=17",
            "elasticsearch.version=" + version,
            "extended.plugins=",
            "has.native.controller=false",
            ""));
        return modules;
    }

    private static Settings nodeSettings(Path home, String cluster, int number, List<String> seeds, boolean bootstrap,
                                         Map<String, String> extra) {
        Path nodeHome = home.resolve("node-" + number);
        Settings.Builder settings = Settings.builder()
            .put("cluster.name", cluster)
            .put("node.name", "node-" + number)
            .put("path.home", nodeHome.toString())
            .put("path.data", nodeHome.resolve("data").toString())
            .put("path.logs", home.resolve("logs").toString())
            .put("network.host", "127.0.0.1")
            .put("http.port", "0")
            .put("transport.port", "0")
            .put("node.processors", 1)
            // a shared, busy disk must not turn the test indices read-only
            .put("cluster.routing.allocation.disk.threshold_enabled", false)
            .putList("discovery.seed_hosts", seeds);
        if (bootstrap) {
            settings.putList("cluster.initial_master_nodes", "node-1");
        }
        extra.forEach(settings::put);
        return settings.build();
    }

    private synchronized void start(int number, boolean bootstrap, Map<String, String> extra) throws Exception {
        if (nodes.get(number - 1) != null) {
            throw new IllegalStateException("node " + number + " is already running");
        }
        List<String> seeds = new ArrayList<>();
        for (String address : transport) {
            if (address != null) {
                seeds.add(address);
            }
        }
        Map<String, String> merged = new java.util.LinkedHashMap<>(common);
        merged.putAll(extra);
        Settings settings = nodeSettings(home, clusterName, number, seeds, bootstrap, merged);
        Node node = new InJvmNode(new Environment(settings, home.resolve("config")), plugins);
        node.start();
        nodes.set(number - 1, node);
        String transportAddress = node.injector().getInstance(TransportService.class).boundAddress().publishAddress().toString();
        String http = node.injector().getInstance(HttpServerTransport.class).boundAddress().publishAddress().toString();
        transport.set(number - 1, transportAddress);
        out.println("{\"event\":\"started\",\"node\":" + number + ",\"http\":" + quote(http)
            + ",\"transport\":" + quote(transportAddress) + "}");
    }

    private synchronized void stop(int number) throws Exception {
        Node node = nodes.get(number - 1);
        if (node == null) {
            throw new IllegalStateException("node " + number + " is not running");
        }
        nodes.set(number - 1, null);
        transport.set(number - 1, null);
        node.close();
        node.awaitClose(30, TimeUnit.SECONDS);
        out.println("{\"event\":\"stopped\",\"node\":" + number + "}");
    }

    private void serve(BufferedReader in) throws IOException {
        String line;
        while ((line = in.readLine()) != null) {
            String[] words = line.trim().split("\\s+");
            try {
                switch (words[0]) {
                    case "quit":
                        return;
                    case "stop":
                        stop(nodeNumber(words));
                        break;
                    case "start":
                        start(nodeNumber(words), false, keyValues(words, 2));
                        break;
                    case "":
                        break;
                    default:
                        throw new IllegalArgumentException("unknown command " + quote(line) + "; use stop N, start N or quit");
                }
            } catch (Exception e) {
                out.println("{\"event\":\"error\",\"message\":" + quote(e.toString()) + "}");
            }
        }
    }

    /** {@code key=value} words from index {@code from} on (empty words skipped). */
    private static Map<String, String> keyValues(String[] words, int from) {
        Map<String, String> values = new java.util.LinkedHashMap<>();
        for (int i = from; i < words.length; i++) {
            if (words[i].isEmpty()) {
                continue;
            }
            int eq = words[i].indexOf('=');
            if (eq <= 0) {
                throw new IllegalArgumentException("expected key=value, got " + quote(words[i]));
            }
            values.put(words[i].substring(0, eq), words[i].substring(eq + 1));
        }
        return values;
    }

    private int nodeNumber(String[] words) {
        if (words.length < 2) {
            throw new IllegalArgumentException("expected a node number after " + words[0]);
        }
        int number = Integer.parseInt(words[1]);
        if (number < 1 || number > nodes.size()) {
            throw new IllegalArgumentException("no node " + number + "; nodes are 1.." + nodes.size());
        }
        return number;
    }

    private synchronized void closeAll() {
        Set<Node> open = new HashSet<>();
        for (int i = 0; i < nodes.size(); i++) {
            if (nodes.get(i) != null) {
                open.add(nodes.get(i));
                nodes.set(i, null);
            }
        }
        for (Node node : open) {
            try {
                node.close();
                node.awaitClose(30, TimeUnit.SECONDS);
            } catch (Exception e) {
                System.err.println("closing a node failed: " + e);
            }
        }
    }

    /** A node that shares its JVM: the process-wide node-id logging hook is set by none of them. */
    private static final class InJvmNode extends Node {
        InJvmNode(Environment environment, PluginsLoader plugins) {
            super(environment, plugins);
        }

        @Override
        protected void configureNodeAndClusterIdStateListener(ClusterService clusterService) {
            // Node.start() would set a JVM-wide SetOnce per node; the second node fails on it.
        }
    }

    private static Map<String, String> parseArgs(String[] args) {
        Map<String, String> opts = new java.util.HashMap<>();
        for (int i = 0; i < args.length; i += 2) {
            if (!args[i].startsWith("--") || i + 1 >= args.length) {
                throw new IllegalArgumentException("arguments are --name value pairs; got " + String.join(" ", args));
            }
            opts.put(args[i], args[i + 1]);
        }
        return opts;
    }

    private static String require(Map<String, String> opts, String name) {
        String value = opts.get(name);
        if (value == null) {
            throw new IllegalArgumentException(name + " is required");
        }
        return value;
    }

    private static String quote(String text) {
        StringBuilder sb = new StringBuilder("\"");
        for (char c : text.toCharArray()) {
            switch (c) {
                case '"' -> sb.append("\\\"");
                case '\\' -> sb.append("\\\\");
                case '\n' -> sb.append("\\n");
                case '\r' -> sb.append("\\r");
                case '\t' -> sb.append("\\t");
                default -> {
                    if (c < 0x20) {
                        sb.append(String.format("\\u%04x", (int) c));
                    } else {
                        sb.append(c);
                    }
                }
            }
        }
        return sb.append('"').toString();
    }
}
