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
import java.time.Duration;
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
 * commit, so every row is durable and visible then), then the load generator's own DoPut ingest
 * of the same rows (its phase (a):
 * 2 DoPut streams of 4096-row batches, records built before the clock starts, its own gateway
 * process). Then write-to-visible latency (a row's emission time to its arrival at a changelog
 * reader polling every 50 ms) for exactly-once with 1 s and 10 s checkpoints and for
 * at-least-once. Prints {@code figure <name> ... ratio=R} lines (medians of the runs) with the
 * load average; {@code -Dsetats.bench.jfr} records a JFR profile of the first at-least-once run.
 * Before the measured runs, one discarded warm-up job of each mode ({@code
 * -Dsetats.bench.warmup-rows}, default a fifth of {@code rows}; 0: none) lets the JIT compile the
 * writer path, so that the first measured job of either mode is not the JVM's first job.
 * {@code -Dsetats.bench.latency-only=true} runs only the at-least-once latency phase ({@code
 * -Dsetats.bench.latency-rate}, {@code -Dsetats.bench.latency-seconds}). The JVM's CPU seconds
 * per job (the MiniCluster runs in this JVM) are printed beside the gateway's: they depend much
 * less on the machine's load than rows/s.
 *
 * <p>Fairness: every throughput job (warm-ups included) runs against a gateway process of its own,
 * started for it on a fresh warehouse and stopped after it, so no earlier job's tables flush or
 * compact in the background while a job is measured, and each mode's gateway CPU comes from
 * processes that served only that mode. Gateway CPU seconds ({@code /proc/<pid>/stat}, the
 * process's start-up excluded) are taken twice: at the end of the job ({@code gateway_cpu_s}),
 * and after a settle step ({@code settled_cpu_s}: polls {@code /metrics} until the table's Pebble
 * DB and its staging DB have no flush and no compaction in progress, 5 polls 200 ms apart in a
 * row, at most 60 s), which adds the background work the job left behind. Both are reported per
 * mode with their ratio, and the Pebble metrics of the table's DB and the staging DB per job
 * (flushes, compactions, WAL / flushed / compacted MB). Rows per DoPut batch count the staged
 * batches for exactly-once ({@code setats_staged_batches_total}; {@code
 * setats_write_batches_total} counts a commit once). Each job's gateway pid is printed, so with
 * {@code SETATS_CPU_PROFILE=/tmp/gw-%p.prof} (gateway/README.md, "CPU profile") each job's
 * profile can be told apart.
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
        if (Boolean.getBoolean("setats.bench.latency-only")) {
            long sec = Long.getLong("setats.bench.latency-seconds", 30L);
            double[] l = latency("latency_alo_only", DeliveryGuarantee.AT_LEAST_ONCE, 1_000, sec);
            System.out.printf(
                    "figure write-to-visible-alo p50_ms=%.0f p99_ms=%.0f max_ms=%.0f rows=%d load_average=\"%s\"%n",
                    l[0], l[1], l[2], (long) l[3], loadAverage());
            return;
        }
        List<Double> alo = new ArrayList<>(), eo = new ArrayList<>(), doput = new ArrayList<>();
        List<Double> aloCpu = new ArrayList<>(), eoCpu = new ArrayList<>(), doputCpu = new ArrayList<>();
        List<Double> aloSettled = new ArrayList<>(), eoSettled = new ArrayList<>();
        String load0 = loadAverage();
        long warmup = Long.getLong("setats.bench.warmup-rows", rows / 5);
        if (warmup > 0) {
            // Discarded: the first jobs of this JVM run interpreted and JIT-compile the writer
            // path (and the gateway's first tables start with small memtables); both modes warm
            // up the same way before anything is measured.
            for (DeliveryGuarantee g : new DeliveryGuarantee[] {DeliveryGuarantee.AT_LEAST_ONCE, DeliveryGuarantee.EXACTLY_ONCE}) {
                double[] w = throughput("seed_warmup_" + (g == DeliveryGuarantee.EXACTLY_ONCE ? "eo" : "alo"), g, warmup, warmup * (100 - UPDATE_PCT) / 100);
                System.out.printf("SETATS-BENCH warm-up %s rows=%d rows_per_s=%.0f (discarded)%n", g, warmup, w[0]);
            }
        }
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
                (exactly ? eoSettled : aloSettled).add(r[2]);
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
        double aloS = median(aloSettled), eoS = median(eoSettled);
        System.out.printf(
                "figure eo-vs-alo-gateway-settled-cpu-s alo=%.2f eo=%.2f ratio=%.2f eo_us_per_row=%.2f alo_us_per_row=%.2f %s%n",
                aloS, eoS, eoS / aloS, eoS * 1e6 / rows, aloS * 1e6 / rows, load);
        System.out.printf(
                "figure sink-vs-doput-rows-per-s sink_alo=%.0f sink_eo=%.0f doput=%.0f ratio=%.2f ratio_eo=%.2f %s%n",
                aloM, eoM, doputM, aloM / doputM, eoM / doputM, load);
        System.out.printf(
                "figure sink-vs-doput-gateway-cpu-s sink_alo=%.2f doput=%.2f ratio=%.2f %s%n", aloC, doputC, aloC / doputC, load);
        System.out.printf(
                "runs alo=%s eo=%s doput=%s alo_cpu=%s eo_cpu=%s alo_settled_cpu=%s eo_settled_cpu=%s doput_cpu=%s%n",
                alo, eo, doput, aloCpu, eoCpu, aloSettled, eoSettled, doputCpu);

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

    /** CPU seconds of this JVM (MiniCluster included). */
    private static double jvmCpuSeconds() {
        return ((com.sun.management.OperatingSystemMXBean) java.lang.management.ManagementFactory.getOperatingSystemMXBean())
                        .getProcessCpuTime()
                / 1e9;
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
        return sink(GATEWAY, table, g);
    }

    private static SetatsSinkBuilder<RowData> sink(SetatsGatewayProcess gw, String table, DeliveryGuarantee g) {
        SetatsSinkBuilder<RowData> b = SetatsSink.builder()
                .setManagerUrl(gw.managerUrl())
                .setWarehouse(gw.warehouse().toString())
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
        if (SHUFFLE_BUFFER_TIMEOUT_MS >= 0) {
            b.setShuffleBufferTimeout(Duration.ofMillis(SHUFFLE_BUFFER_TIMEOUT_MS));
        }
        return b;
    }

    /**
     * {@code -Dsetats.bench.object-reuse} (default false, Flink's default): the throughput jobs run
     * with {@code pipeline.object-reuse}, so that rows are not copied between chained operators.
     */
    private static final boolean OBJECT_REUSE = Boolean.getBoolean("setats.bench.object-reuse");

    /**
     * {@code -Dsetats.bench.shuffle-buffer-timeout-ms} (default -1: the option unset, no
     * pass-through): the sink's {@code setats.sink.shuffle-buffer-timeout}; a value at or above the
     * job's buffer timeout (100 ms) leaves the pass-through out too.
     */
    private static final long SHUFFLE_BUFFER_TIMEOUT_MS =
            Long.getLong("setats.bench.shuffle-buffer-timeout-ms", -1);

    /**
     * Rows/s, gateway CPU seconds until the job finished, and gateway CPU seconds after the
     * settle step, of one upsert job against a gateway process of its own (see the class
     * docstring).
     */
    private double[] throughput(String table, DeliveryGuarantee g, long rows, long keys) throws Exception {
        try (SetatsGatewayProcess gw = new SetatsGatewayProcess()) {
            gw.start();
            StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment();
            env.setParallelism(2);
            env.enableCheckpointing(1_000);
            if (OBJECT_REUSE) {
                env.getConfig().enableObjectReuse();
            }
            env.fromSequence(0, rows - 1)
                    .map(new SeedRows(keys))
                    .returns(InternalTypeInfo.of(SEED))
                    .sinkTo(sink(gw, table, g).build());
            double cpu0 = cpuSeconds(gw.pid());
            double jvm0 = jvmCpuSeconds();
            long start = System.nanoTime();
            env.execute("setats sink benchmark " + g);
            double seconds = (System.nanoTime() - start) / 1e9;
            double cpu = cpuSeconds(gw.pid()) - cpu0;
            double jvm = jvmCpuSeconds() - jvm0;
            long settleStart = System.nanoTime();
            boolean settled = settle(gw, table);
            double settleSeconds = (System.nanoTime() - settleStart) / 1e9;
            double settledCpu = cpuSeconds(gw.pid()) - cpu0;
            try (GatewayClient c = gw.client()) {
                long changelog = 0;
                for (BucketOffsets b : c.listBuckets("bench", table).getBucketsList()) {
                    changelog += b.getEndOffset();
                }
                System.out.printf(
                        "SETATS-BENCH %s %s rows=%d keys=%d seconds=%.2f rows_per_s=%.0f changelog_rows=%d gateway_cpu_s=%.2f settled_cpu_s=%.2f settle_s=%.1f settled=%s gateway_pid=%d jvm_cpu_s=%.2f jvm_cpu_us_per_row=%.2f load_average=\"%s\"%n",
                        g, table, rows, keys, seconds, rows / seconds, changelog, cpu, settledCpu, settleSeconds, settled,
                        gw.pid(), jvm, jvm * 1e6 / rows, loadAverage());
                assertThat(changelog).isGreaterThanOrEqualTo(keys);
                String metrics = metrics(gw);
                String label = "table=\"bench." + table + "\"";
                double batches =
                        g == DeliveryGuarantee.EXACTLY_ONCE
                                ? series(metrics, "setats_staged_batches_total", label)
                                : series(metrics, "setats_write_batches_total", label);
                System.out.printf(
                        "SETATS-BENCH %s DoPut batches=%.0f rows_per_batch=%.0f%n", table, batches, rows / Math.max(1, batches));
                for (String db : new String[] {"table", "staging"}) {
                    String l = "db=\"" + db + "\"," + label;
                    if (series(metrics, "setats_pebble_wal_bytes_written_total", l) == 0) {
                        continue;
                    }
                    System.out.printf(
                            "SETATS-BENCH %s pebble db=%s flushes=%.0f compactions=%.0f wal_mb=%.1f flushed_mb=%.1f compacted_mb=%.1f l0_files=%.0f%n",
                            table, db, series(metrics, "setats_pebble_flushes_total", l),
                            series(metrics, "setats_pebble_compactions_total", l),
                            series(metrics, "setats_pebble_wal_bytes_written_total", l) / 1e6,
                            series(metrics, "setats_pebble_flushed_bytes_total", l) / 1e6,
                            series(metrics, "setats_pebble_compacted_bytes_total", l) / 1e6,
                            series(metrics, "setats_pebble_l0_files", l));
                }
            }
            return new double[] {rows / seconds, cpu, settledCpu};
        }
    }

    /**
     * Waits until the table's Pebble DBs have no flush and no compaction in progress on 5 polls
     * in a row, 200 ms apart, for at most 60 s; false when that bound was reached or the gateway
     * exports no Pebble metrics (a gateway older than {@code setats_pebble_*}: then nothing is
     * waited for).
     */
    private static boolean settle(SetatsGatewayProcess gw, String table) throws Exception {
        String label = "table=\"bench." + table + "\"";
        long deadline = System.nanoTime() + 60_000_000_000L;
        int quiet = 0;
        while (System.nanoTime() < deadline) {
            String m = metrics(gw);
            if (!m.contains("setats_pebble_flushes_in_progress{db=\"table\"," + label + "}")) {
                return false;
            }
            double busy = 0;
            for (String db : new String[] {"table", "staging"}) {
                String l = "db=\"" + db + "\"," + label;
                busy += series(m, "setats_pebble_flushes_in_progress", l) + series(m, "setats_pebble_compactions_in_progress", l);
            }
            quiet = busy == 0 ? quiet + 1 : 0;
            if (quiet >= 5) {
                return true;
            }
            Thread.sleep(200);
        }
        return false;
    }

    /** The gateway's /metrics body. */
    private static String metrics(SetatsGatewayProcess gw) throws Exception {
        return java.net.http.HttpClient.newHttpClient()
                .send(
                        java.net.http.HttpRequest.newBuilder(java.net.URI.create("http://" + gw.adminAddr() + "/metrics")).build(),
                        java.net.http.HttpResponse.BodyHandlers.ofString())
                .body();
    }

    /** The value of the series {@code name{labels}} in a /metrics body (labels as exported), else 0. */
    private static double series(String metrics, String name, String labels) {
        java.util.regex.Matcher m =
                java.util.regex.Pattern.compile(
                                "(?m)^" + java.util.regex.Pattern.quote(name + "{" + labels + "}") + " ([0-9.e+-]+)$")
                        .matcher(metrics);
        return m.find() ? Double.parseDouble(m.group(1)) : 0;
    }

    /**
     * Write-to-visible latency: a source writes {@code setats.bench.latency-rate} rows/s (default
     * 200) whose {@code name} is the time it emitted them (ms); a reader polls the changelog every
     * 50 ms and takes, per row, the time it first saw it minus that. Returns p50, p99, max (ms)
     * and the row count. Also prints the hops before it ({@link Hops}): Flink's edge into the
     * writer, the writer's buffer (linger), DoPut until the WriteAck, and the gateway's own mean
     * per-batch time (arrival to ack, {@code setats_write_latency_seconds}).
     */
    private double[] latency(String table, DeliveryGuarantee g, long checkpointMs, long seconds)
            throws Exception {
        StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment();
        env.setParallelism(2);
        env.enableCheckpointing(checkpointMs);
        long rate = Long.getLong("setats.bench.latency-rate", 200L);
        long total = seconds * rate;
        Hops hops = new Hops();
        SetatsSinkTestHooks.hops = hops;
        env.addSource(new TimedRows(total, rate))
                .setParallelism(1)
                .returns(InternalTypeInfo.of(SEED))
                .sinkTo(sink(table, g).setFlushInterval(java.time.Duration.ofMillis(200)).build());
        org.apache.flink.core.execution.JobClient job = env.executeAsync("latency " + table);
        List<Double> lat = new ArrayList<>();
        Map<String, Long> next = new HashMap<>();
        try (GatewayClient c = GATEWAY.client()) {
            while (!job.getJobStatus().get().isGloballyTerminalState() || lat.size() < total) {
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
        } finally {
            SetatsSinkTestHooks.hops = null;
        }
        hops.print(table, rate, GATEWAY.tableMetric("setats_write_latency_seconds_sum", "bench", table)
                / Math.max(1, GATEWAY.tableMetric("setats_write_latency_seconds_count", "bench", table)));
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

    /**
     * Per-hop times of the latency phase's rows, from {@link SetatsSinkTestHooks#hops}: per
     * writer subtask the rows in the order they reached {@code write} and the batches in sequence
     * order, so the i-th batch holds the next {@code rows} rows (no reconnects in this phase).
     */
    static final class Hops implements SetatsSinkTestHooks.HopListener {
        private final Map<Integer, List<long[]>> written = new HashMap<>(); // {emitted, written}
        private final Map<Integer, List<long[]>> sent = new HashMap<>(); // {sequence, rows, sent}
        private final Map<String, Long> acked = new HashMap<>(); // subtask/sequence -> ms

        @Override
        public synchronized void written(int subtask, RowData row, long nowMs) {
            long emitted = Long.parseLong(row.getString(2).toString());
            written.computeIfAbsent(subtask, k -> new ArrayList<>()).add(new long[] {emitted, nowMs});
        }

        @Override
        public synchronized void sent(int subtask, long sequence, int rows, long nowMs) {
            sent.computeIfAbsent(subtask, k -> new ArrayList<>()).add(new long[] {sequence, rows, nowMs});
        }

        @Override
        public synchronized void acked(int subtask, long sequence, long nowMs) {
            acked.put(subtask + "/" + sequence, nowMs);
        }

        /** Prints p50/p99 (ms, over rows) of each hop and the gateway's mean per-batch latency. */
        synchronized void print(String table, long rate, double gatewayMeanSeconds) throws IOException {
            List<Double> edge = new ArrayList<>(), linger = new ArrayList<>(), doput = new ArrayList<>(), total = new ArrayList<>();
            long batches = 0, rows = 0;
            for (Map.Entry<Integer, List<long[]>> e : sent.entrySet()) {
                List<long[]> w = written.getOrDefault(e.getKey(), Collections.emptyList());
                int next = 0;
                for (long[] b : e.getValue()) {
                    Long ack = acked.get(e.getKey() + "/" + b[0]);
                    batches++;
                    for (int i = 0; i < b[1] && next < w.size(); i++, next++) {
                        long[] r = w.get(next);
                        edge.add((double) (r[1] - r[0]));
                        linger.add((double) (b[2] - r[1]));
                        if (ack != null) {
                            doput.add((double) (ack - b[2]));
                            total.add((double) (ack - r[0]));
                        }
                        rows++;
                    }
                }
            }
            System.out.printf(
                    "figure sink-hops-%s rate=%d rows=%d batches=%d rows_per_batch=%.1f edge_p50_ms=%.0f edge_p99_ms=%.0f linger_p50_ms=%.0f linger_p99_ms=%.0f doput_p50_ms=%.0f doput_p99_ms=%.0f write_to_ack_p50_ms=%.0f write_to_ack_p99_ms=%.0f gateway_batch_mean_ms=%.1f load_average=\"%s\"%n",
                    table, rate, rows, batches, rows / (double) Math.max(1, batches),
                    pct(edge, 50), pct(edge, 99), pct(linger, 50), pct(linger, 99), pct(doput, 50), pct(doput, 99),
                    pct(total, 50), pct(total, 99), gatewayMeanSeconds * 1000, loadAverage());
        }

        private static double pct(List<Double> v, int p) {
            if (v.isEmpty()) {
                return -1;
            }
            List<Double> s = new ArrayList<>(v);
            Collections.sort(s);
            return s.get(Math.min(s.size() - 1, (int) (s.size() * (p / 100.0))));
        }
    }

    /**
     * n new keys, {@code rate} per second, each carrying its emission time (ms) in {@code name}.
     */
    static final class TimedRows implements SourceFunction<RowData> {
        private final long n;
        private final long rate;
        private volatile boolean running = true;

        TimedRows(long n, long rate) {
            this.n = n;
            this.rate = rate;
        }

        @Override
        public void run(SourceContext<RowData> ctx) throws Exception {
            long start = System.currentTimeMillis();
            for (long i = 0; i < n && running; i++) {
                long due = start + i * 1000 / rate;
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

    /** utime + stime of process pid, in seconds (Linux /proc). */
    private static double cpuSeconds(long pid) throws IOException {
        String stat = new String(Files.readAllBytes(Paths.get("/proc/" + pid + "/stat")));
        String[] f = stat.substring(stat.lastIndexOf(')') + 2).split(" ");
        return (Long.parseLong(f[11]) + Long.parseLong(f[12])) / 100.0;
    }

    private static String loadAverage() throws IOException {
        String s = new String(Files.readAllBytes(Paths.get("/proc/loadavg")));
        String[] f = s.split(" ");
        return f[0] + " " + f[1] + " " + f[2];
    }
}
