package io.setats.flink.sink;

import io.setats.flink.SetatsConnectorOptions.MergeEngine;
import io.setats.flink.client.GatewayClient;
import io.setats.flink.testutils.SetatsGatewayProcess;
import io.setats.proto.v1.BucketOffsets;

import org.apache.flink.runtime.testutils.MiniClusterResourceConfiguration;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.graph.StreamGraph;
import org.apache.flink.streaming.api.graph.StreamNode;
import org.apache.flink.streaming.api.functions.source.SourceFunction;
import org.apache.flink.table.data.GenericRowData;
import org.apache.flink.table.data.RowData;
import org.apache.flink.table.data.StringData;
import org.apache.flink.table.runtime.typeutils.InternalTypeInfo;
import org.apache.flink.table.types.logical.LogicalType;
import org.apache.flink.table.types.logical.RowType;
import org.apache.flink.table.types.logical.VarCharType;
import org.apache.flink.test.junit5.MiniClusterExtension;
import org.apache.flink.util.ExceptionUtils;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

import java.time.Duration;
import java.util.Optional;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * When the sink sends (issue 12): linger-style, a row reaching an idle writer is sent at once --
 * not after {@code setats.sink.flush-interval} -- and a batch the gateway never acknowledges
 * fails the job after {@code setats.sink.ack-timeout} with a message naming the table, the
 * gateway and the batch.
 */
class SinkSendPolicyITCase {

    @RegisterExtension static final SetatsGatewayProcess GATEWAY = new SetatsGatewayProcess();

    @RegisterExtension
    static final MiniClusterExtension MINI_CLUSTER =
            new MiniClusterExtension(
                    new MiniClusterResourceConfiguration.Builder()
                            .setNumberTaskManagers(1)
                            .setNumberSlotsPerTaskManager(1)
                            .build());

    private static final RowType KV =
            RowType.of(
                    new LogicalType[] {
                        new VarCharType(false, VarCharType.MAX_LENGTH),
                        new VarCharType(VarCharType.MAX_LENGTH)
                    },
                    new String[] {"k", "v"});

    private static SetatsSinkBuilder<RowData> sink(String table) {
        return SetatsSink.builder()
                .setManagerUrl(GATEWAY.managerUrl())
                .setWarehouse(GATEWAY.warehouse().toString())
                .setCatalogType("hadoop")
                .setCatalogName("setats")
                .setDatabase("policy")
                .setTable(table)
                .setRowType(KV)
                .setPrimaryKey("k")
                .setBucket(2)
                .setMergeEngine(MergeEngine.DEDUPLICATE);
    }

    static long committedRows(String table) {
        try (GatewayClient c = GATEWAY.client()) {
            return count(c, table);
        }
    }

    /** Rows in the table's changelog; 0 before the first batch created the table. */
    static long count(GatewayClient c, String table) {
        try {
            long n = 0;
            for (BucketOffsets b : c.listBuckets("policy", table).getBucketsList()) {
                n += b.getEndOffset();
            }
            return n;
        } catch (RuntimeException notYet) {
            return 0;
        }
    }

    /**
     * Emits row i only after rows 0..i-1 are committed at the gateway; gives up (failing the job)
     * after {@code maxWaitMs} for one row. With a one-hour flush interval and no checkpoints,
     * only the idle-pipeline send can get each row out.
     */
    static final class LockstepSource implements SourceFunction<RowData> {
        private final String url;
        private final String warehouse;
        private final String table;
        private final int rows;
        private final long maxWaitMs;
        private volatile boolean running = true;

        LockstepSource(String table, int rows, long maxWaitMs) {
            this.url = GATEWAY.managerUrl();
            this.warehouse = GATEWAY.warehouse().toString();
            this.table = table;
            this.rows = rows;
            this.maxWaitMs = maxWaitMs;
        }

        @Override
        public void run(SourceContext<RowData> ctx) throws Exception {
            io.setats.proto.v1.CatalogContext cc =
                    io.setats.proto.v1.CatalogContext.newBuilder()
                            .setWarehouse(warehouse)
                            .setCatalogType("hadoop")
                            .setCatalogName("setats")
                            .build();
            try (GatewayClient c = GatewayClient.connect(url, cc)) {
                for (int i = 0; i < rows && running; i++) {
                    synchronized (ctx.getCheckpointLock()) {
                        ctx.collect(
                                GenericRowData.of(
                                        StringData.fromString("k" + i), StringData.fromString("v" + i)));
                    }
                    long deadline = System.currentTimeMillis() + maxWaitMs;
                    while (count(c, table) < i + 1) {
                        if (System.currentTimeMillis() > deadline) {
                            throw new IllegalStateException(
                                    "row " + i + " was not sent by an idle sink writer within " + maxWaitMs + " ms");
                        }
                        Thread.sleep(5);
                    }
                }
            }
        }

        @Override
        public void cancel() {
            running = false;
        }
    }

    /**
     * The edge into the writers flushes at {@code setats.sink.shuffle-buffer-timeout} (here 20 ms),
     * not at the job's {@code execution.buffer-timeout} (100 ms), in the graph that {@code sinkTo}
     * builds: Flink expands the sink's pre-write topology after it has translated the operator
     * before it, so lowering that operator's timeout then changed nothing (a row waited up to 100
     * ms in a half-empty network buffer at low rates: edge p50 48 ms at 1,000 rows/s).
     */
    @Test
    void theShuffleIntoTheWritersFlushesAtTheSinksBufferTimeout() {
        for (int sourceParallelism : new int[] {1, 2}) {
            StreamGraph g = graphOfSinkTo(sourceParallelism, Duration.ofMillis(20));
            StreamNode writer = writer(g);
            assertThat(writer.getInEdges().get(0).getBufferTimeout())
                    .as("source parallelism %d: edge %s", sourceParallelism, writer.getInEdges().get(0))
                    .isEqualTo(20L);
            // The pass-through that carries the timeout runs chained to the operator before it.
            StreamNode before = g.getStreamNode(writer.getInEdges().get(0).getSourceId());
            assertThat(before.getParallelism()).isEqualTo(sourceParallelism);
            assertThat(before.getInEdges())
                    .allSatisfy(e -> assertThat(e.getPartitioner().toString()).isEqualTo("FORWARD"));
            // Flink names it after the sink ("<sink>: <operator>", as every pre-write operator),
            // so the task of the operator before the sink carries the sink's name too (why the
            // option has no default: docs/PERF-NOTES.md, "The shuffle timeout that never applied").
            String sinkName = writer.getOperatorName().replaceAll(": Writer$", "");
            assertThat(g.getJobGraph().getVertices())
                    .as("job vertices")
                    .anySatisfy(v -> assertThat(v.getName())
                            .contains("Map")
                            .contains(sinkName + ": Setats shuffle flush 20 ms"));
        }
    }

    /** Unset (the default), the edge keeps the job's buffer timeout and no operator is added. */
    @Test
    void withoutTheOptionTheShuffleKeepsTheJobsBufferTimeout() {
        StreamGraph g = graphOfSinkTo(2, null);
        StreamNode writer = writer(g);
        assertThat(writer.getInEdges().get(0).getBufferTimeout()).isEqualTo(100L);
        assertThat(g.getStreamNodes())
                .noneSatisfy(n -> assertThat(n.getOperatorName()).contains("Setats shuffle flush"));
    }

    /** The stream graph of a map at {@code sourceParallelism} into the sink, job timeout 100 ms. */
    private static StreamGraph graphOfSinkTo(int sourceParallelism, Duration shuffleTimeout) {
        StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment();
        env.setParallelism(2);
        env.setBufferTimeout(100);
        SetatsSinkBuilder<RowData> b = sink("shuffle_timeout");
        if (shuffleTimeout != null) {
            b.setShuffleBufferTimeout(shuffleTimeout);
        }
        env.fromSequence(0, 9)
                .setParallelism(sourceParallelism)
                .map(i -> (RowData) GenericRowData.of(StringData.fromString("k" + i), null))
                .setParallelism(sourceParallelism)
                .returns(InternalTypeInfo.of(KV))
                .sinkTo(b.build());
        return env.getStreamGraph();
    }

    private static StreamNode writer(StreamGraph g) {
        StreamNode writer =
                g.getStreamNodes().stream()
                        .filter(n -> n.getOperatorName().contains("Writer"))
                        .findFirst()
                        .orElseThrow(() -> new AssertionError("no writer in " + g.getStreamNodes()));
        assertThat(writer.getInEdges()).hasSize(1);
        return writer;
    }

    @Test
    void idleWriterSendsAtOnceNotAfterTheFlushInterval() throws Exception {
        String table = "lockstep";
        int rows = 20;
        StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment();
        env.setParallelism(1);
        env.addSource(new LockstepSource(table, rows, 60_000), InternalTypeInfo.of(KV))
                .sinkTo(sink(table).setFlushInterval(Duration.ofHours(1)).build());
        env.execute("setats sink lingers only under load");
        assertThat(committedRows(table)).isEqualTo(rows);
    }

    /** Without linger-style sending the lockstep source waits for the flush interval and fails. */
    @Test
    void lingerDelaysAnIdleWriter() {
        String table = "lockstep_linger";
        StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment();
        env.setParallelism(1);
        env.addSource(new LockstepSource(table, 3, 1_000), InternalTypeInfo.of(KV))
                .sinkTo(
                        sink(table)
                                .setFlushInterval(Duration.ofHours(1))
                                .setLinger(Duration.ofHours(1))
                                .build());
        assertThatThrownBy(() -> env.execute("setats sink with a long linger"))
                .satisfies(
                        e ->
                                assertThat(
                                                ExceptionUtils.findThrowableWithMessage(
                                                        e, "was not sent by an idle sink writer"))
                                        .isPresent());
    }

    @Test
    void unacknowledgedBatchFailsTheJobNamingTableGatewayAndBatch() throws Exception {
        String table = "ack_timeout";
        StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment();
        env.setParallelism(1);
        env.setRestartStrategy(org.apache.flink.api.common.restartstrategy.RestartStrategies.noRestart());
        env.addSource(new SuspendingSource(table), InternalTypeInfo.of(KV))
                // 5 s: the first row (the table's first write) must be acknowledged within it on a
                // loaded machine too, or the job fails for batch 0 before the gateway is suspended.
                .sinkTo(sink(table).setAckTimeout(Duration.ofSeconds(5)).build());
        try {
            Throwable t = null;
            try {
                env.execute("setats sink against a gateway that stops answering");
            } catch (Exception e) {
                t = e;
            }
            assertThat(t).as("the job must fail, not hang").isNotNull();
            Optional<Throwable> timeout = ExceptionUtils.findThrowableWithMessage(t, "DEADLINE_EXCEEDED");
            assertThat(timeout).as(ExceptionUtils.stringifyException(t)).isPresent();
            assertThat(timeout.get().getMessage())
                    .contains("policy." + table)
                    .contains(GATEWAY.flightAddr())
                    .contains("batch 1 (1 rows)")
                    .contains("setats.sink.ack-timeout");
        } finally {
            GATEWAY.resume();
        }
    }

    /**
     * Emits a first row and waits until it is committed (so the writer is connected and its
     * stream open), then suspends the gateway, emits a second row and idles: only the writer's
     * ack-timeout timer can notice that the second batch is never acknowledged.
     */
    static final class SuspendingSource implements SourceFunction<RowData> {
        private final String table;
        private volatile boolean running = true;

        SuspendingSource(String table) {
            this.table = table;
        }

        @Override
        public void run(SourceContext<RowData> ctx) throws Exception {
            synchronized (ctx.getCheckpointLock()) {
                ctx.collect(GenericRowData.of(StringData.fromString("a"), StringData.fromString("1")));
            }
            try (GatewayClient c = GATEWAY.client()) {
                long deadline = System.currentTimeMillis() + 60_000;
                while (count(c, table) < 1) {
                    if (System.currentTimeMillis() > deadline) {
                        throw new IllegalStateException("the first row was never committed");
                    }
                    Thread.sleep(5);
                }
            }
            GATEWAY.suspend();
            synchronized (ctx.getCheckpointLock()) {
                ctx.collect(GenericRowData.of(StringData.fromString("b"), StringData.fromString("2")));
            }
            long until = System.currentTimeMillis() + 120_000;
            while (running && System.currentTimeMillis() < until) {
                Thread.sleep(50);
            }
        }

        @Override
        public void cancel() {
            running = false;
        }
    }
}
