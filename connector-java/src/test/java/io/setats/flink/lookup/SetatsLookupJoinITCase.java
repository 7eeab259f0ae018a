package io.setats.flink.lookup;

import io.setats.flink.client.GatewayClient;
import io.setats.flink.testutils.SetatsGatewayProcess;

import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.RestartStrategyOptions;
import org.apache.flink.runtime.minicluster.MiniCluster;
import org.apache.flink.runtime.testutils.MiniClusterResourceConfiguration;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.util.TestStreamEnvironment;
import org.apache.flink.table.api.DataTypes;
import org.apache.flink.table.api.TableResult;
import org.apache.flink.table.api.bridge.java.StreamTableEnvironment;
import org.apache.flink.table.types.logical.RowType;
import org.apache.flink.test.junit5.InjectMiniCluster;
import org.apache.flink.test.junit5.MiniClusterExtension;
import org.apache.flink.types.Row;
import org.apache.flink.types.RowKind;
import org.apache.flink.util.CloseableIterator;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static io.setats.flink.source.SourceTestTables.create;
import static io.setats.flink.source.SourceTestTables.insert;
import static io.setats.flink.source.SourceTestTables.row;
import static io.setats.flink.source.SourceTestTables.spec;
import static io.setats.flink.source.SourceTestTables.write;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * Lookup joins on a {@code 'connector' = 'setats'} dimension table against a real gateway (SPEC
 * section 13): a probe stream (a {@code setats-cdc} table with a processing-time attribute) joined
 * {@code FOR SYSTEM_TIME AS OF} on the dimension's primary key. Absent keys give nulls in a left
 * join and no row in an inner join; updates of the dimension written while the join runs are seen
 * by later probe rows once durable and, with {@code lookup.cache = 'PARTIAL'}, once the cache's
 * expire-after-write has passed.
 */
@Timeout(value = 300, unit = TimeUnit.SECONDS)
class SetatsLookupJoinITCase {

    @RegisterExtension static final SetatsGatewayProcess GATEWAY = new SetatsGatewayProcess();

    @RegisterExtension
    static final MiniClusterExtension MINI_CLUSTER =
            new MiniClusterExtension(
                    new MiniClusterResourceConfiguration.Builder()
                            .setNumberTaskManagers(1)
                            .setNumberSlotsPerTaskManager(4)
                            .build());

    private static final RowType DIM =
            (RowType)
                    DataTypes.ROW(
                                    DataTypes.FIELD("id", DataTypes.INT().notNull()),
                                    DataTypes.FIELD("name", DataTypes.STRING()))
                            .getLogicalType();
    private static final RowType MULTI =
            (RowType)
                    DataTypes.ROW(
                                    DataTypes.FIELD("id", DataTypes.INT().notNull()),
                                    DataTypes.FIELD("seq", DataTypes.INT().notNull()),
                                    DataTypes.FIELD("name", DataTypes.STRING()))
                            .getLogicalType();
    private static final RowType PROBE =
            (RowType)
                    DataTypes.ROW(
                                    DataTypes.FIELD("seq", DataTypes.INT().notNull()),
                                    DataTypes.FIELD("id", DataTypes.INT()))
                            .getLogicalType();

    @BeforeAll
    static void tables() throws Exception {
        try (GatewayClient c = GATEWAY.client()) {
            for (String t : Arrays.asList("dim_cached", "dim_plain")) {
                create(c, spec("lk", t, DIM, Collections.singletonList("id"), Collections.emptyList(), 2, Collections.emptyMap()));
                write(c, "lk", t, DIM, Arrays.asList(insert(1, "a"), insert(2, "b")));
            }
            // PK (id, seq), bucket key id: a join on id alone is a prefix lookup inside one bucket.
            create(c, spec("lk", "dim_multi", MULTI, Arrays.asList("id", "seq"), Collections.emptyList(), 2, Collections.emptyMap())
                    .toBuilder().addBucketKey("id").build());
            write(c, "lk", "dim_multi", MULTI, Arrays.asList(
                    insert(1, 2, "a2"), insert(1, 1, "a1"), insert(2, 1, "b1"), insert(1, 3, "a3"), insert(3, 1, "c1")));
            for (String t : Arrays.asList("probe_left", "probe_inner", "probe_prefix")) {
                create(c, spec("lk", t, PROBE, Collections.singletonList("seq"), Collections.emptyList(), 1, Collections.emptyMap()));
            }
        }
    }

    private static StreamTableEnvironment tableEnv(MiniCluster cluster) {
        Configuration conf = new Configuration();
        conf.set(RestartStrategyOptions.RESTART_STRATEGY, "none");
        StreamExecutionEnvironment env =
                new TestStreamEnvironment(cluster, conf, 1, Collections.emptyList(), Collections.emptyList());
        return StreamTableEnvironment.create(env);
    }

    private static String with(String connector, String table, String extra) {
        return "'connector' = '" + connector + "',"
                + "'manager-url' = '" + GATEWAY.managerUrl() + "',"
                + "'warehouse' = '" + GATEWAY.warehouse() + "',"
                + "'catalog-type' = 'hadoop',"
                + "'catalog-name' = 'setats',"
                + "'catalog-database' = 'lk',"
                + "'catalog-table' = '" + table + "'"
                + extra;
    }

    private static void ddl(StreamTableEnvironment tEnv, String probe, String dim, String dimExtra) {
        tEnv.executeSql(
                "CREATE TABLE probe (seq INT NOT NULL, id INT, proc AS PROCTIME(), PRIMARY KEY (seq) NOT ENFORCED) WITH ("
                        + with("setats-cdc", probe, ",'startup.mode' = 'earliest'") + ")");
        tEnv.executeSql(
                "CREATE TABLE dim (id INT NOT NULL, name STRING, PRIMARY KEY (id) NOT ENFORCED) WITH ("
                        + with("setats", dim, dimExtra) + ")");
    }

    private static List<String> take(CloseableIterator<Row> it, int n) {
        List<String> out = new ArrayList<>();
        while (out.size() < n && it.hasNext()) {
            out.add(it.next().toString());
        }
        return out;
    }

    private static void probe(String table, Object... seqAndIds) throws Exception {
        List<org.apache.flink.table.data.RowData> rows = new ArrayList<>();
        for (int i = 0; i < seqAndIds.length; i += 2) {
            rows.add(insert(seqAndIds[i], seqAndIds[i + 1]));
        }
        try (GatewayClient c = GATEWAY.client()) {
            write(c, "lk", table, PROBE, rows);
        }
    }

    /** Left join with a PARTIAL cache: nulls for absent keys; updates seen once the TTL passed. */
    @Test
    void leftJoinSeesUpdatesAfterTheCacheTtl(@InjectMiniCluster MiniCluster cluster) throws Exception {
        StreamTableEnvironment tEnv = tableEnv(cluster);
        ddl(tEnv, "probe_left", "dim_cached",
                ",'lookup.cache' = 'PARTIAL', 'lookup.partial-cache.max-rows' = '100',"
                        + "'lookup.partial-cache.expire-after-write' = '1s'");
        TableResult result =
                tEnv.executeSql(
                        "SELECT p.seq, p.id, d.name FROM probe AS p "
                                + "LEFT JOIN dim FOR SYSTEM_TIME AS OF p.proc AS d ON p.id = d.id");
        try (CloseableIterator<Row> it = result.collect()) {
            probe("probe_left", 1, 1, 2, 2, 3, 99, 4, null);
            assertThat(take(it, 4))
                    .containsExactly("+I[1, 1, a]", "+I[2, 2, b]", "+I[3, 99, null]", "+I[4, null, null]");
            // Update key 1, delete key 2, add key 99 while the join runs; durable once acked.
            try (GatewayClient c = GATEWAY.client()) {
                write(c, "lk", "dim_cached", DIM,
                        Arrays.asList(insert(1, "a2"), row(RowKind.DELETE, 2, null), insert(99, "z")));
            }
            Thread.sleep(1500); // the cache's expire-after-write (1 s) passes: not an assertion
            probe("probe_left", 5, 1, 6, 2, 7, 99);
            assertThat(take(it, 3)).containsExactly("+I[5, 1, a2]", "+I[6, 2, null]", "+I[7, 99, z]");
        }
    }

    /** Inner join without cache: absent keys give no row; a key written later is found at once. */
    @Test
    void innerJoinDropsAbsentKeys(@InjectMiniCluster MiniCluster cluster) throws Exception {
        StreamTableEnvironment tEnv = tableEnv(cluster);
        ddl(tEnv, "probe_inner", "dim_plain", "");
        TableResult result =
                tEnv.executeSql(
                        "SELECT p.seq, p.id, d.name FROM probe AS p "
                                + "JOIN dim FOR SYSTEM_TIME AS OF p.proc AS d ON p.id = d.id");
        try (CloseableIterator<Row> it = result.collect()) {
            probe("probe_inner", 1, 1, 2, 42, 3, 2);
            assertThat(take(it, 2)).containsExactly("+I[1, 1, a]", "+I[3, 2, b]");
            try (GatewayClient c = GATEWAY.client()) {
                write(c, "lk", "dim_plain", DIM, Collections.singletonList(insert(42, "late")));
            }
            probe("probe_inner", 4, 42);
            assertThat(take(it, 1)).containsExactly("+I[4, 42, late]");
        }
    }

    /** A lookup join not on the full primary key fails at planning, naming both. */
    @Test
    void joinOnANonKeyColumnIsAValidationError(@InjectMiniCluster MiniCluster cluster) {
        StreamTableEnvironment tEnv = tableEnv(cluster);
        ddl(tEnv, "probe_inner", "dim_plain", "");
        assertThatThrownBy(
                        () -> tEnv.executeSql(
                                "SELECT p.seq FROM probe AS p JOIN dim FOR SYSTEM_TIME AS OF p.proc AS d ON CAST(p.id AS STRING) = d.name"))
                .hasStackTraceContaining("full primary key");
        tEnv.executeSql("DROP TABLE dim");
        tEnv.executeSql(
                "CREATE TABLE dim (id INT NOT NULL, name STRING, PRIMARY KEY (id) NOT ENFORCED) WITH ("
                        + with("setats", "dim_plain", ",'lookup.cache' = 'FULL'") + ")");
        assertThatThrownBy(
                        () -> tEnv.executeSql(
                                "SELECT p.seq FROM probe AS p JOIN dim FOR SYSTEM_TIME AS OF p.proc AS d ON p.id = d.id"))
                .hasStackTraceContaining("'FULL' is not supported");
    }

    /**
     * A join on a primary-key prefix that includes the bucket key (id of PK (id, seq)) gives every
     * dimension row of the prefix, in key order; an absent prefix gives nulls in a left join; a
     * row deleted and one added while the join runs are seen by later probe rows; a join on a
     * non-leading key column fails at planning.
     */
    @Test
    void prefixJoinGivesEveryRowOfThePrefix(@InjectMiniCluster MiniCluster cluster) throws Exception {
        StreamTableEnvironment tEnv = tableEnv(cluster);
        tEnv.executeSql(
                "CREATE TABLE probe (seq INT NOT NULL, id INT, proc AS PROCTIME(), PRIMARY KEY (seq) NOT ENFORCED) WITH ("
                        + with("setats-cdc", "probe_prefix", ",'startup.mode' = 'earliest'") + ")");
        tEnv.executeSql(
                "CREATE TABLE dim (id INT NOT NULL, seq INT NOT NULL, name STRING, PRIMARY KEY (id, seq) NOT ENFORCED) WITH ("
                        + with("setats", "dim_multi", ",'bucket-key' = 'id'") + ")");
        TableResult result =
                tEnv.executeSql(
                        "SELECT p.seq, d.seq, d.name FROM probe AS p "
                                + "LEFT JOIN dim FOR SYSTEM_TIME AS OF p.proc AS d ON p.id = d.id");
        try (CloseableIterator<Row> it = result.collect()) {
            probe("probe_prefix", 10, 1, 20, 42);
            assertThat(take(it, 4))
                    .containsExactly("+I[10, 1, a1]", "+I[10, 2, a2]", "+I[10, 3, a3]", "+I[20, null, null]");
            try (GatewayClient c = GATEWAY.client()) {
                write(c, "lk", "dim_multi", MULTI, Arrays.asList(row(RowKind.DELETE, 1, 2, null), insert(42, 7, "z7")));
            }
            probe("probe_prefix", 30, 1, 40, 42);
            assertThat(take(it, 3)).containsExactly("+I[30, 1, a1]", "+I[30, 3, a3]", "+I[40, 7, z7]");
        }
        assertThatThrownBy(
                        () -> tEnv.executeSql(
                                "SELECT p.seq FROM probe AS p JOIN dim FOR SYSTEM_TIME AS OF p.proc AS d ON p.id = d.seq"))
                .hasStackTraceContaining("first primary-key columns including the partition keys [] and the bucket key [id]");
    }
}
