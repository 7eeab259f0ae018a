package io.setats.flink.source;

import io.setats.flink.SetatsConnectorOptions.StartupMode;
import io.setats.flink.client.GatewayClient;
import io.setats.flink.testutils.SetatsGatewayProcess;

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
 * <ul>
 *   <li>throughput: {@code setats.bench.rows} upserts of the seed's shape in 4 buckets are written
 *       first; a job (parallelism 2, startup earliest) reads them; rows/s from job submission until
 *       the last row went through the job.
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
        try (GatewayClient c = GATEWAY.client()) {
            create(c, spec("bench", "tp", SEED, Arrays.asList("id", "dt"), Collections.emptyList(), 4, Collections.emptyMap()));
            long w0 = System.nanoTime();
            for (int from = 0; from < rows; from += 10_000) {
                List<RowData> batch = new ArrayList<>();
                for (int i = from; i < Math.min(rows, from + 10_000); i++) {
                    batch.add(insert("id" + i, "20261129", "name" + i, "address of " + i));
                }
                write(c, "bench", "tp", SEED, batch);
            }
            System.out.printf("BENCH write %d rows: %.1f s%n", rows, (System.nanoTime() - w0) / 1e9);
        }
        COUNT.set(0);
        StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment();
        env.setParallelism(2);
        env.fromSource(source("tp", StartupMode.EARLIEST), WatermarkStrategy.noWatermarks(), "tp")
                .map(r -> {
                    COUNT.incrementAndGet();
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
            Thread.sleep(5);
        }
        double s = (System.nanoTime() - t0) / 1e9;
        job.cancel().get();
        System.out.printf("BENCH read %d rows (parallelism 2, 4 buckets): %.2f s = %.0f rows/s (incl. job start)%n",
                rows, s, rows / s);
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
