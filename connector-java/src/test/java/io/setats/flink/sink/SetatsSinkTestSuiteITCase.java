package io.setats.flink.sink;

import io.setats.flink.client.GatewayClient;
import io.setats.flink.sink.serializer.SetatsRecordSerializer;
import io.setats.flink.testutils.ChangelogReader;
import io.setats.flink.testutils.ChangelogReader.ChangelogRow;
import io.setats.flink.testutils.SetatsGatewayProcess;
import io.setats.proto.v1.BucketOffsets;

import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.api.connector.sink2.Sink;
import org.apache.flink.connector.base.DeliveryGuarantee;
import org.apache.flink.connector.testframe.environment.TestEnvironment;
import org.apache.flink.connector.testframe.environment.TestEnvironmentSettings;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.core.execution.JobClient;
import org.apache.flink.core.execution.SavepointFormatType;
import org.apache.flink.connector.testframe.external.sink.DataStreamSinkExternalContext;
import org.apache.flink.api.common.restartstrategy.RestartStrategies;
import org.apache.flink.connector.testframe.environment.MiniClusterTestEnvironment;
import org.apache.flink.connector.testframe.external.ExternalContextFactory;
import org.apache.flink.connector.testframe.external.ExternalSystemDataReader;
import org.apache.flink.connector.testframe.external.sink.DataStreamSinkV2ExternalContext;
import org.apache.flink.connector.testframe.external.sink.TestingSinkSettings;
import org.apache.flink.connector.testframe.junit.annotations.TestContext;
import org.apache.flink.connector.testframe.junit.annotations.TestEnv;
import org.apache.flink.connector.testframe.junit.annotations.TestExternalSystem;
import org.apache.flink.connector.testframe.junit.annotations.TestSemantics;
import org.apache.flink.connector.testframe.testsuites.SinkTestSuiteBase;
import org.apache.flink.core.execution.CheckpointingMode;
import org.apache.flink.table.data.GenericRowData;
import org.apache.flink.table.data.StringData;
import org.apache.flink.table.types.logical.LogicalType;
import org.apache.flink.table.types.logical.RowType;
import org.apache.flink.table.types.logical.VarCharType;


import org.junit.jupiter.api.TestTemplate;

import java.net.URL;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Flink's connector testing framework ({@link SinkTestSuiteBase}) run against the Setats sink on a
 * MiniCluster: basic sink, restart from savepoint, scale up/down and the numRecordsSend metric,
 * with AT_LEAST_ONCE and EXACTLY_ONCE (SPEC section 10: the framework then checks that every
 * record arrived exactly once, across its failover, savepoint and rescale cases). The external
 * context reads back what the sink wrote through DoGet.
 */
class SetatsSinkTestSuiteITCase extends SinkTestSuiteBase<String> {

    private static final SetatsGatewayProcess GATEWAY = new SetatsGatewayProcess();

    @TestEnv MiniClusterTestEnvironment flink = new MiniClusterTestEnvironment();

    @TestExternalSystem SetatsGatewayProcess gateway = GATEWAY;

    @TestSemantics
    CheckpointingMode[] semantics =
            new CheckpointingMode[] {CheckpointingMode.AT_LEAST_ONCE, CheckpointingMode.EXACTLY_ONCE};

    @TestContext ExternalContextFactory<SetatsSinkContext> contexts = name -> new SetatsSinkContext(GATEWAY);

    /**
     * Writes test records (unique strings) as rows (k = record, v = record) of a fresh table per
     * context; reads back the {@code k} of every changelog row.
     */
    static final class SetatsSinkContext implements DataStreamSinkV2ExternalContext<String> {
        private static final AtomicInteger TABLES = new AtomicInteger();
        private static final RowType ROW_TYPE =
                RowType.of(
                        new LogicalType[] {
                            new VarCharType(false, VarCharType.MAX_LENGTH),
                            new VarCharType(VarCharType.MAX_LENGTH)
                        },
                        new String[] {"k", "v"});

        private final SetatsGatewayProcess gateway;
        private final String table = "suite_" + TABLES.incrementAndGet();

        SetatsSinkContext(SetatsGatewayProcess gateway) {
            this.gateway = gateway;
        }

        @Override
        public Sink<String> createSink(TestingSinkSettings sinkSettings) {
            DeliveryGuarantee guarantee =
                    sinkSettings.getCheckpointingMode()
                                    == org.apache.flink.streaming.api.CheckpointingMode.EXACTLY_ONCE
                            ? DeliveryGuarantee.EXACTLY_ONCE
                            : DeliveryGuarantee.AT_LEAST_ONCE;
            return SetatsSink.builder()
                    .setDeliveryGuarantee(guarantee)
                    .setManagerUrl(gateway.managerUrl())
                    .setWarehouse(gateway.warehouse().toString())
                    .setCatalogType("hadoop")
                    .setCatalogName("setats")
                    .setDatabase("suite")
                    .setTable(table)
                    .setRowType(ROW_TYPE)
                    .setPrimaryKey("k")
                    .setBucket(4)
                    .setBufferRows(37)
                    .setFlushInterval(Duration.ofMillis(200))
                    .setSerializer(new KeyValueSerializer())
                    .build();
        }

        @Override
        public ExternalSystemDataReader<String> createSinkDataReader(TestingSinkSettings sinkSettings) {
            return new ChangelogKeyReader(gateway, table);
        }

        @Override
        public List<String> generateTestData(TestingSinkSettings sinkSettings, long seed) {
            Random random = new Random(seed);
            int n = 100 + random.nextInt(200);
            Set<String> out = new LinkedHashSet<>();
            while (out.size() < n) {
                out.add("r" + Long.toHexString(random.nextLong()));
            }
            return new ArrayList<>(out);
        }

        @Override
        public TypeInformation<String> getProducedType() {
            return Types.STRING;
        }

        @Override
        public List<URL> getConnectorJarPaths() {
            return Collections.emptyList();
        }

        @Override
        public void close() {}

        @Override
        public String toString() {
            return "Setats sink context (" + table + ")";
        }
    }

    // The framework's savepoint and rescale cases run their first job without checkpointing (its
    // collect sink must hand out records before any checkpoint, and its source emits past the
    // first half once a checkpoint is taken there), and an exactly-once sink refuses a job without
    // checkpointing (SPEC section 10). With EXACTLY_ONCE the same cases run as below: the first
    // job checkpoints, is stopped with a savepoint as soon as its source emitted the first half
    // (so that savepoint holds the last staged rows' committables), must have committed exactly
    // the first half, and the job restored from it with the new parallelism exactly all records.

    @Override
    @TestTemplate
    public void testStartFromSavepoint(
            TestEnvironment testEnv, DataStreamSinkExternalContext<String> ctx, CheckpointingMode semantic)
            throws Exception {
        restart(testEnv, ctx, semantic, 2, 2, () -> super.testStartFromSavepoint(testEnv, ctx, semantic));
    }

    @Override
    @TestTemplate
    public void testScaleUp(
            TestEnvironment testEnv, DataStreamSinkExternalContext<String> ctx, CheckpointingMode semantic)
            throws Exception {
        restart(testEnv, ctx, semantic, 2, 4, () -> super.testScaleUp(testEnv, ctx, semantic));
    }

    @Override
    @TestTemplate
    public void testScaleDown(
            TestEnvironment testEnv, DataStreamSinkExternalContext<String> ctx, CheckpointingMode semantic)
            throws Exception {
        restart(testEnv, ctx, semantic, 4, 2, () -> super.testScaleDown(testEnv, ctx, semantic));
    }

    interface Case {
        void run() throws Exception;
    }

    private void restart(
            TestEnvironment testEnv,
            DataStreamSinkExternalContext<String> ctx,
            CheckpointingMode semantic,
            int before,
            int after,
            Case atLeastOnce)
            throws Exception {
        if (semantic != CheckpointingMode.EXACTLY_ONCE) {
            atLeastOnce.run();
            return;
        }
        DataStreamSinkV2ExternalContext<String> c = (DataStreamSinkV2ExternalContext<String>) ctx;
        TestingSinkSettings settings =
                TestingSinkSettings.builder().setCheckpointingMode(semantic).build();
        List<String> records = c.generateTestData(settings, new Random().nextLong());
        int half = records.size() / 2;
        HalfSource.EMITTED.set(0);

        StreamExecutionEnvironment env =
                testEnv.createExecutionEnvironment(TestEnvironmentSettings.builder().build());
        env.enableCheckpointing(50);
        env.setRestartStrategy(RestartStrategies.noRestart());
        env.addSource(new HalfSource(records, half), "first half")
                .setParallelism(1)
                .uid("source")
                .sinkTo(c.createSink(settings))
                .setParallelism(before)
                .uid("sink");
        JobClient first = env.executeAsync("exactly-once restart " + before + " -> " + after);
        String savepoint;
        try {
            while (HalfSource.EMITTED.get() < half) {
                assertThat(first.getJobStatus().get().isGloballyTerminalState()).isFalse();
                Thread.sleep(10);
            }
            savepoint = stopWithSavepoint(first, testEnv.getCheckpointUri());
            first.getJobExecutionResult().get(2, TimeUnit.MINUTES);
        } catch (Exception e) {
            first.cancel();
            throw e;
        }
        checkResultWithSemantic(c.createSinkDataReader(settings), records.subList(0, half), semantic);

        StreamExecutionEnvironment restartEnv =
                testEnv.createExecutionEnvironment(
                        TestEnvironmentSettings.builder().setSavepointRestorePath(savepoint).build());
        restartEnv.enableCheckpointing(50);
        restartEnv.setRestartStrategy(RestartStrategies.noRestart());
        restartEnv
                .addSource(new HalfSource(records, records.size()), "rest")
                .setParallelism(1)
                .uid("source")
                .sinkTo(c.createSink(settings))
                .setParallelism(after)
                .uid("sink");
        JobClient second = restartEnv.executeAsync("exactly-once restored " + after);
        try {
            checkResultWithSemantic(c.createSinkDataReader(settings), records, semantic);
        } finally {
            second.cancel().get(2, TimeUnit.MINUTES);
        }
    }

    /**
     * Stops the job with a savepoint, trying again while the savepoint is declined because not
     * every task is running yet (the source may emit its half before the sink tasks are up).
     */
    private static String stopWithSavepoint(JobClient job, String dir) throws Exception {
        long deadline = System.currentTimeMillis() + 120_000;
        while (true) {
            try {
                return job.stopWithSavepoint(false, dir, SavepointFormatType.CANONICAL)
                        .get(2, TimeUnit.MINUTES);
            } catch (java.util.concurrent.ExecutionException e) {
                boolean notRunning =
                        org.apache.flink.util.ExceptionUtils.findThrowableWithMessage(
                                        e, "Not all required tasks are currently running")
                                .isPresent();
                if (!notRunning || System.currentTimeMillis() > deadline) {
                    throw e;
                }
                Thread.sleep(100);
            }
        }
    }

    /**
     * Emits the records from its checkpointed position up to {@code limit}, then idles until
     * cancelled; counts what it emitted in {@link #EMITTED}.
     */
    static final class HalfSource
            implements org.apache.flink.streaming.api.functions.source.SourceFunction<String>,
                    org.apache.flink.streaming.api.checkpoint.CheckpointedFunction {
        static final AtomicInteger EMITTED = new AtomicInteger();
        private final ArrayList<String> records;
        private final int limit;
        private int next;
        private volatile boolean running = true;
        private transient org.apache.flink.api.common.state.ListState<Integer> position;

        HalfSource(List<String> records, int limit) {
            this.records = new ArrayList<>(records);
            this.limit = limit;
        }

        @Override
        public void run(SourceContext<String> out) throws Exception {
            while (running) {
                if (next < limit) {
                    synchronized (out.getCheckpointLock()) {
                        out.collect(records.get(next++));
                    }
                    EMITTED.incrementAndGet();
                } else {
                    Thread.sleep(10);
                }
            }
        }

        @Override
        public void cancel() {
            running = false;
        }

        @Override
        public void snapshotState(org.apache.flink.runtime.state.FunctionSnapshotContext context)
                throws Exception {
            position.update(Collections.singletonList(next));
        }

        @Override
        public void initializeState(org.apache.flink.runtime.state.FunctionInitializationContext context)
                throws Exception {
            position =
                    context.getOperatorStateStore()
                            .getListState(
                                    new org.apache.flink.api.common.state.ListStateDescriptor<>(
                                            "position", Types.INT));
            for (Integer p : position.get()) {
                next = p;
            }
        }
    }

    /** String record -> +I row (k = record, v = record). */
    static final class KeyValueSerializer implements SetatsRecordSerializer<String> {
        private static final long serialVersionUID = 1L;

        @Override
        public org.apache.flink.table.data.RowData serialize(String element) {
            StringData s = StringData.fromString(element);
            return GenericRowData.of(s, s);
        }
    }

    /** Polls every bucket's changelog from where the previous poll ended. */
    static final class ChangelogKeyReader implements ExternalSystemDataReader<String> {
        private final GatewayClient client;
        private final String table;
        private final Map<String, Long> next = new HashMap<>();

        ChangelogKeyReader(SetatsGatewayProcess gateway, String table) {
            this.client = gateway.client();
            this.table = table;
        }

        @Override
        public List<String> poll(Duration timeout) {
            List<String> out = new ArrayList<>();
            if (client.getTable("suite", table).isPresent()) {
                for (BucketOffsets b : client.listBuckets("suite", table).getBucketsList()) {
                    String id = b.getPartition() + "/" + b.getBucket();
                    long from = next.getOrDefault(id, b.getStartOffset());
                    if (from >= b.getEndOffset()) {
                        continue;
                    }
                    for (ChangelogRow r :
                            ChangelogReader.readBucket(client, "suite", table, b.getPartition(), b.getBucket(), from)) {
                        out.add((String) r.get("k"));
                        next.put(id, r.offset + 1);
                    }
                }
            }
            if (out.isEmpty()) {
                try {
                    Thread.sleep(Math.min(timeout.toMillis(), 100));
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }
            return out;
        }

        @Override
        public void close() {
            client.close();
        }
    }
}
