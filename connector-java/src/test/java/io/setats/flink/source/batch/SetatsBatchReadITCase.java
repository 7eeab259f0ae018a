package io.setats.flink.source.batch;

import io.setats.flink.client.GatewayClient;
import io.setats.flink.testutils.ChangelogReader;
import io.setats.flink.testutils.SetatsGatewayProcess;

import org.apache.flink.api.common.RuntimeExecutionMode;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.ExecutionOptions;
import org.apache.flink.configuration.RestartStrategyOptions;
import org.apache.flink.runtime.minicluster.MiniCluster;
import org.apache.flink.runtime.testutils.MiniClusterResourceConfiguration;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.util.TestStreamEnvironment;
import org.apache.flink.table.api.DataTypes;
import org.apache.flink.table.api.EnvironmentSettings;
import org.apache.flink.table.api.TableResult;
import org.apache.flink.table.api.bridge.java.StreamTableEnvironment;
import org.apache.flink.table.data.RowData;
import org.apache.flink.table.types.logical.RowType;
import org.apache.flink.test.junit5.InjectMiniCluster;
import org.apache.flink.test.junit5.MiniClusterExtension;
import org.apache.flink.types.Row;
import org.apache.flink.types.RowKind;
import org.apache.flink.util.CloseableIterator;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

import io.setats.flink.SetatsConnectorOptions.StartupMode;
import io.setats.flink.source.SetatsSourceConfig;

import org.apache.flink.connector.testutils.source.reader.TestingSplitEnumeratorContext;

import java.time.Duration;
import java.util.Set;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;

import static io.setats.flink.source.SourceTestTables.awaitOpenChangelogStreams;
import static io.setats.flink.source.SourceTestTables.create;
import static io.setats.flink.source.SourceTestTables.insert;
import static io.setats.flink.source.SourceTestTables.row;
import static io.setats.flink.source.SourceTestTables.spec;
import static io.setats.flink.source.SourceTestTables.write;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * Batch SQL over the merged rows of a partitioned {@code 'connector' = 'setats'} table (SPEC
 * section 13) against a real gateway and a MiniCluster at parallelism 2: COUNT(*), SUM by
 * partition, WHERE on the partition (pruned: only its buckets are splits) and on the key,
 * projection (sent to the gateway), LIMIT, all compared with the fold of the table's changelog as
 * the gateway streams it. The same DDL in streaming mode is the changelog, as {@code setats-cdc}.
 */
@Timeout(value = 300, unit = TimeUnit.SECONDS)
class SetatsBatchReadITCase {

    @RegisterExtension static final SetatsGatewayProcess GATEWAY = new SetatsGatewayProcess();

    @RegisterExtension
    static final MiniClusterExtension MINI_CLUSTER =
            new MiniClusterExtension(
                    new MiniClusterResourceConfiguration.Builder()
                            .setNumberTaskManagers(1)
                            .setNumberSlotsPerTaskManager(4)
                            .build());

    private static final RowType ORDERS =
            (RowType)
                    DataTypes.ROW(
                                    DataTypes.FIELD("id", DataTypes.INT().notNull()),
                                    DataTypes.FIELD("dt", DataTypes.STRING().notNull()),
                                    DataTypes.FIELD("amount", DataTypes.BIGINT()),
                                    DataTypes.FIELD("name", DataTypes.STRING()))
                            .getLogicalType();

    private static final List<String> PK = Arrays.asList("id", "dt");
    private static final List<String> PARTITIONS = Arrays.asList("d1", "d2", "d3");

    /** The fold of the changelog: key -> [id, dt, amount, name]. */
    private static Map<String, List<Object>> folded;

    @BeforeAll
    static void writeTable() throws Exception {
        try (GatewayClient c = GATEWAY.client()) {
            create(c, spec("br", "orders", ORDERS, PK, Collections.singletonList("dt"), 4, Collections.emptyMap()));
            create(c, spec("br", "stream", ORDERS, PK, Collections.singletonList("dt"), 2, Collections.emptyMap()));
            List<RowData> first = new ArrayList<>();
            for (String dt : PARTITIONS) {
                for (int id = 0; id < 60; id++) {
                    first.add(insert(id, dt, (long) id * 10 + dt.charAt(1), "n" + id));
                }
            }
            write(c, "br", "orders", ORDERS, first);
            List<RowData> second = new ArrayList<>();
            for (int id = 0; id < 60; id += 7) {
                second.add(insert(id, "d2", 1000L + id, "updated")); // -U/+U
                second.add(row(RowKind.DELETE, id + 1, "d3", null, null)); // -D
            }
            second.add(insert(100, "d1", null, null)); // a row with nulls
            write(c, "br", "orders", ORDERS, second);
            folded = ChangelogReader.foldValues(ChangelogReader.readAll(c, "br", "orders"), PK);
        }
        assertThat(folded).hasSize(180 - 9 + 1);
    }

    @AfterEach
    void noStreamLeftOpen() throws Exception {
        awaitOpenChangelogStreams(GATEWAY, 0);
    }

    private static StreamTableEnvironment tableEnv(MiniCluster cluster, RuntimeExecutionMode mode) {
        Configuration conf = new Configuration();
        conf.set(RestartStrategyOptions.RESTART_STRATEGY, "none");
        conf.set(ExecutionOptions.RUNTIME_MODE, mode);
        StreamExecutionEnvironment env =
                new TestStreamEnvironment(cluster, conf, 2, Collections.emptyList(), Collections.emptyList());
        StreamTableEnvironment tEnv =
                StreamTableEnvironment.create(
                        env,
                        mode == RuntimeExecutionMode.BATCH
                                ? EnvironmentSettings.inBatchMode()
                                : EnvironmentSettings.inStreamingMode());
        return tEnv;
    }

    private static void ddl(StreamTableEnvironment tEnv, String table) {
        tEnv.executeSql(
                "CREATE TABLE orders (id INT NOT NULL, dt STRING NOT NULL, amount BIGINT, name STRING,"
                        + " PRIMARY KEY (id, dt) NOT ENFORCED) PARTITIONED BY (dt) WITH ("
                        + "'connector' = 'setats',"
                        + "'manager-url' = '" + GATEWAY.managerUrl() + "',"
                        + "'warehouse' = '" + GATEWAY.warehouse() + "',"
                        + "'catalog-type' = 'hadoop',"
                        + "'catalog-name' = 'setats',"
                        + "'catalog-database' = 'br',"
                        + "'catalog-table' = '" + table + "')");
    }

    private static StreamTableEnvironment batch(MiniCluster cluster) {
        StreamTableEnvironment tEnv = tableEnv(cluster, RuntimeExecutionMode.BATCH);
        ddl(tEnv, "orders");
        return tEnv;
    }

    private static List<String> query(StreamTableEnvironment tEnv, String sql) throws Exception {
        List<String> out = new ArrayList<>();
        try (CloseableIterator<Row> it = tEnv.executeSql(sql).collect()) {
            it.forEachRemaining(r -> out.add(r.toString()));
        }
        return out;
    }

    private static List<String> expected(java.util.function.Predicate<List<Object>> where, int... columns) {
        List<String> out = new ArrayList<>();
        for (List<Object> v : folded.values()) {
            if (where.test(v)) {
                List<Object> p = new ArrayList<>();
                for (int c : columns) {
                    p.add(v.get(c));
                }
                out.add(Row.ofKind(RowKind.INSERT, p.toArray()).toString());
            }
        }
        return out;
    }

    @Test
    void selectStarIsTheFoldOfTheChangelog(@InjectMiniCluster MiniCluster cluster) throws Exception {
        assertThat(query(batch(cluster), "SELECT * FROM orders"))
                .containsExactlyInAnyOrderElementsOf(expected(v -> true, 0, 1, 2, 3));
    }

    @Test
    void countAndSumByPartition(@InjectMiniCluster MiniCluster cluster) throws Exception {
        StreamTableEnvironment tEnv = batch(cluster);
        assertThat(query(tEnv, "SELECT COUNT(*) FROM orders")).containsExactly("+I[" + folded.size() + "]");
        Map<Object, Long> sums = new TreeMap<>();
        Map<Object, Long> counts = new TreeMap<>();
        for (List<Object> v : folded.values()) {
            sums.merge(v.get(1), v.get(2) == null ? 0L : (Long) v.get(2), Long::sum);
            counts.merge(v.get(1), 1L, Long::sum);
        }
        List<String> want = new ArrayList<>();
        sums.forEach((dt, s) -> want.add("+I[" + dt + ", " + s + ", " + counts.get(dt) + "]"));
        assertThat(query(tEnv, "SELECT dt, SUM(amount), COUNT(*) FROM orders GROUP BY dt"))
                .containsExactlyInAnyOrderElementsOf(want);
    }

    @Test
    void whereOnThePartitionIsPruned(@InjectMiniCluster MiniCluster cluster) throws Exception {
        StreamTableEnvironment tEnv = batch(cluster);
        String sql = "SELECT id, amount, name FROM orders WHERE dt = 'd2'";
        assertThat(tEnv.explainSql(sql)).contains("partitions=[{dt=d2}]").contains("project=[id, amount, name]");
        assertThat(query(tEnv, sql)).containsExactlyInAnyOrderElementsOf(expected(v -> v.get(1).equals("d2"), 0, 2, 3));
        String two = "SELECT COUNT(*) FROM orders WHERE dt IN ('d1', 'd3') AND amount > 100";
        assertThat(tEnv.explainSql(two)).contains("partitions=[{dt=d1}, {dt=d3}]");
        long n = folded.values().stream()
                .filter(v -> !v.get(1).equals("d2") && v.get(2) != null && (Long) v.get(2) > 100)
                .count();
        assertThat(query(tEnv, two)).containsExactly("+I[" + n + "]");
        assertThat(query(tEnv, "SELECT COUNT(*) FROM orders WHERE dt = 'nope'")).containsExactly("+I[0]");
    }

    @Test
    void whereOnTheKey(@InjectMiniCluster MiniCluster cluster) throws Exception {
        StreamTableEnvironment tEnv = batch(cluster);
        assertThat(query(tEnv, "SELECT * FROM orders WHERE id = 7"))
                .containsExactlyInAnyOrderElementsOf(expected(v -> v.get(0).equals(7), 0, 1, 2, 3));
        assertThat(query(tEnv, "SELECT name FROM orders WHERE id = 8 AND dt = 'd3'")).isEmpty(); // deleted
        assertThat(query(tEnv, "SELECT amount, name FROM orders WHERE id = 100"))
                .containsExactly("+I[null, null]");
    }

    @Test
    void projectionIsSentToTheGateway(@InjectMiniCluster MiniCluster cluster) throws Exception {
        StreamTableEnvironment tEnv = batch(cluster);
        String sql = "SELECT name, id FROM orders";
        assertThat(tEnv.explainSql(sql)).contains("project=[name, id]");
        assertThat(query(tEnv, sql)).containsExactlyInAnyOrderElementsOf(expected(v -> true, 3, 0));
    }

    @Test
    void limitStopsEarly(@InjectMiniCluster MiniCluster cluster) throws Exception {
        StreamTableEnvironment tEnv = batch(cluster);
        String sql = "SELECT id, dt, amount, name FROM orders LIMIT 5";
        assertThat(tEnv.explainSql(sql)).contains("limit=[5]");
        List<String> got = query(tEnv, sql);
        assertThat(got).hasSize(5);
        assertThat(expected(v -> true, 0, 1, 2, 3)).containsAll(got);
        assertThat(query(tEnv, "SELECT * FROM orders WHERE dt = 'd1' LIMIT 0")).isEmpty();
    }

    @Test
    void everyRowIsAnInsert(@InjectMiniCluster MiniCluster cluster) throws Exception {
        StreamTableEnvironment tEnv = batch(cluster);
        List<RowKind> kinds = new ArrayList<>();
        try (CloseableIterator<Row> it = tEnv.executeSql("SELECT id FROM orders").collect()) {
            it.forEachRemaining(r -> kinds.add(r.getKind()));
        }
        assertThat(kinds).hasSize(folded.size()).containsOnly(RowKind.INSERT);
    }

    /** In streaming mode the same DDL without options is the changelog from latest, as setats-cdc. */
    @Test
    void streamingModeIsTheChangelog(@InjectMiniCluster MiniCluster cluster) throws Exception {
        StreamTableEnvironment tEnv = tableEnv(cluster, RuntimeExecutionMode.STREAMING);
        ddl(tEnv, "stream");
        try (GatewayClient c = GATEWAY.client()) {
            write(c, "br", "stream", ORDERS, Collections.singletonList(insert(1, "d1", 5L, "before start")));
        }
        TableResult result = tEnv.executeSql("SELECT * FROM orders");
        try (CloseableIterator<Row> it = result.collect()) {
            try (GatewayClient c = GATEWAY.client()) {
                // latest: once the job reads every bucket, the next write is what it sees.
                io.setats.flink.source.SourceTestTables.awaitOpenChangelogStreams(
                        GATEWAY, io.setats.flink.source.SourceTestTables.splitsAtStart(c, "br", "stream"));
                write(c, "br", "stream", ORDERS, Arrays.asList(
                        insert(1, "d1", 6L, "after"), insert(2, "d1", 1L, "new"), row(RowKind.DELETE, 2, "d1", null, null)));
            }
            List<String> got = new ArrayList<>();
            while (got.size() < 4 && it.hasNext()) {
                got.add(it.next().toString());
            }
            assertThat(got).containsExactly(
                    "-U[1, d1, 5, before start]", "+U[1, d1, 6, after]", "+I[2, d1, 1, new]", "-D[2, d1, 1, new]");
        }
        result.getJobClient().ifPresent(j -> j.cancel());
    }

    /**
     * Parallel splits: the enumerator plans one split per (partition, bucket), hands them out one
     * per request to whichever reader asks, and only the pruned partitions' buckets.
     */
    @Test
    void oneSplitPerBucketHandedOutOnRequest() throws Exception {
        SetatsSourceConfig config =
                new SetatsSourceConfig(
                        GATEWAY.managerUrl(), GATEWAY.warehouse().toString(), "hadoop", "setats", "", "br", "orders",
                        StartupMode.LATEST, null, Duration.ofMinutes(5), 4, "id");
        for (Set<String> partitions : Arrays.asList(null, Collections.singleton("dt=d2"))) {
            TestingSplitEnumeratorContext<SnapshotSplit> ctx = new TestingSplitEnumeratorContext<>(2);
            ctx.registerReader(0, "h0");
            ctx.registerReader(1, "h1");
            try (SnapshotEnumerator e =
                    new SnapshotEnumerator(ctx, config, ORDERS, partitions, SnapshotEnumeratorState.initial())) {
                e.start();
                e.handleSplitRequest(0, "h0"); // before the listing: waits for it
                ctx.triggerAllActions();
                List<String> got = new ArrayList<>();
                int expectedSplits = partitions == null ? 12 : 4;
                for (int i = 0; i < expectedSplits + 1; i++) {
                    e.handleSplitRequest(i % 2, "h");
                }
                for (int r = 0; r < 2; r++) {
                    ctx.getSplitAssignments().get(r).getAssignedSplits().forEach(s -> got.add(s.splitId()));
                    assertThat(ctx.getSplitAssignments().get(r).getAssignedSplits()).isNotEmpty();
                }
                assertThat(got).doesNotHaveDuplicates().hasSize(expectedSplits);
                if (partitions != null) {
                    assertThat(got).allMatch(id -> id.startsWith("dt=d2/"));
                }
                // The reader that asked after the last split got no-more-splits.
                assertThat(ctx.getSplitAssignments().get(expectedSplits % 2).hasReceivedNoMoreSplitsSignal()).isTrue();
                assertThat(e.snapshotState(1)).isEqualTo(new SnapshotEnumeratorState(true, Collections.emptyList()));
            }
        }
    }
}
