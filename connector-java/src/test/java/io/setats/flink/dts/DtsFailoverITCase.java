package io.setats.flink.dts;

import io.setats.flink.client.GatewayClient;
import io.setats.flink.testutils.PostgresProcess;
import io.setats.flink.testutils.SetatsGatewayProcess;
import io.setats.proto.v1.ChannelInfo;
import io.setats.proto.v1.ChannelRequest;
import io.setats.proto.v1.ConsumerCredentials;
import io.setats.proto.v1.CreateChannelRequest;
import io.setats.proto.v1.CreateGroupRequest;
import io.setats.proto.v1.GroupInfo;
import io.setats.proto.v1.SeekRequest;
import io.setats.proto.v1.SeekResponse;

import org.apache.flink.api.common.eventtime.WatermarkStrategy;
import org.apache.flink.api.common.functions.MapFunction;
import org.apache.flink.api.common.state.CheckpointListener;
import org.apache.flink.api.common.state.ListState;
import org.apache.flink.api.common.state.ListStateDescriptor;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.RestartStrategyOptions;
import org.apache.flink.configuration.StateRecoveryOptions;
import org.apache.flink.core.execution.JobClient;
import org.apache.flink.core.execution.SavepointFormatType;
import org.apache.flink.runtime.minicluster.MiniCluster;
import org.apache.flink.runtime.state.FunctionInitializationContext;
import org.apache.flink.runtime.state.FunctionSnapshotContext;
import org.apache.flink.runtime.testutils.MiniClusterResourceConfiguration;
import org.apache.flink.streaming.api.checkpoint.CheckpointedFunction;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.functions.sink.RichSinkFunction;
import org.apache.flink.streaming.api.functions.sink.SinkFunction;
import org.apache.flink.streaming.util.TestStreamEnvironment;
import org.apache.flink.test.junit5.InjectMiniCluster;
import org.apache.flink.test.junit5.MiniClusterExtension;
import org.apache.flink.util.ExceptionUtils;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Predicate;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * The dts source across failures, against a real gateway capturing a real PostgreSQL 15 (issue 11,
 * SPEC section 11): a task failure and a TaskManager failure mid-stream resume from the last
 * checkpoint with no record lost and none repeated; a gateway whose cluster id changed fails a restored job with the seed's
 * message (dts-cases T7), and the job restored again re-seeks by the time of its last record.
 */
@Timeout(value = 600, unit = TimeUnit.SECONDS)
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class DtsFailoverITCase {

    @RegisterExtension static final PostgresProcess PG = new PostgresProcess();
    @RegisterExtension static final SetatsGatewayProcess GATEWAY = new SetatsGatewayProcess();

    @RegisterExtension
    static final MiniClusterExtension MINI_CLUSTER = new MiniClusterExtension(
            new MiniClusterResourceConfiguration.Builder().setNumberTaskManagers(1).setNumberSlotsPerTaskManager(2).build());

    private static final String CHANNEL = "fo";

    @BeforeAll
    static void channel() throws Exception {
        PG.sql("CREATE SCHEMA shop; CREATE TABLE shop.orders (id int PRIMARY KEY, amount int); ALTER TABLE shop.orders REPLICA IDENTITY FULL");
        try (GatewayClient c = GATEWAY.client()) {
            c.action("subscription-create", CreateChannelRequest.newBuilder().setChannel(CHANNEL).setSourceUrl(PG.url())
                    .addTables("shop.orders").build(), ChannelInfo.parser());
            for (String g : new String[] {"g_fail", "g_tm", "g_cluster"}) {
                c.action("subscription-create-group", CreateGroupRequest.newBuilder().setChannel(CHANNEL).setGroup(g)
                        .setUser("u_" + g).setPassword("pw").build(), GroupInfo.parser());
            }
        }
    }

    /** A job environment: checkpoints every 300 ms; restartAttempts 0 = no restart; savepoint to restore or null. */
    private static StreamExecutionEnvironment env(MiniCluster cluster, int restartAttempts, String savepoint) {
        Configuration conf = new Configuration();
        if (restartAttempts > 0) {
            conf.set(RestartStrategyOptions.RESTART_STRATEGY, "fixed-delay");
            conf.set(RestartStrategyOptions.RESTART_STRATEGY_FIXED_DELAY_ATTEMPTS, restartAttempts);
            conf.set(RestartStrategyOptions.RESTART_STRATEGY_FIXED_DELAY_DELAY, Duration.ofMillis(200));
        } else {
            conf.set(RestartStrategyOptions.RESTART_STRATEGY, "none");
        }
        if (savepoint != null) {
            conf.set(StateRecoveryOptions.SAVEPOINT_PATH, savepoint);
        }
        StreamExecutionEnvironment env = new TestStreamEnvironment(cluster, conf, 1, Collections.emptyList(), Collections.emptyList());
        env.enableCheckpointing(300);
        return env;
    }

    private static io.setats.flink.dts.source.DtsSource<DtsRecord> source(String group) {
        return DtsSource.builder().setBrokerUrl(GATEWAY.managerUrl()).setTopic(CHANNEL).setSid(group)
                .setUser("u_" + group).setPassword("pw").setCheckpoint(0).build();
    }

    /** "id OP key" of a record (key: the row's id, "-" for records without an image). */
    static String line(DtsRecord r) {
        String key = r.getAfterImage() != null ? r.getAfterValue("id") : r.getBeforeImage() != null ? r.getBeforeValue("id") : "-";
        return r.getId() + " " + r.getOperationType() + " " + key;
    }

    /** Cancels a job and waits until it is gone (cancel() returns once the cancellation is accepted). */
    private static void cancelAndWait(JobClient job) throws Exception {
        job.cancel().get();
        while (!job.getJobStatus().get().isGloballyTerminalState()) {
            Thread.sleep(50);
        }
    }

    private static void await(String what, java.util.function.BooleanSupplier done, long ms) throws InterruptedException {
        long deadline = System.currentTimeMillis() + ms;
        while (!done.getAsBoolean()) {
            if (System.currentTimeMillis() > deadline) {
                throw new AssertionError("timed out waiting for " + what);
            }
            Thread.sleep(100);
        }
    }

    // ----------------------------------------------------------------------------- task failure

    private static final int TRANSACTIONS = 30;
    private static final int ROWS_PER_TRANSACTION = 10;
    private static final int FAIL_AFTER_INSERTS = 100;

    /**
     * A task failure mid-stream: a map fails once after 100 INSERTs and a completed checkpoint,
     * while 30 transactions of 10 rows arrive; the job restarts from its checkpoint. The output a
     * checkpoint-committing sink holds has dense record ids (none lost, none twice) and every
     * inserted key exactly once.
     */
    @Test
    @Order(1)
    void taskFailureResumesFromTheCheckpoint(@InjectMiniCluster MiniCluster cluster) throws Exception {
        runWithFailure(cluster, "g_fail", 0, false);
    }

    /**
     * The TaskManager itself fails mid-stream (MiniCluster terminates it once 100 INSERTs are
     * committed, then starts a new one): the job restarts on the new TaskManager from its last
     * checkpoint, with the same checks.
     */
    @Test
    @Order(2)
    void taskManagerFailureResumesFromTheCheckpoint(@InjectMiniCluster MiniCluster cluster) throws Exception {
        runWithFailure(cluster, "g_tm", 10_000, true);
    }

    private static void runWithFailure(MiniCluster cluster, String group, int keyBase, boolean killTaskManager) throws Exception {
        CommittingSink.reset();
        FailOnce.reset();
        FailOnce.ENABLED.set(!killTaskManager);
        StreamExecutionEnvironment env = env(cluster, 3, null);
        env.fromSource(source(group), WatermarkStrategy.noWatermarks(), "dts").uid("dts")
                .map(new FailOnce()).uid("fail-once")
                .addSink(new CommittingSink()).uid("committing-sink");
        JobClient job = env.executeAsync("dts failure " + group);
        Thread writer = new Thread(() -> {
            try {
                for (int t = 0; t < TRANSACTIONS; t++) {
                    int from = keyBase + t * ROWS_PER_TRANSACTION + 1;
                    PG.sql("INSERT INTO shop.orders SELECT g, g FROM generate_series(" + from + ", " + (from + ROWS_PER_TRANSACTION - 1) + ") g");
                    Thread.sleep(100);
                }
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }, "pg-writer");
        writer.start();
        int rows = TRANSACTIONS * ROWS_PER_TRANSACTION;
        Predicate<String> ours = l -> {
            String[] f = l.split(" ");
            if (!f[1].equals("INSERT")) {
                return false;
            }
            int k = Integer.parseInt(f[2]);
            return k > keyBase && k <= keyBase + rows;
        };
        try {
            if (killTaskManager) {
                await(FAIL_AFTER_INSERTS + " committed inserts", () -> CommittingSink.committed(ours).size() >= FAIL_AFTER_INSERTS, 240_000);
                cluster.terminateTaskManager(0).get(1, TimeUnit.MINUTES);
                cluster.startTaskManager();
                FailOnce.FAILED.set(true);
            }
            await(rows + " committed inserts", () -> CommittingSink.committed(ours).size() >= rows, 300_000);
        } finally {
            writer.join();
            cancelAndWait(job);
        }
        assertThat(FailOnce.FAILED).as("the injected failure happened").isTrue();
        List<String> out = CommittingSink.committed(l -> true);
        for (int i = 1; i < out.size(); i++) {
            long prev = Long.parseLong(out.get(i - 1).split(" ")[0]);
            long id = Long.parseLong(out.get(i).split(" ")[0]);
            assertThat(id).as("record after %s (none lost, none repeated)", out.get(i - 1)).isEqualTo(prev + 1);
        }
        List<String> keys = new ArrayList<>();
        for (String l : CommittingSink.committed(ours)) {
            keys.add(l.split(" ")[2]);
        }
        List<String> want = new ArrayList<>();
        for (int k = keyBase + 1; k <= keyBase + rows; k++) {
            want.add(String.valueOf(k));
        }
        assertThat(keys).containsExactlyElementsOf(want);
        List<String> allInserts = CommittingSink.committed(l -> l.contains(" INSERT "));
        assertThat(allInserts.stream().map(l -> l.split(" ")[2]).distinct().count()).as("no key twice").isEqualTo(allInserts.size());
    }

    /** Fails the task once, after FAIL_AFTER_INSERTS INSERTs and at least one completed checkpoint. */
    static final class FailOnce implements MapFunction<DtsRecord, DtsRecord> {
        private static final long serialVersionUID = 1L;
        static final AtomicBoolean FAILED = new AtomicBoolean();
        static final AtomicBoolean ENABLED = new AtomicBoolean(true);
        static final AtomicInteger INSERTS = new AtomicInteger();
        static final AtomicInteger SEEN = new AtomicInteger();

        static void reset() {
            FAILED.set(false);
            INSERTS.set(0);
            SEEN.set(0);
        }

        @Override
        public DtsRecord map(DtsRecord r) {
            SEEN.incrementAndGet();
            if (ENABLED.get() && r.getOperationType() == DtsOperation.INSERT && INSERTS.incrementAndGet() >= FAIL_AFTER_INSERTS
                    && CommittingSink.COMPLETED.get() > 0 && FAILED.compareAndSet(false, true)) {
                throw new RuntimeException("injected task failure after " + INSERTS.get() + " inserts");
            }
            return r;
        }
    }

    /**
     * A sink whose output is what completed checkpoints cover (two-phase: records since the last
     * snapshot are pending under that checkpoint's id, kept in operator state, and committed to
     * {@link #COMMITTED} when the checkpoint completes; on restore, the pending records of the
     * restored checkpoint are committed unless that already happened). So the output equals that
     * of a run without failures exactly when the source's position is checkpointed correctly.
     */
    static final class CommittingSink extends RichSinkFunction<DtsRecord> implements CheckpointedFunction, CheckpointListener {
        private static final long serialVersionUID = 1L;
        static final List<String> COMMITTED = Collections.synchronizedList(new ArrayList<>());
        static final AtomicInteger COMPLETED = new AtomicInteger();
        static final AtomicLong LAST_COMMITTED_CHECKPOINT = new AtomicLong(-1);

        private transient List<String> buffer;
        private transient TreeMap<Long, List<String>> pending;
        private transient ListState<String> state;

        static void reset() {
            COMMITTED.clear();
            COMPLETED.set(0);
            LAST_COMMITTED_CHECKPOINT.set(-1);
        }

        static List<String> committed(Predicate<String> p) {
            synchronized (COMMITTED) {
                List<String> out = new ArrayList<>();
                for (String l : COMMITTED) {
                    if (p.test(l)) {
                        out.add(l);
                    }
                }
                return out;
            }
        }

        @Override
        public void invoke(DtsRecord r, Context ctx) {
            buffer.add(line(r));
        }

        @Override
        public void snapshotState(FunctionSnapshotContext ctx) throws Exception {
            pending.put(ctx.getCheckpointId(), buffer);
            buffer = new ArrayList<>();
            List<String> flat = new ArrayList<>();
            for (Map.Entry<Long, List<String>> e : pending.entrySet()) {
                for (String l : e.getValue()) {
                    flat.add(e.getKey() + "\t" + l);
                }
            }
            state.update(flat);
        }

        @Override
        public void notifyCheckpointComplete(long checkpointId) {
            commitUpTo(checkpointId);
            COMPLETED.incrementAndGet();
        }

        private void commitUpTo(long checkpointId) {
            synchronized (COMMITTED) {
                while (!pending.isEmpty() && pending.firstKey() <= checkpointId) {
                    Map.Entry<Long, List<String>> e = pending.pollFirstEntry();
                    if (e.getKey() > LAST_COMMITTED_CHECKPOINT.get()) {
                        COMMITTED.addAll(e.getValue());
                    }
                }
                LAST_COMMITTED_CHECKPOINT.accumulateAndGet(checkpointId, Math::max);
            }
        }

        @Override
        public void initializeState(FunctionInitializationContext ctx) throws Exception {
            buffer = new ArrayList<>();
            pending = new TreeMap<>();
            state = ctx.getOperatorStateStore().getListState(new ListStateDescriptor<>("pending", String.class));
            long restored = -1;
            for (String s : state.get()) {
                int tab = s.indexOf('\t');
                long cp = Long.parseLong(s.substring(0, tab));
                pending.computeIfAbsent(cp, k -> new ArrayList<>()).add(s.substring(tab + 1));
                restored = Math.max(restored, cp);
            }
            if (ctx.isRestored() && restored >= 0) {
                commitUpTo(restored); // the restored checkpoint completed
            }
        }
    }

    // ----------------------------------------------------------------------------- cluster change

    private static final List<DtsRecord> SEEN = Collections.synchronizedList(new ArrayList<>());

    private static boolean sawInsert(int key) {
        synchronized (SEEN) {
            return SEEN.stream().anyMatch(r -> r.getOperationType() == DtsOperation.INSERT && String.valueOf(key).equals(r.getAfterValue("id")));
        }
    }

    private static JobClient collect(MiniCluster cluster, String savepoint, String name) throws Exception {
        StreamExecutionEnvironment env = env(cluster, 0, savepoint);
        env.fromSource(source("g_cluster"), WatermarkStrategy.noWatermarks(), "dts").uid("dts")
                .addSink(new SinkFunction<DtsRecord>() {
                    @Override
                    public void invoke(DtsRecord r, Context ctx) {
                        SEEN.add(r);
                    }
                }).uid("collect");
        return env.executeAsync(name);
    }

    /**
     * dts-cases T7: a savepoint holds cluster id A; the gateway restarts reporting B (its
     * warehouse's cluster-id file changed). The job restored from the savepoint fails with
     * {@code Cluster changed from A to B, consumer require restart}; restored again, it re-seeks
     * by the source time of the last record it had read and goes on (the records written meanwhile
     * arrive).
     */
    @Test
    @Order(3)
    void clusterChangeFailsThenReseeksByTime(@InjectMiniCluster MiniCluster cluster) throws Exception {
        SEEN.clear();
        PG.sql("INSERT INTO shop.orders SELECT g, g FROM generate_series(1001, 1005) g");
        JobClient first = collect(cluster, null, "dts cluster A");
        await("insert 1005", () -> sawInsert(1005), 120_000);
        Path dir = Files.createTempDirectory("dts-savepoint-");
        String savepoint = first.stopWithSavepoint(false, dir.toUri().toString(), SavepointFormatType.CANONICAL).get(2, TimeUnit.MINUTES);
        DtsRecord last;
        synchronized (SEEN) {
            last = SEEN.get(SEEN.size() - 1);
        }
        String clusterA;
        try (GatewayClient c = GATEWAY.client()) {
            clusterA = c.action("subscription-describe", ChannelRequest.newBuilder().setChannel(CHANNEL).build(), ChannelInfo.parser()).getClusterId();
        }
        String clusterB = "cluster-b-" + System.nanoTime();
        GATEWAY.restart(wh -> {
            try {
                Files.write(wh.resolve("cluster-id"), (clusterB + "\n").getBytes(StandardCharsets.UTF_8));
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
        });
        PG.sql("INSERT INTO shop.orders SELECT g, g FROM generate_series(1006, 1008) g");

        JobClient second = collect(cluster, savepoint, "dts restored on cluster B");
        assertThatThrownBy(() -> second.getJobExecutionResult().get(2, TimeUnit.MINUTES))
                .isInstanceOf(ExecutionException.class)
                .satisfies(e -> assertThat(ExceptionUtils.stringifyException(e))
                        .contains("Cluster changed from " + clusterA + " to " + clusterB + ", consumer require restart"));

        SeekResponse expected;
        try (GatewayClient c = GATEWAY.client()) {
            expected = c.action("subscription-seek", SeekRequest.newBuilder().setChannel(CHANNEL)
                    .setCredentials(ConsumerCredentials.newBuilder().setGroup("g_cluster").setUser("u_g_cluster").setPassword("pw"))
                    .setTimestampMs(last.getSourceTimestampMs()).build(), SeekResponse.parser());
        }
        assertThat(expected.getClusterId()).isEqualTo(clusterB);
        SEEN.clear();
        JobClient third = collect(cluster, savepoint, "dts restarted on cluster B");
        try {
            await("insert 1008 after the re-seek", () -> sawInsert(1008), 120_000);
        } finally {
            cancelAndWait(third);
        }
        DtsRecord firstAfter = SEEN.get(0);
        assertThat(firstAfter.getId()).as("re-seek by the time of %s", last).isEqualTo(expected.getId());
        assertThat(firstAfter.getSourceTimestampMs()).isGreaterThanOrEqualTo(last.getSourceTimestampMs());
        for (int k = 1006; k <= 1008; k++) {
            assertThat(sawInsert(k)).as("insert %d", k).isTrue();
        }
    }
}
