package io.setats.flink.source;

import io.setats.flink.SetatsConnectorOptions.StartupMode;
import io.setats.flink.client.GatewayClient;
import io.setats.flink.testutils.SetatsGatewayProcess;
import io.setats.proto.v1.BucketOffsets;
import io.setats.proto.v1.ChangelogTicket;

import org.apache.arrow.flight.FlightStream;

import org.apache.flink.api.common.eventtime.WatermarkStrategy;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.RestartStrategyOptions;
import org.apache.flink.core.execution.JobClient;
import org.apache.flink.runtime.testutils.MiniClusterResourceConfiguration;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.functions.sink.v2.DiscardingSink;
import org.apache.flink.table.api.DataTypes;
import org.apache.flink.table.data.RowData;
import org.apache.flink.table.types.logical.RowType;
import org.apache.flink.test.junit5.MiniClusterExtension;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;

import static io.setats.flink.source.SourceTestTables.awaitOpenChangelogStreams;
import static io.setats.flink.source.SourceTestTables.create;
import static io.setats.flink.source.SourceTestTables.insert;
import static io.setats.flink.source.SourceTestTables.spec;
import static io.setats.flink.source.SourceTestTables.write;

/**
 * Read throughput and write-to-read latency of the {@code setats-cdc} source against a real gateway
 * on a MiniCluster. Not part of {@code mvn verify}; run with
 *
 * <pre>
 * mvn -f connector-java/pom.xml test -Dtest=SetatsSourceBenchmark -Dsetats.bench.rows=200000
 * </pre>
 *
 * (add {@code -Dsetats.test.argLine=-XX:StartFlightRecording=filename=/tmp/cdc.jfr,settings=profile}
 * for a JFR profile, see docs/PERF-NOTES.md "CDC source").
 *
 * <ul>
 *   <li>throughput: {@code setats.bench.rows} upserts of the seed's shape in 4 buckets are written
 *       first; then, {@code setats.bench.rounds} times, alternately: the gateway's raw DoGet rate
 *       (all 4 buckets at once, rows counted from the Arrow batches, no Flink conversion) and a job
 *       (parallelism 2, startup earliest) reading the same rows, rows/s from its first row until
 *       the last went through the job (and incl. job start). Prints the ratio and the load average
 *       per round.
 *   <li>initial versus earliest: {@link #initialVersusEarliest} (default 1M rows).
 *   <li>latency: with a 'latest' job running, 50 single-row writes one after another; for each, the
 *       time from the DoPut call until the row went through the job (write, durable commit, push
 *       over the open DoGet stream, conversion, emit). Prints median and max.
 * </ul>
 */
class SetatsSourceBenchmark {

    @RegisterExtension static final SetatsGatewayProcess GATEWAY = new SetatsGatewayProcess();

    @RegisterExtension
    static final MiniClusterExtension MINI_CLUSTER =
            new MiniClusterExtension(
                    new MiniClusterResourceConfiguration.Builder()
                            .setNumberTaskManagers(1)
                            .setNumberSlotsPerTaskManager(2)
                            .setConfiguration(noRestart())
                            .build());

    private static Configuration noRestart() {
        Configuration c = new Configuration();
        c.set(RestartStrategyOptions.RESTART_STRATEGY, "none");
        return c;
    }

    private static final RowType SEED =
            (RowType)
                    DataTypes.ROW(
                                    DataTypes.FIELD("id", DataTypes.STRING().notNull()),
                                    DataTypes.FIELD("dt", DataTypes.STRING().notNull()),
                                    DataTypes.FIELD("name", DataTypes.STRING()),
                                    DataTypes.FIELD("address", DataTypes.STRING()))
                            .getLogicalType();

    private static final AtomicLong COUNT = new AtomicLong();
    private static final AtomicLong FIRST_NANOS = new AtomicLong();
    private static final Map<String, Long> ARRIVED_NANOS = new ConcurrentHashMap<>();

    private static SetatsCdcSource<RowData> source(String table, StartupMode mode) {
        return SetatsCdcSource.builder()
                .setManagerUrl(GATEWAY.managerUrl())
                .setWarehouse(GATEWAY.warehouse().toString())
                .setTable("bench", table)
                .setReadType(SEED)
                .setStartupMode(mode)
                .build();
    }

    @Test
    void throughput() throws Exception {
        int rows = Integer.getInteger("setats.bench.rows", 200_000);
        int rounds = Integer.getInteger("setats.bench.rounds", 2);
        try (GatewayClient c = GATEWAY.client()) {
            writeRows(c, "tp", rows);
            // Alternate raw DoGet and Flink reads of the same rows in this JVM; ratio per round.
            for (int round = 0; round < rounds; round++) {
                double raw = rawDoGet(c, "tp", rows);
                double[] flink = flinkRead("tp", StartupMode.EARLIEST, rows);
                System.out.printf(
                        "BENCH round %d: raw DoGet %.0f rows/s, setats-cdc %.0f rows/s (first->last row; "
                                + "%.0f rows/s incl. job start), ratio %.3f, load %s%n",
                        round, raw, flink[0], flink[1], flink[0] / raw, loadAverage());
            }
        }
    }

    /**
     * startup.mode initial (the merged rows through snapshot DoGets, then the changelog) against
     * earliest (the changelog from offset 0) on one table of {@code setats.bench.rows} rows
     * (default 1M; one upsert per key, so both read as many rows), in turns: earliest, initial,
     * {@code setats.bench.rounds} times. Prints both rates (first to last row, and incl. job
     * start), the ratio initial/earliest per round (>= 1: the snapshot is at least as fast) and
     * the load average. Run it alone with {@code -Dtest=SetatsSourceBenchmark#initialVersusEarliest}.
     */
    @Test
    void initialVersusEarliest() throws Exception {
        int rows = Integer.getInteger("setats.bench.rows", 1_000_000);
        try (GatewayClient c = GATEWAY.client()) {
            writeRows(c, "ie", rows);
        }
        for (int round = 0; round < Integer.getInteger("setats.bench.rounds", 2); round++) {
            String load0 = loadAverage();
            double[] earliest = flinkRead("ie", StartupMode.EARLIEST, rows);
            double[] initial = flinkRead("ie", StartupMode.INITIAL, rows);
            System.out.printf(
                    "BENCH round %d, %d rows (parallelism 2, 4 buckets): earliest %.0f rows/s (%.0f incl. job start), "
                            + "initial %.0f rows/s (%.0f incl. job start), initial/earliest %.2f (%.2f incl. start); "
                            + "load before %s, after %s%n",
                    round, rows, earliest[0], earliest[1], initial[0], initial[1], initial[0] / earliest[0],
                    initial[1] / earliest[1], load0, loadAverage());
        }
    }

    /** Creates bench.{table} (the seed's shape, 4 buckets) and writes {@code rows} upserts. */
    private static void writeRows(GatewayClient c, String table, int rows) throws Exception {
        create(c, spec("bench", table, SEED, Arrays.asList("id", "dt"), Collections.emptyList(), 4, Collections.emptyMap()));
        long w0 = System.nanoTime();
        for (int from = 0; from < rows; from += 10_000) {
            List<RowData> batch = new ArrayList<>();
            for (int i = from; i < Math.min(rows, from + 10_000); i++) {
                batch.add(insert("id" + i, "20261129", "name" + i, "address of " + i));
            }
            write(c, "bench", table, SEED, batch);
        }
        System.out.printf("BENCH write %d rows: %.1f s%n", rows, (System.nanoTime() - w0) / 1e9);
    }

    /**
     * The gateway's own DoGet rate for the same rows: all buckets of the table read at once (one
     * thread per bucket, bounded DoGet from offset 0 to the end offset), rows counted from the
     * Arrow batches without any Flink conversion. Rows/s from the first request to the last row.
     */
    private static double rawDoGet(GatewayClient c, String table, int rows) throws Exception {
        List<BucketOffsets> buckets = c.listBuckets("bench", table).getBucketsList();
        AtomicLong total = new AtomicLong();
        List<Thread> threads = new ArrayList<>();
        List<Throwable> errors = Collections.synchronizedList(new ArrayList<>());
        long t0 = System.nanoTime();
        for (BucketOffsets b : buckets) {
            Thread t = new Thread(() -> {
                ChangelogTicket ticket =
                        ChangelogTicket.newBuilder()
                                .setDatabase("bench")
                                .setTable(table)
                                .setPartition(b.getPartition())
                                .setBucket(b.getBucket())
                                .setOffset(b.getStartOffset())
                                .setEndOffset(b.getEndOffset())
                                .build();
                try (FlightStream s = c.readChangelog(ticket)) {
                    while (s.next()) {
                        total.addAndGet(s.getRoot().getRowCount());
                    }
                } catch (Throwable e) {
                    errors.add(e);
                }
            });
            threads.add(t);
            t.start();
        }
        for (Thread t : threads) {
            t.join();
        }
        double s = (System.nanoTime() - t0) / 1e9;
        if (!errors.isEmpty()) {
            throw new IllegalStateException("raw DoGet failed", errors.get(0));
        }
        if (total.get() != rows) {
            throw new IllegalStateException("raw DoGet read " + total.get() + " rows, expected " + rows);
        }
        return rows / s;
    }

    /** Reads the table through setats-cdc from {@code mode}; {rows/s first->last row, rows/s incl. start}. */
    private static double[] flinkRead(String table, StartupMode mode, int rows) throws Exception {
        COUNT.set(0);
        FIRST_NANOS.set(0);
        StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment();
        env.setParallelism(2);
        env.fromSource(source(table, mode), WatermarkStrategy.noWatermarks(), table)
                .map(r -> {
                    if (COUNT.incrementAndGet() == 1) {
                        FIRST_NANOS.set(System.nanoTime());
                    }
                    return 1;
                })
                .returns(Types.INT)
                .sinkTo(new DiscardingSink<>());
        long t0 = System.nanoTime();
        JobClient job = env.executeAsync("source throughput");
        while (COUNT.get() < rows) {
            if (job.getJobStatus().get().isTerminalState()) {
                throw new IllegalStateException("the job ended: " + job.getJobStatus().get());
            }
            Thread.sleep(1);
        }
        long t1 = System.nanoTime();
        job.cancel().get();
        awaitOpenChangelogStreams(GATEWAY, 0);
        return new double[] {rows / ((t1 - FIRST_NANOS.get()) / 1e9), rows / ((t1 - t0) / 1e9)};
    }

    /** The 1/5/15-minute load averages of the machine (/proc/loadavg), for the report. */
    static String loadAverage() {
        try {
            String[] f = new String(Files.readAllBytes(Paths.get("/proc/loadavg"))).trim().split("\\s+");
            return f[0] + " " + f[1] + " " + f[2];
        } catch (IOException e) {
            return "n/a";
        }
    }

    @Test
    void writeToReadLatency() throws Exception {
        try (GatewayClient c = GATEWAY.client()) {
            create(c, spec("bench", "lat", SEED, Arrays.asList("id", "dt"), Collections.emptyList(), 1, Collections.emptyMap()));
            write(c, "bench", "lat", SEED, Collections.singletonList(insert("seed", "d", "n", "a")));
            StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment();
            env.setParallelism(1);
            env.fromSource(source("lat", StartupMode.LATEST), WatermarkStrategy.noWatermarks(), "lat")
                    .map(r -> {
                        ARRIVED_NANOS.put(r.getString(0).toString(), System.nanoTime());
                        return 1;
                    })
                    .returns(Types.INT)
                    .sinkTo(new DiscardingSink<>());
            JobClient job = env.executeAsync("source latency");
            awaitOpenChangelogStreams(GATEWAY, 1);
            List<Double> ms = new ArrayList<>();
            for (int i = 0; i < 50; i++) {
                String id = "lat" + i;
                long t0 = System.nanoTime();
                write(c, "bench", "lat", SEED, Collections.singletonList(insert(id, "d", "n", "a")));
                while (!ARRIVED_NANOS.containsKey(id)) {
                    Thread.sleep(0, 100_000);
                }
                ms.add((ARRIVED_NANOS.get(id) - t0) / 1e6);
            }
            job.cancel().get();
            Collections.sort(ms);
            System.out.printf("BENCH write-to-read latency over 50 rows: median %.1f ms, p90 %.1f ms, max %.1f ms%n",
                    ms.get(25), ms.get(45), ms.get(49));
        }
    }
}
