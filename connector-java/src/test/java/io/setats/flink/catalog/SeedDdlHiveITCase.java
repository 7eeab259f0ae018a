package io.setats.flink.catalog;

import io.setats.flink.client.GatewayClient;
import io.setats.flink.testutils.ChangelogReader;
import io.setats.flink.testutils.ChangelogReader.ChangelogRow;
import io.setats.flink.testutils.SetatsGatewayProcess;
import io.setats.proto.v1.BucketOffsets;
import io.setats.proto.v1.CatalogContext;
import io.setats.proto.v1.TableInfo;
import io.setats.proto.v1.TableSpec;

import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.RestartStrategyOptions;
import org.apache.flink.core.execution.JobClient;
import org.apache.flink.runtime.minicluster.MiniCluster;
import org.apache.flink.runtime.testutils.MiniClusterResourceConfiguration;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.util.TestStreamEnvironment;
import org.apache.flink.table.api.TableResult;
import org.apache.flink.table.api.bridge.java.StreamTableEnvironment;
import org.apache.flink.test.junit5.InjectMiniCluster;
import org.apache.flink.test.junit5.MiniClusterExtension;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.io.PrintStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The seeds' write job (seeds/setats-flink-write.txt) and CDC job (seeds/setats-cdc-read.txt) with
 * {@code 'catalog-type' = 'hive'} and every option as the seeds write them (SPEC section 12), in a
 * MiniCluster against a real gateway and a real Hive Metastore (3.1.3 and 4.0.1, started by
 * e2e/hive/run.sh, which sets SETATS_TEST_HMS3_URI / SETATS_TEST_HMS4_URI; without them the cases
 * skip, and run.sh fails on a skipped case). Only the placeholders are replaced:
 *
 * <ul>
 *   <li>{@code <Manager Url>}: the gateway's {@code grpc://127.0.0.1:port};
 *   <li>{@code cosn://<bucket>/warehouse}: the gateway's local warehouse directory;
 *   <li>{@code thrift://<metastore-host-1>:7004}: a loopback port bound by this test and not
 *       listening (connection refused: the first metastore is down), {@code
 *       thrift://<metastore-host-2>:7004}: the real metastore, so every call fails over in order.
 * </ul>
 *
 * <p>The write job's datagen source runs unbounded as written and is cancelled once rows are
 * stored. The CDC job's {@code logger} sink (an Oceanus connector, not in Apache Flink) is Flink's
 * {@code print} connector with the seed's {@code print-identifier}: the job prints the changelog
 * ({@code DebugData> +I[...]}) and the test compares the printed lines with the changelog the
 * gateway stored.
 */
@Timeout(value = 300, unit = TimeUnit.SECONDS)
class SeedDdlHiveITCase {

    @RegisterExtension static final SetatsGatewayProcess GATEWAY = new SetatsGatewayProcess();

    @RegisterExtension
    static final MiniClusterExtension MINI_CLUSTER =
            new MiniClusterExtension(
                    new MiniClusterResourceConfiguration.Builder()
                            .setNumberTaskManagers(1)
                            .setNumberSlotsPerTaskManager(4)
                            .build());

    private static final int MIN_ROWS = 3;

    static StreamTableEnvironment tableEnv(MiniCluster cluster) {
        Configuration conf = new Configuration();
        conf.set(RestartStrategyOptions.RESTART_STRATEGY, "none");
        StreamExecutionEnvironment env =
                new TestStreamEnvironment(cluster, conf, 1, Collections.emptyList(), Collections.emptyList());
        return StreamTableEnvironment.create(env);
    }

    static String metastoreUri(String name) {
        String env = "SETATS_TEST_" + name.toUpperCase() + "_URI";
        String uri = System.getenv(env);
        Assumptions.assumeTrue(uri != null && !uri.isEmpty(),
                env + " not set (e2e/hive/run.sh starts real Hive Metastores and sets it)");
        return uri.trim();
    }

    static Path seed(String file) {
        Path p = Paths.get(System.getProperty("setats.seeds", "../../shared/seeds"), file);
        return Files.exists(p) ? p : Paths.get("src/test/resources/seeds", file);
    }

    /** The seed's statements (CREATE TABLE / INSERT INTO, up to ';'), placeholders replaced. */
    static List<String> statements(String file, String deadUri, String hmsUri) throws IOException {
        String text = new String(Files.readAllBytes(seed(file)), StandardCharsets.UTF_8);
        List<String> out = new ArrayList<>();
        Matcher m = Pattern.compile("(?s)(CREATE TABLE|INSERT INTO)\\s.*?;").matcher(text);
        while (m.find()) {
            String sql = m.group();
            sql = sql.replace("<Manager Url>", GATEWAY.managerUrl())
                    .replace("cosn://<bucket>/warehouse", GATEWAY.warehouse().toString())
                    .replace("thrift://<metastore-host-1>:7004", deadUri)
                    .replace("thrift://<metastore-host-2>:7004", hmsUri);
            assertThat(sql).doesNotContain("<");
            out.add(sql.substring(0, sql.length() - 1));
        }
        return out;
    }

    static String statement(List<String> stmts, String start) {
        return stmts.stream().filter(s -> s.startsWith(start)).findFirst()
                .orElseThrow(() -> new AssertionError("the seed has no statement starting with " + start));
    }

    static CatalogContext hive(String uri) {
        return CatalogContext.newBuilder()
                .setWarehouse(GATEWAY.warehouse().toString())
                .setCatalogType("hive")
                .setCatalogName("setats")
                .setUri(uri)
                .build();
    }

    static long rows(GatewayClient c, String db, String table) {
        long n = 0;
        for (BucketOffsets b : c.listBuckets(db, table).getBucketsList()) {
            n += b.getEndOffset() - b.getStartOffset();
        }
        return n;
    }

    @ParameterizedTest
    @ValueSource(strings = {"hms3", "hms4"})
    void seedsWithCatalogTypeHive(String name, @InjectMiniCluster MiniCluster cluster) throws Exception {
        String hmsUri = metastoreUri(name);
        // Bound, not listening: a connect is refused, as to a metastore host that is down.
        try (Socket dead = new Socket()) {
            dead.bind(new InetSocketAddress("127.0.0.1", 0));
            String deadUri = "thrift://127.0.0.1:" + dead.getLocalPort();
            String uris = deadUri + "," + hmsUri;
            try (GatewayClient c = GatewayClient.connect(GATEWAY.managerUrl(), hive(uris))) {
                try {
                    run(cluster, c, deadUri, hmsUri);
                } finally {
                    c.dropDatabase("testdb", true, true);
                }
            }
        }
    }

    private void run(MiniCluster cluster, GatewayClient c, String deadUri, String hmsUri) throws Exception {
        // ---- the write job, as the seed writes it
        List<String> write = statements("setats-flink-write.txt", deadUri, hmsUri);
        assertThat(write).hasSize(5);
        String sinkDdl = statement(write, "CREATE TABLE `setats_sink`");
        assertThat(sinkDdl).contains("'catalog-type' = 'hive'", "'uri' = '" + deadUri + "," + hmsUri + "'");
        StreamTableEnvironment tEnv = tableEnv(cluster);
        tEnv.executeSql(statement(write, "CREATE TABLE `test_source_datagen`"));
        tEnv.executeSql(sinkDdl);
        tEnv.executeSql(statement(write, "CREATE TABLE `demo_setats_table1`"));
        tEnv.executeSql(statement(write, "CREATE TABLE `setats_partial_sink`"));
        TableResult writing = tEnv.executeSql(statement(write, "INSERT INTO `demo_setats_table1`"));
        JobClient writeJob = writing.getJobClient().get();
        try {
            // The sink creates the table in the metastore; rows arrive every flush interval (5 s).
            while (!c.getTable("testdb", "demo_setats_table1").isPresent() || rows(c, "testdb", "demo_setats_table1") < MIN_ROWS) {
                assertThat(writeJob.getJobStatus().get().isGloballyTerminalState()).as("write job ended").isFalse();
                Thread.sleep(200);
            }
        } finally {
            writeJob.cancel().get(60, TimeUnit.SECONDS);
        }

        TableSpec spec = c.getTable("testdb", "demo_setats_table1").get().getSpec();
        assertThat(spec.getColumnsList().stream().map(col -> col.getName() + " " + col.getType()))
                .containsExactly("id STRING", "dt STRING", "name STRING", "address STRING");
        assertThat(spec.getPrimaryKeyList()).containsExactly("id", "dt");
        assertThat(spec.getPartitionKeysList()).containsExactly("dt");
        assertThat(spec.getBucketCount()).isEqualTo(10);
        assertThat(spec.getMergeEngine()).isEqualToIgnoringCase("PARTIAL_UPDATE");
        assertThat(spec.getLocation()).isEqualTo("file://" + GATEWAY.warehouse() + "/testdb/demo_setats_table1");
        // The table lives in the metastore, not in the gateway's hadoop catalog.
        try (GatewayClient hadoop = GATEWAY.client()) {
            assertThat(hadoop.getTable("testdb", "demo_setats_table1")).isEmpty();
        }

        // The seed's partial-update sink (catalog-table demo_setats_table1): name only, address kept.
        List<ChangelogRow> written = ChangelogReader.readAll(c, "testdb", "demo_setats_table1");
        ChangelogRow first = written.get(0);
        tEnv.executeSql("INSERT INTO `setats_partial_sink` VALUES ('" + first.get("id") + "', '" + first.get("dt") + "', 'renamed')")
                .await(120, TimeUnit.SECONDS);
        // The seed's first table, with its own location.
        tEnv.executeSql("INSERT INTO `setats_sink` VALUES ('1', '20261201', 'n', 'a')").await(120, TimeUnit.SECONDS);
        TableInfo sinkTable = c.getTable("testdb", "setats_sink").get();
        assertThat(sinkTable.getSpec().getLocation()).isEqualTo("file://" + GATEWAY.warehouse() + "/testdb/setats_sink");
        assertThat(sinkTable.getSpec().getBucketKeyList()).containsExactly("id");
        assertThat(c.listTables("testdb")).contains("demo_setats_table1", "setats_sink");

        List<ChangelogRow> stored = ChangelogReader.readAll(c, "testdb", "demo_setats_table1");
        List<String> expected = stored.stream().map(ChangelogRow::toString).collect(Collectors.toList());
        assertThat(expected).contains("+U[" + first.get("id") + ", " + first.get("dt") + ", renamed, " + first.get("address") + "]");

        // ---- the CDC job, as the seed writes it (logger -> print)
        List<String> cdc = statements("setats-cdc-read.txt", deadUri, hmsUri);
        String source = statement(cdc, "CREATE TABLE `demo_setats_table1`");
        assertThat(source).contains("'connector' = 'setats-cdc'", "'catalog-type' = 'hive'", "'startup.mode' = 'earliest'");
        String logger = statement(cdc, "CREATE TABLE `logger_sink_table`");
        assertThat(logger).contains("'connector' = 'logger','all-changelog-mode' = 'true'");
        StreamTableEnvironment cdcEnv = tableEnv(cluster);
        cdcEnv.executeSql(statement(cdc, "CREATE TABLE `setats_cdc_source`"));
        cdcEnv.executeSql(source);
        cdcEnv.executeSql(logger.replace("'connector' = 'logger','all-changelog-mode' = 'true'", "'connector' = 'print'"));
        List<String> printed = runPrinting(cdcEnv, statement(cdc, "INSERT INTO `logger_sink_table`"), expected.size());
        assertThat(printed).containsExactlyInAnyOrderElementsOf(expected);
        // The seed's other source DDL reads the same table.
        assertThat(cdcEnv.from("`setats_cdc_source`").getResolvedSchema().getColumnNames())
                .containsExactly("id", "dt", "name", "address");
    }

    /** Runs a job into the print sink until it has printed n rows of DebugData, then cancels it. */
    private static List<String> runPrinting(StreamTableEnvironment env, String insert, int n) throws Exception {
        Pattern line = Pattern.compile("^DebugData(?::\\d+)?> (.*)$", Pattern.MULTILINE);
        ByteArrayOutputStream captured = new ByteArrayOutputStream();
        PrintStream original = System.out;
        PrintStream tee = new PrintStream(new OutputStream() {
            @Override
            public void write(int b) {
                captured.write(b);
                original.write(b);
            }

            @Override
            public void write(byte[] b, int off, int len) {
                captured.write(b, off, len);
                original.write(b, off, len);
            }
        }, true, StandardCharsets.UTF_8);
        System.setOut(tee);
        JobClient job = null;
        try {
            job = env.executeSql(insert).getJobClient().get();
            while (true) {
                // ByteArrayOutputStream's write and toString are synchronized.
                Matcher m = line.matcher(captured.toString(StandardCharsets.UTF_8));
                List<String> rows = new ArrayList<>();
                while (m.find()) {
                    rows.add(m.group(1));
                }
                if (rows.size() >= n) {
                    return rows;
                }
                assertThat(job.getJobStatus().get().isGloballyTerminalState()).as("CDC job ended").isFalse();
                Thread.sleep(200);
            }
        } finally {
            if (job != null) {
                job.cancel().get(60, TimeUnit.SECONDS);
            }
            System.setOut(original);
        }
    }
}
