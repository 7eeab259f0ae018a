package io.setats.flink.source;

import io.setats.flink.SetatsConnectorOptions.StartupMode;
import io.setats.flink.client.GatewayClient;
import io.setats.flink.source.deserializer.SetatsDeserializationSchema;
import io.setats.flink.testutils.SetatsGatewayProcess;
import io.setats.proto.v1.BucketOffsets;

import org.apache.flink.api.common.JobID;
import org.apache.flink.api.common.JobStatus;
import org.apache.flink.api.common.eventtime.WatermarkStrategy;
import org.apache.flink.api.common.functions.MapFunction;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.ExternalizedCheckpointRetention;
import org.apache.flink.core.execution.JobClient;
import org.apache.flink.metrics.Gauge;
import org.apache.flink.metrics.Metric;
import org.apache.flink.runtime.minicluster.MiniCluster;
import org.apache.flink.runtime.testutils.InMemoryReporter;
import org.apache.flink.runtime.testutils.MiniClusterResourceConfiguration;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.functions.sink.v2.DiscardingSink;
import org.apache.flink.table.api.DataTypes;
import org.apache.flink.table.api.EnvironmentSettings;
import org.apache.flink.table.api.TableEnvironment;
import org.apache.flink.table.data.RowData;
import org.apache.flink.table.types.logical.RowType;
import org.apache.flink.test.junit5.InjectMiniCluster;
import org.apache.flink.test.junit5.MiniClusterExtension;
import org.apache.flink.types.Row;
import org.apache.flink.util.CloseableIterator;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Queue;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;

import static io.setats.flink.source.SourceTestTables.awaitOpenChangelogStreams;
import static io.setats.flink.source.SourceTestTables.create;
import static io.setats.flink.source.SourceTestTables.insert;
import static io.setats.flink.source.SourceTestTables.spec;
import static io.setats.flink.source.SourceTestTables.write;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * ALTER TABLE ... DROP PARTITION through Flink SQL (the setats catalog) while a streaming
 * setats-cdc job at parallelism 2 reads the partitioned table, against a real gateway in a Flink
 * MiniCluster: SHOW PARTITIONS follows the drop; the job's readers finish the dropped partition's
 * splits (its DoGets end, no reconnect, no failure) and keep reading the other partition; the
 * enumerator forgets the splits (metric setatsAssignedSplits, which is the state its checkpoints
 * hold), so a job restored from a checkpoint taken after the drop starts without them; a job
 * restored from a checkpoint taken before the drop finishes them at once and reads on.
 */
@Timeout(value = 300, unit = TimeUnit.SECONDS)
class SetatsDropPartitionITCase {

    @RegisterExtension static final SetatsGatewayProcess GATEWAY = new SetatsGatewayProcess();

    static final InMemoryReporter REPORTER = InMemoryReporter.create();

    @RegisterExtension
    static final MiniClusterExtension MINI_CLUSTER =
            new MiniClusterExtension(
                    new MiniClusterResourceConfiguration.Builder()
                            .setConfiguration(REPORTER.addToConfiguration(retainThreeCheckpoints()))
                            .setNumberTaskManagers(1)
                            .setNumberSlotsPerTaskManager(4)
                            .build());

    /** Keeps the checkpoint before the drop when the one after it completes. */
    private static Configuration retainThreeCheckpoints() {
        Configuration conf = new Configuration();
        conf.set(org.apache.flink.configuration.CheckpointingOptions.MAX_RETAINED_CHECKPOINTS, 3);
        return conf;
    }

    private static final String DB = "dropdb";
    private static final String TABLE = "events";
    private static final RowType TYPE =
            (RowType)
                    DataTypes.ROW(
                                    DataTypes.FIELD("id", DataTypes.INT().notNull()),
                                    DataTypes.FIELD("dt", DataTypes.STRING().notNull()),
                                    DataTypes.FIELD("v", DataTypes.STRING()))
                            .getLogicalType();

    /** Rows each job saw, "dt:id", by job name (the MiniCluster runs in this JVM). */
    static final Map<String, Queue<String>> SEEN = new ConcurrentHashMap<>();

    /** Records the rows that pass it under its job's name. */
    static final class Seen implements MapFunction<String, String> {
        private final String name;

        Seen(String name) {
            this.name = name;
            SEEN.put(name, new ConcurrentLinkedQueue<>());
        }

        @Override
        public String map(String s) {
            SEEN.get(name).add(s);
            return s;
        }
    }

    private static void put(String dt, int from, int to) throws InterruptedException {
        List<RowData> rows = new ArrayList<>();
        for (int i = from; i < to; i++) {
            rows.add(insert(i, dt, "v" + i));
        }
        try (GatewayClient c = GATEWAY.client()) {
            write(c, DB, TABLE, TYPE, rows);
        }
    }

    private static int bucketsOf(String partition) {
        try (GatewayClient c = GATEWAY.client()) {
            int n = 0;
            for (BucketOffsets b : c.listBuckets(DB, TABLE).getBucketsList()) {
                if (b.getPartition().equals(partition)) {
                    n++;
                }
            }
            return n;
        }
    }

    private static JobClient start(MiniCluster cluster, String name, Path checkpoints, String restoreFrom) throws Exception {
        StreamExecutionEnvironment env = BinlogJobs.env(cluster, 2, restoreFrom, false);
        env.enableCheckpointing(3_600_000); // only the checkpoints the test triggers
        env.getCheckpointConfig().setCheckpointStorage(checkpoints.toUri().toString());
        env.getCheckpointConfig().setExternalizedCheckpointRetention(ExternalizedCheckpointRetention.RETAIN_ON_CANCELLATION);
        SetatsCdcSource<String> source =
                SetatsCdcSource.builder()
                        .setManagerUrl(GATEWAY.managerUrl())
                        .setWarehouse(GATEWAY.warehouseUri())
                        .setCatalog("hadoop", "setats", null)
                        .setTable(DB, TABLE)
                        .setReadType(TYPE)
                        .setStartupMode(StartupMode.EARLIEST)
                        .setDeserializer(
                                SetatsDeserializationSchema.of(
                                        r -> r.row().getString(1) + ":" + r.row().getInt(0), Types.STRING))
                        .build();
        env.fromSource(source, WatermarkStrategy.noWatermarks(), "cdc").uid("setats-cdc")
                .map(new Seen(name)).returns(Types.STRING).uid("seen")
                .sinkTo(new DiscardingSink<>());
        return env.executeAsync(name);
    }

    /** The value of the enumerator gauge {@code name} of job, or -1 while it is not registered. */
    private static long gauge(JobID job, String name) {
        for (Metric m : REPORTER.findMetrics(job, name).values()) {
            return ((Number) ((Gauge<?>) m).getValue()).longValue();
        }
        return -1;
    }

    /** Waits for cond while job runs; a job that ended fails the test with its failure. */
    private static void await(JobClient job, String what, BooleanSupplier cond) throws Exception {
        long deadline = System.currentTimeMillis() + 120_000;
        while (!cond.getAsBoolean()) {
            JobStatus status = job.getJobStatus().get(60, TimeUnit.SECONDS);
            if (status.isGloballyTerminalState()) {
                job.getJobExecutionResult().get(60, TimeUnit.SECONDS); // throws the job's failure
                throw new AssertionError("job ended (" + status + ") while waiting for " + what);
            }
            assertThat(System.currentTimeMillis()).as("waiting for %s", what).isLessThan(deadline);
            Thread.sleep(20);
        }
    }

    private static long count(String job, String dt) {
        return SEEN.get(job).stream().filter(s -> s.startsWith(dt + ":")).count();
    }

    private static List<String> sql(TableEnvironment tEnv, String stmt) throws Exception {
        List<String> out = new ArrayList<>();
        try (CloseableIterator<Row> it = tEnv.executeSql(stmt).collect()) {
            it.forEachRemaining(r -> out.add(String.valueOf(r.getField(0))));
        }
        return out;
    }

    @Test
    void droppedPartitionsSplitsAreRetired(@InjectMiniCluster MiniCluster cluster, @TempDir Path checkpoints) throws Exception {
        try (GatewayClient c = GATEWAY.client()) {
            create(c, spec(DB, TABLE, TYPE, Arrays.asList("id", "dt"), Arrays.asList("dt"), 2, java.util.Collections.emptyMap()));
        }
        put("d1", 0, 20);
        put("d2", 0, 20);
        int d1Buckets = bucketsOf("dt=d1");
        int d2Buckets = bucketsOf("dt=d2");
        assertThat(d1Buckets).isPositive();
        assertThat(d2Buckets).isPositive();

        // The first job reads both partitions; a checkpoint before the drop.
        JobClient job1 = start(cluster, "first", checkpoints, null);
        await(job1, "the first job's 40 rows", () -> SEEN.get("first").size() >= 40);
        awaitOpenChangelogStreams(GATEWAY, d1Buckets + d2Buckets);
        String beforeDrop = cluster.triggerCheckpoint(job1.getJobID()).get(60, TimeUnit.SECONDS);
        assertThat(gauge(job1.getJobID(), "setatsAssignedSplits")).isEqualTo(d1Buckets + d2Buckets);

        // DROP PARTITION through Flink SQL; SHOW PARTITIONS follows.
        TableEnvironment tEnv = TableEnvironment.create(EnvironmentSettings.inBatchMode());
        tEnv.executeSql("CREATE CATALOG sc WITH ('type' = 'setats', 'manager-url' = '" + GATEWAY.managerUrl()
                + "', 'warehouse' = '" + GATEWAY.warehouse() + "', 'catalog-type' = 'hadoop', 'catalog-name' = 'setats')");
        assertThat(sql(tEnv, "SHOW PARTITIONS sc." + DB + "." + TABLE)).containsExactly("dt=d1", "dt=d2");
        tEnv.executeSql("ALTER TABLE sc." + DB + "." + TABLE + " DROP PARTITION (dt = 'd1')").await();
        assertThat(sql(tEnv, "SHOW PARTITIONS sc." + DB + "." + TABLE)).containsExactly("dt=d2");
        // The bounded scan (the setats batch source) lists the remaining partition only.
        assertThat(sql(tEnv, "SELECT COUNT(*) FROM sc." + DB + "." + TABLE)).containsExactly("20");
        tEnv.executeSql("ALTER TABLE sc." + DB + "." + TABLE + " DROP IF EXISTS PARTITION (dt = 'd1')").await();

        // The readers finish the dropped splits (their DoGets end for good), the enumerator
        // forgets them, and the other partition keeps flowing.
        await(job1, "the dropped splits retired", () -> gauge(job1.getJobID(), "setatsAssignedSplits") == d2Buckets);
        assertThat(gauge(job1.getJobID(), "setatsRetiredSplits")).isEqualTo(d1Buckets);
        awaitOpenChangelogStreams(GATEWAY, d2Buckets);
        put("d2", 100, 105);
        await(job1, "the new d2 rows in the first job", () -> count("first", "d2") >= 25);
        assertThat(job1.getJobStatus().get(60, TimeUnit.SECONDS)).isEqualTo(JobStatus.RUNNING);
        String afterDrop = cluster.triggerCheckpoint(job1.getJobID()).get(60, TimeUnit.SECONDS);
        job1.cancel().get(60, TimeUnit.SECONDS);
        BinlogJobs.awaitTerminal(job1);
        awaitOpenChangelogStreams(GATEWAY, 0);
        assertThat(count("first", "d1")).isEqualTo(20);

        // Restored from before the drop: the dropped splits come back and finish at once; the
        // job reads the d2 rows written after that checkpoint, and nothing of d1.
        JobClient job2 = start(cluster, "before", checkpoints, beforeDrop);
        await(job2, "the restored job's retirements", () -> gauge(job2.getJobID(), "setatsRetiredSplits") == d1Buckets);
        await(job2, "the d2 rows after the first checkpoint", () -> count("before", "d2") >= 5);
        awaitOpenChangelogStreams(GATEWAY, d2Buckets);
        assertThat(gauge(job2.getJobID(), "setatsAssignedSplits")).isEqualTo(d2Buckets);
        assertThat(count("before", "d1")).isZero();
        assertThat(job2.getJobStatus().get(60, TimeUnit.SECONDS)).isEqualTo(JobStatus.RUNNING);
        job2.cancel().get(60, TimeUnit.SECONDS);
        BinlogJobs.awaitTerminal(job2);
        awaitOpenChangelogStreams(GATEWAY, 0);

        // Restored from after the drop: its enumerator state holds only d2's splits.
        JobClient job3 = start(cluster, "after", checkpoints, afterDrop);
        await(job3, "the restored enumerator", () -> gauge(job3.getJobID(), "setatsAssignedSplits") >= 0);
        assertThat(gauge(job3.getJobID(), "setatsAssignedSplits")).isEqualTo(d2Buckets);
        awaitOpenChangelogStreams(GATEWAY, d2Buckets);
        put("d2", 200, 201);
        await(job3, "a new d2 row in the job restored after the drop", () -> count("after", "d2") >= 1);
        assertThat(gauge(job3.getJobID(), "setatsRetiredSplits")).isZero();
        assertThat(count("after", "d1")).isZero();
        job3.cancel().get(60, TimeUnit.SECONDS);
        BinlogJobs.awaitTerminal(job3);
        awaitOpenChangelogStreams(GATEWAY, 0);
    }
}
