package io.setats.flink.sink;

import io.setats.flink.SetatsConnectorOptions.MergeEngine;
import io.setats.flink.client.GatewayClient;
import io.setats.flink.testutils.SetatsGatewayProcess;
import io.setats.flink.testutils.ChangelogReader;
import io.setats.flink.testutils.ChangelogReader.ChangelogRow;
import io.setats.proto.v1.BucketOffsets;

import org.apache.flink.api.common.functions.MapFunction;
import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.databind.JsonNode;
import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.databind.ObjectMapper;
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
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Throughput and latency of the sink (issue 9 and issue 12 item 3), against a real gateway on a
 * MiniCluster, all in one run. Not part of {@code mvn verify}; run with
 *
 * <pre>
 * make build-gateway && go build -o bin/setats-loadgen ./e2e/cmd/setats-loadgen
 * mvn -f connector-java/pom.xml verify -Dtest=none -Dsurefire.failIfNoSpecifiedTests=false \
 *     -Dit.test=SetatsSinkBenchmark [-Dsetats.bench.rows=1000000] [-Dsetats.bench.runs=3] \
 *     [-Dsetats.bench.jfr=/tmp/sink.jfr]
 * </pre>
 *
 * <p>Workload: the seeds' table shape ({@code id, dt, name, address} STRING, primary key {@code
 * (id, dt)}, partitioned by {@code dt}) with the shape of the Go load generator ({@code
 * e2e/cmd/setats-loadgen}): 4 {@code dt} values, 4 buckets, DEDUPLICATE, {@code rows} writes of
 * which 20% update a key written before; sink parallelism 2, 1 s checkpoints.
 *
 * <p>Per run, alternating the order: at-least-once, exactly-once (rows/s from job submission
 * until the job finished; end of input waits for every WriteAck, and for exactly-once the last
 * commit, so every row is durable and visible then; gateway CPU seconds from {@code
 * /proc/<pid>/stat}), then the load generator's own DoPut ingest of the same rows (its phase (a):
 * 2 DoPut streams of 4096-row batches, records built before the clock starts, its own gateway
 * process). Then write-to-visible latency (a row's emission time to its arrival at a changelog
 * reader polling every 50 ms) for exactly-once with 1 s and 10 s checkpoints and for
 * at-least-once. Prints {@code figure <name> ... ratio=R} lines (medians of the runs) with the
 * load average; {@code -Dsetats.bench.jfr} records a JFR profile of the first at-least-once run.
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

    private static final int PARTITIONS = 4;
    private static final int BUCKETS = 4;
    private static final int UPDATE_PCT = 20;

    private static final RowType SEED =
            RowType.of(
                    new LogicalType[] {
                        new VarCharType(false, VarCharType.MAX_LENGTH),
                        new VarCharType(false, VarCharType.MAX_LENGTH),
                        new VarCharType(VarCharType.MAX_LENGTH),
                        new VarCharType(VarCharType.MAX_LENGTH)
                    },
                    new String[] {"id", "dt", "name", "address"});

    /**
     * Row i: the insert of key i while i < keys, else an update of key i - keys; dt is one of
     * {@link #PARTITIONS} values by key.
     */
    static final class SeedRows implements MapFunction<Long, RowData> {
        private final long keys;

        SeedRows(long keys) {
            this.keys = keys;
        }

        @Override
        public RowData map(Long i) {
            long k = i < keys ? i : (i - keys) % keys;
            GenericRowData r =
                    GenericRowData.of(
                            StringData.fromString("id-" + k),
                            StringData.fromString("2026112" + (k % PARTITIONS)),
                            StringData.fromString(Long.toString(i % 99991 + 10000, 36)),
                            StringData.fromString("addr-" + Long.toHexString(i * 0x9E3779B97F4A7C15L)));
            r.setRowKind(i < keys ? RowKind.INSERT : RowKind.UPDATE_AFTER);
            return r;
        }
    }

    @Test
    void sinkBenchmark() throws Exception {
        long rows = Long.getLong("setats.bench.rows", 1_000_000L);
        int runs = Integer.getInteger("setats.bench.runs", 3);
        long keys = rows * (100 - UPDATE_PCT) / 100;
        String jfr = System.getProperty("setats.bench.jfr");
        List<Double> alo = new ArrayList<>(), eo = new ArrayList<>(), doput = new ArrayList<>();
        List<Double> aloCpu = new ArrayList<>(), eoCpu = new ArrayList<>(), doputCpu = new ArrayList<>();
        String load0 = loadAverage();
        for (int run = 0; run < runs; run++) {
            for (int step = 0; step < 2; step++) {
                boolean exactly = (run + step) % 2 == 1;
                DeliveryGuarantee g = exactly ? DeliveryGuarantee.EXACTLY_ONCE : DeliveryGuarantee.AT_LEAST_ONCE;
                String table = (exactly ? "seed_eo_" : "seed_alo_") + run;
                AutoCloseable recording = run == 0 && !exactly && jfr != null ? startJfr() : null;
                double[] r = throughput(table, g, rows, keys);
                if (recording != null) {
                    stopJfr(recording, jfr);
                }
                (exactly ? eo : alo).add(r[0]);
                (exactly ? eoCpu : aloCpu).add(r[1]);
            }
            double[] d = loadGenerator(keys);
            doput.add(d[0]);
            doputCpu.add(d[1]);
        }
        String load1 = loadAverage();
        double aloM = median(alo), eoM = median(eo), doputM = median(doput);
        double aloC = median(aloCpu), eoC = median(eoCpu), doputC = median(doputCpu);
        String load = String.format("runs=%d rows=%d load_average_start=\"%s\" load_average_end=\"%s\"", runs, rows, load0, load1);
        System.out.printf("figure eo-vs-alo-rows-per-s alo=%.0f eo=%.0f ratio=%.2f %s%n", aloM, eoM, eoM / aloM, load);
        System.out.printf("figure eo-vs-alo-gateway-cpu-s alo=%.2f eo=%.2f ratio=%.2f %s%n", aloC, eoC, eoC / aloC, load);
        System.out.printf(
                "figure sink-vs-doput-rows-per-s sink_alo=%.0f sink_eo=%.0f doput=%.0f ratio=%.2f ratio_eo=%.2f %s%n",
                aloM, eoM, doputM, aloM / doputM, eoM / doputM, load);
        System.out.printf(
                "figure sink-vs-doput-gateway-cpu-s sink_alo=%.2f doput=%.2f ratio=%.2f %s%n", aloC, doputC, aloC / doputC, load);
        System.out.printf("runs alo=%s eo=%s doput=%s alo_cpu=%s eo_cpu=%s doput_cpu=%s%n", alo, eo, doput, aloCpu, eoCpu, doputCpu);

        long seconds = Long.getLong("setats.bench.latency-seconds", 30L);
        for (long ckpt : new long[] {1_000, 10_000}) {
            double[] l = latency("latency_eo_" + ckpt, DeliveryGuarantee.EXACTLY_ONCE, ckpt, seconds);
            System.out.printf(
                    "figure write-to-visible-eo-%ds p50_ms=%.0f p99_ms=%.0f max_ms=%.0f rows=%d checkpoint_ms=%d ratio=%.2f load_average=\"%s\"%n",
                    ckpt / 1000, l[0], l[1], l[2], (long) l[3], ckpt, l[0] / ckpt, loadAverage());
        }
        double[] l = latency("latency_alo", DeliveryGuarantee.AT_LEAST_ONCE, 1_000, seconds);
        System.out.printf(
                "figure write-to-visible-alo p50_ms=%.0f p99_ms=%.0f max_ms=%.0f rows=%d checkpoint_ms=1000 ratio=%.2f load_average=\"%s\"%n",
                l[0], l[1], l[2], (long) l[3], l[0] / 1000, loadAverage());
    }

    private static double median(List<Double> v) {
        List<Double> s = new ArrayList<>(v);
        Collections.sort(s);
        int n = s.size();
        return n % 2 == 1 ? s.get(n / 2) : (s.get(n / 2 - 1) + s.get(n / 2)) / 2;
    }

    /** A JFR recording with the "profile" settings (execution samples every 10-20 ms). */
    private static AutoCloseable startJfr() throws Exception {
        jdk.jfr.Recording r = new jdk.jfr.Recording(jdk.jfr.Configuration.getConfiguration("profile"));
        r.start();
        return r;
    }

    private static void stopJfr(AutoCloseable recording, String path) throws Exception {
        jdk.jfr.Recording r = (jdk.jfr.Recording) recording;
        r.stop();
        r.dump(Paths.get(path));
        r.close();
        System.out.println("JFR recording of the first at-least-once run: " + path);
    }

    /**
     * The Go load generator's DoPut ingest of the same shape against its own gateway: rows/s and
     * the gateway's CPU seconds of its phase (a). The binary is {@code setats.bench.loadgen}
     * (default {@code ../bin/setats-loadgen}, built with {@code go build} when missing).
     */
    private double[] loadGenerator(long keys) throws Exception {
        Path bin = Paths.get(System.getProperty("setats.bench.loadgen", "../bin/setats-loadgen")).toAbsolutePath();
        Path gateway = Paths.get(System.getProperty(SetatsGatewayProcess.BINARY_PROPERTY, "../bin/setats")).toAbsolutePath();
        if (!Files.isExecutable(bin)) {
            run(new ProcessBuilder("go", "build", "-o", bin.toString(), "./e2e/cmd/setats-loadgen")
                    .directory(gateway.getParent().getParent().toFile()));
        }
        Path json = Files.createTempFile("setats-loadgen", ".json");
        try {
            run(new ProcessBuilder(
                    bin.toString(), "-bin", gateway.toString(), "-keys", Long.toString(keys),
                    "-update-pct", Integer.toString(UPDATE_PCT), "-partitions", Integer.toString(PARTITIONS),
                    "-buckets", Integer.toString(BUCKETS), "-writers", "2", "-skip-raw",
                    "-latency-duration", "1s", "-json", json.toString()));
            JsonNode r = new ObjectMapper().readTree(json.toFile());
            double rate = r.get("IngestRowsPerSec").asDouble();
            double cpu = r.get("IngestCPU").asLong() / 1e9;
            System.out.printf("SETATS-BENCH load generator DoPut rows=%d rows_per_s=%.0f gateway_cpu_s=%.2f%n",
                    r.get("Writes").asLong(), rate, cpu);
            return new double[] {rate, cpu};
        } finally {
            Files.deleteIfExists(json);
        }
    }

    private static void run(ProcessBuilder pb) throws Exception {
        Process p = pb.redirectErrorStream(true).redirectOutput(ProcessBuilder.Redirect.INHERIT).start();
        if (p.waitFor() != 0) {
            throw new IOException(pb.command() + " exited with " + p.exitValue());
        }
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
                .setBucket(BUCKETS)
                .setMergeEngine(MergeEngine.DEDUPLICATE)
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
                    "SETATS-BENCH %s %s rows=%d keys=%d seconds=%.2f rows_per_s=%.0f changelog_rows=%d gateway_cpu_s=%.2f load_average=\"%s\"%n",
                    g, table, rows, keys, seconds, rows / seconds, changelog, cpu, loadAverage());
            assertThat(changelog).isGreaterThanOrEqualTo(keys);
            double batches = GATEWAY.tableMetric("setats_write_batches_total", "bench", table);
            System.out.printf(
                    "SETATS-BENCH %s DoPut batches=%.0f rows_per_batch=%.0f%n", table, batches, rows / Math.max(1, batches));
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
