package io.setats.flink.table;

import io.setats.flink.SetatsConnectorOptions.StartupMode;
import io.setats.flink.client.GatewayClient;
import io.setats.flink.source.SetatsCdcSource;
import io.setats.flink.testutils.SetatsGatewayProcess;

import org.apache.flink.api.common.RuntimeExecutionMode;
import org.apache.flink.api.common.eventtime.WatermarkStrategy;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.ExecutionOptions;
import org.apache.flink.configuration.RestartStrategyOptions;
import org.apache.flink.core.execution.JobClient;
import org.apache.flink.runtime.minicluster.MiniCluster;
import org.apache.flink.runtime.testutils.MiniClusterResourceConfiguration;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.functions.sink.v2.DiscardingSink;
import org.apache.flink.streaming.util.TestStreamEnvironment;
import org.apache.flink.table.api.DataTypes;
import org.apache.flink.table.api.EnvironmentSettings;
import org.apache.flink.table.api.bridge.java.StreamTableEnvironment;
import org.apache.flink.table.data.RowData;
import org.apache.flink.table.types.logical.RowType;
import org.apache.flink.test.junit5.InjectMiniCluster;
import org.apache.flink.test.junit5.MiniClusterExtension;
import org.apache.flink.types.Row;
import org.apache.flink.util.CloseableIterator;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;

import static io.setats.flink.source.SourceTestTables.create;
import static io.setats.flink.source.SourceTestTables.insert;
import static io.setats.flink.source.SourceTestTables.spec;
import static io.setats.flink.source.SourceTestTables.write;

/**
 * Reads of the merged table against a real gateway on a MiniCluster, at parallelism 2, each
 * figure beside its same-run baseline (docs/PERF-NOTES.md "Reads"). Not part of {@code mvn
 * verify}; run with
 *
 * <pre>
 * mvn -f connector-java/pom.xml test -Dtest=SetatsReadBenchmark -Dsetats.bench.rows=1000000
 * </pre>
 *
 * <ol>
 *   <li>A dimension table of {@code setats.bench.rows} rows (BIGINT key, 4 buckets) is written.
 *   <li>Batch {@code SELECT COUNT(*)} (the snapshot scan) and the same rows read as the changelog
 *       from earliest through {@code setats-cdc} (DataStream, until every row arrived), in {@code
 *       setats.bench.rounds} rounds (default 2) of alternating order; both times include the job
 *       start.
 *   <li>A lookup join of {@code setats.bench.probes} probe rows ({@code datagen}, bounded, keys
 *       drawn from a hot set of {@code setats.bench.hot} keys) without cache, then with {@code
 *       lookup.cache = 'PARTIAL'} (max-rows 100000, expire-after-write 10 min): lookups/s = probes
 *       / job time.
 * </ol>
 *
 * Prints {@code BENCH ...} lines with the 1-minute load average before and after each figure.
 */
class SetatsReadBenchmark {

    @RegisterExtension static final SetatsGatewayProcess GATEWAY = new SetatsGatewayProcess();

    @RegisterExtension
    static final MiniClusterExtension MINI_CLUSTER =
            new MiniClusterExtension(
                    new MiniClusterResourceConfiguration.Builder()
                            .setNumberTaskManagers(1)
                            .setNumberSlotsPerTaskManager(4)
                            .build());

    private static final RowType DIM =
            (RowType)
                    DataTypes.ROW(
                                    DataTypes.FIELD("id", DataTypes.BIGINT().notNull()),
                                    DataTypes.FIELD("name", DataTypes.STRING()),
                                    DataTypes.FIELD("v", DataTypes.BIGINT()))
                            .getLogicalType();

    private static final AtomicLong COUNT = new AtomicLong();

    private static String load() {
        try {
            return Files.readAllLines(Paths.get("/proc/loadavg")).get(0).split(" ")[0];
        } catch (IOException e) {
            return "?";
        }
    }

    private static StreamTableEnvironment tableEnv(MiniCluster cluster, RuntimeExecutionMode mode) {
        Configuration conf = new Configuration();
        conf.set(RestartStrategyOptions.RESTART_STRATEGY, "none");
        conf.set(ExecutionOptions.RUNTIME_MODE, mode);
        StreamExecutionEnvironment env =
                new TestStreamEnvironment(cluster, conf, 2, Collections.emptyList(), Collections.emptyList());
        return StreamTableEnvironment.create(
                env,
                mode == RuntimeExecutionMode.BATCH ? EnvironmentSettings.inBatchMode() : EnvironmentSettings.inStreamingMode());
    }

    private static String with(String extra) {
        return "'connector' = 'setats', 'manager-url' = '" + GATEWAY.managerUrl() + "',"
                + "'warehouse' = '" + GATEWAY.warehouse() + "', 'catalog-type' = 'hadoop',"
                + "'catalog-name' = 'setats', 'catalog-database' = 'bench', 'catalog-table' = 'dim'" + extra;
    }

    @Test
    void reads(@InjectMiniCluster MiniCluster cluster) throws Exception {
        int rows = Integer.getInteger("setats.bench.rows", 1_000_000);
        int probes = Integer.getInteger("setats.bench.probes", 200_000);
        int hot = Integer.getInteger("setats.bench.hot", 10_000);
        try (GatewayClient c = GATEWAY.client()) {
            create(c, spec("bench", "dim", DIM, Collections.singletonList("id"), Collections.emptyList(), 4, Collections.emptyMap()));
            long w0 = System.nanoTime();
            for (int from = 0; from < rows; from += 20_000) {
                List<RowData> batch = new ArrayList<>();
                for (long i = from; i < Math.min(rows, from + 20_000); i++) {
                    batch.add(insert(i, "name-" + i, i * 3));
                }
                write(c, "bench", "dim", DIM, batch);
            }
            System.out.printf("BENCH write %d rows: %.1f s (load %s)%n", rows, (System.nanoTime() - w0) / 1e9, load());
        }

        // Batch COUNT(*) over the snapshot scan against the changelog from earliest, in rounds of
        // alternating order (the first job of a JVM also pays for JIT warm-up and, for SQL, the
        // planner's first use).
        int rounds = Integer.getInteger("setats.bench.rounds", 2);
        for (int round = 0; round < rounds; round++) {
            double batchS;
            double cdcS;
            if (round % 2 == 0) {
                batchS = batchCount(cluster, rows);
                cdcS = changelogRead(rows);
            } else {
                cdcS = changelogRead(rows);
                batchS = batchCount(cluster, rows);
            }
            System.out.printf("BENCH round %d (%s first) ratio batch COUNT(*) / changelog read, rows/s: %.2fx%n",
                    round, round % 2 == 0 ? "batch" : "changelog", cdcS / batchS);
        }

        // Lookup joins, without then with the PARTIAL cache.
        double[] perS = new double[2];
        for (int cached = 0; cached < 2; cached++) {
            StreamTableEnvironment s = tableEnv(cluster, RuntimeExecutionMode.STREAMING);
            s.executeSql("CREATE TABLE probe (k BIGINT, proc AS PROCTIME()) WITH ('connector' = 'datagen',"
                    + " 'number-of-rows' = '" + probes + "', 'rows-per-second' = '100000000',"
                    + " 'fields.k.min' = '0', 'fields.k.max' = '" + (hot - 1) + "')");
            s.executeSql("CREATE TABLE dim (id BIGINT NOT NULL, name STRING, v BIGINT, PRIMARY KEY (id) NOT ENFORCED) WITH ("
                    + with(cached == 1
                            ? ", 'lookup.cache' = 'PARTIAL', 'lookup.partial-cache.max-rows' = '100000',"
                                    + " 'lookup.partial-cache.expire-after-write' = '10min'"
                            : "") + ")");
            s.executeSql("CREATE TABLE bench_out (k BIGINT, v BIGINT) WITH ('connector' = 'blackhole')");
            String l0 = load();
            long t0 = System.nanoTime();
            s.executeSql("INSERT INTO bench_out SELECT p.k, d.v FROM probe AS p"
                    + " JOIN dim FOR SYSTEM_TIME AS OF p.proc AS d ON p.k = d.id").await();
            double sec = (System.nanoTime() - t0) / 1e9;
            perS[cached] = probes / sec;
            System.out.printf("BENCH lookup join %s: %d probes over %d hot keys of %d rows (parallelism 2): %.2f s = %.0f lookups/s (load %s -> %s)%n",
                    cached == 1 ? "PARTIAL cache" : "no cache", probes, hot, rows, sec, perS[cached], l0, load());
        }
        System.out.printf("BENCH ratio lookups/s with cache / without: %.2fx%n", perS[1] / perS[0]);
    }

    /** Seconds of a batch {@code SELECT COUNT(*)} over the table (job start included). */
    private double batchCount(MiniCluster cluster, int rows) throws Exception {
        StreamTableEnvironment batch = tableEnv(cluster, RuntimeExecutionMode.BATCH);
        batch.executeSql("CREATE TABLE dim (id BIGINT NOT NULL, name STRING, v BIGINT, PRIMARY KEY (id) NOT ENFORCED) WITH (" + with("") + ")");
        String l0 = load();
        long t0 = System.nanoTime();
        long counted;
        try (CloseableIterator<Row> it = batch.executeSql("SELECT COUNT(*) FROM dim").collect()) {
            counted = (Long) it.next().getField(0);
        }
        double batchS = (System.nanoTime() - t0) / 1e9;
        if (counted != rows) {
            throw new IllegalStateException("COUNT(*) = " + counted + ", wrote " + rows);
        }
        System.out.printf("BENCH batch COUNT(*) %d rows (parallelism 2): %.2f s = %.0f rows/s (load %s -> %s)%n",
                rows, batchS, rows / batchS, l0, load());
        return batchS;
    }

    /** Seconds until a setats-cdc job from earliest delivered every row (job start included). */
    private double changelogRead(int rows) throws Exception {
        COUNT.set(0);
        StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment();
        env.setParallelism(2);
        SetatsCdcSource<RowData> cdc =
                SetatsCdcSource.builder()
                        .setManagerUrl(GATEWAY.managerUrl())
                        .setWarehouse(GATEWAY.warehouse().toString())
                        .setTable("bench", "dim")
                        .setReadType(DIM)
                        .setStartupMode(StartupMode.EARLIEST)
                        .build();
        env.fromSource(cdc, WatermarkStrategy.noWatermarks(), "cdc")
                .map(r -> {
                    COUNT.incrementAndGet();
                    return 1;
                })
                .returns(Types.INT)
                .sinkTo(new DiscardingSink<>());
        String l0 = load();
        long t0 = System.nanoTime();
        JobClient job = env.executeAsync("changelog read");
        while (COUNT.get() < rows) {
            if (job.getJobStatus().get().isTerminalState()) {
                throw new IllegalStateException("the job ended: " + job.getJobStatus().get());
            }
            Thread.sleep(5);
        }
        double cdcS = (System.nanoTime() - t0) / 1e9;
        job.cancel().get();
        System.out.printf("BENCH setats-cdc earliest %d rows (parallelism 2): %.2f s = %.0f rows/s (load %s -> %s)%n",
                rows, cdcS, rows / cdcS, l0, load());
        return cdcS;
    }
}
