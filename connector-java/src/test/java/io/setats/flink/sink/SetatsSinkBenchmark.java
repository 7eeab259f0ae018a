package io.setats.flink.sink;

import io.setats.flink.SetatsConnectorOptions.MergeEngine;
import io.setats.flink.client.GatewayClient;
import io.setats.flink.testutils.SetatsGatewayProcess;
import io.setats.flink.testutils.ChangelogReader;
import io.setats.flink.testutils.ChangelogReader.ChangelogRow;
import io.setats.proto.v1.BucketOffsets;

import org.apache.flink.api.common.functions.MapFunction;
import org.apache.flink.connector.base.DeliveryGuarantee;
import org.apache.flink.streaming.api.functions.source.SourceFunction;
import org.apache.flink.runtime.testutils.MiniClusterResourceConfiguration;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.table.data.GenericRowData;
import org.apache.flink.table.data.RowData;
import org.apache.flink.table.data.StringData;
import org.apache.flink.table.runtime.typeutils.InternalTypeInfo;
import org.apache.flink.table.types.logical.LogicalType;
import org.apache.flink.table.types.logical.RowType;
import org.apache.flink.table.types.logical.VarCharType;
import org.apache.flink.test.junit5.MiniClusterExtension;
import org.apache.flink.types.RowKind;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Throughput of the sink: a Flink job (parallelism 2) writing upserts of the seed's shape (id, dt,
 * name, address; PK (id, dt); PARTITIONED BY dt; 10 buckets; PARTIAL_UPDATE) through a real
 * gateway, at-least-once and exactly-once (1 s checkpoints) in the same run, with the gateway's CPU
 * time of each; then write-to-visible latency with exactly-once at 1 s and 10 s checkpoints and
 * at-least-once (SPEC section 10). Not part of {@code mvn verify}; run with
 *
 * <pre>
 * mvn -f connector-java/pom.xml test -Dtest=SetatsSinkBenchmark -Dsetats.bench.rows=1000000
 * </pre>
 *
 * It prints rows/s measured from job submission until the job finished (end of input waits for
 * every WriteAck, so all rows are durable at that point).
 */
class SetatsSinkBenchmark {

    @RegisterExtension static final SetatsGatewayProcess GATEWAY = new SetatsGatewayProcess();

    @RegisterExtension
    static final MiniClusterExtension MINI_CLUSTER =
            new MiniClusterExtension(
                    new MiniClusterResourceConfiguration.Builder()
                            .setNumberTaskManagers(1)
                            .setNumberSlotsPerTaskManager(2)
                            .build());

    private static final RowType SEED =
            RowType.of(
                    new LogicalType[] {
                        new VarCharType(false, VarCharType.MAX_LENGTH),
                        new VarCharType(false, VarCharType.MAX_LENGTH),
                        new VarCharType(VarCharType.MAX_LENGTH),
                        new VarCharType(VarCharType.MAX_LENGTH)
                    },
                    new String[] {"id", "dt", "name", "address"});

    /** Row i: key i % keys (so each key is written rows/keys times), two dt values. */
    static final class SeedRows implements MapFunction<Long, RowData> {
        private final long keys;

        SeedRows(long keys) {
            this.keys = keys;
        }

        @Override
        public RowData map(Long i) {
            long k = i % keys;
            GenericRowData r =
                    GenericRowData.of(
                            StringData.fromString(Long.toString(k)),
                            StringData.fromString(k % 2 == 0 ? "20261128" : "20261129"),
                            StringData.fromString(Long.toString(i % 99991 + 10000, 36)),
                            StringData.fromString("addr-" + Long.toHexString(i * 0x9E3779B97F4A7C15L)));
            r.setRowKind(i < keys ? RowKind.INSERT : RowKind.UPDATE_AFTER);
            return r;
        }
    }

    @Test
    void upsertThroughput() throws Exception {
        long rows = Long.getLong("setats.bench.rows", 1_000_000L);
        long keys = Math.max(1, rows / 4);
        String load0 = loadAverage();
        double[] alo = throughput("seed_upserts_alo", DeliveryGuarantee.AT_LEAST_ONCE, rows, keys);
        double[] eo = throughput("seed_upserts_eo", DeliveryGuarantee.EXACTLY_ONCE, rows, keys);
        System.out.printf(
                "SETATS-BENCH throughput rows=%d parallelism=2 at-least-once %.0f rows/s gateway_cpu_s=%.1f;"
                        + " exactly-once %.0f rows/s gateway_cpu_s=%.1f; ratio eo/alo rows/s=%.2f"
                        + " cpu/row eo/alo=%.2f; load average before %s, after %s%n",
                rows, alo[0], alo[1], eo[0], eo[1], eo[0] / alo[0],
                (eo[1] / rows) / (alo[1] / rows), load0, loadAverage());
        long seconds = Long.getLong("setats.bench.latency-seconds", 30L);
        for (long ckpt : new long[] {1_000, 10_000}) {
            double[] l = latency("latency_eo_" + ckpt, DeliveryGuarantee.EXACTLY_ONCE, ckpt, seconds);
            System.out.printf(
                    "SETATS-BENCH write-to-visible exactly-once checkpoint=%d ms: p50=%.0f ms p99=%.0f ms"
                            + " max=%.0f ms (%d rows); load average %s%n",
                    ckpt, l[0], l[1], l[2], (long) l[3], loadAverage());
        }
        double[] l = latency("latency_alo", DeliveryGuarantee.AT_LEAST_ONCE, 1_000, seconds);
        System.out.printf(
                "SETATS-BENCH write-to-visible at-least-once (flush 200 ms): p50=%.0f ms p99=%.0f ms max=%.0f ms (%d rows)%n",
                l[0], l[1], l[2], (long) l[3]);
    }

    private SetatsSinkBuilder<RowData> sink(String table, DeliveryGuarantee g) {
        return SetatsSink.builder()
                .setManagerUrl(GATEWAY.managerUrl())
                .setWarehouse(GATEWAY.warehouse().toString())
                .setCatalogType("hadoop")
                .setCatalogName("setats")
                .setDatabase("bench")
                .setTable(table)
                .setRowType(SEED)
                .setPrimaryKey("id", "dt")
                .setPartitionKeys("dt")
                .setBucket(10)
                .setBucketKey("id")
                .setMergeEngine(MergeEngine.PARTIAL_UPDATE)
                .setDeliveryGuarantee(g);
    }

    /** Rows/s and gateway CPU seconds of one 1M-upsert job. */
    private double[] throughput(String table, DeliveryGuarantee g, long rows, long keys) throws Exception {
        StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment();
        env.setParallelism(2);
        env.enableCheckpointing(1_000);
        env.fromSequence(0, rows - 1)
                .map(new SeedRows(keys))
                .returns(InternalTypeInfo.of(SEED))
                .sinkTo(sink(table, g).build());
        double cpu0 = gatewayCpuSeconds();
        long start = System.nanoTime();
        env.execute("setats sink benchmark " + g);
        double seconds = (System.nanoTime() - start) / 1e9;
        double cpu = gatewayCpuSeconds() - cpu0;
        try (GatewayClient c = GATEWAY.client()) {
            long changelog = 0;
            for (BucketOffsets b : c.listBuckets("bench", table).getBucketsList()) {
                changelog += b.getEndOffset();
            }
            System.out.printf(
                    "SETATS-BENCH %s rows=%d keys=%d seconds=%.2f rows_per_s=%.0f changelog_rows=%d gateway_cpu_s=%.1f%n",
                    g, rows, keys, seconds, rows / seconds, changelog, cpu);
            assertThat(changelog).isGreaterThanOrEqualTo(keys);
        }
        return new double[] {rows / seconds, cpu};
    }

    /**
     * Write-to-visible latency: a source writes 200 rows/s whose {@code name} is the time it
     * emitted them (ms); a reader polls the changelog every 50 ms and takes, per row, the time it
     * first saw it minus that. Returns p50, p99, max (ms) and the row count.
     */
    private double[] latency(String table, DeliveryGuarantee g, long checkpointMs, long seconds)
            throws Exception {
        StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment();
        env.setParallelism(2);
        env.enableCheckpointing(checkpointMs);
        env.addSource(new TimedRows(seconds * 200))
                .setParallelism(1)
                .returns(InternalTypeInfo.of(SEED))
                .sinkTo(sink(table, g).setFlushInterval(java.time.Duration.ofMillis(200)).build());
        org.apache.flink.core.execution.JobClient job = env.executeAsync("latency " + table);
        List<Double> lat = new ArrayList<>();
        Map<String, Long> next = new HashMap<>();
        try (GatewayClient c = GATEWAY.client()) {
            while (!job.getJobStatus().get().isGloballyTerminalState() || lat.size() < seconds * 200) {
                if (job.getJobStatus().get().isGloballyTerminalState()) {
                    long n = lat.size();
                    poll(c, table, next, lat);
                    if (lat.size() == n) {
                        break;
                    }
                }
                poll(c, table, next, lat);
                Thread.sleep(50);
            }
        }
        Collections.sort(lat);
        if (lat.isEmpty()) {
            return new double[] {0, 0, 0, 0};
        }
        return new double[] {
            lat.get(lat.size() / 2), lat.get((int) (lat.size() * 0.99)), lat.get(lat.size() - 1), lat.size()
        };
    }

    private static void poll(GatewayClient c, String table, Map<String, Long> next, List<Double> lat) {
        if (!c.getTable("bench", table).isPresent()) {
            return;
        }
        for (BucketOffsets b : c.listBuckets("bench", table).getBucketsList()) {
            String id = b.getPartition() + "/" + b.getBucket();
            long from = next.getOrDefault(id, 0L);
            if (from >= b.getEndOffset()) {
                continue;
            }
            long now = System.currentTimeMillis();
            for (ChangelogRow r :
                    ChangelogReader.readBucket(c, "bench", table, b.getPartition(), b.getBucket(), from)) {
                next.put(id, r.offset + 1);
                if (r.kind == RowKind.INSERT) {
                    lat.add((double) (now - Long.parseLong((String) r.get("name"))));
                }
            }
        }
    }

    /** n new keys, 200 per second, each carrying its emission time (ms) in {@code name}. */
    static final class TimedRows implements SourceFunction<RowData> {
        private final long n;
        private volatile boolean running = true;

        TimedRows(long n) {
            this.n = n;
        }

        @Override
        public void run(SourceContext<RowData> ctx) throws Exception {
            long start = System.currentTimeMillis();
            for (long i = 0; i < n && running; i++) {
                long due = start + i * 5;
                long wait = due - System.currentTimeMillis();
                if (wait > 0) {
                    Thread.sleep(wait);
                }
                synchronized (ctx.getCheckpointLock()) {
                    GenericRowData r =
                            GenericRowData.of(
                                    StringData.fromString("k" + i),
                                    StringData.fromString("20261201"),
                                    StringData.fromString(Long.toString(System.currentTimeMillis())),
                                    StringData.fromString("a"));
                    r.setRowKind(RowKind.INSERT);
                    ctx.collect(r);
                }
            }
        }

        @Override
        public void cancel() {
            running = false;
        }
    }

    /** utime + stime of the gateway process, in seconds (Linux /proc). */
    private static double gatewayCpuSeconds() throws IOException {
        String stat = new String(Files.readAllBytes(Paths.get("/proc/" + GATEWAY.pid() + "/stat")));
        String[] f = stat.substring(stat.lastIndexOf(')') + 2).split(" ");
        return (Long.parseLong(f[11]) + Long.parseLong(f[12])) / 100.0;
    }

    private static String loadAverage() throws IOException {
        String s = new String(Files.readAllBytes(Paths.get("/proc/loadavg")));
        String[] f = s.split(" ");
        return f[0] + " " + f[1] + " " + f[2];
    }
}
