package io.setats.flink.table;

import io.setats.flink.client.GatewayClient;
import io.setats.flink.source.SourceTestTables;
import io.setats.flink.testutils.ChangelogReader;
import io.setats.flink.testutils.ChangelogReader.ChangelogRow;
import io.setats.flink.testutils.SetatsGatewayProcess;
import io.setats.proto.v1.WriteAck;

import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.RestartStrategyOptions;
import org.apache.flink.runtime.minicluster.MiniCluster;
import org.apache.flink.runtime.testutils.MiniClusterResourceConfiguration;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.util.TestStreamEnvironment;
import org.apache.flink.table.api.DataTypes;
import org.apache.flink.table.api.ValidationException;
import org.apache.flink.table.api.bridge.java.StreamTableEnvironment;
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

import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;

import static io.setats.flink.source.SourceTestTables.awaitOpenChangelogStreams;
import static io.setats.flink.source.SourceTestTables.create;
import static io.setats.flink.source.SourceTestTables.insert;
import static io.setats.flink.source.SourceTestTables.row;
import static io.setats.flink.source.SourceTestTables.spec;
import static io.setats.flink.source.SourceTestTables.write;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * The {@code setats-cdc} connector in Flink SQL against a real gateway: the seed's CDC read SQL
 * (seeds/setats-cdc-read.txt, placeholders filled, the logger sink replaced by collecting the
 * query), metadata columns, read-cases R1 (SQL), R2 and R3, and the bucket check at start.
 */
@Timeout(value = 300, unit = TimeUnit.SECONDS)
class SetatsCdcTableITCase {

    @RegisterExtension static final SetatsGatewayProcess GATEWAY = new SetatsGatewayProcess();

    @RegisterExtension
    static final MiniClusterExtension MINI_CLUSTER =
            new MiniClusterExtension(
                    new MiniClusterResourceConfiguration.Builder()
                            .setNumberTaskManagers(1)
                            .setNumberSlotsPerTaskManager(4)
                            .build());

    /** The seed's table: id, dt, name, address; primary key (id, dt). */
    private static final RowType SEED =
            (RowType)
                    DataTypes.ROW(
                                    DataTypes.FIELD("id", DataTypes.STRING().notNull()),
                                    DataTypes.FIELD("dt", DataTypes.STRING().notNull()),
                                    DataTypes.FIELD("name", DataTypes.STRING()),
                                    DataTypes.FIELD("address", DataTypes.STRING()))
                            .getLogicalType();

    private static final List<WriteAck> SEED_ACKS = new ArrayList<>();

    @BeforeAll
    static void writeSeedTable() throws Exception {
        try (GatewayClient c = GATEWAY.client()) {
            create(c, spec("testdb", "demo_setats_table1", SEED, Arrays.asList("id", "dt"),
                    Collections.emptyList(), 2, Collections.emptyMap()));
            SEED_ACKS.add(write(c, "testdb", "demo_setats_table1", SEED, Arrays.asList(
                    insert("1", "20261129", "alice", "a street"),
                    insert("2", "20261129", "bob", "b street"),
                    insert("3", "20261130", "carol", null),
                    insert("4", "20261130", "dave", "d street"))));
            SEED_ACKS.add(write(c, "testdb", "demo_setats_table1", SEED, Arrays.asList(
                    insert("1", "20261129", "alice", "new street"), // -U/+U
                    row(RowKind.DELETE, "2", "20261129", null, null), // -D
                    insert("4", "20261130", "dave", "d street")))); // equal to stored: nothing
        }
    }

    @AfterEach
    void noStreamLeftOpen() throws Exception {
        awaitOpenChangelogStreams(GATEWAY, 0);
    }

    private static StreamTableEnvironment tableEnv(MiniCluster cluster, boolean restart) {
        Configuration conf = new Configuration();
        if (restart) {
            conf.set(RestartStrategyOptions.RESTART_STRATEGY, "fixed-delay");
            conf.set(RestartStrategyOptions.RESTART_STRATEGY_FIXED_DELAY_ATTEMPTS, 10);
        } else {
            conf.set(RestartStrategyOptions.RESTART_STRATEGY, "none");
        }
        StreamExecutionEnvironment env =
                new TestStreamEnvironment(cluster, conf, 1, Collections.emptyList(), Collections.emptyList());
        return StreamTableEnvironment.create(env);
    }

    /** The WITH clause of the seed with its placeholders filled (hadoop catalog, local warehouse). */
    private static String seedWith(String startupMode, String extra) {
        return "'connector' = 'setats-cdc',"
                + "'warehouse' = '" + GATEWAY.warehouse() + "',"
                + "'catalog-type' = 'hadoop',"
                + "'catalog-name' = 'setats',"
                + "'catalog-database' = 'testdb',"
                + "'catalog-table' = 'demo_setats_table1',"
                + "'uri' = 'thrift://localhost:7004,thrift://localhost:7005',"
                + "'manager-url' = '" + GATEWAY.managerUrl() + "',"
                + "'bucket.discovery-interval' = '30s',"
                + "'startup.mode' = '" + startupMode + "'"
                + extra;
    }

    private static List<String> take(CloseableIterator<Row> it, int n) {
        List<String> out = new ArrayList<>();
        while (out.size() < n && it.hasNext()) {
            out.add(it.next().toString());
        }
        return out;
    }

    /** The seed's CDC read, row by row against what the gateway stored. */
    @Test
    void seedCdcReadSql(@InjectMiniCluster MiniCluster cluster) throws Exception {
        StreamTableEnvironment tEnv = tableEnv(cluster, false);
        // The seed's DDL verbatim except for the filled placeholders.
        tEnv.executeSql(
                "CREATE TABLE `demo_setats_table1` (`id` STRING,`dt` STRING,`name` STRING,`address` STRING,"
                        + "PRIMARY KEY (`id`, `dt`) NOT ENFORCED) WITH (" + seedWith("earliest", "") + ")");
        List<ChangelogRow> stored;
        try (GatewayClient c = GATEWAY.client()) {
            stored = ChangelogReader.readAll(c, "testdb", "demo_setats_table1");
        }
        assertThat(stored).hasSize(7); // 4 +I, -U/+U, -D

        // The seed's INSERT INTO logger_sink_table SELECT ...; the logger sink replaced by collect().
        try (CloseableIterator<Row> it =
                tEnv.executeSql("SELECT `id`, `dt`, `name`, `address` FROM `demo_setats_table1`").collect()) {
            List<String> got = take(it, stored.size());
            List<String> expected = stored.stream().map(ChangelogRow::toString).collect(Collectors.toList());
            assertThat(got).containsExactlyInAnyOrderElementsOf(expected);
            assertThat(got)
                    .contains("+I[1, 20261129, alice, a street]", "-U[1, 20261129, alice, a street]",
                            "+U[1, 20261129, alice, new street]", "-D[2, 20261129, bob, b street]",
                            "+I[3, 20261130, carol, null]");
            // Buckets interleave freely, but each key's rows keep their changelog order.
            assertThat(perKey(got)).isEqualTo(perKey(expected));
        }
    }

    private static Map<String, List<String>> perKey(List<String> rows) {
        Map<String, List<String>> out = new LinkedHashMap<>();
        for (String r : rows) {
            String[] f = r.substring(3, r.length() - 1).split(", ");
            out.computeIfAbsent(f[0] + "/" + f[1], k -> new ArrayList<>()).add(r);
        }
        return new HashMap<>(out);
    }

    @Test
    void metadataColumns(@InjectMiniCluster MiniCluster cluster) throws Exception {
        StreamTableEnvironment tEnv = tableEnv(cluster, false);
        tEnv.executeSql(
                "CREATE TABLE cdc_meta (id STRING, dt STRING, name STRING,"
                        + " `offset` BIGINT METADATA VIRTUAL,"
                        + " commit_ts TIMESTAMP_LTZ(3) METADATA FROM 'timestamp' VIRTUAL,"
                        + " b INT METADATA FROM 'bucket' VIRTUAL,"
                        + " p STRING METADATA FROM 'partition' VIRTUAL,"
                        + " PRIMARY KEY (id, dt) NOT ENFORCED) WITH (" + seedWith("earliest", "") + ")");
        List<ChangelogRow> stored;
        try (GatewayClient c = GATEWAY.client()) {
            stored = ChangelogReader.readAll(c, "testdb", "demo_setats_table1");
        }
        try (CloseableIterator<Row> it =
                tEnv.executeSql("SELECT id, dt, name, `offset`, commit_ts, b, p FROM cdc_meta").collect()) {
            List<String> got = new ArrayList<>();
            for (int i = 0; i < stored.size() && it.hasNext(); i++) {
                Row r = it.next();
                got.add(r.getKind().shortString() + "[" + r.getField(0) + ", " + r.getField(1) + ", "
                        + r.getField(2) + "] @" + r.getField(5) + "/" + r.getField(3) + " p='" + r.getField(6) + "'");
                Instant ts = (Instant) r.getField(4);
                long ms = ts.toEpochMilli();
                assertThat(ms).as("commit time of %s", r)
                        .isIn(SEED_ACKS.get(0).getCommitMs(), SEED_ACKS.get(1).getCommitMs());
            }
            List<String> expected = new ArrayList<>();
            for (ChangelogRow s : stored) {
                expected.add(s.kind.shortString() + "[" + s.get("id") + ", " + s.get("dt") + ", " + s.get("name")
                        + "] @" + s.bucket + "/" + s.offset + " p=''");
            }
            assertThat(got).containsExactlyInAnyOrderElementsOf(expected);
        }
    }

    /** Read-case R1 in SQL: 'timestamp' is accepted for from-timestamp, and the start is inclusive. */
    @Test
    void fromTimestampInSql(@InjectMiniCluster MiniCluster cluster) throws Exception {
        RowType kv = (RowType) DataTypes.ROW(DataTypes.FIELD("id", DataTypes.INT().notNull()),
                DataTypes.FIELD("v", DataTypes.STRING())).getLogicalType();
        long t1;
        long t2;
        try (GatewayClient c = GATEWAY.client()) {
            create(c, spec("testdb", "r1", kv, Collections.singletonList("id"), Collections.emptyList(), 1, Collections.emptyMap()));
            t1 = write(c, "testdb", "r1", kv, Collections.singletonList(insert(1, "a"))).getCommitMs();
            while (System.currentTimeMillis() <= t1) {
                Thread.sleep(1);
            }
            t2 = write(c, "testdb", "r1", kv, Collections.singletonList(insert(2, "b"))).getCommitMs();
        }
        assertThat(t2).isGreaterThan(t1);
        StreamTableEnvironment tEnv = tableEnv(cluster, false);
        for (long ts : new long[] {t1 - 50, t1, t1 + 1}) { // before the oldest row = earliest; inclusive; between
            String name = "r1_" + ts;
            tEnv.executeSql("CREATE TABLE " + name + " (id INT, v STRING, PRIMARY KEY (id) NOT ENFORCED) WITH ("
                    + "'connector' = 'setats-cdc', 'manager-url' = '" + GATEWAY.managerUrl() + "',"
                    + "'warehouse' = '" + GATEWAY.warehouseUri() + "', 'catalog-type' = 'hadoop',"
                    + "'catalog-name' = 'setats', 'catalog-database' = 'testdb', 'catalog-table' = 'r1',"
                    + "'startup.mode' = 'timestamp', 'scan.timestamp-millis' = '" + ts + "')");
            try (CloseableIterator<Row> it = tEnv.executeSql("SELECT * FROM " + name).collect()) {
                if (ts <= t1) {
                    assertThat(take(it, 2)).containsExactly("+I[1, a]", "+I[2, b]");
                } else {
                    assertThat(take(it, 1)).containsExactly("+I[2, b]");
                }
            }
        }
    }

    /** Read-case R2: a timestamp without the mode that uses it fails planning, naming the key. */
    @Test
    void timestampWithLatestFailsPlanning(@InjectMiniCluster MiniCluster cluster) {
        StreamTableEnvironment tEnv = tableEnv(cluster, false);
        tEnv.executeSql(
                "CREATE TABLE r2 (id STRING, dt STRING, name STRING, address STRING,"
                        + " PRIMARY KEY (id, dt) NOT ENFORCED) WITH ("
                        + seedWith("latest", ",'scan.timestamp-millis' = '1767196800000'") + ")");
        assertThatThrownBy(() -> tEnv.executeSql("SELECT * FROM r2"))
                .satisfies(e -> {
                    Throwable t = e;
                    while (t != null && !(t instanceof ValidationException && t.getMessage().contains("scan.timestamp-millis"))) {
                        t = t.getCause();
                    }
                    assertThat(t).as("ValidationException naming scan.timestamp-millis in %s", e).isNotNull();
                });
    }

    /** Read-case R3 in SQL: a partition that appears after a 'latest' reader started is read from its first row. */
    @Test
    void newPartitionAfterLatestStart(@InjectMiniCluster MiniCluster cluster) throws Exception {
        RowType part = (RowType) DataTypes.ROW(DataTypes.FIELD("id", DataTypes.STRING().notNull()),
                DataTypes.FIELD("dt", DataTypes.STRING().notNull()), DataTypes.FIELD("v", DataTypes.STRING())).getLogicalType();
        try (GatewayClient c = GATEWAY.client()) {
            create(c, spec("testdb", "r3", part, Arrays.asList("id", "dt"), Collections.singletonList("dt"), 2, Collections.emptyMap()));
            write(c, "testdb", "r3", part, Collections.singletonList(insert("k0", "d1", "old")));
        }
        StreamTableEnvironment tEnv = tableEnv(cluster, false);
        tEnv.executeSql("CREATE TABLE r3 (id STRING, dt STRING, v STRING, PRIMARY KEY (id, dt) NOT ENFORCED) WITH ("
                + "'connector' = 'setats-cdc', 'manager-url' = '" + GATEWAY.managerUrl() + "',"
                + "'warehouse' = '" + GATEWAY.warehouse() + "', 'catalog-type' = 'hadoop', 'catalog-name' = 'setats',"
                + "'catalog-database' = 'testdb', 'bucket.discovery-interval' = '1s', 'startup.mode' = 'latest')");
        try (CloseableIterator<Row> it = tEnv.executeSql("SELECT * FROM r3").collect();
                GatewayClient c = GATEWAY.client()) {
            awaitOpenChangelogStreams(GATEWAY, SourceTestTables.splitsAtStart(c, "testdb", "r3"));
            write(c, "testdb", "r3", part, Collections.singletonList(insert("k1", "d2", "r1")));
            assertThat(take(it, 1)).containsExactly("+I[k1, d2, r1]");
            write(c, "testdb", "r3", part, Collections.singletonList(insert("k2", "d2", "s1")));
            assertThat(take(it, 1)).containsExactly("+I[k2, d2, s1]");
        }
    }

    /** SPEC section 2: a declared bucket count that differs from the table fails the job naming both. */
    @Test
    void bucketMismatchFailsTheJob(@InjectMiniCluster MiniCluster cluster) {
        StreamTableEnvironment tEnv = tableEnv(cluster, false);
        tEnv.executeSql(
                "CREATE TABLE wrong_bucket (id STRING, dt STRING, name STRING, address STRING,"
                        + " PRIMARY KEY (id, dt) NOT ENFORCED) WITH ("
                        + seedWith("earliest", ",'bucket' = '3', 'bucket-key' = 'id,dt'") + ")");
        assertThatThrownBy(() -> {
                    try (CloseableIterator<Row> it = tEnv.executeSql("SELECT * FROM wrong_bucket").collect()) {
                        it.hasNext();
                    }
                })
                .hasStackTraceContaining("'bucket' = 3")
                .hasStackTraceContaining("testdb.demo_setats_table1, which has 2 buckets");
    }
}
