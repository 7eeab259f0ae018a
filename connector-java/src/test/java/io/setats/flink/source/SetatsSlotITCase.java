package io.setats.flink.source;

import io.setats.flink.SetatsConnectorOptions.StartupMode;
import io.setats.flink.client.GatewayClient;
import io.setats.flink.source.deserializer.SetatsDeserializationSchema;
import io.setats.flink.testutils.ChangelogReader;
import io.setats.flink.testutils.SetatsGatewayProcess;
import io.setats.proto.v1.ListSlotsResponse;
import io.setats.proto.v1.ProgressRow;
import io.setats.proto.v1.SlotInfo;
import io.setats.proto.v1.SlotRequest;
import io.setats.proto.v1.SlotStatus;

import org.apache.flink.api.common.JobStatus;
import org.apache.flink.api.common.eventtime.WatermarkStrategy;
import org.apache.flink.api.common.functions.MapFunction;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.core.execution.JobClient;
import org.apache.flink.runtime.minicluster.MiniCluster;
import org.apache.flink.runtime.state.FunctionInitializationContext;
import org.apache.flink.runtime.state.FunctionSnapshotContext;
import org.apache.flink.runtime.testutils.MiniClusterResourceConfiguration;
import org.apache.flink.streaming.api.checkpoint.CheckpointedFunction;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.functions.sink.v2.DiscardingSink;
import org.apache.flink.table.api.DataTypes;
import org.apache.flink.table.api.bridge.java.StreamTableEnvironment;
import org.apache.flink.table.data.RowData;
import org.apache.flink.table.types.logical.RowType;
import org.apache.flink.test.junit5.InjectMiniCluster;
import org.apache.flink.test.junit5.MiniClusterExtension;
import org.apache.flink.types.RowKind;
import org.apache.flink.util.CloseableIterator;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.function.Predicate;
import java.util.stream.Collectors;

import static io.setats.flink.source.BinlogJobs.awaitCheckpointProgress;
import static io.setats.flink.source.BinlogJobs.awaitTerminal;
import static io.setats.flink.source.BinlogJobs.env;
import static io.setats.flink.source.BinlogJobs.progress;
import static io.setats.flink.source.BinlogJobs.take;
import static io.setats.flink.source.SourceTestTables.KV;
import static io.setats.flink.source.SourceTestTables.awaitOpenChangelogStreams;
import static io.setats.flink.source.SourceTestTables.create;
import static io.setats.flink.source.SourceTestTables.insert;
import static io.setats.flink.source.SourceTestTables.intKeysInBucket;
import static io.setats.flink.source.SourceTestTables.row;
import static io.setats.flink.source.SourceTestTables.spec;
import static io.setats.flink.source.SourceTestTables.write;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * Slots of {@code setats-cdc} (SPEC sections 8-9, binlog-cases S1-S6, S10 and the seed's orders
 * example) in Flink jobs on a MiniCluster against a real gateway: sync points registered only when
 * a checkpoint completes (a failure after snapshotState and before notifyCheckpointComplete loses
 * nothing), restart order (slot over mode), one owner per slot, TTL expiry, a lost slot, two
 * slots with consume-then-clean, idle
 * buckets whose lag reads 0, progress figures, and the seed's SQL job.
 */
@Timeout(value = 300, unit = TimeUnit.SECONDS)
class SetatsSlotITCase {

    /** Retention (TTL, lost slots, cleaning) runs every 100 ms. */
    @RegisterExtension
    static final SetatsGatewayProcess GATEWAY = new SetatsGatewayProcess("--retention-interval", "100ms");

    @RegisterExtension
    static final MiniClusterExtension MINI_CLUSTER =
            new MiniClusterExtension(
                    new MiniClusterResourceConfiguration.Builder()
                            .setNumberTaskManagers(1)
                            .setNumberSlotsPerTaskManager(4)
                            .build());

    private static final String DB = "slotdb";

    private static void createTable(String table, int buckets, Map<String, String> options) {
        try (GatewayClient c = GATEWAY.client()) {
            create(c, spec(DB, table, KV, Collections.singletonList("id"), Collections.emptyList(), buckets, options));
        }
    }

    private static void put(String table, RowData... rows) throws InterruptedException {
        try (GatewayClient c = GATEWAY.client()) {
            write(c, DB, table, KV, Arrays.asList(rows));
        }
    }

    private static SetatsCdcSource<String> source(String table, StartupMode mode, String slot, int syncPointSize) {
        return SetatsCdcSource.builder()
                .setManagerUrl(GATEWAY.managerUrl())
                .setWarehouse(GATEWAY.warehouseUri())
                .setCatalog("hadoop", "setats", null)
                .setTable(DB, table)
                .setReadType(KV)
                .setStartupMode(mode)
                .setSlotName(slot)
                .setSyncPointSize(syncPointSize)
                .setDeserializer(SetatsDeserializationSchema.of(r -> BinlogJobs.kv(r.row()), Types.STRING))
                .build();
    }

    private static SlotInfo slot(String table, String slot) {
        try (GatewayClient c = GATEWAY.client()) {
            ListSlotsResponse all =
                    c.action("binlog-slots", SlotRequest.newBuilder().setDatabase(DB).setTable(table).build(),
                            ListSlotsResponse.parser());
            return all.getSlotsList().stream().filter(s -> s.getName().equals(slot)).findFirst().orElse(null);
        }
    }

    private static List<ProgressRow> running(String table, String slot) {
        return progress(GATEWAY, DB, table, slot).stream().filter(r -> !r.getCheckpoint()).collect(Collectors.toList());
    }

    private static void awaitRunning(String table, String slot, long offset) throws InterruptedException {
        long deadline = System.currentTimeMillis() + BinlogJobs.DEADLINE_S * 1000;
        Predicate<List<ProgressRow>> ok = rows -> !rows.isEmpty() && rows.get(0).getConsumedOffset() == offset;
        while (!ok.test(running(table, slot)) && System.currentTimeMillis() < deadline) {
            Thread.sleep(20);
        }
        assertThat(running(table, slot)).as("running points of %s", slot).isNotEmpty();
        assertThat(running(table, slot).get(0).getConsumedOffset()).as("running point of %s", slot).isEqualTo(offset);
    }

    /**
     * Triggers checkpoints of {@code job} until the slot's checkpoint progress satisfies {@code ok}
     * (the registration follows each completed checkpoint asynchronously; a checkpoint may also
     * come before a split was assigned). Returns the last rows seen.
     */
    private static List<ProgressRow> checkpointUntil(
            MiniCluster cluster, JobClient job, String table, String slot, Predicate<List<ProgressRow>> ok)
            throws Exception {
        long deadline = System.currentTimeMillis() + BinlogJobs.DEADLINE_S * 1000;
        List<ProgressRow> rows = BinlogJobs.checkpointProgress(GATEWAY, DB, table, slot);
        while (!ok.test(rows) && System.currentTimeMillis() < deadline) {
            cluster.triggerCheckpoint(job.getJobID()).get(60, TimeUnit.SECONDS);
            long until = System.currentTimeMillis() + 2_000;
            do {
                Thread.sleep(50);
                rows = BinlogJobs.checkpointProgress(GATEWAY, DB, table, slot);
            } while (!ok.test(rows) && System.currentTimeMillis() < until);
        }
        return rows;
    }

    private static long checkpointPoint(String table, String slot) {
        return BinlogJobs.checkpointProgress(GATEWAY, DB, table, slot).get(0).getConsumedOffset();
    }

    /** A step of a test run while a job runs. */
    interface JobStep {
        void run(JobClient job) throws Exception;
    }

    /**
     * Runs a job on {@code slot} (earliest, a running sync point per row) behind a {@link
     * FailingSnapshot} map: {@code whileRunning}, then, once the source emitted up to offset
     * {@code emitted}, a checkpoint whose snapshotState runs in the source and fails in the map, so
     * it never completes and the job fails. Returns when no changelog stream is left open.
     */
    private static void failAfterTheSourceSnapshot(
            MiniCluster cluster, String table, String slot, long emitted, JobStep whileRunning) throws Exception {
        StreamExecutionEnvironment env = env(cluster, 1, null, false);
        env.enableCheckpointing(3_600_000); // only the checkpoints the test triggers
        env.fromSource(source(table, StartupMode.EARLIEST, slot, 1), WatermarkStrategy.noWatermarks(), table)
                .map(new FailingSnapshot())
                .disableChaining() // its snapshot runs after the source's, in another task
                .sinkTo(new DiscardingSink<>());
        JobClient job = env.executeAsync(table + " first run");
        try {
            whileRunning.run(job);
            awaitRunning(table, slot, emitted); // the source emitted them
            FailingSnapshot.failNext = true;
            assertThatThrownBy(() -> cluster.triggerCheckpoint(job.getJobID()).get(60, TimeUnit.SECONDS));
            assertThat(awaitTerminal(job)).isEqualTo(JobStatus.FAILED);
        } finally {
            FailingSnapshot.failNext = false;
            if (!job.getJobStatus().get(60, TimeUnit.SECONDS).isGloballyTerminalState()) {
                job.cancel().get(60, TimeUnit.SECONDS);
                awaitTerminal(job);
            }
        }
        awaitOpenChangelogStreams(GATEWAY, 0);
    }

    @AfterEach
    void noStreamLeftOpen() throws Exception {
        awaitOpenChangelogStreams(GATEWAY, 0);
    }

    /** Fails its snapshotState once when told: a failure after the source's snapshot, before completion. */
    static final class FailingSnapshot implements MapFunction<String, String>, CheckpointedFunction {
        static volatile boolean failNext;

        @Override
        public String map(String s) {
            return s;
        }

        @Override
        public void snapshotState(FunctionSnapshotContext context) {
            if (failNext) {
                failNext = false;
                throw new IllegalStateException("injected failure after the source's snapshotState");
            }
        }

        @Override
        public void initializeState(FunctionInitializationContext context) {}
    }

    /**
     * S1 and S2 (flink-cdc #2538 kind): checkpoint 1 completes at offset 2; rows 3 and 4 are read
     * and checkpoint 2's snapshotState runs in the source, then the job fails before checkpoint 2
     * completes. The slot's checkpoint point stays 2 (a registration in snapshotState would have
     * moved it to 4 and the restart would lose rows 3 and 4). A new job without Flink state,
     * started 'earliest' on the slot, reads exactly from 2: the slot wins over the mode, the row at
     * the restored position comes once, nothing before it repeats.
     */
    @Test
    void syncPointsMoveOnlyWhenTheCheckpointCompletes(@InjectMiniCluster MiniCluster cluster) throws Exception {
        createTable("s1", 1, Collections.emptyMap());
        put("s1", insert(1, "a"), insert(2, "b"));
        failAfterTheSourceSnapshot(cluster, "s1", "s1", 4, job1 -> {
            awaitRunning("s1", "s1", 2); // both rows emitted
            List<ProgressRow> p = checkpointUntil(cluster, job1, "s1", "s1",
                    rows -> rows.size() == 1 && rows.get(0).getConsumedOffset() == 2);
            assertThat(p.get(0).getConsumedOffset()).isEqualTo(2);
            put("s1", insert(3, "c"), insert(4, "d"));
        });
        assertThat(checkpointPoint("s1", "s1")).as("checkpoint 2 never completed").isEqualTo(2);

        put("s1", insert(5, "e"));
        try (CloseableIterator<String> it2 =
                env(cluster, 1, null, false)
                        .fromSource(source("s1", StartupMode.EARLIEST, "s1", 1), WatermarkStrategy.noWatermarks(), "s1")
                        .executeAndCollect("s1 restarted from the slot")) {
            assertThat(take(it2, 3)).containsExactly("+I[3, c]", "+I[4, d]", "+I[5, e]");
        }
    }

    /** S3: one running job per slot; a second one fails naming the slot and the owner's job id. */
    @Test
    void aSecondJobOnAnOwnedSlotFails(@InjectMiniCluster MiniCluster cluster) throws Exception {
        createTable("s3", 1, Collections.emptyMap());
        StreamExecutionEnvironment a = env(cluster, 1, null, false);
        a.fromSource(source("s3", StartupMode.LATEST, "shared", 5000), WatermarkStrategy.noWatermarks(), "a")
                .sinkTo(new DiscardingSink<>());
        JobClient jobA = a.executeAsync("s3 A");
        try {
            awaitOpenChangelogStreams(GATEWAY, 1); // A owns the slot
            assertThat(slot("s3", "shared").getOwner()).isEqualTo(jobA.getJobID().toString());
            StreamExecutionEnvironment b = env(cluster, 1, null, false);
            b.fromSource(source("s3", StartupMode.LATEST, "shared", 5000), WatermarkStrategy.noWatermarks(), "b")
                    .sinkTo(new DiscardingSink<>());
            JobClient jobB = b.executeAsync("s3 B");
            assertThatThrownBy(() -> jobB.getJobExecutionResult().get(120, TimeUnit.SECONDS))
                    .hasStackTraceContaining("slot 'shared'")
                    .hasStackTraceContaining("owned by job " + jobA.getJobID());
            assertThat(jobA.getJobStatus().get(60, TimeUnit.SECONDS)).isEqualTo(JobStatus.RUNNING);
        } finally {
            jobA.cancel().get(60, TimeUnit.SECONDS);
            awaitTerminal(jobA);
        }
        // Cancelled, A released the slot when its enumerator closed: the owner is gone without
        // waiting for the 60 s lease.
        long deadline = System.currentTimeMillis() + 30_000;
        while (!slot("s3", "shared").getOwner().isEmpty() && System.currentTimeMillis() < deadline) {
            Thread.sleep(50);
        }
        assertThat(slot("s3", "shared").getOwner()).isEmpty();
    }

    /**
     * S4: a slot whose checkpoint point did not move for slot.ttl expires; a job on it fails naming
     * the slot and saying how to start over, and startup.mode = initial starts it over.
     */
    @Test
    void anExpiredSlotFailsUntilInitialStartsItOver(@InjectMiniCluster MiniCluster cluster) throws Exception {
        java.util.Map<String, String> options = new java.util.HashMap<>();
        options.put("slot.ttl", "2s");
        options.put("changelog.clean-on-consume", "true");
        createTable("s4", 1, options);
        put("s4", insert(1, "a"));
        // A job's first steps, done through the actions so that the 2 s TTL does not race a
        // loaded machine: acquire, one checkpoint sync point, stop (release).
        try (GatewayClient c = GATEWAY.client()) {
            c.action("binlog-acquire-slot", io.setats.proto.v1.AcquireSlotRequest.newBuilder().setDatabase(DB).setTable("s4")
                    .setSlot("s4slot").setOwner("job-1").build(), SlotInfo.parser());
            c.action("binlog-register-sync-point", io.setats.proto.v1.RegisterSyncPointRequest.newBuilder().setDatabase(DB)
                    .setTable("s4").setSlot("s4slot").setOwner("job-1").setCheckpoint(true)
                    .addPoints(io.setats.proto.v1.SyncPointPosition.newBuilder().setBucket(0).setOffset(1)).build(),
                    SlotInfo.parser());
            c.action("binlog-release-slot", SlotRequest.newBuilder().setDatabase(DB).setTable("s4").setSlot("s4slot")
                    .setOwner("job-1").build(), io.setats.proto.v1.Empty.parser());
        }
        long createdBefore = slot("s4", "s4slot").getCreatedAtMs();

        long deadline = System.currentTimeMillis() + BinlogJobs.DEADLINE_S * 1000;
        while (slot("s4", "s4slot").getStatus() != SlotStatus.SLOT_EXPIRED && System.currentTimeMillis() < deadline) {
            Thread.sleep(100);
        }
        assertThat(slot("s4", "s4slot").getStatus()).isEqualTo(SlotStatus.SLOT_EXPIRED);

        StreamExecutionEnvironment second = env(cluster, 1, null, false);
        second.fromSource(source("s4", StartupMode.LATEST, "s4slot", 5000), WatermarkStrategy.noWatermarks(), "s4")
                .sinkTo(new DiscardingSink<>());
        JobClient job2 = second.executeAsync("s4 on the expired slot");
        assertThatThrownBy(() -> job2.getJobExecutionResult().get(120, TimeUnit.SECONDS))
                .hasStackTraceContaining("s4slot")
                .hasStackTraceContaining("expired")
                .hasStackTraceContaining("initial");

        try (CloseableIterator<String> it =
                env(cluster, 1, null, false)
                        .fromSource(source("s4", StartupMode.INITIAL, "s4slot", 5000), WatermarkStrategy.noWatermarks(), "s4")
                        .executeAndCollect("s4 started over")) {
            assertThat(take(it, 1)).containsExactly("+I[1, a]"); // the snapshot: the slot started over
            assertThat(slot("s4", "s4slot").getCreatedAtMs()).as("the slot was reset").isGreaterThan(createdBefore);
        }
    }

    /** S5: retention removed rows a stopped slot needed (offset 1): it is lost, and a restart names slot, bucket and the lost range [1, 2). */
    @Test
    void aLostSlotFailsNamingTheBucketAndTheLostOffsets(@InjectMiniCluster MiniCluster cluster) throws Exception {
        createTable("s5", 1, Collections.singletonMap("changelog.retention.ms", "1000"));
        put("s5", insert(0, "z")); // offset 0: the bucket exists; the 'latest' job starts at 1
        StreamExecutionEnvironment first = env(cluster, 1, null, false);
        first.enableCheckpointing(3_600_000);
        first.fromSource(source("s5", StartupMode.LATEST, "s5slot", 5000), WatermarkStrategy.noWatermarks(), "s5")
                .sinkTo(new DiscardingSink<>());
        JobClient job1 = first.executeAsync("s5 first run");
        try {
            awaitOpenChangelogStreams(GATEWAY, 1);
            checkpointUntil(cluster, job1, "s5", "s5slot", rows -> !rows.isEmpty() && rows.get(0).getRegistered());
            assertThat(checkpointPoint("s5", "s5slot")).isEqualTo(1);
        } finally {
            job1.cancel().get(60, TimeUnit.SECONDS);
            awaitTerminal(job1);
        }
        awaitOpenChangelogStreams(GATEWAY, 0);

        put("s5", insert(1, "a")); // offset 1, removed by retention after 1 s
        long deadline = System.currentTimeMillis() + BinlogJobs.DEADLINE_S * 1000;
        while (slot("s5", "s5slot").getStatus() != SlotStatus.SLOT_LOST && System.currentTimeMillis() < deadline) {
            Thread.sleep(100);
        }
        assertThat(slot("s5", "s5slot").getStatus()).isEqualTo(SlotStatus.SLOT_LOST);

        StreamExecutionEnvironment second = env(cluster, 1, null, false);
        second.fromSource(source("s5", StartupMode.LATEST, "s5slot", 5000), WatermarkStrategy.noWatermarks(), "s5")
                .sinkTo(new DiscardingSink<>());
        JobClient job2 = second.executeAsync("s5 on the lost slot");
        assertThatThrownBy(() -> job2.getJobExecutionResult().get(120, TimeUnit.SECONDS))
                .hasStackTraceContaining("OUT_OF_RANGE")
                .hasStackTraceContaining("s5slot")
                .hasStackTraceContaining("bucket 0")
                .hasStackTraceContaining("[1, 2)");
    }

    /**
     * S1 as binlog-cases.txt writes it: the reader (slot s1, earliest) emits +I(1,'a') +I(2,'b'),
     * snapshotState runs, and the job fails before that checkpoint completes, so no checkpoint ever
     * completed: the slot's checkpoint point stays 0. +I(3,'c') is written and a reader on s1
     * restarts with no Flink state and the default mode ('latest'): the slot's point 0 wins, so it
     * replays +I(1,'a') +I(2,'b') and reads +I(3,'c'), nothing lost.
     */
    @Test
    void s1AFailureBeforeTheFirstCheckpointCompletesReplaysFromPointZero(@InjectMiniCluster MiniCluster cluster)
            throws Exception {
        createTable("s1case", 1, Collections.emptyMap());
        put("s1case", insert(1, "a"), insert(2, "b"));
        failAfterTheSourceSnapshot(cluster, "s1case", "s1", 2, job1 -> {});
        assertThat(checkpointPoint("s1case", "s1")).as("progress s1: checkpoint point unchanged").isEqualTo(0);

        put("s1case", insert(3, "c"));
        try (CloseableIterator<String> it2 =
                env(cluster, 1, null, false)
                        .fromSource(source("s1case", StartupMode.LATEST, "s1", 5000), WatermarkStrategy.noWatermarks(), "s1")
                        .executeAndCollect("S1 restarted from the slot")) {
            assertThat(take(it2, 3)).containsExactly("+I[1, a]", "+I[2, b]", "+I[3, c]");
        }
    }

    /**
     * S2 as binlog-cases.txt writes it: the reader (slot s1, earliest) emits +I(1,'a') +I(2,'b'),
     * checkpoint 1 completes, the job is cancelled; +I(3,'c') is written and the reader restarts on
     * s1 with mode earliest: the slot wins over the mode, it reads +I(3,'c') only (no repeat of
     * offset 1, no skip of offset 2).
     */
    @Test
    void s2ARestartFromTheSlotResumesExactlyAfterTheCommittedPoint(@InjectMiniCluster MiniCluster cluster)
            throws Exception {
        createTable("s2case", 1, Collections.emptyMap());
        put("s2case", insert(1, "a"), insert(2, "b"));
        StreamExecutionEnvironment first = env(cluster, 1, null, false);
        first.enableCheckpointing(3_600_000); // only the checkpoints triggered below
        first.fromSource(source("s2case", StartupMode.EARLIEST, "s1", 1), WatermarkStrategy.noWatermarks(), "s1")
                .sinkTo(new DiscardingSink<>());
        JobClient job1 = first.executeAsync("S2 first run");
        try {
            awaitRunning("s2case", "s1", 2); // both rows emitted
            List<ProgressRow> p = checkpointUntil(cluster, job1, "s2case", "s1",
                    rows -> rows.size() == 1 && rows.get(0).getRegistered() && rows.get(0).getConsumedOffset() == 2);
            assertThat(p.get(0).getConsumedOffset()).isEqualTo(2);
        } finally {
            job1.cancel().get(60, TimeUnit.SECONDS);
            awaitTerminal(job1);
        }
        awaitOpenChangelogStreams(GATEWAY, 0);

        put("s2case", insert(3, "c"));
        try (CloseableIterator<String> it2 =
                env(cluster, 1, null, false)
                        .fromSource(source("s2case", StartupMode.EARLIEST, "s1", 5000), WatermarkStrategy.noWatermarks(), "s1")
                        .executeAndCollect("S2 restarted from the slot")) {
            // One bucket, offset order: a repeat of offset 0 or 1 would come first.
            assertThat(take(it2, 1)).containsExactly("+I[3, c]");
        }
    }

    /**
     * S5 as binlog-cases.txt writes it: slot s1 at offset 0 (checkpointed), stopped; +I(1,'a') is
     * written (offset 0) and retention removes it; the reader restarted on s1 fails naming s1,
     * bucket 0 and the lost offsets [0, 1).
     */
    @Test
    void s5ALaggingSlotAtOffsetZeroIsLostLoudly(@InjectMiniCluster MiniCluster cluster) throws Exception {
        createTable("s5case", 1, Collections.singletonMap("changelog.retention.ms", "1000"));
        // A job's first steps on an empty table, through the actions (a job on an empty bucket has
        // no split to checkpoint): acquire, checkpoint sync point 0, stop (release).
        try (GatewayClient c = GATEWAY.client()) {
            c.action("binlog-acquire-slot", io.setats.proto.v1.AcquireSlotRequest.newBuilder().setDatabase(DB).setTable("s5case")
                    .setSlot("s1").setOwner("job-1").build(), SlotInfo.parser());
            c.action("binlog-register-sync-point", io.setats.proto.v1.RegisterSyncPointRequest.newBuilder().setDatabase(DB)
                    .setTable("s5case").setSlot("s1").setOwner("job-1").setCheckpoint(true)
                    .addPoints(io.setats.proto.v1.SyncPointPosition.newBuilder().setBucket(0).setOffset(0)).build(),
                    SlotInfo.parser());
            c.action("binlog-release-slot", SlotRequest.newBuilder().setDatabase(DB).setTable("s5case").setSlot("s1")
                    .setOwner("job-1").build(), io.setats.proto.v1.Empty.parser());
        }
        put("s5case", insert(1, "a")); // offset 0, removed by retention after 1 s
        assertThat(checkpointPoint("s5case", "s1")).as("s1 at offset 0").isEqualTo(0);
        long deadline = System.currentTimeMillis() + BinlogJobs.DEADLINE_S * 1000;
        while (slot("s5case", "s1").getStatus() != SlotStatus.SLOT_LOST && System.currentTimeMillis() < deadline) {
            Thread.sleep(100);
        }
        assertThat(slot("s5case", "s1").getStatus()).isEqualTo(SlotStatus.SLOT_LOST);

        StreamExecutionEnvironment second = env(cluster, 1, null, false);
        second.fromSource(source("s5case", StartupMode.LATEST, "s1", 5000), WatermarkStrategy.noWatermarks(), "s1")
                .sinkTo(new DiscardingSink<>());
        JobClient job2 = second.executeAsync("S5 on the lost slot");
        assertThatThrownBy(() -> job2.getJobExecutionResult().get(120, TimeUnit.SECONDS))
                .hasStackTraceContaining("OUT_OF_RANGE")
                .hasStackTraceContaining("\"s1\"")
                .hasStackTraceContaining("bucket 0")
                .hasStackTraceContaining("[0, 1)");
    }

    /**
     * Idle buckets commit their end offset: 4 buckets with rows, a 'latest' job whose splits never
     * emit a row, then rows in bucket 0 only: after checkpoints every bucket's checkpoint point is
     * registered at its end, unconsumed rows and lag read 0 (a reader that registered only the
     * buckets that emitted would leave three buckets unregistered).
     */
    @Test
    void idleBucketsCommitTheirEndOffsetSoLagReadsZero(@InjectMiniCluster MiniCluster cluster) throws Exception {
        createTable("idle", 4, Collections.emptyMap());
        List<RowData> rows = new ArrayList<>();
        for (int b = 0; b < 4; b++) {
            for (int k : intKeysInBucket(KV, "id", 4, b, 0, 2)) {
                rows.add(insert(k, "v"));
            }
        }
        put("idle", rows.toArray(new RowData[0]));
        StreamExecutionEnvironment env = env(cluster, 2, null, false);
        env.enableCheckpointing(3_600_000);
        env.fromSource(source("idle", StartupMode.LATEST, "idleslot", 5000), WatermarkStrategy.noWatermarks(), "idle")
                .map(new BinlogJobs.Count("idle")).returns(Types.STRING)
                .sinkTo(new DiscardingSink<>());
        JobClient job = env.executeAsync("idle");
        Predicate<List<ProgressRow>> caughtUp =
                l -> l.size() == 4 && l.stream().allMatch(r -> r.getRegistered() && r.getUnconsumed() == 0);
        try {
            awaitOpenChangelogStreams(GATEWAY, 4);
            List<ProgressRow> p = checkpointUntil(cluster, job, "idle", "idleslot", caughtUp);
            assertThat(p).as("4 idle buckets registered at their end").hasSize(4).allMatch(r -> r.getRegistered()
                    && r.getConsumedOffset() == 2 && r.getUnconsumed() == 0 && r.getLagMs() == 0);

            List<RowData> more = new ArrayList<>();
            for (int k : intKeysInBucket(KV, "id", 4, 0, 1000, 5)) {
                more.add(insert(k, "w"));
            }
            put("idle", more.toArray(new RowData[0]));
            BinlogJobs.awaitCount("idle", 5);
            p = checkpointUntil(cluster, job, "idle", "idleslot",
                    l -> caughtUp.test(l) && l.stream().anyMatch(r -> r.getBucket() == 0 && r.getConsumedOffset() == 7));
            assertThat(p).hasSize(4);
            for (ProgressRow r : p) {
                assertThat(r.getRegistered()).as("bucket %d registered", r.getBucket()).isTrue();
                assertThat(r.getConsumedOffset()).isEqualTo(r.getEndOffset()).isEqualTo(r.getBucket() == 0 ? 7 : 2);
                assertThat(r.getUnconsumed()).isZero();
                assertThat(r.getLagMs()).as("lag of bucket %d", r.getBucket()).isZero();
            }
        } finally {
            job.cancel().get(60, TimeUnit.SECONDS);
            awaitTerminal(job);
        }
    }

    /** S10: 10 rows, 6 consumed at the last completed checkpoint: consumed 6, end 10, unconsumed 4. */
    @Test
    void progressShowsTheLastCompletedCheckpoint(@InjectMiniCluster MiniCluster cluster) throws Exception {
        createTable("s10", 1, Collections.emptyMap());
        List<RowData> six = new ArrayList<>();
        for (int k = 0; k < 6; k++) {
            six.add(insert(k, "v"));
        }
        put("s10", six.toArray(new RowData[0]));
        StreamExecutionEnvironment env = env(cluster, 1, null, false);
        env.enableCheckpointing(3_600_000);
        env.fromSource(source("s10", StartupMode.EARLIEST, "s10slot", 1), WatermarkStrategy.noWatermarks(), "s10")
                .sinkTo(new DiscardingSink<>());
        JobClient job = env.executeAsync("s10");
        try {
            awaitRunning("s10", "s10slot", 6);
            checkpointUntil(cluster, job, "s10", "s10slot", l -> !l.isEmpty() && l.get(0).getConsumedOffset() == 6);
            put("s10", insert(6, "v"), insert(7, "v"), insert(8, "v"), insert(9, "v"));
            awaitRunning("s10", "s10slot", 10);
            ProgressRow cp = BinlogJobs.checkpointProgress(GATEWAY, DB, "s10", "s10slot").get(0);
            assertThat(cp.getConsumedOffset()).isEqualTo(6);
            assertThat(cp.getEndOffset()).isEqualTo(10);
            assertThat(cp.getUnconsumed()).isEqualTo(4);
            assertThat(cp.getStatus()).isEqualTo(SlotStatus.SLOT_ACTIVE);
            assertThat(running("s10", "s10slot").get(0).getUnconsumed()).isZero();
        } finally {
            job.cancel().get(60, TimeUnit.SECONDS);
            awaitTerminal(job);
        }
    }

    /**
     * S6 in jobs: two jobs on two slots of one table with changelog.clean-on-consume; each write
     * is its own chunk. The slow job checkpoints at offset 2 and stops, the fast one checkpoints
     * at 4 and keeps running: cleaning removes [0, 2) (the slow slot's point) and nothing after,
     * and the slow job restarted on its slot reads exactly from 2 (a cleaner that went by the fast
     * slot would have removed rows 2 and 3 and lost the slow slot).
     */
    @Test
    void twoSlotsCleanOnConsumeKeepWhatTheSlowerSlotNeeds(@InjectMiniCluster MiniCluster cluster) throws Exception {
        createTable("s6", 1, Collections.singletonMap("changelog.clean-on-consume", "true"));
        put("s6", insert(1, "a"));
        put("s6", insert(2, "b"));
        StreamExecutionEnvironment slowEnv = env(cluster, 1, null, false);
        slowEnv.enableCheckpointing(3_600_000); // only the checkpoints triggered below
        slowEnv.fromSource(source("s6", StartupMode.EARLIEST, "slow", 1), WatermarkStrategy.noWatermarks(), "slow")
                .sinkTo(new DiscardingSink<>());
        JobClient slow = slowEnv.executeAsync("s6 slow");
        try {
            awaitRunning("s6", "slow", 2);
            checkpointUntil(cluster, slow, "s6", "slow", rows -> rows.size() == 1 && rows.get(0).getConsumedOffset() == 2);
        } finally {
            slow.cancel().get(60, TimeUnit.SECONDS);
            awaitTerminal(slow);
        }
        assertThat(checkpointPoint("s6", "slow")).isEqualTo(2);
        put("s6", insert(3, "c"));
        put("s6", insert(4, "d"));

        StreamExecutionEnvironment fastEnv = env(cluster, 1, null, false);
        fastEnv.enableCheckpointing(3_600_000);
        fastEnv.fromSource(source("s6", StartupMode.EARLIEST, "fast", 1), WatermarkStrategy.noWatermarks(), "fast")
                .sinkTo(new DiscardingSink<>());
        JobClient fast = fastEnv.executeAsync("s6 fast");
        try {
            awaitRunning("s6", "fast", 4);
            checkpointUntil(cluster, fast, "s6", "fast", rows -> rows.size() == 1 && rows.get(0).getConsumedOffset() == 4);
            assertThat(checkpointPoint("s6", "fast")).isEqualTo(4);
            // Retention runs every 100 ms: wait until it removed what both slots consumed.
            long deadline = System.currentTimeMillis() + BinlogJobs.DEADLINE_S * 1000;
            while (startOffset("s6") < 2 && System.currentTimeMillis() < deadline) {
                Thread.sleep(50);
            }
            assertThat(startOffset("s6")).as("oldest offset: [0, 2) consumed by both slots").isEqualTo(2);
        } finally {
            fast.cancel().get(60, TimeUnit.SECONDS);
            awaitTerminal(fast);
        }
        assertThat(startOffset("s6")).as("oldest offset: the slow slot still needs 2 and 3").isEqualTo(2);
        try (CloseableIterator<String> it =
                env(cluster, 1, null, false)
                        .fromSource(source("s6", StartupMode.EARLIEST, "slow", 1), WatermarkStrategy.noWatermarks(), "slow")
                        .executeAndCollect("s6 slow restarted from its slot")) {
            assertThat(take(it, 2)).containsExactly("+I[3, c]", "+I[4, d]");
        }
    }

    private static long startOffset(String table) {
        try (GatewayClient c = GATEWAY.client()) {
            return c.listBuckets(DB, table).getBuckets(0).getStartOffset();
        }
    }

    /**
     * The seed's orders example as Setats DDL: flink_orders_source (setats-cdc, slot.name,
     * startup.mode initial) into flink_orders_sink; the seed's INSERT, DELETE, INSERT, UPDATE give
     * +I, -D, +I, -U/+U in orders_sink, and the progress shows the slot caught up.
     */
    @Test
    void seedOrdersExample(@InjectMiniCluster MiniCluster cluster) throws Exception {
        RowType orders =
                (RowType)
                        DataTypes.ROW(
                                        DataTypes.FIELD("c1", DataTypes.INT().notNull()),
                                        DataTypes.FIELD("c2", DataTypes.INT()),
                                        DataTypes.FIELD("c3", DataTypes.INT()))
                                .getLogicalType();
        try (GatewayClient c = GATEWAY.client()) {
            create(c, spec("shop", "orders_source", orders, Collections.singletonList("c1"), Collections.emptyList(), 2,
                    Collections.emptyMap()));
        }
        StreamExecutionEnvironment env = env(cluster, 1, null, false);
        env.enableCheckpointing(200);
        StreamTableEnvironment tEnv = StreamTableEnvironment.create(env);
        String common = "'manager-url' = '" + GATEWAY.managerUrl() + "', 'warehouse' = '" + GATEWAY.warehouseUri()
                + "', 'catalog-type' = 'hadoop', 'catalog-name' = 'setats', 'catalog-database' = 'shop'";
        tEnv.executeSql("CREATE TABLE flink_orders_source (c1 INT, c2 INT, c3 INT, PRIMARY KEY (c1) NOT ENFORCED) WITH ("
                + "'connector' = 'setats-cdc', " + common + ", 'catalog-table' = 'orders_source', "
                + "'slot.name' = 'flink_slot_1', 'startup.mode' = 'initial')");
        tEnv.executeSql("CREATE TABLE flink_orders_sink (c1 INT, c2 INT, c3 INT, PRIMARY KEY (c1) NOT ENFORCED) WITH ("
                + "'connector' = 'setats', " + common + ", 'catalog-table' = 'orders_sink', 'bucket' = '2', "
                + "'setats.sink.flush-interval' = '50ms')");
        org.apache.flink.table.api.TableResult job = tEnv.executeSql("INSERT INTO flink_orders_sink SELECT * FROM flink_orders_source");
        try {
            // The table is empty: its buckets have no rows yet, so the job finds them (NEW_BUCKET,
            // read from their first row) as the DML below arrives.
            String[][] steps = {
                {"+I", "100", "1", "1"}, {"-D", "100", "1", "1"}, {"+I", "200", "1", "1"}, {"+I", "200", "2", "1"}
            };
            List<String> expected = Arrays.asList("+I[100, 1, 1]", "-D[100, 1, 1]", "+I[200, 1, 1]", "-U[200, 1, 1]", "+U[200, 2, 1]");
            int[] sinkRowsAfter = {1, 2, 3, 5};
            for (int i = 0; i < steps.length; i++) {
                String[] s = steps[i];
                RowKind kind = s[0].equals("-D") ? RowKind.DELETE : RowKind.INSERT;
                try (GatewayClient c = GATEWAY.client()) {
                    write(c, "shop", "orders_source", orders, Collections.singletonList(
                            row(kind, Integer.parseInt(s[1]), Integer.parseInt(s[2]), Integer.parseInt(s[3]))));
                }
                awaitSinkRows(sinkRowsAfter[i]);
            }
            List<String> sink = new ArrayList<>();
            try (GatewayClient c = GATEWAY.client()) {
                ChangelogReader.readAll(c, "shop", "orders_sink").forEach(r -> sink.add(r.toString()));
            }
            assertThat(sink).containsExactlyInAnyOrderElementsOf(expected);
            List<ProgressRow> p = awaitCheckpointProgress(GATEWAY, "shop", "orders_source", "flink_slot_1",
                    l -> !l.isEmpty() && l.stream().allMatch(r -> r.getRegistered() && r.getUnconsumed() == 0));
            assertThat(p).isNotEmpty().allMatch(r -> r.getRegistered() && r.getUnconsumed() == 0);
        } finally {
            job.getJobClient().get().cancel().get(60, TimeUnit.SECONDS);
            awaitTerminal(job.getJobClient().get());
        }
    }

    private static void awaitSinkRows(int n) throws InterruptedException {
        long deadline = System.currentTimeMillis() + BinlogJobs.DEADLINE_S * 1000;
        while (System.currentTimeMillis() < deadline) {
            try (GatewayClient c = GATEWAY.client()) {
                if (c.getTable("shop", "orders_sink").isPresent()
                        && ChangelogReader.readAll(c, "shop", "orders_sink").size() >= n) {
                    return;
                }
            }
            Thread.sleep(50);
        }
        throw new AssertionError("orders_sink did not reach " + n + " changelog rows");
    }
}
