package io.setats.flink.source;

import io.setats.flink.SetatsConnectorOptions.StartupMode;
import io.setats.flink.client.GatewayClient;
import io.setats.flink.source.deserializer.ChangelogRecord;
import io.setats.flink.source.deserializer.SetatsDeserializationSchema;
import io.setats.flink.testutils.SetatsGatewayProcess;
import io.setats.proto.v1.BucketOffsets;
import io.setats.proto.v1.WriteAck;

import org.apache.flink.api.common.JobStatus;
import org.apache.flink.api.common.eventtime.WatermarkStrategy;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.core.execution.JobClient;
import org.apache.flink.core.execution.SavepointFormatType;
import org.apache.flink.runtime.minicluster.MiniCluster;
import org.apache.flink.runtime.testutils.MiniClusterResourceConfiguration;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.table.api.DataTypes;
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
import org.junit.jupiter.api.io.TempDir;

import javax.annotation.Nullable;

import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;

import static io.setats.flink.source.BinlogJobs.take;
import static io.setats.flink.source.SourceTestTables.KV;
import static io.setats.flink.source.SourceTestTables.awaitOpenChangelogStreams;
import static io.setats.flink.source.SourceTestTables.create;
import static io.setats.flink.source.SourceTestTables.insert;
import static io.setats.flink.source.SourceTestTables.row;
import static io.setats.flink.source.SourceTestTables.spec;
import static io.setats.flink.source.SourceTestTables.write;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * The DataStream API source ({@link SetatsCdcSource#builder()}) in Flink jobs on a MiniCluster
 * against a real gateway: read-cases R1 (from-timestamp, inclusive, gateway clock), R3 (new
 * partition after a latest start, discovery by interval alone), R4 (restore of a split that never
 * emitted a row) and R5 (TaskManager failover: nothing lost, nothing repeated).
 */
@Timeout(value = 300, unit = TimeUnit.SECONDS)
class SetatsCdcSourceITCase {

    /** Retention runs every 100 ms (only the R6 table has a short retention). */
    @RegisterExtension
    static final SetatsGatewayProcess GATEWAY = new SetatsGatewayProcess("--retention-interval", "100ms");

    @RegisterExtension
    static final MiniClusterExtension MINI_CLUSTER =
            new MiniClusterExtension(
                    new MiniClusterResourceConfiguration.Builder()
                            .setNumberTaskManagers(1)
                            .setNumberSlotsPerTaskManager(4)
                            .build());

    private static final String DB = "cdcdb";

    /** id INT, v INT; primary key id (read-case R5). */
    static final RowType KI =
            (RowType)
                    DataTypes.ROW(
                                    DataTypes.FIELD("id", DataTypes.INT().notNull()),
                                    DataTypes.FIELD("v", DataTypes.INT()))
                            .getLogicalType();

    /** id STRING, dt STRING, v STRING; primary key (id, dt), partitioned by dt (read-case R3). */
    private static final RowType PART =
            (RowType)
                    DataTypes.ROW(
                                    DataTypes.FIELD("id", DataTypes.STRING().notNull()),
                                    DataTypes.FIELD("dt", DataTypes.STRING().notNull()),
                                    DataTypes.FIELD("v", DataTypes.STRING()))
                            .getLogicalType();

    // ------------------------------------------------------------------------------------------

    /** {@code +I[1, a]}: the row as Flink prints rows. */
    static String format(ChangelogRecord r) {
        RowData row = r.row();
        StringBuilder sb = new StringBuilder(row.getRowKind().shortString()).append('[');
        for (int i = 0; i < row.getArity(); i++) {
            sb.append(i == 0 ? "" : ", ").append(r.field(i));
        }
        return sb.append(']').toString();
    }

    /** {@code bucket|offset|+I[1, 7]}: the row with its position. */
    static String formatWithPosition(ChangelogRecord r) {
        return r.tableBucket().bucket() + "|" + r.offset() + "|" + format(r);
    }

    private static SetatsCdcSourceBuilder<RowData> builder(String table, RowType type) {
        return SetatsCdcSource.builder()
                .setManagerUrl(GATEWAY.managerUrl())
                .setWarehouse(GATEWAY.warehouse().toString())
                .setCatalog("hadoop", "setats", null)
                .setTable(DB, table)
                .setReadType(type);
    }

    private static SetatsCdcSource<String> source(SetatsCdcSourceBuilder<RowData> b) {
        return b.setDeserializer(SetatsDeserializationSchema.of(SetatsCdcSourceITCase::format, Types.STRING)).build();
    }

    private static StreamExecutionEnvironment env(MiniCluster cluster, int parallelism, @Nullable String savepoint) {
        return BinlogJobs.env(cluster, parallelism, savepoint, true);
    }

    private static WriteAck put(String table, RowType type, RowData... rows) throws InterruptedException {
        try (GatewayClient c = GATEWAY.client()) {
            return write(c, DB, table, type, Arrays.asList(rows));
        }
    }

    private static void createTable(String table, RowType type, List<String> pk, List<String> partitionKeys, int buckets) {
        try (GatewayClient c = GATEWAY.client()) {
            create(c, spec(DB, table, type, pk, partitionKeys, buckets, Collections.emptyMap()));
        }
    }

    private static void waitUntilWallClockPasses(long ms) throws InterruptedException {
        while (System.currentTimeMillis() <= ms) {
            Thread.sleep(1);
        }
    }

    /** Jobs of one test are cancelled after it; wait until their streams are gone. */
    @AfterEach
    void noStreamLeftOpen() throws Exception {
        awaitOpenChangelogStreams(GATEWAY, 0);
    }

    // ------------------------------------------------------------------------------------------

    /** The DataStream API without SQL: columns looked up from the gateway, RowData with RowKind out. */
    /**
     * The source learns the job's object reuse from the stream graph (OutputTypeConfigurable):
     * without object reuse its readers emit BinaryRowData rows (Flink copies every row for the next
     * chained operator), with it the batch's view; the rows a job without object reuse reads are
     * the changelog (the other jobs of this class run without it too).
     */
    @Test
    void theSourceEmitsBinaryRowsOnlyWhenTheJobHasNoObjectReuse(@InjectMiniCluster MiniCluster cluster) throws Exception {
        for (boolean reuse : new boolean[] {false, true}) {
            StreamExecutionEnvironment env = env(cluster, 1, null);
            if (reuse) {
                env.getConfig().enableObjectReuse();
            } else {
                env.getConfig().disableObjectReuse();
            }
            SetatsCdcSource<String> src = source(builder("graph_only", KV)); // the graph is never run
            assertThat(src.emitsBinaryRows()).as("before the stream graph").isFalse();
            env.fromSource(src, WatermarkStrategy.noWatermarks(), "setats-cdc").print();
            env.getStreamGraph();
            assertThat(src.emitsBinaryRows()).as("object reuse %s", reuse).isEqualTo(!reuse);
        }
    }

    @Test
    void dataStreamBuilderEmitsRowData(@InjectMiniCluster MiniCluster cluster) throws Exception {
        createTable("ds", KV, Collections.singletonList("id"), Collections.emptyList(), 1);
        put("ds", KV, insert(1, "a"), insert(2, "b"));
        put("ds", KV, insert(1, "a2"), row(RowKind.DELETE, 2, null));
        SetatsCdcSource<RowData> src =
                SetatsCdcSource.builder()
                        .setManagerUrl(GATEWAY.managerUrl())
                        .setWarehouse(GATEWAY.warehouseUri())
                        .setTable(DB, "ds")
                        .setStartupMode(StartupMode.EARLIEST)
                        .build();
        assertThat(src.readType().getFieldNames()).containsExactly("id", "v");
        assertThat(src.readType().getTypeAt(0).isNullable()).isFalse(); // primary key
        assertThat(src.getProducedType().getTypeClass()).isEqualTo(RowData.class);
        try (CloseableIterator<String> it =
                env(cluster, 1, null)
                        .fromSource(src, WatermarkStrategy.noWatermarks(), "ds")
                        .map(r -> r.getRowKind().shortString() + "[" + r.getInt(0) + ", "
                                + (r.isNullAt(1) ? "null" : r.getString(1).toString()) + "]")
                        .returns(Types.STRING)
                        .executeAndCollect("ds")) {
            assertThat(take(it, 5)).containsExactly("+I[1, a]", "+I[2, b]", "-U[1, a]", "+U[1, a2]", "-D[2, b]");
        }
    }

    /** Read-case R1, with the gateway's commit times: inclusive, and before the oldest row = earliest. */
    @Test
    void fromTimestampIsInclusive(@InjectMiniCluster MiniCluster cluster) throws Exception {
        createTable("r1", KV, Collections.singletonList("id"), Collections.emptyList(), 1);
        long t1 = put("r1", KV, insert(1, "a")).getCommitMs();
        waitUntilWallClockPasses(t1);
        long t2 = put("r1", KV, insert(2, "b")).getCommitMs();
        assertThat(t2).isGreaterThan(t1);

        Map<Long, List<String>> cases = new TreeMap<>();
        cases.put(t1 - 50, Arrays.asList("+I[1, a]", "+I[2, b]")); // before the oldest row: earliest
        cases.put(t1, Arrays.asList("+I[1, a]", "+I[2, b]")); // inclusive
        cases.put(t1 + 1, Collections.singletonList("+I[2, b]")); // between the two commits
        for (Map.Entry<Long, List<String>> c : cases.entrySet()) {
            SetatsCdcSource<String> src = source(builder("r1", KV).setStartFromTimestamp(c.getKey()));
            try (CloseableIterator<String> it =
                    env(cluster, 1, null).fromSource(src, WatermarkStrategy.noWatermarks(), "r1").executeAndCollect("r1 " + c.getKey())) {
                // Rows of one bucket come in offset order: the first rows decide what was skipped.
                assertThat(take(it, c.getValue().size())).as("from %d", c.getKey()).isEqualTo(c.getValue());
            }
        }
    }

    /** SPEC section 5: a timestamp in the future waits; rows committed before it are skipped. */
    @Test
    void fromAFutureTimestampWaitsAndSkipsEarlierRows(@InjectMiniCluster MiniCluster cluster) throws Exception {
        createTable("future", KV, Collections.singletonList("id"), Collections.emptyList(), 1);
        put("future", KV, insert(1, "before-start"));
        long ts = System.currentTimeMillis() + 2_000;
        SetatsCdcSource<String> src = source(builder("future", KV).setStartFromTimestamp(ts));
        try (CloseableIterator<String> it =
                env(cluster, 1, null).fromSource(src, WatermarkStrategy.noWatermarks(), "future").executeAndCollect("future")) {
            long early = put("future", KV, insert(2, "early")).getCommitMs();
            waitUntilWallClockPasses(ts);
            long late = put("future", KV, insert(3, "late")).getCommitMs();
            assertThat(early).isLessThan(ts);
            assertThat(late).isGreaterThanOrEqualTo(ts);
            assertThat(take(it, 1)).containsExactly("+I[3, late]");
        }
    }

    /** Read-case R3 with the watch stream off: the discovery interval alone finds the partition. */
    @Test
    void aNewPartitionAfterALatestStartIsReadFromItsFirstRow(@InjectMiniCluster MiniCluster cluster) throws Exception {
        createTable("r3", PART, Arrays.asList("id", "dt"), Collections.singletonList("dt"), 2);
        put("r3", PART, insert("k0", "d1", "old"));
        SetatsCdcSource<String> src =
                source(builder("r3", PART)
                        .setStartupMode(StartupMode.LATEST)
                        .setDiscoveryInterval(Duration.ofSeconds(1))
                        .setWatchEnabled(false));
        try (CloseableIterator<String> it =
                env(cluster, 1, null).fromSource(src, WatermarkStrategy.noWatermarks(), "r3").executeAndCollect("r3")) {
            // Sync: the reader has opened the streams of d1's buckets, so 'latest' is resolved.
            try (GatewayClient c = GATEWAY.client()) {
                awaitOpenChangelogStreams(GATEWAY, SourceTestTables.splitsAtStart(c, DB, "r3"));
            }

            put("r3", PART, insert("k1", "d2", "r1")); // creates partition d2
            assertThat(take(it, 1)).containsExactly("+I[k1, d2, r1]"); // found within an interval
            put("r3", PART, insert("k2", "d2", "s1"));
            assertThat(take(it, 1)).containsExactly("+I[k2, d2, s1]");
        }
    }

    /**
     * Read-case R4: a split that never emitted a row restores at the position resolved at the first
     * start (offset 1), so the old row is not replayed and a row written while no job ran is not
     * lost.
     */
    @Test
    void restoringASplitThatNeverEmittedDoesNotReplayHistory(
            @InjectMiniCluster MiniCluster cluster, @TempDir Path savepoints) throws Exception {
        createTable("r4", KV, Collections.singletonList("id"), Collections.emptyList(), 1);
        put("r4", KV, insert(1, "old"));

        SetatsCdcSource<String> src = source(builder("r4", KV).setStartupMode(StartupMode.LATEST));
        StreamExecutionEnvironment first = env(cluster, 1, null);
        CloseableIterator<String> it1 =
                first.fromSource(src, WatermarkStrategy.noWatermarks(), "r4").uid("setats-r4").collectAsync();
        JobClient job1 = first.executeAsync("r4 first run");
        awaitOpenChangelogStreams(GATEWAY, 1); // the reader holds the split at offset 1
        String savepoint =
                job1.stopWithSavepoint(false, savepoints.toUri().toString(), SavepointFormatType.CANONICAL)
                        .get(60, TimeUnit.SECONDS);
        assertThat(job1.getJobStatus().get(60, TimeUnit.SECONDS)).isIn(JobStatus.FINISHED, JobStatus.CANCELED);
        it1.close();
        awaitOpenChangelogStreams(GATEWAY, 0);

        put("r4", KV, insert(3, "between")); // written while no job runs: must not be lost

        StreamExecutionEnvironment second = env(cluster, 1, savepoint);
        DataStream<String> restored =
                second.fromSource(src, WatermarkStrategy.noWatermarks(), "r4").uid("setats-r4")
                        .map(s -> s).returns(Types.STRING); // a new sink: its old state is not restored
        try (CloseableIterator<String> it2 = restored.collectAsync()) {
            second.executeAsync("r4 restored");
            put("r4", KV, insert(2, "new"));
            // One bucket, offset order: +I[1, old] would come first if history were replayed.
            assertThat(take(it2, 2)).containsExactly("+I[3, between]", "+I[2, new]");
        }
    }

    /**
     * Read-case R4 as the case states it: the 'latest' reader checkpoints (a retained checkpoint, not
     * a savepoint), is cancelled, and restarts from that checkpoint; it then reads +I(2,'new') and
     * not +I(1,'old'). A row written between cancel and restore must be read too.
     */
    @Test
    void restoringFromARetainedCheckpointAfterCancelDoesNotReplayHistory(
            @InjectMiniCluster MiniCluster cluster, @TempDir Path checkpoints) throws Exception {
        createTable("r4c", KV, Collections.singletonList("id"), Collections.emptyList(), 1);
        put("r4c", KV, insert(1, "old"));

        SetatsCdcSource<String> src = source(builder("r4c", KV).setStartupMode(StartupMode.LATEST));
        StreamExecutionEnvironment first = env(cluster, 1, null);
        first.enableCheckpointing(3_600_000); // only the checkpoint triggered below
        first.getCheckpointConfig().setCheckpointStorage(checkpoints.toUri().toString());
        first.getCheckpointConfig().setExternalizedCheckpointRetention(
                org.apache.flink.configuration.ExternalizedCheckpointRetention.RETAIN_ON_CANCELLATION);
        CloseableIterator<String> it1 =
                first.fromSource(src, WatermarkStrategy.noWatermarks(), "r4c").uid("setats-r4c").collectAsync();
        JobClient job1 = first.executeAsync("r4c first run");
        awaitOpenChangelogStreams(GATEWAY, 1); // the reader holds the split at offset 1
        String checkpoint = cluster.triggerCheckpoint(job1.getJobID()).get(60, TimeUnit.SECONDS);
        job1.cancel().get(60, TimeUnit.SECONDS);
        long deadline = System.currentTimeMillis() + 60_000; // bounded wait for the cancel to finish
        JobStatus status = job1.getJobStatus().get(60, TimeUnit.SECONDS);
        while (!status.isGloballyTerminalState() && System.currentTimeMillis() < deadline) {
            Thread.sleep(50);
            status = job1.getJobStatus().get(60, TimeUnit.SECONDS);
        }
        assertThat(status).isEqualTo(JobStatus.CANCELED);
        it1.close();
        awaitOpenChangelogStreams(GATEWAY, 0);
        // Written while no job runs: proves the restore used the checkpoint (offset 1), since a
        // fresh 'latest' start would skip it and a replay would start with +I[1, old].
        put("r4c", KV, insert(3, "between"));

        StreamExecutionEnvironment second = env(cluster, 1, checkpoint);
        DataStream<String> restored =
                second.fromSource(src, WatermarkStrategy.noWatermarks(), "r4c").uid("setats-r4c")
                        .map(s -> s).returns(Types.STRING); // a new sink: its old state is not restored
        try (CloseableIterator<String> it2 = restored.collectAsync()) {
            second.executeAsync("r4c restored");
            awaitOpenChangelogStreams(GATEWAY, 1);
            put("r4c", KV, insert(2, "new"));
            // One bucket, offset order: +I[1, old] would come first if history were replayed.
            assertThat(take(it2, 2)).containsExactly("+I[3, between]", "+I[2, new]");
        }
    }

    /**
     * Read-case R6 in a job: restoring a split whose position retention removed fails the job with
     * the gateway's message naming the bucket and the removed offsets; no row is skipped silently.
     */
    @Test
    void restoringAnExpiredPositionFailsTheJob(
            @InjectMiniCluster MiniCluster cluster, @TempDir Path savepoints) throws Exception {
        try (GatewayClient c = GATEWAY.client()) {
            create(c, spec(DB, "r6", KV, Collections.singletonList("id"), Collections.emptyList(), 1,
                    Collections.singletonMap("changelog.retention.ms", "1000")));
        }
        put("r6", KV, insert(1, "a")); // offset 0
        SetatsCdcSource<String> src = source(builder("r6", KV).setStartupMode(StartupMode.LATEST));
        StreamExecutionEnvironment first = env(cluster, 1, null);
        CloseableIterator<String> it1 =
                first.fromSource(src, WatermarkStrategy.noWatermarks(), "r6").uid("setats-r6").collectAsync();
        JobClient job1 = first.executeAsync("r6 first run");
        awaitOpenChangelogStreams(GATEWAY, 1); // the split is at offset 1
        String savepoint =
                job1.stopWithSavepoint(false, savepoints.toUri().toString(), SavepointFormatType.CANONICAL)
                        .get(60, TimeUnit.SECONDS);
        it1.close();
        awaitOpenChangelogStreams(GATEWAY, 0);

        put("r6", KV, insert(2, "b")); // offset 1: the restored split's next row
        long deadline = System.currentTimeMillis() + 60_000;
        long start = 0;
        while (start < 2 && System.currentTimeMillis() < deadline) {
            try (GatewayClient c = GATEWAY.client()) {
                start = c.listBuckets(DB, "r6").getBuckets(0).getStartOffset();
            }
            Thread.sleep(100);
        }
        assertThat(start).as("retention removed offsets 0 and 1").isEqualTo(2);

        StreamExecutionEnvironment second = BinlogJobs.env(cluster, 1, savepoint, false);
        second.fromSource(src, WatermarkStrategy.noWatermarks(), "r6").uid("setats-r6")
                .map(s -> s).returns(Types.STRING)
                .sinkTo(new org.apache.flink.streaming.api.functions.sink.v2.DiscardingSink<>());
        JobClient job2 = second.executeAsync("r6 restored");
        assertThatThrownBy(() -> job2.getJobExecutionResult().get(120, TimeUnit.SECONDS))
                .hasStackTraceContaining("OUT_OF_RANGE")
                .hasStackTraceContaining("table " + DB + ".r6 bucket 0")
                .hasStackTraceContaining("offset 1 was removed by retention")
                .hasStackTraceContaining("[0, 2)");
    }

    /**
     * Read-case R5: 4 buckets, 1000 keys, a checkpoint mid-stream, the TaskManager killed and a new
     * one started while 1000 more writes arrive. The exactly-once collect sink shows what the job
     * committed: every (bucket, offset) exactly once, and the output folded equals the table.
     */
    @Test
    void taskManagerFailoverNeitherLosesNorRepeatsRows(@InjectMiniCluster MiniCluster cluster) throws Exception {
        createTable("r5", KI, Collections.singletonList("id"), Collections.emptyList(), 4);
        Map<Integer, Integer> table = new HashMap<>();
        for (int batch = 0; batch < 10; batch++) {
            List<RowData> rows = new ArrayList<>();
            for (int k = batch * 100; k < (batch + 1) * 100; k++) {
                rows.add(insert(k, k));
                table.put(k, k);
            }
            try (GatewayClient c = GATEWAY.client()) {
                write(c, DB, "r5", KI, rows);
            }
        }

        StreamExecutionEnvironment env = env(cluster, 2, null);
        env.enableCheckpointing(100);
        SetatsCdcSource<String> src =
                builder("r5", KI)
                        .setStartupMode(StartupMode.EARLIEST)
                        .setDeserializer(SetatsDeserializationSchema.of(SetatsCdcSourceITCase::formatWithPosition, Types.STRING))
                        .build();
        CloseableIterator<String> it = env.fromSource(src, WatermarkStrategy.noWatermarks(), "r5").collectAsync();
        JobClient job = env.executeAsync("r5");
        try {
            List<String> out = new ArrayList<>(take(it, 1000)); // visible only once checkpointed

            // 1000 more writes in 20 batches: updates (-U/+U), deletes (-D) and new keys (+I).
            List<List<RowData>> more = new ArrayList<>();
            for (int batch = 0; batch < 20; batch++) {
                List<RowData> rows = new ArrayList<>();
                for (int i = batch * 50; i < (batch + 1) * 50; i++) {
                    if (i < 400) {
                        rows.add(insert(i, i + 1_000_000));
                        table.put(i, i + 1_000_000);
                    } else if (i < 500) {
                        rows.add(row(RowKind.DELETE, i, null));
                        table.remove(i);
                    } else {
                        rows.add(insert(i + 500, i + 500));
                        table.put(i + 500, i + 500);
                    }
                }
                more.add(rows);
            }
            try (GatewayClient c = GATEWAY.client()) {
                for (int batch = 0; batch < 10; batch++) {
                    write(c, DB, "r5", KI, more.get(batch));
                }
                out.addAll(take(it, 1)); // a checkpoint completed in the middle of these writes
                cluster.terminateTaskManager(0).get(60, TimeUnit.SECONDS);
                for (int batch = 10; batch < 20; batch++) {
                    write(c, DB, "r5", KI, more.get(batch));
                }
                cluster.startTaskManager();
            }

            long total = 0;
            Map<Integer, Long> endOffsets = new HashMap<>();
            try (GatewayClient c = GATEWAY.client()) {
                for (BucketOffsets b : c.listBuckets(DB, "r5").getBucketsList()) {
                    total += b.getEndOffset();
                    endOffsets.put(b.getBucket(), b.getEndOffset());
                    assertThat(b.getStartOffset()).isZero();
                }
            }
            assertThat(total).isEqualTo(1000 + 400 * 2 + 100 + 500);
            out.addAll(take(it, (int) (total - out.size())));
            assertThat(out).hasSize((int) total);

            Map<Integer, TreeMap<Long, String>> byBucket = assertEveryOffsetOnce(out, endOffsets);

            // The output folded (per bucket in offset order) equals the table.
            Map<Integer, Integer> folded = new HashMap<>();
            for (TreeMap<Long, String> rows : byBucket.values()) {
                for (String r : rows.values()) {
                    String kind = r.substring(0, 2);
                    String[] kv = r.substring(3, r.length() - 1).split(", ");
                    int k = Integer.parseInt(kv[0]);
                    if (kind.equals("+I") || kind.equals("+U")) {
                        folded.put(k, Integer.parseInt(kv[1]));
                    } else {
                        assertThat(folded.remove(k)).as("%s retracts a row that is there", r).isNotNull();
                    }
                }
            }
            assertThat(folded).isEqualTo(table);
        } finally {
            job.cancel();
            it.close();
        }
    }

    /**
     * Checks that {@code out} ({@link #formatWithPosition} rows) holds every (bucket, offset) exactly
     * once: per bucket exactly the offsets 0..end-1 of {@code endOffsets}. Returns the rows per
     * bucket in offset order.
     */
    static Map<Integer, TreeMap<Long, String>> assertEveryOffsetOnce(List<String> out, Map<Integer, Long> endOffsets) {
        Map<Integer, Set<Long>> seen = new HashMap<>();
        Map<Integer, TreeMap<Long, String>> byBucket = new HashMap<>();
        for (String s : out) {
            String[] p = s.split("\\|", 3);
            int bucket = Integer.parseInt(p[0]);
            long offset = Long.parseLong(p[1]);
            assertThat(seen.computeIfAbsent(bucket, b -> new HashSet<>()).add(offset))
                    .as("(bucket %d, offset %d) emitted once", bucket, offset)
                    .isTrue();
            byBucket.computeIfAbsent(bucket, b -> new TreeMap<>()).put(offset, p[2]);
        }
        for (Map.Entry<Integer, Long> e : endOffsets.entrySet()) {
            assertThat(seen.get(e.getKey())).as("bucket %d", e.getKey()).hasSize(e.getValue().intValue());
        }
        return byBucket;
    }
}
