package io.setats.flink.sink;

import io.setats.flink.client.GatewayClient;
import io.setats.flink.testutils.ChangelogReader;
import io.setats.flink.testutils.ChangelogReader.ChangelogRow;
import io.setats.flink.testutils.SetatsGatewayProcess;
import io.setats.flink.utils.BucketHasher;
import io.setats.proto.v1.TableInfo;
import io.setats.proto.v1.TableSpec;

import org.apache.flink.api.common.JobStatus;
import org.apache.flink.api.common.RuntimeExecutionMode;
import org.apache.flink.api.common.eventtime.WatermarkStrategy;
import org.apache.flink.api.connector.source.Boundedness;
import org.apache.flink.core.execution.JobClient;
import org.apache.flink.connector.testframe.source.FromElementsSource;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.runtime.testutils.MiniClusterResourceConfiguration;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.table.api.EnvironmentSettings;
import org.apache.flink.table.api.TableEnvironment;
import org.apache.flink.table.data.GenericRowData;
import org.apache.flink.table.data.RowData;
import org.apache.flink.table.data.StringData;
import org.apache.flink.table.runtime.typeutils.InternalTypeInfo;
import org.apache.flink.table.types.logical.LogicalType;
import org.apache.flink.table.types.logical.RowType;
import org.apache.flink.table.types.logical.VarCharType;
import org.apache.flink.test.junit5.MiniClusterExtension;
import org.apache.flink.types.RowKind;
import org.apache.flink.util.ExceptionUtils;

import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;
import org.junit.jupiter.api.extension.RegisterExtension;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * The {@code setats} sink on a Flink MiniCluster against a real gateway, driven by the SQL of
 * seeds/setats-flink-write.txt with only its placeholders filled in (and catalog-type 'hadoop',
 * the switch the seed names; the datagen source bounded with 'number-of-rows').
 */
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class SetatsSinkITCase {

    @RegisterExtension static final SetatsGatewayProcess GATEWAY = new SetatsGatewayProcess();

    @RegisterExtension
    static final MiniClusterExtension MINI_CLUSTER =
            new MiniClusterExtension(
                    new MiniClusterResourceConfiguration.Builder()
                            .setNumberTaskManagers(1)
                            .setNumberSlotsPerTaskManager(2)
                            .build());

    private static final String SEED = "setats-flink-write.txt";
    private static final int DATAGEN_ROWS = 8;

    /** The seed's SQL statements (each ends with ';'), placeholders filled. */
    static List<String> seedStatements() throws IOException {
        String text =
                new String(
                        Files.readAllBytes(seedPath()), StandardCharsets.UTF_8);
        String wh = GATEWAY.warehouse().toString();
        List<String> out = new ArrayList<>();
        Matcher m = Pattern.compile("(?s)(CREATE TABLE|INSERT INTO)\\s.*?;").matcher(text);
        while (m.find()) {
            String sql = m.group();
            sql =
                    sql.replace("<Manager Url>", GATEWAY.managerUrl())
                            .replace("cosn://<bucket>/warehouse", wh)
                            .replace("<metastore-host-1>", "127.0.0.1")
                            .replace("<metastore-host-2>", "127.0.0.1")
                            // The seed: "如果使用 Hadoop catalog ，需要修改 'catalog-type'='hadoop'".
                            .replace("'catalog-type' = 'hive'", "'catalog-type' = 'hadoop'");
            if (sql.contains("'connector' = 'datagen'")) {
                sql =
                        sql.replace(
                                "'rows-per-second' = '1',",
                                "'rows-per-second' = '1',\n  'number-of-rows' = '"
                                        + DATAGEN_ROWS
                                        + "',");
            }
            out.add(sql.substring(0, sql.length() - 1));
        }
        return out;
    }

    static java.nio.file.Path seedPath() {
        String dir = System.getProperty("setats.seeds", "../../shared/seeds");
        java.nio.file.Path p = Paths.get(dir, SEED);
        if (!Files.exists(p)) {
            p = Paths.get("src/test/resources/seeds", SEED);
        }
        return p;
    }

    private static String statement(List<String> stmts, String prefix) {
        return stmts.stream()
                .filter(s -> s.contains(prefix))
                .findFirst()
                .orElseThrow(() -> new AssertionError("no statement with " + prefix));
    }

    private static TableEnvironment tableEnv() {
        TableEnvironment env = TableEnvironment.create(EnvironmentSettings.inStreamingMode());
        env.getConfig().set("parallelism.default", "2");
        return env;
    }

    @Test
    @Order(1)
    void seedWriteJobCreatesTableAndWritesRows() throws Exception {
        List<String> stmts = seedStatements();
        assertThat(stmts).hasSize(5);
        TableEnvironment env = tableEnv();
        env.executeSql(statement(stmts, "`test_source_datagen`"));
        env.executeSql(statement(stmts, "CREATE TABLE `demo_setats_table1`"));
        env.executeSql(statement(stmts, "INSERT INTO `demo_setats_table1`")).await();

        try (GatewayClient c = GATEWAY.client()) {
            TableInfo info = c.getTable("testdb", "demo_setats_table1").get();
            TableSpec spec = info.getSpec();
            assertThat(spec.getColumnsList().stream().map(col -> col.getName() + " " + col.getType()))
                    .containsExactly("id STRING", "dt STRING", "name STRING", "address STRING");
            assertThat(spec.getPrimaryKeyList()).containsExactly("id", "dt");
            assertThat(spec.getPartitionKeysList()).containsExactly("dt");
            assertThat(spec.getBucketCount()).isEqualTo(10);
            assertThat(spec.getBucketKeyList()).containsExactly("id");
            assertThat(spec.getMergeEngine()).isEqualToIgnoringCase("PARTIAL_UPDATE");

            List<ChangelogRow> changelog = ChangelogReader.readAll(c, "testdb", "demo_setats_table1");
            assertThat(changelog).hasSize(DATAGEN_ROWS);
            assertThat(changelog).allSatisfy(r -> assertThat(r.kind).isEqualTo(RowKind.INSERT));
            assertThat(changelog.stream().map(r -> (String) r.get("id")).sorted())
                    .containsExactlyInAnyOrder(
                            java.util.stream.IntStream.range(0, DATAGEN_ROWS)
                                    .mapToObj(String::valueOf)
                                    .toArray(String[]::new));
            BucketHasher hasher =
                    new BucketHasher(
                            RowType.of(
                                    new LogicalType[] {new VarCharType(VarCharType.MAX_LENGTH)},
                                    new String[] {"id"}),
                            Collections.singletonList("id"));
            for (ChangelogRow r : changelog) {
                assertThat((String) r.get("dt")).matches("\\d{8}");
                assertThat(r.partition).isEqualTo("dt=" + r.get("dt"));
                assertThat((String) r.get("name")).hasSize(5);
                assertThat((String) r.get("address")).hasSize(10);
                assertThat(r.bucket)
                        .isEqualTo(
                                hasher.bucket(
                                        GenericRowData.of(StringData.fromString((String) r.get("id"))),
                                        10));
            }
        }
    }

    @Test
    @Order(2)
    void partialSinkKeepsUndeclaredColumns() throws Exception {
        List<ChangelogRow> before;
        try (GatewayClient c = GATEWAY.client()) {
            before = ChangelogReader.readAll(c, "testdb", "demo_setats_table1");
        }
        assertThat(before).isNotEmpty();
        ChangelogRow r0 = before.stream().filter(r -> r.get("id").equals("0")).findFirst().get();
        ChangelogRow r1 = before.stream().filter(r -> r.get("id").equals("1")).findFirst().get();
        String dt = (String) r0.get("dt");

        List<String> stmts = seedStatements();
        TableEnvironment env = tableEnv();
        env.executeSql(statement(stmts, "CREATE TABLE `setats_partial_sink`"));
        env.executeSql(
                        "INSERT INTO `setats_partial_sink` VALUES "
                                + "('0', '" + dt + "', 'zero'), "
                                + "('1', '" + dt + "', CAST(NULL AS STRING)), "
                                + "('new', '" + dt + "', 'fresh')")
                .await();

        try (GatewayClient c = GATEWAY.client()) {
            Map<String, List<Object>> state =
                    ChangelogReader.foldValues(
                            ChangelogReader.readAll(c, "testdb", "demo_setats_table1"),
                            Arrays.asList("id", "dt"));
            // Declared column updated, undeclared 'address' kept.
            assertThat(state.get("[0, " + dt + "]"))
                    .containsExactly("0", dt, "zero", r0.get("address"));
            // PARTIAL_UPDATE: a null keeps the stored value; nothing changed, nothing emitted.
            assertThat(state.get("[1, " + dt + "]"))
                    .containsExactly("1", dt, r1.get("name"), r1.get("address"));
            assertThat(state.get("[new, " + dt + "]")).containsExactly("new", dt, "fresh", null);
            assertThat(state).hasSize(DATAGEN_ROWS + 1);
        }
    }

    @Test
    @Order(3)
    void gatewayErrorFailsJobWithGatewayMessage() throws Exception {
        // The table stores `name` as STRING; this sink declares it INT: the gateway rejects the
        // batch (InvalidArgument naming table, column, expected and actual type).
        TableEnvironment env = tableEnv();
        env.executeSql(
                "CREATE TABLE bad_types (id STRING, dt STRING, name INT,"
                        + " PRIMARY KEY (id, dt) NOT ENFORCED) PARTITIONED BY (dt) WITH ("
                        + "'connector' = 'setats', 'manager-url' = '" + GATEWAY.managerUrl() + "',"
                        + "'warehouse' = '" + GATEWAY.warehouse() + "', 'catalog-type' = 'hadoop',"
                        + "'catalog-name' = 'setats', 'catalog-database' = 'testdb',"
                        + "'catalog-table' = 'demo_setats_table1')");
        assertThatThrownBy(
                        () -> env.executeSql("INSERT INTO bad_types VALUES ('0', '20261129', 7)").await())
                .satisfies(
                        e ->
                                assertThat(
                                                ExceptionUtils.findThrowableWithMessage(
                                                        e,
                                                        "INVALID_ARGUMENT: batch 0: table testdb.demo_setats_table1: "
                                                                + "column \"name\" (STRING): expected Arrow type utf8, got int32"))
                                        .as("gateway error in %s", ExceptionUtils.stringifyException(e))
                                        .isPresent());
    }

    @Test
    @Order(4)
    void dataStreamSinkWithNullKeyFailsWithGatewayMessage() throws Exception {
        RowType type =
                RowType.of(
                        new LogicalType[] {
                            new VarCharType(VarCharType.MAX_LENGTH), new VarCharType(VarCharType.MAX_LENGTH)
                        },
                        new String[] {"k", "v"});
        SetatsSink<RowData> sink =
                SetatsSink.builder()
                        .setManagerUrl(GATEWAY.managerUrl())
                        .setWarehouse(GATEWAY.warehouseUri())
                        .setCatalogType("hadoop")
                        .setCatalogName("setats")
                        .setDatabase("ds")
                        .setTable("null_key")
                        .setRowType(type)
                        .setPrimaryKey("k")
                        .setBucket(2)
                        .build();
        StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment();
        env.setRuntimeMode(RuntimeExecutionMode.STREAMING);
        env.setParallelism(1);
        TypeInformation<RowData> ti = InternalTypeInfo.of(type);
        List<RowData> rows =
                Arrays.asList(
                        GenericRowData.of(StringData.fromString("a"), StringData.fromString("1")),
                        GenericRowData.of(null, StringData.fromString("2")));
        env.fromCollection(rows, ti).sinkTo(sink);
        assertThatThrownBy(() -> env.execute("null key"))
                .satisfies(
                        e ->
                                // Linger-style sending (issue 12): "a" may go out alone as batch 0, then the
                                // null key is row 0 of batch 1; or both are in batch 0 as rows 0 and 1.
                                assertThat(
                                                ExceptionUtils.findThrowable(
                                                        e,
                                                        t ->
                                                                t.getMessage() != null
                                                                        && t.getMessage()
                                                                                .matches(
                                                                                        "(?s).*INVALID_ARGUMENT: (batch 0: table ds.null_key: column \"k\" row 1|batch 1: table ds.null_key: column \"k\" row 0): "
                                                                                                + "null value in primary-key column.*")))
                                        .as("gateway error in %s", ExceptionUtils.stringifyException(e))
                                        .isPresent());
    }

    @Test
    @Order(5)
    void dataStreamSinkWritesUpsertsAndDeletes() throws Exception {
        RowType type =
                RowType.of(
                        new LogicalType[] {
                            new VarCharType(false, VarCharType.MAX_LENGTH),
                            new VarCharType(VarCharType.MAX_LENGTH)
                        },
                        new String[] {"k", "v"});
        SetatsSink<RowData> sink =
                SetatsSink.builder()
                        .setManagerUrl(GATEWAY.managerUrl())
                        .setWarehouse(GATEWAY.warehouse().toString())
                        .setCatalogType("hadoop")
                        .setCatalogName("setats")
                        .setDatabase("ds")
                        .setTable("upserts")
                        .setRowType(type)
                        .setPrimaryKey("k")
                        .setBucket(3)
                        .setBufferRows(7)
                        .build();
        List<RowData> rows = new ArrayList<>();
        for (int i = 0; i < 50; i++) {
            rows.add(GenericRowData.of(StringData.fromString("k" + i), StringData.fromString("v" + i)));
        }
        for (int i = 0; i < 10; i++) {
            GenericRowData u =
                    GenericRowData.of(StringData.fromString("k" + i), StringData.fromString("w" + i));
            u.setRowKind(RowKind.UPDATE_AFTER);
            rows.add(u);
        }
        for (int i = 40; i < 50; i++) {
            GenericRowData d = GenericRowData.of(StringData.fromString("k" + i), null);
            d.setRowKind(RowKind.DELETE);
            rows.add(d);
        }
        StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment();
        env.setParallelism(2);
        env.fromCollection(rows, InternalTypeInfo.of(type)).setParallelism(1).sinkTo(sink);
        env.execute("upserts");

        try (GatewayClient c = GATEWAY.client()) {
            List<ChangelogRow> changelog = ChangelogReader.readAll(c, "ds", "upserts");
            Map<String, List<Object>> state =
                    ChangelogReader.foldValues(changelog, Collections.singletonList("k"));
            assertThat(state).hasSize(40);
            for (int i = 0; i < 40; i++) {
                assertThat(state.get("[k" + i + "]")).containsExactly("k" + i, (i < 10 ? "w" : "v") + i);
            }
            // 50 +I, 10 x (-U, +U), 10 -D.
            assertThat(changelog).hasSize(50 + 20 + 10);
            assertThat(changelog.stream().collect(Collectors.groupingBy(r -> r.kind, Collectors.counting())))
                    .containsEntry(RowKind.INSERT, 50L)
                    .containsEntry(RowKind.UPDATE_BEFORE, 10L)
                    .containsEntry(RowKind.UPDATE_AFTER, 10L)
                    .containsEntry(RowKind.DELETE, 10L);
        }
    }

    @Test
    @Order(6)
    void flushIntervalSendsWithoutCheckpointOrEndOfInput() throws Exception {
        RowType type =
                RowType.of(
                        new LogicalType[] {
                            new VarCharType(false, VarCharType.MAX_LENGTH),
                            new VarCharType(VarCharType.MAX_LENGTH)
                        },
                        new String[] {"k", "v"});
        SetatsSink<String> sink =
                SetatsSink.builder()
                        .setManagerUrl(GATEWAY.managerUrl())
                        .setWarehouse(GATEWAY.warehouse().toString())
                        .setCatalogType("hadoop")
                        .setCatalogName("setats")
                        .setDatabase("ds")
                        .setTable("timer")
                        .setRowType(type)
                        .setPrimaryKey("k")
                        .setFlushInterval(Duration.ofMillis(100))
                        .setSerializer(
                                (String k) ->
                                        GenericRowData.of(
                                                StringData.fromString(k), StringData.fromString("v")))
                        .build();
        List<String> rows = new ArrayList<>();
        for (int i = 0; i < 25; i++) {
            rows.add("k" + i);
        }
        // Emits the rows, then stays idle and never ends; no checkpointing: only the
        // flush-interval timer can send the buffered rows.
        StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment();
        env.setParallelism(1);
        env.fromSource(
                        new FromElementsSource<>(Boundedness.CONTINUOUS_UNBOUNDED, rows, rows.size()),
                        WatermarkStrategy.noWatermarks(),
                        "rows")
                .returns(String.class)
                .sinkTo(sink);
        JobClient job = env.executeAsync("flush interval");
        try (GatewayClient c = GATEWAY.client()) {
            long deadline = System.currentTimeMillis() + 120_000;
            int seen = 0;
            while (seen < rows.size() && System.currentTimeMillis() < deadline) {
                Thread.sleep(100);
                seen =
                        c.getTable("ds", "timer").isPresent()
                                ? ChangelogReader.readAll(c, "ds", "timer").size()
                                : 0;
            }
            assertThat(seen).isEqualTo(rows.size());
            assertThat(job.getJobStatus().get()).isEqualTo(JobStatus.RUNNING);
        } finally {
            job.cancel().get();
        }
    }

    @Test
    @Order(7)
    void otherWarehouseFailsNamingBoth() {
        TableEnvironment env = tableEnv();
        env.executeSql(
                "CREATE TABLE wrong_wh (id STRING, v STRING, PRIMARY KEY (id) NOT ENFORCED) WITH ("
                        + "'connector' = 'setats', 'manager-url' = '" + GATEWAY.managerUrl() + "',"
                        + "'warehouse' = '/elsewhere/warehouse', 'catalog-type' = 'hadoop',"
                        + "'catalog-name' = 'setats')");
        assertThatThrownBy(() -> env.executeSql("INSERT INTO wrong_wh VALUES ('a', 'b')").await())
                .satisfies(
                        e ->
                                assertThat(
                                                ExceptionUtils.findThrowableWithMessage(
                                                        e,
                                                        "option 'warehouse' = '/elsewhere/warehouse' (file:///elsewhere/warehouse) "
                                                                + "differs from the gateway's warehouse '"
                                                                + GATEWAY.warehouseUri().replaceAll("/$", "")
                                                                + "'"))
                                        .as("warehouse error in %s", ExceptionUtils.stringifyException(e))
                                        .isPresent());
    }
}
