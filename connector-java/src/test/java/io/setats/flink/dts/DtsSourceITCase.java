package io.setats.flink.dts;

import io.setats.flink.client.GatewayClient;
import io.setats.flink.testutils.PostgresProcess;
import io.setats.flink.testutils.SetatsGatewayProcess;
import io.setats.proto.v1.ChannelRequest;
import io.setats.proto.v1.CreateChannelRequest;
import io.setats.proto.v1.CreateGroupRequest;
import io.setats.proto.v1.ChannelInfo;
import io.setats.proto.v1.GroupInfo;
import io.setats.proto.v1.ListGroupsResponse;

import org.apache.flink.api.common.eventtime.WatermarkStrategy;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.PipelineOptions;
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
import org.apache.flink.types.Row;
import org.apache.flink.util.CloseableIterator;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * The dts connector against a real gateway capturing a real PostgreSQL 15, in a Flink MiniCluster
 * (shared/cases/dts-cases.txt T1, T2, T4, T5, T6; multi-table; consumer group positions).
 */
@Timeout(value = 600, unit = TimeUnit.SECONDS)
class DtsSourceITCase {

    @RegisterExtension static final PostgresProcess PG = new PostgresProcess();
    @RegisterExtension static final SetatsGatewayProcess GATEWAY = new SetatsGatewayProcess();

    @RegisterExtension
    static final MiniClusterExtension MINI_CLUSTER = new MiniClusterExtension(
            new MiniClusterResourceConfiguration.Builder().setNumberTaskManagers(1).setNumberSlotsPerTaskManager(4).build());

    @BeforeAll
    static void channel() throws Exception {
        PG.sql("CREATE SCHEMA shop; CREATE TABLE shop.orders (id int PRIMARY KEY, amount int); CREATE TABLE shop.users (id int PRIMARY KEY, name text);"
                + " ALTER TABLE shop.orders REPLICA IDENTITY FULL; ALTER TABLE shop.users REPLICA IDENTITY FULL");
        try (GatewayClient c = GATEWAY.client()) {
            c.action("subscription-create", CreateChannelRequest.newBuilder().setChannel("shop").setSourceUrl(PG.url())
                    .addTables("shop.orders").addTables("shop.users").build(), ChannelInfo.parser());
            for (String g : new String[] {"g_sql", "g_multi", "g_time", "g_pos", "g_other"}) {
                c.action("subscription-create-group", CreateGroupRequest.newBuilder().setChannel("shop").setGroup(g)
                        .setUser("u_" + g).setPassword("pw").build(), GroupInfo.parser());
            }
        }
        // T1 and T5 as separate transactions (psql -c runs one transaction per call).
        PG.sql("BEGIN; INSERT INTO shop.orders VALUES (1, 10); UPDATE shop.orders SET amount = 11 WHERE id = 1; DELETE FROM shop.orders WHERE id = 1; COMMIT;");
        PG.sql("INSERT INTO shop.users VALUES (5, 'u'); INSERT INTO shop.orders VALUES (2, 20);");
    }

    private static StreamTableEnvironment tableEnv(MiniCluster cluster) {
        Configuration conf = new Configuration();
        conf.set(RestartStrategyOptions.RESTART_STRATEGY, "none");
        return StreamTableEnvironment.create(new TestStreamEnvironment(cluster, conf, 1, Collections.emptyList(), Collections.emptyList()));
    }

    private static String with(String group, String checkpoint, String tables) {
        return "'connector' = 'dts', 'dts.server' = '" + GATEWAY.managerUrl() + "', 'topic' = 'shop',"
                + " 'dts.sid' = '" + group + "', 'dts.user' = 'u_" + group + "', 'dts.password' = 'pw',"
                + " 'dts.checkpoint' = '" + checkpoint + "', 'dts-cdc.table.name' = '" + tables + "', 'format' = 'dts-cdc'";
    }

    private static List<String> take(CloseableIterator<Row> it, int n) {
        List<String> out = new ArrayList<>();
        while (out.size() < n && it.hasNext()) {
            out.add(it.next().toString());
        }
        return out;
    }

    /** T1 + T5: one table, -U/+U pairs, the other table filtered out; the seed's TIMESTAMP(3) metadata column and watermark. */
    @Test
    void seedSqlOneTable(@InjectMiniCluster MiniCluster cluster) throws Exception {
        StreamTableEnvironment t = tableEnv(cluster);
        t.executeSql("create table `dts` (`ts` TIMESTAMP(3) METADATA FROM 'timestamp', `id` bigint, `amount` bigint,"
                + " WATERMARK FOR ts AS ts - INTERVAL '5' SECOND) with (" + with("g_sql", "0", "shop.orders") + ")");
        TableResult r = t.executeSql("SELECT id, amount FROM dts");
        try (CloseableIterator<Row> it = r.collect()) {
            assertThat(take(it, 5)).containsExactly("+I[1, 10]", "-U[1, 10]", "+U[1, 11]", "-D[1, 11]", "+I[2, 20]");
        }
    }

    /**
     * The seed's WATERMARK on the TIMESTAMP(3) metadata column drives event time: a tumbling
     * window over the first transaction's rows closes once a transaction committed 8 s later moves
     * the watermark (its source time minus 5 s) past the window's end, and the later window stays
     * open. The sleep only makes the later source commit time; nothing waits for the result.
     */
    @Test
    void watermarkOnMetadataColumn(@InjectMiniCluster MiniCluster cluster) throws Exception {
        PG.sql("CREATE TABLE shop.events (id int PRIMARY KEY, v int); ALTER TABLE shop.events REPLICA IDENTITY FULL");
        try (GatewayClient c = GATEWAY.client()) {
            c.action("subscription-create", CreateChannelRequest.newBuilder().setChannel("events").setSourceUrl(PG.url())
                    .addTables("shop.events").build(), ChannelInfo.parser());
            c.action("subscription-create-group", CreateGroupRequest.newBuilder().setChannel("events").setGroup("g_wm")
                    .setUser("u_g_wm").setPassword("pw").build(), GroupInfo.parser());
        }
        PG.sql("INSERT INTO shop.events VALUES (1, 10), (2, 20)");
        Thread.sleep(8000);
        PG.sql("INSERT INTO shop.events VALUES (3, 30)");
        StreamTableEnvironment t = tableEnv(cluster);
        t.executeSql("create table `w` (`ts` TIMESTAMP(3) METADATA FROM 'timestamp', `id` bigint, `v` bigint,"
                + " WATERMARK FOR ts AS ts - INTERVAL '5' SECOND) with ('connector' = 'dts', 'dts.server' = '" + GATEWAY.managerUrl() + "',"
                + " 'topic' = 'events', 'dts.sid' = 'g_wm', 'dts.user' = 'u_g_wm', 'dts.password' = 'pw', 'dts.checkpoint' = '0',"
                + " 'dts-cdc.table.name' = 'shop.events', 'format' = 'dts-cdc')");
        try (CloseableIterator<Row> it = t.executeSql(
                "SELECT COUNT(*) AS cnt, SUM(v) AS total FROM w GROUP BY TUMBLE(ts, INTERVAL '2' SECOND)").collect()) {
            assertThat(take(it, 1)).containsExactly("+I[2, 30]");
        }
    }

    /** Beyond the seed: a comma list / regex of tables with the table metadata column. */
    @Test
    void multiTable(@InjectMiniCluster MiniCluster cluster) throws Exception {
        StreamTableEnvironment t = tableEnv(cluster);
        t.executeSql("create table d (`tbl` STRING METADATA FROM 'table', `off` BIGINT METADATA FROM 'offset', `id` bigint)"
                + " with (" + with("g_multi", "0", "shop.orders, shop\\.u.*") + ")");
        try (CloseableIterator<Row> it = t.executeSql("SELECT tbl, id FROM d").collect()) {
            assertThat(take(it, 6)).containsExactly("+I[shop.orders, 1]", "-U[shop.orders, 1]", "+U[shop.orders, 1]",
                    "-D[shop.orders, 1]", "+I[shop.users, 5]", "+I[shop.orders, 2]");
        }
    }

    /** T4: dts.checkpoint = the second of the second of three transactions. */
    @Test
    void startByTime(@InjectMiniCluster MiniCluster cluster) throws Exception {
        PG.sql("INSERT INTO shop.users VALUES (100, 'first')");
        Thread.sleep(1100);
        long second = System.currentTimeMillis() / 1000 + 1;
        Thread.sleep(second * 1000 - System.currentTimeMillis() + 50);
        PG.sql("INSERT INTO shop.users VALUES (101, 'second')");
        Thread.sleep(1100);
        PG.sql("INSERT INTO shop.users VALUES (102, 'third')");
        StreamTableEnvironment t = tableEnv(cluster);
        t.executeSql("create table d (`id` bigint, `name` STRING) with (" + with("g_time", String.valueOf(second), "shop.users") + ")");
        try (CloseableIterator<Row> it = t.executeSql("SELECT id, name FROM d").collect()) {
            assertThat(take(it, 2)).containsExactly("+I[101, second]", "+I[102, third]");
        }
    }

    /** T6: a wrong password and a user of another group are refused, naming the user and the group. */
    @Test
    void wrongCredentials(@InjectMiniCluster MiniCluster cluster) {
        for (String[] c : new String[][] {{"g_sql", "u_g_sql", "bad"}, {"g_sql", "u_g_other", "pw"}, {"nope", "u_g_sql", "pw"}}) {
            StreamTableEnvironment t = tableEnv(cluster);
            t.executeSql("create table d (`id` bigint) with ('connector' = 'dts', 'dts.server' = '" + GATEWAY.managerUrl()
                    + "', 'topic' = 'shop', 'dts.sid' = '" + c[0] + "', 'dts.user' = '" + c[1] + "', 'dts.password' = '" + c[2]
                    + "', 'dts-cdc.table.name' = 'shop.orders', 'format' = 'dts-cdc')");
            assertThatThrownBy(() -> {
                try (CloseableIterator<Row> it = t.executeSql("SELECT id FROM d").collect()) {
                    it.hasNext();
                }
            }).satisfies(e -> assertThat(stack(e)).contains(c[1]).contains(c[0]));
        }
    }

    private static String stack(Throwable e) {
        StringBuilder b = new StringBuilder();
        for (Throwable c = e; c != null; c = c.getCause()) {
            b.append(c.getMessage()).append('\n');
        }
        return b.toString();
    }

    /**
     * T2 and consumer group positions: a DataStream job (generic types disabled, so DtsRecord
     * travels with its own serializer, never Kryo) prints HEARTBEATs with increasing ids; its
     * completed checkpoints commit the group position; a new job of the same group (no Flink state)
     * starts exactly at the committed id, so nothing is lost or repeated between the two jobs.
     */
    @Test
    void heartbeatsAndGroupPositions(@InjectMiniCluster MiniCluster cluster) throws Exception {
        // Runs until 3 HEARTBEATs arrived and a completed checkpoint committed a position past the
        // first record (waits, rather than a fixed time, so that a loaded machine cannot fail it).
        List<DtsRecord> first = runUntil(cluster, recs -> {
            long hb = recs.stream().filter(r -> r.getOperationType() == DtsOperation.HEARTBEAT).count();
            return hb >= 3 && committedPosition() > recs.get(0).getId();
        });
        for (int i = 1; i < first.size(); i++) {
            assertThat(first.get(i).getId()).isEqualTo(first.get(i - 1).getId() + 1);
        }
        assertThat(first.get(0).toString()).matches("DtsRecord \\{operationType \\[[A-Z]+\\], checkpoint \\[0@\\d+@.*@\\d+\\]\\}");
        // A commit call cut off by the cancellation may still land on the gateway: wait until the
        // committed position stays the same for a second.
        long committed = committedPosition();
        for (int i = 0; i < 10; i++) {
            Thread.sleep(1000);
            long again = committedPosition();
            if (again == committed) {
                break;
            }
            committed = again;
        }
        assertThat(committed).isGreaterThan(first.get(0).getId()).isLessThanOrEqualTo(first.get(first.size() - 1).getId() + 1);
        List<DtsRecord> second = runUntil(cluster, recs -> true);
        assertThat(second.get(0).getId()).isEqualTo(committed);
    }

    /** The committed id of group g_pos. */
    private static long committedPosition() {
        try (GatewayClient c = GATEWAY.client()) {
            ListGroupsResponse gs = c.action("subscription-groups", ChannelRequest.newBuilder().setChannel("shop").build(), ListGroupsResponse.parser());
            return gs.getGroupsList().stream().filter(g -> g.getGroup().equals("g_pos")).findFirst().get().getCommittedId();
        }
    }

    private static final List<DtsRecord> SINK = Collections.synchronizedList(new ArrayList<>());

    /** Runs a DataStream job of group g_pos until done holds for the records read (at most 2 minutes), then cancels it. */
    private static List<DtsRecord> runUntil(MiniCluster cluster, java.util.function.Predicate<List<DtsRecord>> done) throws Exception {
        SINK.clear();
        Configuration conf = new Configuration();
        conf.set(RestartStrategyOptions.RESTART_STRATEGY, "none");
        // No Kryo: a DtsRecord (or anything else of the job) typed as a generic type fails the job.
        conf.set(PipelineOptions.GENERIC_TYPES, false);
        StreamExecutionEnvironment env = new TestStreamEnvironment(cluster, conf, 1, Collections.emptyList(), Collections.emptyList());
        env.enableCheckpointing(500);
        env.fromSource(DtsSource.builder().setBrokerUrl(GATEWAY.managerUrl()).setTopic("shop").setSid("g_pos")
                        .setUser("u_g_pos").setPassword("pw").setCheckpoint(0).build(), WatermarkStrategy.noWatermarks(), "dts")
                .addSink(new org.apache.flink.streaming.api.functions.sink.SinkFunction<DtsRecord>() {
                    @Override
                    public void invoke(DtsRecord r, Context ctx) {
                        SINK.add(r);
                    }
                });
        JobClient job = env.executeAsync("dts group positions");
        long deadline = System.currentTimeMillis() + 120_000;
        try {
            while (true) {
                List<DtsRecord> now = new ArrayList<>(SINK);
                if (!now.isEmpty() && done.test(now)) {
                    break;
                }
                if (System.currentTimeMillis() > deadline) {
                    throw new AssertionError("the DataStream job did not get there in 2 minutes; read " + now.size() + " records");
                }
                Thread.sleep(100);
            }
        } finally {
            job.cancel().get();
            // cancel() returns once the cancellation is accepted; wait until the job is gone, so
            // that it neither emits into the next run's SINK nor commits a position meanwhile.
            while (!job.getJobStatus().get().isGloballyTerminalState()) {
                Thread.sleep(50);
            }
        }
        return new ArrayList<>(SINK);
    }
}
