package io.setats.flink.source;

import io.setats.flink.SetatsConnectorOptions.StartupMode;
import io.setats.flink.client.GatewayClient;
import io.setats.flink.source.deserializer.SetatsDeserializationSchema;
import io.setats.flink.testutils.SetatsGatewayProcess;
import io.setats.proto.v1.BucketOffsets;

import org.apache.flink.api.common.JobStatus;
import org.apache.flink.api.common.eventtime.WatermarkStrategy;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.RestartStrategyOptions;
import org.apache.flink.core.execution.JobClient;
import org.apache.flink.runtime.minicluster.MiniCluster;
import org.apache.flink.runtime.testutils.MiniClusterResourceConfiguration;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.util.TestStreamEnvironment;
import org.apache.flink.table.data.RowData;
import org.apache.flink.table.types.logical.RowType;
import org.apache.flink.test.junit5.InjectMiniCluster;
import org.apache.flink.test.junit5.MiniClusterExtension;
import org.apache.flink.types.RowKind;
import org.apache.flink.util.CloseableIterator;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;

import static io.setats.flink.source.SetatsCdcSourceITCase.assertEveryOffsetOnce;
import static io.setats.flink.source.BinlogJobs.take;
import static io.setats.flink.source.SourceTestTables.create;
import static io.setats.flink.source.SourceTestTables.insert;
import static io.setats.flink.source.SourceTestTables.row;
import static io.setats.flink.source.SourceTestTables.spec;
import static io.setats.flink.source.SourceTestTables.write;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * Reconnection of the {@code setats-cdc} source's bucket streams (issue 12 item 2): the gateway is
 * killed (SIGKILL) while a job follows the changelog and restarted on the same warehouse and
 * Flight address; the job (restart strategy none, so any task failure would end it) keeps running
 * and its output is exactly the changelog: every (bucket, offset) once. A gateway that stays away
 * longer than {@code scan.reconnect-timeout} fails the job naming the gateway and the bucket.
 */
@Timeout(value = 300, unit = TimeUnit.SECONDS)
class SetatsCdcReconnectITCase {

    @RegisterExtension static final SetatsGatewayProcess GATEWAY = new SetatsGatewayProcess();

    @RegisterExtension
    static final MiniClusterExtension MINI_CLUSTER =
            new MiniClusterExtension(
                    new MiniClusterResourceConfiguration.Builder()
                            .setNumberTaskManagers(1)
                            .setNumberSlotsPerTaskManager(4)
                            .build());

    private static final String DB = "rcdb";

    /** id INT, v INT; primary key id. */
    private static final RowType KI = SetatsCdcSourceITCase.KI;

    private static StreamExecutionEnvironment env(MiniCluster cluster, int parallelism) {
        Configuration conf = new Configuration();
        conf.set(RestartStrategyOptions.RESTART_STRATEGY, "none");
        return new TestStreamEnvironment(cluster, conf, parallelism, Collections.emptyList(), Collections.emptyList());
    }

    private static SetatsCdcSource<String> source(SetatsGatewayProcess gateway, String table, Duration reconnectTimeout) {
        return SetatsCdcSource.builder()
                .setManagerUrl(gateway.managerUrl())
                .setWarehouse(gateway.warehouse().toString())
                .setTable(DB, table)
                .setReadType(KI)
                .setStartupMode(StartupMode.EARLIEST)
                .setReconnectTimeout(reconnectTimeout)
                .setDeserializer(SetatsDeserializationSchema.of(SetatsCdcSourceITCase::formatWithPosition, Types.STRING))
                .build();
    }

    /** Writes keys [from, to) with value v (+I for new keys, -U/+U for existing ones). */
    private static void writeKeys(SetatsGatewayProcess gateway, String table, int from, int to, int v) throws Exception {
        List<RowData> rows = new ArrayList<>();
        for (int k = from; k < to; k++) {
            rows.add(insert(k, v));
        }
        try (GatewayClient c = gateway.client()) {
            write(c, DB, table, KI, rows);
        }
    }

    @Test
    void gatewayKilledAndRestartedNeitherLosesNorRepeatsRows(@InjectMiniCluster MiniCluster cluster) throws Exception {
        try (GatewayClient c = GATEWAY.client()) {
            create(c, spec(DB, "rc", KI, Collections.singletonList("id"), Collections.emptyList(), 4, Collections.emptyMap()));
        }
        writeKeys(GATEWAY, "rc", 0, 500, 0);
        StreamExecutionEnvironment env = env(cluster, 2);
        CloseableIterator<String> it =
                env.fromSource(source(GATEWAY, "rc", Duration.ofMinutes(2)), WatermarkStrategy.noWatermarks(), "rc")
                        .collectAsync();
        JobClient job = env.executeAsync("rc");
        try {
            List<String> out = new ArrayList<>(take(it, 500));
            assertThat(out).hasSize(500);

            // Killed while following; rows written after the restart come over new streams.
            GATEWAY.killAndRestart();
            writeKeys(GATEWAY, "rc", 250, 750, 1); // 250 updates (-U/+U) and 250 new keys
            out.addAll(take(it, 1));
            // Killed again with rows in flight, then deletes.
            GATEWAY.killAndRestart();
            List<RowData> deletes = new ArrayList<>();
            for (int k = 0; k < 100; k++) {
                deletes.add(row(RowKind.DELETE, k, null));
            }
            try (GatewayClient c = GATEWAY.client()) {
                write(c, DB, "rc", KI, deletes);
            }

            long total = 0;
            Map<Integer, Long> endOffsets = new HashMap<>();
            try (GatewayClient c = GATEWAY.client()) {
                for (BucketOffsets b : c.listBuckets(DB, "rc").getBucketsList()) {
                    total += b.getEndOffset();
                    endOffsets.put(b.getBucket(), b.getEndOffset());
                }
            }
            assertThat(total).isEqualTo(500 + 250 * 2 + 250 + 100);
            out.addAll(take(it, (int) (total - out.size())));
            assertThat(out).hasSize((int) total);
            assertThat(job.getJobStatus().get()).isEqualTo(JobStatus.RUNNING);

            // Exactly the changelog: each (bucket, offset) once, and folded it is the table.
            Map<Integer, TreeMap<Long, String>> byBucket = assertEveryOffsetOnce(out, endOffsets);
            Map<Integer, String> folded = new HashMap<>();
            for (TreeMap<Long, String> rows : byBucket.values()) {
                for (String r : rows.values()) {
                    String[] kv = r.substring(3, r.length() - 1).split(", ");
                    if (r.startsWith("+I") || r.startsWith("+U")) {
                        folded.put(Integer.parseInt(kv[0]), kv[1]);
                    } else {
                        assertThat(folded.remove(Integer.parseInt(kv[0]))).as("%s retracts a row", r).isNotNull();
                    }
                }
            }
            Map<Integer, String> expected = new HashMap<>();
            for (int k = 100; k < 750; k++) {
                expected.put(k, k < 250 ? "0" : "1");
            }
            assertThat(folded).isEqualTo(expected);
        } finally {
            job.cancel();
            it.close();
        }
    }

    @Test
    void gatewayAwayLongerThanTheReconnectTimeoutFailsNamingGatewayAndBucket(@InjectMiniCluster MiniCluster cluster)
            throws Exception {
        SetatsGatewayProcess gone = new SetatsGatewayProcess();
        gone.start();
        String flightAddr = gone.flightAddr();
        JobClient job;
        CloseableIterator<String> it;
        try {
            try (GatewayClient c = gone.client()) {
                create(c, spec(DB, "gone", KI, Collections.singletonList("id"), Collections.emptyList(), 1, Collections.emptyMap()));
            }
            writeKeys(gone, "gone", 0, 10, 0);
            StreamExecutionEnvironment env = env(cluster, 1);
            it = env.fromSource(source(gone, "gone", Duration.ofSeconds(2)), WatermarkStrategy.noWatermarks(), "gone")
                    .collectAsync();
            job = env.executeAsync("gone");
            assertThat(take(it, 10)).hasSize(10);
        } finally {
            gone.close();
        }
        try {
            JobClient j = job;
            assertThatThrownBy(() -> j.getJobExecutionResult().get(120, TimeUnit.SECONDS))
                    .isInstanceOf(ExecutionException.class)
                    .hasStackTraceContaining("gave up reconnecting")
                    .hasStackTraceContaining(flightAddr)
                    .hasStackTraceContaining("bucket=0")
                    .hasStackTraceContaining("scan.reconnect-timeout = 2000 ms");
        } finally {
            it.close();
        }
    }
}
