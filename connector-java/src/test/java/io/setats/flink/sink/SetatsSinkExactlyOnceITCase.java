package io.setats.flink.sink;

import io.setats.flink.SetatsConnectorOptions.MergeEngine;
import io.setats.flink.client.GatewayClient;
import io.setats.flink.testutils.ChangelogReader;
import io.setats.flink.testutils.ChangelogReader.ChangelogRow;
import io.setats.flink.testutils.SetatsGatewayProcess;
import io.setats.proto.v1.Column;
import io.setats.proto.v1.TableSpec;

import org.apache.flink.api.common.functions.MapFunction;
import org.apache.flink.api.common.restartstrategy.RestartStrategies;
import org.apache.flink.api.common.state.ListState;
import org.apache.flink.api.common.state.ListStateDescriptor;
import org.apache.flink.api.common.time.Time;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.api.common.state.CheckpointListener;
import org.apache.flink.connector.base.DeliveryGuarantee;
import org.apache.flink.runtime.minicluster.MiniCluster;
import org.apache.flink.runtime.state.FunctionInitializationContext;
import org.apache.flink.runtime.state.FunctionSnapshotContext;
import org.apache.flink.runtime.testutils.MiniClusterResourceConfiguration;
import org.apache.flink.streaming.api.checkpoint.CheckpointedFunction;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.functions.source.SourceFunction;
import org.apache.flink.table.api.ValidationException;
import org.apache.flink.table.data.GenericRowData;
import org.apache.flink.table.data.RowData;
import org.apache.flink.table.data.StringData;
import org.apache.flink.table.runtime.typeutils.InternalTypeInfo;
import org.apache.flink.table.types.logical.IntType;
import org.apache.flink.table.types.logical.LogicalType;
import org.apache.flink.table.types.logical.RowType;
import org.apache.flink.table.types.logical.VarCharType;
import org.apache.flink.test.junit5.InjectMiniCluster;
import org.apache.flink.test.junit5.MiniClusterExtension;
import org.apache.flink.types.RowKind;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * Delivery guarantees of the {@code setats} sink (SPEC section 10, cases X1-X4) on a MiniCluster
 * against a real gateway.
 *
 * <p>Exactly-once: a deterministic source of upserts (updates of the same keys and deletes) that
 * emits one chunk of rows per checkpoint (it waits for the checkpoint after a chunk to complete
 * before it emits the next, so each checkpoint holds exactly one chunk) runs once without
 * failures and once with failures injected at seeded random points: a failing map operator, a
 * writer failing right after {@code prepareCommit} (the checkpoint never completes), a committer
 * failing before and after its commit (the restore commits again), and a SIGKILL + restart of the
 * gateway. Both runs' changelogs must be equal per bucket, row for row (kinds and values; offsets
 * and timestamps ignored), for both merge engines, and the staged rows of the checkpoints that
 * never completed must have been dropped (setats_staging_aborted_rows_total) without reaching the
 * changelog. A second faulty run terminates the TaskManager itself (and starts a new one) at a
 * record, between a writer's {@code prepareCommit} and the checkpoint's completion, and after a
 * commit.
 *
 * <p>At-least-once: a batch whose WriteAck is lost is resent after the reconnect and applied once.
 */
class SetatsSinkExactlyOnceITCase {

    @RegisterExtension static final SetatsGatewayProcess GATEWAY = new SetatsGatewayProcess();

    @RegisterExtension
    static final MiniClusterExtension MINI_CLUSTER =
            new MiniClusterExtension(
                    new MiniClusterResourceConfiguration.Builder()
                            .setNumberTaskManagers(1)
                            .setNumberSlotsPerTaskManager(4)
                            .build());

    private static final String DB = "eo";
    private static final int CHUNKS = 14;
    private static final int ROWS_PER_CHUNK = 40;
    private static final int KEYS = 30;
    private static final AtomicInteger TABLES = new AtomicInteger();

    private static final RowType ROW_TYPE =
            RowType.of(
                    new LogicalType[] {new IntType(false), new VarCharType(VarCharType.MAX_LENGTH)},
                    new String[] {"id", "v"});

    @AfterEach
    void resetHooks() {
        SetatsSinkTestHooks.reset();
        FailurePlan.current = null;
        TaskManagerKills.current = null;
    }

    // --------------------------------------------------------------------------------------------
    // Exactly-once: the changelog equals that of a run without failures
    // --------------------------------------------------------------------------------------------

    @ParameterizedTest
    @EnumSource(MergeEngine.class)
    void changelogEqualsFailureFreeRun(MergeEngine engine) throws Exception {
        String faulty = table("faulty_" + engine);
        Map<String, List<String>> expected = failureFreeChangelog(engine, "clean_", faulty);

        ChunkedSource.COMPLETED_CHUNKS.set(0);
        FailurePlan plan = new FailurePlan(new Random(engine.ordinal() * 31L + 7));
        FailurePlan.current = plan;
        SetatsSinkTestHooks.afterPrepareCommit = plan::afterPrepareCommit;
        SetatsSinkTestHooks.beforeCommit = plan::beforeCommit;
        SetatsSinkTestHooks.afterCommit = plan::afterCommit;
        Thread killer =
                new Thread(
                        () -> {
                            try {
                                // Once a few chunks are committed, crash the gateway.
                                while (ChunkedSource.COMPLETED_CHUNKS.get() < 4) {
                                    Thread.sleep(20);
                                }
                                GATEWAY.killAndRestart();
                                plan.gatewayKills.incrementAndGet();
                            } catch (Exception e) {
                                plan.killerError = e;
                            }
                        },
                        "gateway-killer");
        killer.setDaemon(true);
        killer.start();
        runChunkedJob(engine, faulty, DeliveryGuarantee.EXACTLY_ONCE);
        killer.join(60_000);
        assertThat(plan.killerError).isNull();

        assertThat(plan.gatewayKills.get()).isEqualTo(1);
        assertThat(plan.mapFailures.get()).as("failing map operator").isGreaterThan(0);
        assertThat(plan.prepareFailures.get()).as("failures after prepareCommit").isGreaterThan(0);
        assertThat(plan.commitFailures.get()).as("failures around commits").isGreaterThan(0);
        assertThat(changelogByBucket(faulty)).isEqualTo(expected);
        // Rows staged for checkpoints that never completed were dropped, not merged (the counter
        // of the restarted gateway: failures after the crash).
        assertThat(metric("setats_staging_aborted_rows_total", faulty)).isGreaterThan(0);
    }

    /**
     * TaskManagers die (the MiniCluster terminates its TaskExecutor and a new one joins; the job
     * restarts on it from the last completed checkpoint): at a seeded random record, between a
     * writer's {@code prepareCommit} and the checkpoint's completion (the writer is held there
     * until its TaskManager is gone, so that checkpoint never completes), and between a
     * committer's successful commit and its return (the restore commits the same checkpoint
     * again). The changelog must equal that of the failure-free run, per bucket, row for row.
     */
    @ParameterizedTest
    @EnumSource(MergeEngine.class)
    void changelogEqualsFailureFreeRunWhenTaskManagersDie(
            MergeEngine engine, @InjectMiniCluster MiniCluster cluster) throws Exception {
        String faulty = table("tm_faulty_" + engine);
        Map<String, List<String>> expected = failureFreeChangelog(engine, "tm_clean_", faulty);
        long abortedBefore = metric("setats_staging_aborted_rows_total", faulty);

        TaskManagerKills kills =
                new TaskManagerKills(cluster, new Random(engine.ordinal() * 17L + 3));
        TaskManagerKills.current = kills;
        SetatsSinkTestHooks.afterPrepareCommit = kills::afterPrepareCommit;
        SetatsSinkTestHooks.afterCommit = kills::afterCommit;
        runChunkedJob(engine, faulty, DeliveryGuarantee.EXACTLY_ONCE);

        assertThat(kills.error).isNull();
        assertThat(kills.atRecord.get()).as("TaskManager killed at a record").isEqualTo(1);
        assertThat(kills.afterPrepare.get()).as("killed after prepareCommit").isEqualTo(1);
        assertThat(kills.afterCommit.get()).as("killed after a commit").isEqualTo(1);
        assertThat(changelogByBucket(faulty)).isEqualTo(expected);
        assertThat(metric("setats_staging_aborted_rows_total", faulty))
                .as("rows staged for the checkpoint that never completed were dropped")
                .isGreaterThan(abortedBefore);
    }

    /** X3: staged rows are invisible until their checkpoint completes. */
    @Test
    void stagedRowsInvisibleUntilCommit() throws Exception {
        String t = table("x3");
        AtomicLong seenBeforeCommit = new AtomicLong(-1);
        SetatsSinkTestHooks.beforeCommit =
                (subtask, ckpt) -> {
                    try (GatewayClient c = GATEWAY.client()) {
                        seenBeforeCommit.compareAndSet(
                                -1,
                                c.getTable(DB, t).isPresent()
                                        ? ChangelogReader.readAll(c, DB, t).size()
                                        : 0);
                    }
                };
        runChunkedJob(MergeEngine.DEDUPLICATE, t, DeliveryGuarantee.EXACTLY_ONCE, 1);
        assertThat(seenBeforeCommit.get()).isEqualTo(0);
        try (GatewayClient c = GATEWAY.client()) {
            assertThat(ChangelogReader.readAll(c, DB, t)).isNotEmpty();
        }
    }

    /** Exactly-once needs checkpointing: without it the job fails at start saying so. */
    @Test
    void exactlyOnceWithoutCheckpointingFails() {
        StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment();
        SetatsSink<RowData> sink = sink(table("nockpt"), MergeEngine.DEDUPLICATE, DeliveryGuarantee.EXACTLY_ONCE).build();
        assertThatThrownBy(
                        () -> {
                            env.fromData(Collections.singletonList(row(RowKind.INSERT, 1, "a")))
                                    .returns(InternalTypeInfo.of(ROW_TYPE))
                                    .sinkTo(sink);
                            env.getStreamGraph();
                        })
                .isInstanceOf(ValidationException.class)
                .hasMessageContaining("sink.delivery-guarantee")
                .hasMessageContaining("needs checkpointing");
    }

    // --------------------------------------------------------------------------------------------
    // At-least-once: a retried batch is applied once (X1)
    // --------------------------------------------------------------------------------------------

    @Test
    void atLeastOnceRetriedBatchAppliedOnce() throws Exception {
        String t = table("x1");
        long dupsBefore = metric("setats_write_duplicates_total", t);
        AtomicInteger dropped = new AtomicInteger();
        // The ack of the first batch is lost: the writer reconnects and resends it (and the
        // batches sent after it), which the gateway had applied.
        SetatsSinkTestHooks.dropAck =
                (subtask, sequence) -> sequence == 0 && dropped.getAndIncrement() == 0;
        StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment();
        env.setParallelism(1);
        List<RowData> rows = new ArrayList<>();
        for (int i = 1; i <= 6; i++) {
            rows.add(row(RowKind.UPDATE_AFTER, 1, "v" + i));
        }
        env.fromData(rows)
                .returns(InternalTypeInfo.of(ROW_TYPE))
                .sinkTo(
                        sink(t, MergeEngine.DEDUPLICATE, DeliveryGuarantee.AT_LEAST_ONCE)
                                .setBufferRows(1)
                                .build());
        env.execute("x1");
        assertThat(dropped.get()).isGreaterThanOrEqualTo(1);
        assertThat(metric("setats_write_duplicates_total", t)).isGreaterThan(dupsBefore);
        List<String> expected = new ArrayList<>();
        expected.add("+I[1, v1]");
        for (int i = 2; i <= 6; i++) {
            expected.add("-U[1, v" + (i - 1) + "]");
            expected.add("+U[1, v" + i + "]");
        }
        try (GatewayClient c = GATEWAY.client()) {
            List<String> got = new ArrayList<>();
            for (ChangelogRow r : ChangelogReader.readAll(c, DB, t)) {
                got.add(r.toString().replaceFirst("^.*?([+-][IUD]\\[)", "$1"));
            }
            assertThat(got).isEqualTo(expected);
        }
    }

    /**
     * Rows buffered in the writer (not yet sent) when a stream fails survive the reconnect: the
     * writer resends the unacknowledged batches and then sends the buffer. Regression test: the
     * resend used to load the kept batches into the buffer's Arrow root and reset it, dropping the
     * buffered rows (found by changelogEqualsFailureFreeRun with a gateway SIGKILL).
     */
    @Test
    void bufferedRowsSurviveReconnect() throws Exception {
        String t = table("buffered");
        SERIALIZED.set(0);
        RECONNECTED.set(false);
        AtomicInteger asked = new AtomicInteger();
        // Batch 0 (rows 1-3) is sent; its ack is dropped once rows 4 and 5 are in the buffer, so
        // the stream fails while they wait there. The second ack of batch 0 (the resend on the
        // new stream) releases the source, which then sends row 6 and ends.
        SetatsSinkTestHooks.dropAck =
                (subtask, sequence) -> {
                    if (sequence != 0) {
                        return false;
                    }
                    if (asked.getAndIncrement() > 0) {
                        RECONNECTED.set(true);
                        return false;
                    }
                    long deadline = System.currentTimeMillis() + 30_000;
                    while (SERIALIZED.get() < 5 && System.currentTimeMillis() < deadline) {
                        try {
                            Thread.sleep(5);
                        } catch (InterruptedException e) {
                            Thread.currentThread().interrupt();
                            break;
                        }
                    }
                    return true;
                };
        StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment();
        env.setParallelism(1);
        env.addSource(new ReconnectGatedSource())
                .returns(InternalTypeInfo.of(ROW_TYPE))
                .sinkTo(
                        sink(t, MergeEngine.DEDUPLICATE, DeliveryGuarantee.AT_LEAST_ONCE)
                                .setBufferRows(3)
                                .setFlushInterval(java.time.Duration.ofHours(1))
                                .setSerializer(new CountingSerializer())
                                .build());
        env.execute("buffered rows");
        assertThat(RECONNECTED.get()).as("the writer reconnected").isTrue();
        try (GatewayClient c = GATEWAY.client()) {
            List<String> got = new ArrayList<>();
            for (ChangelogRow r : ChangelogReader.readAll(c, DB, t)) {
                got.add(r.kind.shortString() + r.values);
            }
            Collections.sort(got);
            assertThat(got)
                    .containsExactly(
                            "+I[1, r1]", "+I[2, r2]", "+I[3, r3]", "+I[4, r4]", "+I[5, r5]", "+I[6, r6]");
        }
    }

    static final AtomicInteger SERIALIZED = new AtomicInteger();
    static final java.util.concurrent.atomic.AtomicBoolean RECONNECTED =
            new java.util.concurrent.atomic.AtomicBoolean();

    /** Counts the rows the writer serializes (it buffers each right after). */
    static final class CountingSerializer
            implements io.setats.flink.sink.serializer.SetatsRecordSerializer<RowData> {
        private static final long serialVersionUID = 1L;

        @Override
        public RowData serialize(RowData element) {
            SERIALIZED.incrementAndGet();
            return element;
        }
    }

    /** Emits rows 1-5, waits until the writer reconnected, then emits row 6. */
    static final class ReconnectGatedSource implements SourceFunction<RowData> {
        @Override
        public void run(SourceContext<RowData> ctx) throws Exception {
            for (int i = 1; i <= 5; i++) {
                ctx.collect(row(RowKind.INSERT, i, "r" + i));
            }
            long deadline = System.currentTimeMillis() + 60_000;
            while (!RECONNECTED.get() && System.currentTimeMillis() < deadline) {
                Thread.sleep(5);
            }
            ctx.collect(row(RowKind.INSERT, 6, "r6"));
        }

        @Override
        public void cancel() {}
    }

    // --------------------------------------------------------------------------------------------
    // The lost update (issue 9): a replay must not overwrite a newer value of another writer
    // --------------------------------------------------------------------------------------------

    /**
     * Two writers of column {@code v} of a PARTIAL_UPDATE table: the exactly-once job writes
     * {@code A<c>} per chunk and fails over after staging chunk 2; while it is down, another writer
     * writes {@code B}. With at-least-once the replay of the job's rows would apply {@code A2} a
     * second time over {@code B} (readers see A2, B, A2); exactly-once applies each write once.
     */
    @Test
    void lostUpdateWithExactlyOnce() throws Exception {
        String t = table("lost_update");
        createTableIfPartial(MergeEngine.PARTIAL_UPDATE, t);
        AtomicInteger failures = new AtomicInteger();
        SetatsSinkTestHooks.afterPrepareCommit =
                (subtask, ckpt) -> {
                    if (ChunkedSource.EMITTED_CHUNK.get() == 2 && failures.getAndIncrement() == 0) {
                        writeOther(t, 0, "B");
                        throw new RuntimeException("injected failure after prepareCommit");
                    }
                };
        runLostUpdateJob(t);
        assertThat(failures.get()).isGreaterThan(0);
        try (GatewayClient c = GATEWAY.client()) {
            Map<String, Integer> afterRows = new TreeMap<>();
            for (ChangelogRow r : ChangelogReader.readAll(c, DB, t)) {
                if (((Integer) r.get("id")) == 0
                        && (r.kind == RowKind.INSERT || r.kind == RowKind.UPDATE_AFTER)) {
                    afterRows.merge(String.valueOf(r.get("v")), 1, Integer::sum);
                }
            }
            // Every write of either writer became visible exactly once.
            assertThat(afterRows.get("B")).isEqualTo(1);
            for (Map.Entry<String, Integer> e : afterRows.entrySet()) {
                assertThat(e.getValue()).as("writes of %s", e.getKey()).isEqualTo(1);
            }
        }
    }

    // --------------------------------------------------------------------------------------------
    // Jobs
    // --------------------------------------------------------------------------------------------

    private static String table(String prefix) {
        return prefix.toLowerCase() + "_" + TABLES.incrementAndGet();
    }

    /**
     * Creates the faulty run's table (partial-update tables are created up front, the others by
     * the sink), runs the chunked job without failures into a table of its own and returns that
     * changelog per bucket: what the faulty run must produce.
     */
    private static Map<String, List<String>> failureFreeChangelog(
            MergeEngine engine, String cleanPrefix, String faulty) throws Exception {
        String clean = table(cleanPrefix + engine);
        createTableIfPartial(engine, clean);
        createTableIfPartial(engine, faulty);
        runChunkedJob(engine, clean, DeliveryGuarantee.EXACTLY_ONCE);
        Map<String, List<String>> expected = changelogByBucket(clean);
        assertThat(expected).isNotEmpty();
        return expected;
    }

    /** PARTIAL_UPDATE tables get a column the sinks do not declare (partial-column sinks). */
    private static void createTableIfPartial(MergeEngine engine, String t) {
        if (engine != MergeEngine.PARTIAL_UPDATE) {
            return; // the sink creates it (auto-create)
        }
        try (GatewayClient c = GATEWAY.client()) {
            c.createTable(
                    TableSpec.newBuilder()
                            .setDatabase(DB)
                            .setTable(t)
                            .addColumns(Column.newBuilder().setName("id").setType("INT").setNotNull(true))
                            .addColumns(Column.newBuilder().setName("v").setType("STRING"))
                            .addColumns(Column.newBuilder().setName("w").setType("STRING"))
                            .addPrimaryKey("id")
                            .setBucketCount(4)
                            .setMergeEngine("PARTIAL_UPDATE")
                            .putOptions("partial-update.remove-record-on-delete", "true")
                            .build(),
                    false,
                    true);
        }
    }

    private static SetatsSinkBuilder<RowData> sink(
            String t, MergeEngine engine, DeliveryGuarantee guarantee) {
        SetatsSinkBuilder<RowData> b =
                SetatsSink.builder()
                        .setManagerUrl(GATEWAY.managerUrl())
                        .setWarehouse(GATEWAY.warehouse().toString())
                        .setCatalogType("hadoop")
                        .setCatalogName("setats")
                        .setDatabase(DB)
                        .setTable(t)
                        .setRowType(ROW_TYPE)
                        .setPrimaryKey("id")
                        .setBucket(4)
                        .setMergeEngine(engine)
                        .setBufferRows(7)
                        .setFlushInterval(java.time.Duration.ofMillis(50))
                        .setDeliveryGuarantee(guarantee);
        if (engine == MergeEngine.PARTIAL_UPDATE) {
            Map<String, String> o = new HashMap<>();
            o.put("partial-update.remove-record-on-delete", "true");
            b.setOptions(o);
        }
        return b;
    }

    private static void runChunkedJob(MergeEngine engine, String t, DeliveryGuarantee g)
            throws Exception {
        runChunkedJob(engine, t, g, CHUNKS);
    }

    private static void runChunkedJob(MergeEngine engine, String t, DeliveryGuarantee g, int chunks)
            throws Exception {
        ChunkedSource.COMPLETED_CHUNKS.set(0);
        StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment();
        env.enableCheckpointing(150);
        env.getCheckpointConfig().setTolerableCheckpointFailureNumber(0);
        env.setRestartStrategy(RestartStrategies.fixedDelayRestart(100, Time.milliseconds(100)));
        env.addSource(new ChunkedSource(chunks, false))
                .setParallelism(1)
                .returns(InternalTypeInfo.of(ROW_TYPE))
                .map(new FailingMap())
                .setParallelism(1)
                .returns(InternalTypeInfo.of(ROW_TYPE))
                .sinkTo(sink(t, engine, g).build())
                .setParallelism(2);
        env.execute("chunked " + t);
    }

    private static void runLostUpdateJob(String t) throws Exception {
        ChunkedSource.COMPLETED_CHUNKS.set(0);
        ChunkedSource.EMITTED_CHUNK.set(-1);
        StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment();
        env.enableCheckpointing(150);
        env.getCheckpointConfig().setTolerableCheckpointFailureNumber(0);
        env.setRestartStrategy(RestartStrategies.fixedDelayRestart(10, Time.milliseconds(100)));
        env.addSource(new ChunkedSource(4, true))
                .setParallelism(1)
                .returns(InternalTypeInfo.of(ROW_TYPE))
                .sinkTo(sink(t, MergeEngine.PARTIAL_UPDATE, DeliveryGuarantee.EXACTLY_ONCE).build())
                .setParallelism(1);
        env.execute("lost update " + t);
    }

    /** The second writer of the lost-update case: one upsert of (id, v) through DoPut. */
    private static void writeOther(String t, int id, String v) throws Exception {
        // A write through the gateway client, as another job's sink would send it.
        try (GatewayClient c = GATEWAY.client();
                io.setats.flink.utils.RowDataArrowWriter w =
                        new io.setats.flink.utils.RowDataArrowWriter(ROW_TYPE, c.allocator(), true)) {
            w.write(row(RowKind.UPDATE_AFTER, id, v));
            w.finish();
            io.setats.flink.client.PutStream s =
                    c.startPut(
                            io.setats.proto.v1.WriteCommand.newBuilder()
                                    .setDatabase(DB)
                                    .setTable(t)
                                    .build(),
                            w.root(),
                            1,
                            null);
            s.putNext();
            s.complete();
            s.close();
        }
    }

    static RowData row(RowKind kind, int id, String v) {
        GenericRowData r = GenericRowData.of(id, StringData.fromString(v));
        r.setRowKind(kind);
        return r;
    }

    /** Changelog rows per bucket as "+U[1, x]" strings, in offset order. */
    private static Map<String, List<String>> changelogByBucket(String t) {
        Map<String, List<String>> out = new TreeMap<>();
        try (GatewayClient c = GATEWAY.client()) {
            for (ChangelogRow r : ChangelogReader.readAll(c, DB, t)) {
                out.computeIfAbsent(r.partition + "/" + r.bucket, k -> new ArrayList<>())
                        .add(r.kind.shortString() + r.values);
            }
        }
        return out;
    }

    /** A Prometheus counter of the gateway for one table (0 when absent). */
    private static long metric(String name, String t) throws Exception {
        return (long) GATEWAY.tableMetric(name, DB, t);
    }

    // --------------------------------------------------------------------------------------------
    // The deterministic source and the failures
    // --------------------------------------------------------------------------------------------

    /**
     * Emits chunk c of deterministic upserts and deletes, then waits until a checkpoint taken
     * after it has completed before it emits chunk c + 1: each completed checkpoint holds exactly
     * one chunk, in every run. Its state is the next chunk to emit.
     */
    static final class ChunkedSource
            implements SourceFunction<RowData>, CheckpointedFunction, CheckpointListener {
        static final AtomicInteger COMPLETED_CHUNKS = new AtomicInteger();
        static final AtomicInteger EMITTED_CHUNK = new AtomicInteger(-1);

        private final int chunks;
        private final boolean oneKey;
        private transient ListState<Integer> state;
        private volatile int next;
        private volatile long waitingFor = -1; // checkpoint that must complete (-1: none)
        private volatile boolean emittedUnsnapshotted;
        private volatile boolean running = true;

        ChunkedSource(int chunks, boolean oneKey) {
            this.chunks = chunks;
            this.oneKey = oneKey;
        }

        @Override
        public void run(SourceContext<RowData> ctx) throws Exception {
            while (running && next < chunks) {
                synchronized (ctx.getCheckpointLock()) {
                    for (RowData r : chunk(next)) {
                        ctx.collect(r);
                    }
                    EMITTED_CHUNK.set(next);
                    next++;
                    emittedUnsnapshotted = true;
                }
                while (running && (emittedUnsnapshotted || waitingFor >= 0)) {
                    Thread.sleep(5);
                }
                COMPLETED_CHUNKS.set(next);
            }
        }

        private List<RowData> chunk(int c) {
            List<RowData> out = new ArrayList<>();
            if (oneKey) {
                out.add(row(RowKind.UPDATE_AFTER, 0, "A" + c));
                return out;
            }
            Random r = new Random(1000 + c);
            for (int i = 0; i < ROWS_PER_CHUNK; i++) {
                int id = r.nextInt(KEYS);
                if (r.nextInt(6) == 0) {
                    out.add(row(RowKind.DELETE, id, "gone"));
                } else {
                    out.add(row(RowKind.UPDATE_AFTER, id, "c" + c + "i" + i + "_" + r.nextInt(3)));
                }
            }
            return out;
        }

        @Override
        public void cancel() {
            running = false;
        }

        @Override
        public void snapshotState(FunctionSnapshotContext context) throws Exception {
            state.update(Collections.singletonList(next));
            if (emittedUnsnapshotted) {
                waitingFor = context.getCheckpointId();
                emittedUnsnapshotted = false;
            }
        }

        @Override
        public void initializeState(FunctionInitializationContext context) throws Exception {
            state =
                    context.getOperatorStateStore()
                            .getListState(new ListStateDescriptor<>("next-chunk", Types.INT));
            for (Integer n : state.get()) {
                next = n;
            }
        }

        @Override
        public void notifyCheckpointComplete(long checkpointId) {
            if (waitingFor >= 0 && checkpointId >= waitingFor) {
                waitingFor = -1;
            }
        }
    }

    /** Fails the task at the records the current FailurePlan picks. */
    static final class FailingMap implements MapFunction<RowData, RowData> {
        @Override
        public RowData map(RowData value) {
            FailurePlan p = FailurePlan.current;
            if (p != null) {
                p.onRecord();
            }
            TaskManagerKills k = TaskManagerKills.current;
            if (k != null) {
                k.onRecord();
            }
            return value;
        }
    }

    /** Seeded random failure points of one run (shared by the tasks: the MiniCluster is local). */
    static final class FailurePlan {
        static volatile FailurePlan current;

        final AtomicInteger mapFailures = new AtomicInteger();
        final AtomicInteger prepareFailures = new AtomicInteger();
        final AtomicInteger commitFailures = new AtomicInteger();
        final AtomicInteger gatewayKills = new AtomicInteger();
        volatile Exception killerError;
        private final AtomicLong records = new AtomicLong();
        private final long[] failAtRecords;
        private final AtomicInteger prepares = new AtomicInteger();
        private final int[] failAtPrepares;
        private final AtomicInteger commits = new AtomicInteger();
        private final int[] failBeforeCommits;
        private final int[] failAfterCommits;

        FailurePlan(Random r) {
            long total = (long) CHUNKS * ROWS_PER_CHUNK;
            failAtRecords = new long[] {1 + r.nextInt((int) total / 2), total / 2 + r.nextInt((int) total / 2)};
            failAtPrepares = new int[] {2 + r.nextInt(5), 9 + r.nextInt(6)};
            failBeforeCommits = new int[] {1 + r.nextInt(4)};
            failAfterCommits = new int[] {6 + r.nextInt(4)};
        }

        private static boolean contains(long[] xs, long x) {
            for (long v : xs) {
                if (v == x) {
                    return true;
                }
            }
            return false;
        }

        private static boolean contains(int[] xs, int x) {
            return contains(java.util.Arrays.stream(xs).asLongStream().toArray(), x);
        }

        void onRecord() {
            if (contains(failAtRecords, records.incrementAndGet())) {
                mapFailures.incrementAndGet();
                throw new RuntimeException("injected failure in the map operator");
            }
        }

        void afterPrepareCommit(int subtask, long checkpointId) {
            if (subtask == 0 && contains(failAtPrepares, prepares.incrementAndGet())) {
                prepareFailures.incrementAndGet();
                throw new RuntimeException("injected failure after prepareCommit of " + checkpointId);
            }
        }

        void beforeCommit(int subtask, long checkpointId) {
            if (contains(failBeforeCommits, commits.incrementAndGet())) {
                commitFailures.incrementAndGet();
                throw new RuntimeException("injected failure before commit of " + checkpointId);
            }
        }

        void afterCommit(int subtask, long checkpointId) {
            if (contains(failAfterCommits, commits.get())) {
                failAfterCommits[0] = -1; // once
                commitFailures.incrementAndGet();
                throw new RuntimeException("injected failure after commit of " + checkpointId);
            }
        }
    }

    /**
     * Seeded TaskManager kills of one run: the only running TaskExecutor of the MiniCluster is
     * terminated (from another thread: a task cannot wait for its own TaskManager to close) and a
     * new one is started, once at a record, once after a prepareCommit, once after a commit.
     */
    static final class TaskManagerKills {
        /** TaskExecutors started in the class's MiniCluster (terminated ones stay in its list). */
        private static final AtomicInteger STARTED = new AtomicInteger(1);

        private static final java.util.concurrent.ExecutorService KILLER =
                java.util.concurrent.Executors.newSingleThreadExecutor(
                        r -> {
                            Thread t = new Thread(r, "taskmanager-killer");
                            t.setDaemon(true);
                            // Created from a task thread, it would inherit the job's user-code
                            // class loader, closed with the TaskManager it kills.
                            t.setContextClassLoader(TaskManagerKills.class.getClassLoader());
                            return t;
                        });

        private static final Logger LOG = LoggerFactory.getLogger(TaskManagerKills.class);

        static volatile TaskManagerKills current;

        final AtomicInteger atRecord = new AtomicInteger();
        final AtomicInteger afterPrepare = new AtomicInteger();
        final AtomicInteger afterCommit = new AtomicInteger();
        volatile Exception error;
        private final MiniCluster cluster;
        private final AtomicLong records = new AtomicLong();
        private final AtomicInteger prepares = new AtomicInteger();
        private final AtomicInteger commits = new AtomicInteger();
        private final long killAtRecord;
        private final int killAfterPrepare;
        private final int killAfterCommit;

        TaskManagerKills(MiniCluster cluster, Random r) {
            this.cluster = cluster;
            long total = (long) CHUNKS * ROWS_PER_CHUNK;
            killAtRecord = total / 4 + r.nextInt((int) total / 4);
            killAfterPrepare = 10 + r.nextInt(4);
            killAfterCommit = 4 + r.nextInt(4);
        }

        void onRecord() {
            if (records.incrementAndGet() == killAtRecord && atRecord.getAndIncrement() == 0) {
                kill();
            }
        }

        void afterPrepareCommit(int subtask, long checkpointId) throws InterruptedException {
            if (subtask == 0 && prepares.incrementAndGet() == killAfterPrepare) {
                afterPrepare.incrementAndGet();
                killAndWait("prepareCommit of checkpoint " + checkpointId);
            }
        }

        void afterCommit(int subtask, long checkpointId) throws InterruptedException {
            if (commits.incrementAndGet() == killAfterCommit) {
                afterCommit.incrementAndGet();
                killAndWait("commit of checkpoint " + checkpointId);
            }
        }

        /** Kills the TaskManager and holds the calling task until it is cancelled with it. */
        private void killAndWait(String where) throws InterruptedException {
            kill();
            Thread.sleep(60_000); // interrupted when the TaskManager cancels this task
            throw new IllegalStateException("TaskManager still running 60 s after a kill at " + where);
        }

        private void kill() {
            // One kill after the other: each terminates the TaskExecutor the previous one started.
            KILLER.execute(
                    () -> {
                        int index = STARTED.get() - 1;
                        try {
                            LOG.info("terminating TaskManager {}", index);
                            cluster.terminateTaskManager(index).get(60, TimeUnit.SECONDS);
                                                        cluster.startTaskManager();
                            STARTED.incrementAndGet();
                            LOG.info("TaskManager {} terminated, TaskManager {} started", index, index + 1);
                        } catch (Exception e) {
                            error = e;
                        }
                    });
        }
    }
}
