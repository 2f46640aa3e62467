package carrag.esharness;

import org.apache.logging.log4j.LogManager;
import org.apache.logging.log4j.core.LoggerContext;
import org.apache.logging.log4j.core.config.Configurator;
import org.elasticsearch.Build;
import org.elasticsearch.common.logging.LogConfigurator;
import org.elasticsearch.common.settings.Settings;
import org.elasticsearch.core.IOUtils;
import org.elasticsearch.env.Environment;
import org.elasticsearch.http.HttpServerTransport;
import org.elasticsearch.node.CarragHarnessNode;
import org.elasticsearch.node.InternalSettingsPreparer;
import org.elasticsearch.node.Node;
import org.elasticsearch.plugins.Plugin;
import org.elasticsearch.transport.netty4.Netty4Plugin;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

/**
 * Starts one real Elasticsearch node in this JVM, bound to 127.0.0.1 only, and keeps it running until
 * the process is terminated (SIGTERM/SIGINT run a shutdown hook that closes the node cleanly).
 *
 * <pre>
 * java -cp 'target/classes:target/lib/*' carrag.esharness.EsNode --home DIR --http-port 9200
 *      [--transport-port 0] [--cluster-name carrag-test] [--ready-file FILE] [--log-level warn] [--parent-pid PID]
 * </pre>
 *
 * {@code --http-port 0} lets the node bind any free loopback port (the bound port is reported, see below).
 * With {@code --parent-pid}, the node shuts itself down (cleanly) when that process exits, so a test run that dies
 * without stopping it does not leave an orphaned JVM behind.
 *
 * Once the node is started and its HTTP endpoint is bound, one line of JSON
 * ({@code {"http_port":..,"version":"..","pid":..}}) is written atomically to {@code --ready-file} (if given)
 * and printed to stdout prefixed with {@code CARRAG_ES_READY }.
 */
public final class EsNode {

    private static final String USAGE = "usage: EsNode --home DIR --http-port PORT [--transport-port PORT] "
        + "[--node-name NAME] [--seed-hosts HOST:PORT,...] [--initial-master-nodes NAME,...] "
        + "[--cluster-name NAME] [--ready-file FILE] [--log-level LEVEL] [--parent-pid PID]";

    /** Plugins loaded from the classpath; together they stand in for the distribution's modules directory. */
    static final List<Class<? extends Plugin>> PLUGINS = List.of(
        Netty4Plugin.class,
        EnglishAnalysisPlugin.class,
        HarnessRestPlugin.class
    );

    private EsNode() {}

    public static void main(String[] argv) throws Exception {
        Map<String, String> args = parseArgs(argv);
        Path home = Path.of(require(args, "home")).toAbsolutePath();
        String httpPort = require(args, "http-port");
        String transportPort = args.getOrDefault("transport-port", "0"); // 0 = any free port
        String clusterName = args.getOrDefault("cluster-name", "carrag-test");
        String logLevel = args.getOrDefault("log-level", "warn");
        String nodeName = args.getOrDefault("node-name", clusterName + "-node");
        // a cluster: every node gets the others' transport addresses and the names of the first masters
        String seedHosts = args.get("seed-hosts");
        String initialMasters = args.get("initial-master-nodes");
        Path readyFile = args.containsKey("ready-file") ? Path.of(args.get("ready-file")).toAbsolutePath() : null;

        Path config = home.resolve("config");
        Files.createDirectories(config);
        Files.createDirectories(home.resolve("data"));
        Files.createDirectories(home.resolve("logs"));
        Files.createDirectories(home.resolve("plugins"));
        writeLoggingConfig(config, logLevel);

        Settings.Builder builder = Settings.builder()
            .put("path.home", home.toString())
            .put("path.data", home.resolve("data").toString())
            .put("path.logs", home.resolve("logs").toString())
            .put("cluster.name", clusterName)
            .put("node.name", nodeName)
            // never bind or publish anything but loopback
            .put("network.host", "127.0.0.1")
            .put("http.host", "127.0.0.1")
            .put("transport.host", "127.0.0.1")
            .put("http.port", httpPort)
            .put("transport.port", transportPort)
            // the one deviation from defaults: a nearly full disk must not turn test indices read-only
            .put("cluster.routing.allocation.disk.threshold_enabled", false);
        if (seedHosts == null) {
            builder.put("discovery.type", "single-node");
        } else {
            builder.putList("discovery.seed_hosts", seedHosts.split(","));
            builder.putList("cluster.initial_master_nodes", initialMasters.split(","));
        }
        Settings settings = builder.build();

        LogConfigurator.registerErrorListener();
        Environment environment = InternalSettingsPreparer.prepareEnvironment(settings, Map.of(), config, () -> nodeName);
        LogConfigurator.setClusterName(clusterName);
        LogConfigurator.setNodeName(nodeName);
        LogConfigurator.configure(environment, true);

        CountDownLatch stopped = new CountDownLatch(1);
        Node node = new CarragHarnessNode(environment, PLUGINS);
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            try {
                node.prepareForClose();
                IOUtils.close(node);
                if (node.awaitClose(20, TimeUnit.SECONDS) == false) {
                    System.err.println("carrag-es-harness: node did not stop within 20s");
                }
            } catch (Exception e) {
                System.err.println("carrag-es-harness: error while stopping node: " + e);
            } finally {
                if (readyFile != null) {
                    try {
                        Files.deleteIfExists(readyFile);
                    } catch (IOException ignored) {}
                }
                // flush and stop logging last (log4j's own shutdown hook is disabled by node.py's JVM flags)
                Configurator.shutdown((LoggerContext) LogManager.getContext(false));
                stopped.countDown();
            }
        }, "carrag-es-harness-shutdown"));

        try {
            node.start();
        } catch (Throwable t) {
            t.printStackTrace();
            Throwable root = t;
            while (root.getCause() != null && root.getCause() != root) {
                root = root.getCause();
            }
            // last line of the log: what node.py shows first
            System.err.println("carrag-es-harness: startup failed: " + t + (root != t ? " (root cause: " + root + ")" : ""));
            System.exit(1);
        }

        if (args.containsKey("parent-pid")) {
            long parentPid = Long.parseLong(args.get("parent-pid"));
            ProcessHandle.of(parentPid).ifPresentOrElse(parent -> parent.onExit().thenRun(() -> {
                System.err.println("carrag-es-harness: parent process " + parentPid + " exited; stopping");
                System.exit(0);
            }), () -> {
                System.err.println("carrag-es-harness: parent process " + parentPid + " is not running; stopping");
                System.exit(0);
            });
        }

        int boundPort = node.injector()
            .getInstance(HttpServerTransport.class)
            .boundAddress()
            .publishAddress()
            .getPort();
        String ready = String.format(
            "{\"http_port\":%d,\"version\":\"%s\",\"pid\":%d,\"home\":\"%s\"}",
            boundPort,
            Build.current().version(),
            ProcessHandle.current().pid(),
            home.toString().replace("\\", "\\\\").replace("\"", "\\\"")
        );
        if (readyFile != null) {
            Path tmp = readyFile.resolveSibling(readyFile.getFileName() + ".tmp");
            Files.writeString(tmp, ready + "\n", StandardCharsets.UTF_8);
            Files.move(tmp, readyFile, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
        }
        System.out.println("CARRAG_ES_READY " + ready);
        System.out.flush();

        stopped.await(); // keep the JVM alive; the shutdown hook releases this
    }

    /** Console-only logging (the parent process redirects stdout/stderr to a file). */
    private static void writeLoggingConfig(Path config, String level) throws IOException {
        String props = String.join(
            "\n",
            "status = error",
            "appender.console.type = Console",
            "appender.console.name = console",
            "appender.console.layout.type = PatternLayout",
            "appender.console.layout.pattern = [%d{ISO8601}][%-5p][%-25c{1.}] [%node_name]%marker %m%n",
            "rootLogger.level = " + level,
            "rootLogger.appenderRef.console.ref = console",
            // keep the one-line "started" message even when quiet
            "logger.node.name = org.elasticsearch.node.Node",
            "logger.node.level = info",
            // System.out is routed to the "stdout" logger by Elasticsearch; keep the CARRAG_ES_READY line
            "logger.stdout.name = stdout",
            "logger.stdout.level = info",
            // deprecation warnings still reach clients as Warning headers; don't duplicate them in the log
            "logger.deprecation.name = org.elasticsearch.deprecation",
            "logger.deprecation.level = error",
            ""
        );
        Files.writeString(config.resolve("log4j2.properties"), props, StandardCharsets.UTF_8);
    }

    private static Map<String, String> parseArgs(String[] argv) {
        java.util.HashMap<String, String> out = new java.util.HashMap<>();
        for (int i = 0; i < argv.length; i++) {
            String a = argv[i];
            if (a.equals("-h") || a.equals("--help")) {
                System.out.println(USAGE);
                System.exit(0);
            }
            if (a.startsWith("--") == false || i + 1 >= argv.length) {
                fail("bad argument: " + a);
            }
            out.put(a.substring(2), argv[++i]);
        }
        return out;
    }

    private static String require(Map<String, String> args, String key) {
        String v = args.get(key);
        if (v == null || v.isBlank()) {
            fail("missing --" + key);
        }
        return v;
    }

    private static void fail(String msg) {
        System.err.println(msg);
        System.err.println(USAGE);
        System.exit(2);
    }
}
