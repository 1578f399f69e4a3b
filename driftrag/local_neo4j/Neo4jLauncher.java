// Runs an embedded Neo4j Community DBMS with Bolt on a loopback address.
// Compiled once per runtime with the JDK's javac (driftrag.local_neo4j.launcher), or launched as a
// single-file source program (`java -cp 'lib/*' Neo4jLauncher.java ...`): no Java build step. Python (driftrag.local_neo4j) owns the process: it passes the
// settings below, waits for the READY line in the log, and stops it with SIGTERM.
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.CountDownLatch;

import org.neo4j.configuration.GraphDatabaseSettings;
import org.neo4j.configuration.connectors.BoltConnector;
import org.neo4j.configuration.helpers.SocketAddress;
import org.neo4j.dbms.api.DatabaseManagementService;
import org.neo4j.dbms.api.DatabaseManagementServiceBuilder;
import org.neo4j.graphdb.GraphDatabaseService;
import org.neo4j.io.ByteUnit;

public class Neo4jLauncher {
    public static void main(String[] args) throws Exception {
        Map<String, String> opts = parse(args);
        Path home = Path.of(require(opts, "home")).toAbsolutePath();
        String host = opts.getOrDefault("host", "127.0.0.1");
        int port = Integer.parseInt(require(opts, "port"));
        long pageCacheMiB = Long.parseLong(opts.getOrDefault("pagecache-mib", "512"));
        long txMaxMiB = Long.parseLong(opts.getOrDefault("tx-memory-mib", "2048"));
        Files.createDirectories(home);

        DatabaseManagementService dbms = new DatabaseManagementServiceBuilder(home)
                .setConfig(BoltConnector.enabled, true)
                .setConfig(BoltConnector.listen_address, new SocketAddress(host, port))
                .setConfig(BoltConnector.advertised_address, new SocketAddress(host, port))
                .setConfig(GraphDatabaseSettings.pagecache_memory, ByteUnit.mebiBytes(pageCacheMiB))
                .setConfig(GraphDatabaseSettings.memory_transaction_global_max_size, ByteUnit.mebiBytes(txMaxMiB))
                // Loopback-only development server; the driver may send any credentials.
                .setConfig(GraphDatabaseSettings.auth_enabled, false)
                .build();

        CountDownLatch stopped = new CountDownLatch(1);
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            System.out.println("STOPPING");
            System.out.flush();
            dbms.shutdown();
            stopped.countDown();
        }));

        GraphDatabaseService db = dbms.database(GraphDatabaseSettings.DEFAULT_DATABASE_NAME);
        db.executeTransactionally("RETURN 1");
        System.out.println("READY bolt://" + host + ":" + port);
        System.out.flush();
        stopped.await();
    }

    private static Map<String, String> parse(String[] args) {
        Map<String, String> opts = new HashMap<>();
        for (int i = 0; i + 1 < args.length; i += 2) {
            if (!args[i].startsWith("--")) {
                throw new IllegalArgumentException("expected --option value, got " + args[i]);
            }
            opts.put(args[i].substring(2), args[i + 1]);
        }
        return opts;
    }

    private static String require(Map<String, String> opts, String key) {
        String value = opts.get(key);
        if (value == null) {
            throw new IllegalArgumentException("missing --" + key);
        }
        return value;
    }
}
