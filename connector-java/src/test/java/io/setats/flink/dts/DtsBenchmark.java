package io.setats.flink.dts;

import io.setats.flink.client.GatewayClient;
import io.setats.flink.testutils.PostgresProcess;
import io.setats.flink.testutils.SetatsGatewayProcess;
import io.setats.proto.v1.ChangelogTicket;
import io.setats.proto.v1.ChannelInfo;
import io.setats.proto.v1.ChannelRequest;
import io.setats.proto.v1.ChannelTicket;
import io.setats.proto.v1.ConsumerCredentials;
import io.setats.proto.v1.CreateChannelRequest;
import io.setats.proto.v1.CreateGroupRequest;
import io.setats.proto.v1.GroupInfo;

import org.apache.arrow.flight.FlightStream;
import org.apache.arrow.flight.Ticket;
import org.apache.flink.api.common.eventtime.WatermarkStrategy;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.RestartStrategyOptions;
import org.apache.flink.core.execution.JobClient;
import org.apache.flink.runtime.minicluster.MiniCluster;
import org.apache.flink.runtime.testutils.MiniClusterResourceConfiguration;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.functions.sink.SinkFunction;
import org.apache.flink.streaming.util.TestStreamEnvironment;
import org.apache.flink.test.junit5.InjectMiniCluster;
import org.apache.flink.test.junit5.MiniClusterExtension;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

import java.io.InputStream;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Benchmark of the dts path (issue 11's closing note), not a timed assertion and not in {@code make
 * test}: run it with {@code mvn -f connector-java/pom.xml verify -Dit.test=DtsBenchmark -Dtest=NONE
 * -Dsurefire.failIfNoSpecifiedTests=false} after {@code make build-gateway}. A real PostgreSQL 15
 * with pgbench (scale 1) at a steady rate ({@code -Ddts.bench.rate}, transactions/s, default 100,
 * for {@code -Ddts.bench.seconds}, default 30) is captured into a channel of pgbench_accounts and
 * pgbench_history, and a Flink job reads it with the dts source; pgbench starts once the job reads
 * the channel's end, and a phase ends once the job read every pgbench transaction (its
 * pgbench_history INSERT). It prints, with the load average:
 *
 * <ul>
 *   <li>capture throughput: changes (INSERT/UPDATE records) per second while pgbench ran, and
 *       with an unthrottled pgbench ({@code -Ddts.bench.fullSeconds}, default 15, 0 = skip);
 *   <li>latency from source commit (the record's source timestamp) to the Flink record, p50/p99,
 *       against the same run's gateway-side capture lag (source commit to durable in the channel,
 *       {@code setats_channel_capture_lag_seconds}) as the baseline, and per hop: source commit to
 *       the capture receiving the COMMIT, the durable append, source commit to a plain Flight
 *       follower of the channel, that follower to the Flink record (per change in
 *       {@code target/dts-benchmark-hops.csv});
 *   <li>reading the channel from the beginning: records/s of a Flink job against a raw Flight
 *       DoGet of the same records in the same run (the baseline), and their ratio.
 * </ul>
 */
@Timeout(value = 900, unit = TimeUnit.SECONDS)
class DtsBenchmark {

    @RegisterExtension static final PostgresProcess PG = new PostgresProcess();
    @RegisterExtension static final SetatsGatewayProcess GATEWAY = new SetatsGatewayProcess();

    @RegisterExtension
    static final MiniClusterExtension MINI_CLUSTER = new MiniClusterExtension(
            new MiniClusterResourceConfiguration.Builder().setNumberTaskManagers(1).setNumberSlotsPerTaskManager(2).build());

    private static final ConsumerCredentials CRED = ConsumerCredentials.newBuilder().setGroup("bench").setUser("b").setPassword("pw").build();

    private static final List<Long> LATENCIES = Collections.synchronizedList(new ArrayList<>());
    /** Per change id: source commit ms, raw Flight follower receive ms, Flink sink ms (hop decomposition). */
    private static final Map<Long, long[]> HOPS = new java.util.concurrent.ConcurrentHashMap<>();
    private static final AtomicLong RAW_RECORDS = new AtomicLong();
    private static final AtomicLong CHANGES = new AtomicLong();
    private static final AtomicLong RECORDS = new AtomicLong();
    private static final AtomicLong LAST_ID = new AtomicLong(-1);
    /** INSERTs into pgbench_history the Flink job read (one per pgbench transaction). */
    private static final AtomicLong HISTORY = new AtomicLong();
    /** Wall clock (ms) when the Flink job read the newest change. */
    private static final AtomicLong LAST_CHANGE_MS = new AtomicLong();
    /** Latencies are recorded while true (the steady-rate phase). */
    private static volatile boolean measuring;

    private static StreamExecutionEnvironment env(MiniCluster cluster) {
        Configuration conf = new Configuration();
        conf.set(RestartStrategyOptions.RESTART_STRATEGY, "none");
        StreamExecutionEnvironment env = new TestStreamEnvironment(cluster, conf, 1, Collections.emptyList(), Collections.emptyList());
        env.enableCheckpointing(1000);
        return env;
    }

    private static JobClient job(MiniCluster cluster, String group, boolean measure) throws Exception {
        StreamExecutionEnvironment env = env(cluster);
        env.fromSource(DtsSource.builder().setBrokerUrl(GATEWAY.managerUrl()).setTopic("bench").setSid(group)
                        .setUser("b").setPassword("pw").setCheckpoint(0).build(), WatermarkStrategy.noWatermarks(), "dts")
                .addSink(new SinkFunction<DtsRecord>() {
                    @Override
                    public void invoke(DtsRecord r, Context ctx) {
                        long now = System.currentTimeMillis();
                        RECORDS.incrementAndGet();
                        LAST_ID.set(r.getId());
                        if (r.getOperationType() == DtsOperation.INSERT || r.getOperationType() == DtsOperation.UPDATE) {
                            CHANGES.incrementAndGet();
                            LAST_CHANGE_MS.set(now);
                            if (r.getOperationType() == DtsOperation.INSERT && "public.pgbench_history".equals(r.getObjectName())) {
                                HISTORY.incrementAndGet();
                            }
                            if (measure && measuring) {
                                LATENCIES.add(now - r.getSourceTimestampMs());
                                HOPS.computeIfAbsent(r.getId(), k -> new long[] {r.getSourceTimestampMs(), -1, -1})[2] = now;
                            }
                        }
                    }
                });
        return env.executeAsync("dts bench " + group);
    }

    @Test
    void benchmark(@InjectMiniCluster MiniCluster cluster) throws Exception {
        int rate = Integer.getInteger("dts.bench.rate", 100);
        int seconds = Integer.getInteger("dts.bench.seconds", 30);
        PG.pgbench("-i", "-s", "1", "-q");
        PG.sql("ALTER TABLE pgbench_accounts REPLICA IDENTITY FULL; ALTER TABLE pgbench_history REPLICA IDENTITY FULL");
        try (GatewayClient c = GATEWAY.client()) {
            c.action("subscription-create", CreateChannelRequest.newBuilder().setChannel("bench").setSourceUrl(PG.url())
                    .addTables("public.pgbench_accounts").addTables("public.pgbench_history").build(), ChannelInfo.parser());
            for (String g : new String[] {"bench", "reread"}) {
                c.action("subscription-create-group", CreateGroupRequest.newBuilder().setChannel("bench").setGroup(g)
                        .setUser("b").setPassword("pw").build(), GroupInfo.parser());
            }
        }

        // 1. Steady rate: capture throughput and commit-to-Flink latency. pgbench starts only once
        // the job and the raw follower read the channel's end (its HEARTBEATs): a job still
        // starting would add its start-up time to the first changes' latency.
        long submitted = System.nanoTime();
        JobClient follow = job(cluster, "bench", true);
        RawFollower raw = new RawFollower();
        raw.start();
        long deadline = System.currentTimeMillis() + 180_000;
        while ((RECORDS.get() == 0 || RAW_RECORDS.get() == 0 || LAST_ID.get() < describe().getNextId() - 2)
                && System.currentTimeMillis() < deadline) {
            Thread.sleep(100);
        }
        double jobStart = (System.nanoTime() - submitted) / 1e9;
        assertThat(RECORDS.get()).as("the job reads the channel").isPositive();
        String load0 = loadAverage();
        long t0 = System.nanoTime();
        long next0 = describe().getNextId();
        measuring = true;
        PG.pgbench("-c", "4", "-j", "2", "-R", String.valueOf(rate), "-T", String.valueOf(seconds), "-n");
        double wrote = (System.nanoTime() - t0) / 1e9;
        long txns = Long.parseLong(PG.sql("SELECT count(*) FROM pgbench_history").trim());
        long pgbenchEnd = System.currentTimeMillis();
        deadline = pgbenchEnd + 300_000;
        while (HISTORY.get() < txns && System.currentTimeMillis() < deadline) {
            Thread.sleep(50);
        }
        measuring = false;
        assertThat(HISTORY.get()).as("the job read every pgbench transaction").isEqualTo(txns);
        double tail = Math.max(0, LAST_CHANGE_MS.get() - pgbenchEnd) / 1000.0;
        long next1 = describe().getNextId();
        long changes = CHANGES.get();

        // 1b. Unthrottled pgbench: the capture's maximum changes/s on this machine.
        int fullSeconds = Integer.getInteger("dts.bench.fullSeconds", 15);
        String fullLine = "";
        if (fullSeconds > 0) {
            long c0 = CHANGES.get();
            long f0 = System.currentTimeMillis();
            PG.pgbench("-c", "4", "-j", "2", "-T", String.valueOf(fullSeconds), "-n");
            long txnsFull = Long.parseLong(PG.sql("SELECT count(*) FROM pgbench_history").trim());
            deadline = System.currentTimeMillis() + 300_000;
            while (HISTORY.get() < txnsFull && System.currentTimeMillis() < deadline) {
                Thread.sleep(50);
            }
            double secs = (LAST_CHANGE_MS.get() - f0) / 1000.0;
            long ch = CHANGES.get() - c0;
            fullLine = String.format("  unthrottled pgbench -T %d: %d transactions, %d changes in Flink within %.1f s of its start = %.0f changes/s (source commit to Flink, everything)%n",
                    fullSeconds, txnsFull - txns, ch, secs, ch / secs);
        }
        cancelAndWait(follow);
        raw.stop = true;
        String load1 = loadAverage();
        List<Long> lat = new ArrayList<>(LATENCIES);
        Collections.sort(lat);
        double[] capture = captureLagQuantiles("setats_channel_capture_lag_seconds");
        double[] receive = captureLagQuantiles("setats_channel_receive_lag_seconds");
        double[] append = captureLagQuantiles("setats_channel_append_seconds");
        List<Long> rawLat = new ArrayList<>();
        List<Long> flinkHop = new ArrayList<>();
        StringBuilder csv = new StringBuilder("id,source_commit_ms,flight_receive_ms,flink_ms\n");
        for (Map.Entry<Long, long[]> e : new TreeMap<>(HOPS).entrySet()) {
            long[] h = e.getValue();
            csv.append(e.getKey()).append(',').append(h[0]).append(',').append(h[1]).append(',').append(h[2]).append('\n');
            if (h[1] >= 0) {
                rawLat.add(h[1] - h[0]);
                if (h[2] >= 0) {
                    flinkHop.add(h[2] - h[1]);
                }
            }
        }
        Collections.sort(rawLat);
        Collections.sort(flinkHop);
        Files.write(Paths.get("target", "dts-benchmark-hops.csv"), csv.toString().getBytes(StandardCharsets.UTF_8));

        // 2. Read the channel from the beginning: raw DoGet (baseline), then a Flink job.
        ChannelInfo info = describe();
        long end = info.getNextId();
        long raw0 = System.nanoTime();
        long rawRecords = rawRead(info.getFirstId(), end);
        double rawSecs = (System.nanoTime() - raw0) / 1e9;
        RECORDS.set(0);
        LAST_ID.set(-1);
        long f0 = System.nanoTime();
        JobClient reread = job(cluster, "reread", false);
        while (LAST_ID.get() < end - 1) {
            Thread.sleep(20);
        }
        double flinkSecs = (System.nanoTime() - f0) / 1e9;
        long flinkRecords = RECORDS.get();
        cancelAndWait(reread);
        String load2 = loadAverage();

        StringBuilder b = new StringBuilder();
        b.append(String.format("dts benchmark: pgbench -c 4 -j 2 -R %d -T %d (scale 1), channel of pgbench_accounts + pgbench_history%n", rate, seconds));
        b.append(String.format("  load average: before %s, after capture %s, after re-read %s (2 cores shared)%n", load0, load1, load2));
        b.append(String.format("  the job read the channel's end %.1f s after it was submitted (pgbench started then)%n", jobStart));
        b.append(String.format("  capture: %d transactions, %d changes in %.1f s of pgbench = %.0f changes/s (%d channel records incl. BEGIN/COMMIT); the last change reached Flink %.2f s after pgbench ended%n",
                txns, changes, wrote, changes / wrote, next1 - next0, tail));
        b.append(String.format("  source commit -> Flink record: p50 %d ms, p99 %d ms, max %d ms (%d changes)%n",
                pct(lat, 0.50), pct(lat, 0.99), lat.isEmpty() ? -1 : lat.get(lat.size() - 1), lat.size()));
        b.append(String.format("  baseline, source commit -> durable in the channel (gateway histogram, bucket upper bounds): p50 <= %.0f ms, p99 <= %.0f ms%n",
                capture[0] * 1000, capture[1] * 1000));
        b.append(String.format("    hops (gateway histograms): source commit -> capture received COMMIT p50 <= %.0f ms, p99 <= %.0f ms; durable append p50 <= %.1f ms, p99 <= %.1f ms%n",
                receive[0] * 1000, receive[1] * 1000, append[0] * 1000, append[1] * 1000));
        b.append(String.format("    hops (per change): source commit -> raw Flight follower p50 %d ms, p99 %d ms (%d); raw follower -> Flink record p50 %d ms, p99 %d ms%n",
                pct(rawLat, 0.50), pct(rawLat, 0.99), rawLat.size(), pct(flinkHop, 0.50), pct(flinkHop, 0.99)));
        b.append(fullLine);
        b.append(String.format("  channel read from the beginning, %d records: raw Flight DoGet %.0f records/s (%.2f s); Flink dts job %.0f records/s (%.2f s, incl. job start); ratio Flink/raw %.2f%n",
                rawRecords, rawRecords / rawSecs, rawSecs, flinkRecords / flinkSecs, flinkSecs, (flinkRecords / flinkSecs) / (rawRecords / rawSecs)));
        System.out.print(b);
        Files.write(Paths.get("target", "dts-benchmark.txt"), b.toString().getBytes(StandardCharsets.UTF_8));
    }

    private static void cancelAndWait(JobClient job) throws Exception {
        job.cancel().get();
        while (!job.getJobStatus().get().isGloballyTerminalState()) {
            Thread.sleep(50);
        }
    }

    private static ChannelInfo describe() throws Exception {
        try (GatewayClient c = GATEWAY.client()) {
            return c.action("subscription-describe", ChannelRequest.newBuilder().setChannel("bench").build(), ChannelInfo.parser());
        }
    }

    /** Reads [from, end) of the channel with one DoGet (not following) and counts the records. */
    private static long rawRead(long from, long end) throws Exception {
        long n = 0;
        try (GatewayClient c = GATEWAY.client();
                FlightStream s = c.flightClient().getStream(new Ticket(ChangelogTicket.newBuilder().setChannel(
                        ChannelTicket.newBuilder().setChannel("bench").setCredentials(CRED).setFromId(from)).build().toByteArray()))) {
            while (s.next()) {
                n += s.getRoot().getRowCount();
            }
        }
        // The gateway reads to its own end, which may have grown by a HEARTBEAT since describe.
        assertThat(n).isGreaterThanOrEqualTo(end - from);
        return n;
    }

    private static long pct(List<Long> sorted, double q) {
        if (sorted.isEmpty()) {
            return -1;
        }
        return sorted.get(Math.min(sorted.size() - 1, (int) Math.ceil(q * sorted.size()) - 1));
    }

    /**
     * A following DoGet of the channel from its end, outside Flink: when each change reaches a
     * plain Flight client (the hop before Flink's source reader, emission and sink).
     */
    private static final class RawFollower extends Thread {
        volatile boolean stop;

        RawFollower() {
            super("dts bench raw follower");
            setDaemon(true);
        }

        @Override
        public void run() {
            try (GatewayClient c = GATEWAY.client();
                    FlightStream s = c.flightClient().getStream(new Ticket(ChangelogTicket.newBuilder().setChannel(
                            ChannelTicket.newBuilder().setChannel("bench").setCredentials(CRED).setFollow(true)
                                    .setPosition(io.setats.proto.v1.StartPosition.LATEST)).build().toByteArray()))) {
                while (!stop && s.next()) {
                    long now = System.currentTimeMillis();
                    org.apache.arrow.vector.VectorSchemaRoot root = s.getRoot();
                    RAW_RECORDS.addAndGet(root.getRowCount());
                    for (DtsRecord r : io.setats.flink.dts.source.DtsChannelStreamAccess.convert(root)) {
                        if (measuring && (r.getOperationType() == DtsOperation.INSERT || r.getOperationType() == DtsOperation.UPDATE)) {
                            HOPS.computeIfAbsent(r.getId(), k -> new long[] {r.getSourceTimestampMs(), -1, -1})[1] = now;
                        }
                    }
                }
            } catch (Exception e) {
                if (!stop) {
                    e.printStackTrace();
                }
            }
        }
    }

    /** p50 and p99 upper bounds (s) of histogram name{channel="bench"} from /metrics. */
    private static double[] captureLagQuantiles(String name) throws Exception {
        String text;
        try (InputStream in = URI.create("http://" + GATEWAY.adminAddr() + "/metrics").toURL().openStream()) {
            text = new String(in.readAllBytes(), StandardCharsets.UTF_8);
        }
        Matcher m = Pattern.compile(name + "_bucket\\{channel=\"bench\",le=\"([^\"]+)\"} (\\S+)").matcher(text);
        TreeMap<Double, Double> buckets = new TreeMap<>();
        while (m.find()) {
            double le = m.group(1).equals("+Inf") ? Double.POSITIVE_INFINITY : Double.parseDouble(m.group(1));
            buckets.put(le, Double.parseDouble(m.group(2)));
        }
        double total = buckets.isEmpty() ? 0 : buckets.lastEntry().getValue();
        double[] out = {Double.NaN, Double.NaN};
        double[] qs = {0.50, 0.99};
        for (int i = 0; i < qs.length; i++) {
            for (Map.Entry<Double, Double> e : buckets.entrySet()) {
                if (e.getValue() >= qs[i] * total) {
                    out[i] = e.getKey();
                    break;
                }
            }
        }
        return out;
    }

    private static String loadAverage() {
        try {
            String[] f = new String(Files.readAllBytes(Paths.get("/proc/loadavg")), StandardCharsets.UTF_8).split(" ");
            return f[0] + " " + f[1] + " " + f[2];
        } catch (Exception e) {
            return "unknown";
        }
    }
}
