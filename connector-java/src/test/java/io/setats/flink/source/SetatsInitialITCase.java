package io.setats.flink.source;

import io.setats.flink.SetatsConnectorOptions.StartupMode;
import io.setats.flink.client.GatewayClient;
import io.setats.flink.source.deserializer.SetatsDeserializationSchema;
import io.setats.flink.testutils.SetatsGatewayProcess;

import org.apache.flink.api.common.eventtime.WatermarkStrategy;
import org.apache.flink.api.common.functions.MapFunction;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.configuration.ExternalizedCheckpointRetention;
import org.apache.flink.core.execution.JobClient;
import org.apache.flink.runtime.minicluster.MiniCluster;
import org.apache.flink.runtime.testutils.MiniClusterResourceConfiguration;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
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

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;

import static io.setats.flink.source.BinlogJobs.awaitTerminal;
import static io.setats.flink.source.BinlogJobs.env;
import static io.setats.flink.source.BinlogJobs.fold;
import static io.setats.flink.source.BinlogJobs.take;
import static io.setats.flink.source.BinlogJobs.takeUntil;
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
 * {@code startup.mode = 'initial'} (SPEC section 9, binlog-cases S7-S9) in Flink jobs on a
 * MiniCluster against a real gateway: the snapshot then the changelog from exactly its offset,
 * writers running during the snapshot with parallelism 2 and empty buckets, a TaskManager killed
 * mid-snapshot, a restore after the snapshot finished, a log-only start restored with the mode
 * changed to initial, and a table without changelog.
 */
@Timeout(value = 300, unit = TimeUnit.SECONDS)
class SetatsInitialITCase {

    /** Retention runs every 100 ms, for the table whose changelog.retention.ms removes rows. */
    @RegisterExtension
    static final SetatsGatewayProcess GATEWAY = new SetatsGatewayProcess("--retention-interval", "100ms");

    @RegisterExtension
    static final MiniClusterExtension MINI_CLUSTER =
            new MiniClusterExtension(
                    new MiniClusterResourceConfiguration.Builder()
                            .setNumberTaskManagers(1)
                            .setNumberSlotsPerTaskManager(4)
                            .build());

    private static final String DB = "initdb";

    private static void createTable(String table, int buckets, Map<String, String> options) {
        try (GatewayClient c = GATEWAY.client()) {
            create(c, spec(DB, table, KV, Collections.singletonList("id"), Collections.emptyList(), buckets, options));
        }
    }

    private static void put(String table, List<RowData> rows) throws InterruptedException {
        try (GatewayClient c = GATEWAY.client()) {
            write(c, DB, table, KV, rows);
        }
    }

    private static SetatsCdcSource<String> source(String table, StartupMode mode) {
        return builder(table).setStartupMode(mode).build();
    }

    private static SetatsCdcSourceBuilder<String> builder(String table) {
        return SetatsCdcSource.builder()
                .setManagerUrl(GATEWAY.managerUrl())
                .setWarehouse(GATEWAY.warehouseUri())
                .setCatalog("hadoop", "setats", null)
                .setTable(DB, table)
                .setReadType(KV)
                .setDeserializer(SetatsDeserializationSchema.of(r -> BinlogJobs.kv(r.row()), Types.STRING));
    }

    @AfterEach
    void noStreamLeftOpen() throws Exception {
        awaitOpenChangelogStreams(GATEWAY, 0);
    }

    /** S7: the snapshot part is the state at the view's offset E; then the changelog from E exactly. */
    @Test
    void snapshotAndChangelogMeetExactly(@InjectMiniCluster MiniCluster cluster) throws Exception {
        createTable("s7", 1, Collections.emptyMap());
        put("s7", Arrays.asList(insert(1, "a"), insert(2, "b")));
        put("s7", Collections.singletonList(row(RowKind.UPDATE_AFTER, 1, "a2"))); // the case's kinds
        try (CloseableIterator<String> it =
                env(cluster, 1, null, false)
                        .fromSource(source("s7", StartupMode.INITIAL), WatermarkStrategy.noWatermarks(), "s7")
                        .executeAndCollect("s7")) {
            assertThat(take(it, 2)).containsExactly("+I[1, a2]", "+I[2, b]");
            put("s7", Arrays.asList(row(RowKind.UPDATE_AFTER, 2, "b2"), row(RowKind.DELETE, 1, "a2"), insert(3, "c")));
            assertThat(take(it, 4)).containsExactly("-U[2, b]", "+U[2, b2]", "-D[1, a2]", "+I[3, c]");
        }
    }

    /**
     * Writers run during the snapshot (inserts, updates of keys emitted and not yet emitted,
     * deletes), parallelism 2, 8 buckets of which some are empty at first, checkpoints every 100
     * ms: the output folded equals the table at the end and the RowKind state machine holds.
     */
    @Test
    void concurrentWritersDuringTheSnapshot(@InjectMiniCluster MiniCluster cluster) throws Exception {
        createTable("conc", 8, Collections.emptyMap());
        Map<Integer, String> table = new HashMap<>();
        List<RowData> rows = new ArrayList<>();
        for (int k = 0; k < 3000; k++) {
            rows.add(insert(k, "v" + k));
            table.put(k, "v" + k);
        }
        put("conc", rows);
        StreamExecutionEnvironment env = env(cluster, 2, null, true);
        env.enableCheckpointing(100);
        CloseableIterator<String> it =
                env.fromSource(source("conc", StartupMode.INITIAL), WatermarkStrategy.noWatermarks(), "conc").collectAsync();
        JobClient job = env.executeAsync("conc");
        try {
            Random rnd = new Random(7);
            for (int batch = 0; batch < 30; batch++) {
                List<RowData> b = new ArrayList<>();
                for (int i = 0; i < 50; i++) {
                    int k = rnd.nextInt(3500);
                    if (rnd.nextInt(4) == 0) {
                        b.add(row(RowKind.DELETE, k, null));
                        table.remove(k);
                    } else {
                        String v = "w" + batch + "-" + i;
                        b.add(insert(k, v));
                        table.put(k, v);
                    }
                }
                put("conc", b);
            }
            Map<Integer, String> folded = new HashMap<>();
            List<String> out = new ArrayList<>();
            takeUntil(it, out, l -> {
                if (!l.isEmpty()) {
                    fold(folded, l.get(l.size() - 1));
                }
                return folded.equals(table);
            });
            assertThat(folded).isEqualTo(table);
        } finally {
            job.cancel();
            it.close();
        }
    }

    /** Slows the first rows down until the test clears it, so that a checkpoint lands mid-snapshot. */
    static final class Slow implements MapFunction<String, String> {
        static volatile boolean slow = true;

        @Override
        public String map(String s) throws Exception {
            if (slow) {
                Thread.sleep(1);
            }
            return s;
        }
    }

    /**
     * A TaskManager killed while the snapshot is emitted (checkpoints every 100 ms, the first
     * completed one mid-snapshot) and writes going on: the exactly-once output folded equals the
     * table, nothing emitted twice (the RowKind state machine holds), nothing lost.
     */
    @Test
    void taskManagerKilledMidSnapshot(@InjectMiniCluster MiniCluster cluster) throws Exception {
        createTable("kill", 4, Collections.emptyMap());
        Map<Integer, String> table = new HashMap<>();
        List<RowData> rows = new ArrayList<>();
        for (int k = 0; k < 4000; k++) {
            rows.add(insert(k, "v" + k));
            table.put(k, "v" + k);
        }
        put("kill", rows);
        Slow.slow = true;
        StreamExecutionEnvironment env = env(cluster, 2, null, true);
        env.enableCheckpointing(100);
        CloseableIterator<String> it =
                env.fromSource(source("kill", StartupMode.INITIAL), WatermarkStrategy.noWatermarks(), "kill")
                        .map(new Slow())
                        .returns(Types.STRING)
                        .collectAsync();
        JobClient job = env.executeAsync("kill");
        try {
            List<String> out = new ArrayList<>(take(it, 1)); // a checkpoint completed (exactly-once collect)
            assertThat(out.size()).isLessThan(4000);
            List<RowData> more = new ArrayList<>();
            for (int k = 0; k < 4000; k += 7) {
                more.add(insert(k, "u" + k));
                table.put(k, "u" + k);
            }
            for (int k = 3; k < 4000; k += 11) {
                more.add(row(RowKind.DELETE, k, null));
                table.remove(k);
            }
            for (int k = 4000; k < 4100; k++) {
                more.add(insert(k, "n" + k));
                table.put(k, "n" + k);
            }
            put("kill", more);
            cluster.terminateTaskManager(0).get(60, TimeUnit.SECONDS);
            Slow.slow = false;
            cluster.startTaskManager();
            Map<Integer, String> folded = new HashMap<>();
            int[] done = {0};
            takeUntil(it, out, l -> {
                for (; done[0] < l.size(); done[0]++) {
                    fold(folded, l.get(done[0]));
                }
                return folded.equals(table);
            });
            assertThat(folded).isEqualTo(table);
        } finally {
            Slow.slow = false;
            job.cancel();
            it.close();
        }
    }

    /**
     * S8: restored from a checkpoint taken after the snapshot finished, with no new writes, the job
     * emits nothing of the snapshot again: the first row after the restore is the new write.
     */
    @Test
    void restoreAfterTheSnapshotDoesNotReadItAgain(@InjectMiniCluster MiniCluster cluster, @TempDir Path checkpoints)
            throws Exception {
        createTable("s8", 2, Collections.emptyMap());
        put("s8", Arrays.asList(insert(1, "a"), insert(2, "b"), insert(3, "c")));
        String checkpoint = checkpointAndCancel(cluster, "s8", StartupMode.INITIAL, checkpoints, 3, 2);

        try (CloseableIterator<String> it2 = restoreAsInitial(cluster, "s8", checkpoint, 2)) {
            put("s8", Collections.singletonList(insert(9, "new")));
            assertThat(take(it2, 1)).containsExactly("+I[9, new]");
        }
    }

    /**
     * S9: a 'latest' job checkpointed, then restored with the mode changed to 'initial': no
     * snapshot rows; it goes on from its checkpointed offsets (a row written in between is read).
     */
    @Test
    void aLatestStartRestoredAsInitialReadsNoSnapshot(@InjectMiniCluster MiniCluster cluster, @TempDir Path checkpoints)
            throws Exception {
        createTable("s9", 1, Collections.emptyMap());
        put("s9", Collections.singletonList(insert(1, "old")));
        logOnlyStartRestoredAsInitial(cluster, "s9", checkpointAndCancel(cluster, "s9", source("s9", StartupMode.LATEST), checkpoints, 0, 1));
    }

    /** S9 with 'from-timestamp' (a time after the first row): restored as 'initial', no snapshot rows. */
    @Test
    void aFromTimestampStartRestoredAsInitialReadsNoSnapshot(@InjectMiniCluster MiniCluster cluster, @TempDir Path checkpoints)
            throws Exception {
        createTable("s9ts", 1, Collections.emptyMap());
        put("s9ts", Collections.singletonList(insert(1, "old")));
        Thread.sleep(5); // the start time is after the first row's commit time
        SetatsCdcSource<String> fromNow = builder("s9ts").setStartFromTimestamp(System.currentTimeMillis()).build();
        logOnlyStartRestoredAsInitial(cluster, "s9ts", checkpointAndCancel(cluster, "s9ts", fromNow, checkpoints, 0, 1));
    }

    /**
     * Restore exactly at a commit boundary (issue 10): the first job reads the two rows of one
     * commit (offsets 0 and 1) from earliest and checkpoints with nothing after them; restored
     * (its state wins over the mode), the next commit's rows come once each: no drop of the row at
     * the restored position, no repeat of the last row before it.
     */
    @Test
    void restoreExactlyAtACommitBoundaryEmitsTheNextRowOnce(@InjectMiniCluster MiniCluster cluster, @TempDir Path checkpoints)
            throws Exception {
        createTable("cb", 1, Collections.emptyMap());
        put("cb", Arrays.asList(insert(1, "a"), insert(2, "b")));
        String checkpoint = checkpointAndCancel(cluster, "cb", StartupMode.EARLIEST, checkpoints, 2, 1);
        put("cb", Arrays.asList(insert(3, "c"), insert(4, "d")));
        try (CloseableIterator<String> it2 = restoreAsInitial(cluster, "cb", checkpoint, 1)) {
            put("cb", Collections.singletonList(insert(5, "e")));
            assertThat(take(it2, 3)).containsExactly("+I[3, c]", "+I[4, d]", "+I[5, e]");
        }
    }

    /** After a log-only first run checkpointed at {@code checkpoint}: a row written, the job restored as initial. */
    private static void logOnlyStartRestoredAsInitial(MiniCluster cluster, String table, String checkpoint) throws Exception {
        put(table, Collections.singletonList(insert(2, "between")));
        try (CloseableIterator<String> it2 = restoreAsInitial(cluster, table, checkpoint, 1)) {
            put(table, Collections.singletonList(insert(3, "new")));
            // One bucket: a snapshot would start with +I[1, old] (and +I[2, between] as a snapshot row).
            assertThat(take(it2, 2)).containsExactly("+I[2, between]", "+I[3, new]");
        }
    }

    /**
     * A bucket found after the start of an 'initial' job whose first changelog rows were already
     * removed (changelog.retention.ms, here while the job was stopped) is read through its
     * snapshot: its merged rows as +I, then its changelog. Reading it from its first retained row
     * would miss them (SPEC section 9: full + incremental for every bucket).
     */
    @Test
    void aBucketFoundAfterTheStartWithRemovedRowsIsReadThroughItsSnapshot(
            @InjectMiniCluster MiniCluster cluster, @TempDir Path checkpoints) throws Exception {
        createTable("nb", 2, Collections.singletonMap("changelog.retention.ms", "1000"));
        int old = SourceTestTables.intKeysInBucket(KV, "id", 2, 0, 0, 1).get(0);
        List<Integer> late = SourceTestTables.intKeysInBucket(KV, "id", 2, 1, 0, 3);
        put("nb", Collections.singletonList(insert(old, "old")));
        // Bucket 0 only: the first job snapshots it and follows its changelog; bucket 1 does not exist.
        String checkpoint = checkpointAndCancel(cluster, "nb", StartupMode.INITIAL, checkpoints, 1, 1);
        put("nb", Arrays.asList(insert(late.get(0), "a"), insert(late.get(1), "b")));
        put("nb", Collections.singletonList(insert(late.get(0), "a2")));
        try (GatewayClient c = GATEWAY.client()) {
            long deadline = System.currentTimeMillis() + BinlogJobs.DEADLINE_S * 1000;
            while (c.listBuckets(DB, "nb").getBucketsList().stream()
                    .noneMatch(b -> b.getBucket() == 1 && b.getStartOffset() == b.getEndOffset() && b.getEndOffset() > 0)) {
                assertThat(System.currentTimeMillis()).as("retention removed bucket 1's rows").isLessThan(deadline);
                Thread.sleep(100);
            }
        }
        try (CloseableIterator<String> it2 = restoreAsInitial(cluster, "nb", checkpoint, 2)) {
            put("nb", Collections.singletonList(insert(late.get(2), "c")));
            assertThat(take(it2, 3)).containsExactly(
                    "+I[" + late.get(0) + ", a2]", "+I[" + late.get(1) + ", b]", "+I[" + late.get(2) + ", c]");
        }
    }

    /**
     * Starts a job on {@code table} with startup.mode initial, restored from {@code checkpoint}
     * (the first job's source uid), and returns its output once {@code streams} changelog
     * streams are open.
     */
    private static CloseableIterator<String> restoreAsInitial(
            MiniCluster cluster, String table, String checkpoint, int streams) throws Exception {
        StreamExecutionEnvironment second = env(cluster, 1, checkpoint, false);
        CloseableIterator<String> it =
                second.fromSource(source(table, StartupMode.INITIAL), WatermarkStrategy.noWatermarks(), table)
                        .uid("setats-" + table)
                        // two maps: not the first job's topology, so the collect sink's state is not restored
                        .map(s -> s).returns(Types.STRING).map(s -> s).returns(Types.STRING).collectAsync();
        second.executeAsync(table + " restored as initial");
        awaitOpenChangelogStreams(GATEWAY, streams);
        return it;
    }

    /**
     * Runs a job on {@code table} until its {@code streams} changelog streams are open (and
     * {@code rows} rows came out), triggers a retained checkpoint, cancels the job and returns the
     * checkpoint path.
     */
    private static String checkpointAndCancel(
            MiniCluster cluster, String table, StartupMode mode, Path dir, int rows, int streams) throws Exception {
        return checkpointAndCancel(cluster, table, source(table, mode), dir, rows, streams);
    }

    private static String checkpointAndCancel(
            MiniCluster cluster, String table, SetatsCdcSource<String> source, Path dir, int rows, int streams)
            throws Exception {
        StreamExecutionEnvironment first = env(cluster, 1, null, false);
        first.enableCheckpointing(3_600_000); // only the checkpoint triggered below
        first.getCheckpointConfig().setCheckpointStorage(dir.toUri().toString());
        first.getCheckpointConfig().setExternalizedCheckpointRetention(ExternalizedCheckpointRetention.RETAIN_ON_CANCELLATION);
        CloseableIterator<String> it1 =
                first.fromSource(source, WatermarkStrategy.noWatermarks(), table).uid("setats-" + table)
                        .map(new BinlogJobs.Count(table)).returns(Types.STRING).collectAsync();
        JobClient job1 = first.executeAsync(table + " first run");
        awaitOpenChangelogStreams(GATEWAY, streams); // snapshot phases done, changelog followed
        BinlogJobs.awaitCount(table, rows); // emitted: the checkpoint covers them
        String checkpoint = cluster.triggerCheckpoint(job1.getJobID()).get(60, TimeUnit.SECONDS);
        job1.cancel().get(60, TimeUnit.SECONDS);
        awaitTerminal(job1);
        it1.close();
        awaitOpenChangelogStreams(GATEWAY, 0);
        return checkpoint;
    }

    /** changelog.enabled = false: the job fails at start naming the table and the option. */
    @Test
    void aTableWithoutChangelogFailsNamingTheOption(@InjectMiniCluster MiniCluster cluster) throws Exception {
        createTable("nolog", 1, Collections.singletonMap("changelog.enabled", "false"));
        put("nolog", Collections.singletonList(insert(1, "a")));
        StreamExecutionEnvironment env = env(cluster, 1, null, false);
        env.fromSource(source("nolog", StartupMode.INITIAL), WatermarkStrategy.noWatermarks(), "nolog")
                .sinkTo(new org.apache.flink.streaming.api.functions.sink.v2.DiscardingSink<>());
        JobClient job = env.executeAsync("nolog");
        AtomicReference<Throwable> error = new AtomicReference<>();
        assertThatThrownBy(() -> job.getJobExecutionResult().get(120, TimeUnit.SECONDS))
                .hasStackTraceContaining(DB + ".nolog")
                .hasStackTraceContaining("changelog.enabled = false");
    }
}
