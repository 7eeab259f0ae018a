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
 * pgbench_history, and a Flink job reads it with the dts source. It prints, with the load average:
 *
 * <ul>
 *   <li>capture throughput: changes (INSERT/UPDATE records) per second while pgbench ran;
 *   <li>latency from source commit (the record's source timestamp) to the Flink record, p50/p99,
 *       against the same run's gateway-side capture lag (source commit to durable in the channel,
 *       {@code setats_channel_capture_lag_seconds}) as the baseline;
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
    private static final AtomicLong CHANGES = new AtomicLong();
    private static final AtomicLong RECORDS = new AtomicLong();
    private static final AtomicLong LAST_ID = new AtomicLong(-1);

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
                            if (measure) {
                                LATENCIES.add(now - r.getSourceTimestampMs());
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

        // 1. Steady rate: capture throughput and commit-to-Flink latency.
        JobClient follow = job(cluster, "bench", true);
        Thread.sleep(3000); // the job is reading (heartbeats)
        String load0 = loadAverage();
        long t0 = System.nanoTime();
        long next0 = describe().getNextId();
        PG.pgbench("-c", "4", "-j", "2", "-R", String.valueOf(rate), "-T", String.valueOf(seconds), "-n");
        double wrote = (System.nanoTime() - t0) / 1e9;
        long next1 = describe().getNextId();
        long deadline = System.currentTimeMillis() + 120_000;
        while (LAST_ID.get() < next1 - 1 && System.currentTimeMillis() < deadline) {
            Thread.sleep(100);
        }
        cancelAndWait(follow);
        String load1 = loadAverage();
        long changes = CHANGES.get();
        assertThat(LAST_ID.get()).as("the job read everything").isGreaterThanOrEqualTo(next1 - 1);
        List<Long> lat = new ArrayList<>(LATENCIES);
        Collections.sort(lat);
        double[] capture = captureLagQuantiles();

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
        b.append(String.format("  capture: %d records (%d changes) in %.1f s of pgbench = %.0f changes/s, %.0f records/s%n",
                next1 - next0, changes, wrote, changes / wrote, (next1 - next0) / wrote));
        b.append(String.format("  source commit -> Flink record: p50 %d ms, p99 %d ms, max %d ms (%d changes)%n",
                pct(lat, 0.50), pct(lat, 0.99), lat.isEmpty() ? -1 : lat.get(lat.size() - 1), lat.size()));
        b.append(String.format("  baseline, source commit -> durable in the channel (gateway histogram, bucket upper bounds): p50 <= %.0f ms, p99 <= %.0f ms%n",
                capture[0] * 1000, capture[1] * 1000));
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
        assertThat(n).isEqualTo(end - from);
        return n;
    }

    private static long pct(List<Long> sorted, double q) {
        if (sorted.isEmpty()) {
            return -1;
        }
        return sorted.get(Math.min(sorted.size() - 1, (int) Math.ceil(q * sorted.size()) - 1));
    }

    /** p50 and p99 upper bounds (s) of setats_channel_capture_lag_seconds{channel="bench"} from /metrics. */
    private static double[] captureLagQuantiles() throws Exception {
        String text;
        try (InputStream in = URI.create("http://" + GATEWAY.adminAddr() + "/metrics").toURL().openStream()) {
            text = new String(in.readAllBytes(), StandardCharsets.UTF_8);
        }
        Matcher m = Pattern.compile("setats_channel_capture_lag_seconds_bucket\\{channel=\"bench\",le=\"([^\"]+)\"} (\\S+)").matcher(text);
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
