package io.setats.bench.flink;

import org.apache.flink.api.common.JobStatus;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.core.execution.JobClient;
import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.databind.ObjectMapper;
import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.databind.node.ArrayNode;
import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.databind.node.ObjectNode;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.functions.source.SourceFunction;
import org.apache.flink.table.api.EnvironmentSettings;
import org.apache.flink.table.api.TableEnvironment;
import org.apache.flink.table.api.bridge.java.StreamTableEnvironment;
import org.apache.flink.table.data.RowData;
import org.apache.flink.table.runtime.typeutils.InternalTypeInfo;
import org.apache.flink.types.Row;
import org.apache.flink.types.RowKind;
import org.apache.flink.util.CloseableIterator;

import java.io.File;
import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.Arrays;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * One system's side of one run of {@code make bench-flink}, in its own JVM (started by {@link
 * BenchFlink}): (1) ingest {@link Workload} through Flink SQL at sink parallelism 2 with 10 s
 * checkpoints, rate until the system's last commit (and until the job finished); (2) read the changelog from the start
 * through the system's CDC source until its fold equals the expected table; (4) read the table
 * itself (Setats: {@code startup.mode = initial}, the merged rows; Paimon: a batch scan) and fail
 * unless fold, table and expected table are equal; (3) freshness: a reader job following the
 * table from its latest position, then a writer job at a steady rate of new keys whose {@code
 * name} is the write time (epoch ms); latency = arrival at the reader - write time, for each
 * checkpoint interval asked. Writes its figures as JSON to {@code --out}.
 *
 * <p>Arguments: {@code --system setats|paimon --keys N --out FILE --fresh-seconds S --fresh-rate R
 * --fresh-warmup-seconds W --fresh-checkpoints MS[,MS]} and for Setats {@code --manager-url URL
 * --warehouse DIR --gateway-pid PID}, for Paimon {@code --warehouse DIR}.
 */
public final class SystemRun {
    static final int PARALLELISM = 2;
    static final int BUCKETS = 4;
    static final long INGEST_CHECKPOINT_MS = 10_000;
    static final long READ_TIMEOUT_MS = 20 * 60_000;

    private final Map<String, String> args;
    private final boolean setats;
    /** The measured workload ({@code --keys}); the warm-up swaps in its own while it runs. */
    private Workload workload;
    private final ObjectNode out = new ObjectMapper().createObjectNode();
    private final long gatewayPid;

    private SystemRun(Map<String, String> args) {
        this.args = args;
        this.setats = arg("system").equals("setats");
        if (!setats && !arg("system").equals("paimon")) {
            throw new IllegalArgumentException("--system must be setats or paimon, not " + arg("system"));
        }
        this.workload = new Workload(Long.parseLong(arg("keys")));
        this.gatewayPid = setats ? Long.parseLong(arg("gateway-pid")) : -1;
    }

    public static void main(String[] argv) throws Exception {
        Map<String, String> a = new HashMap<>();
        for (int i = 0; i + 1 < argv.length; i += 2) {
            if (!argv[i].startsWith("--")) {
                throw new IllegalArgumentException("argument " + argv[i]);
            }
            a.put(argv[i].substring(2), argv[i + 1]);
        }
        new SystemRun(a).run();
        // MiniCluster threads of cancelled jobs may linger; the figures are written.
        System.exit(0);
    }

    private String arg(String name) {
        String v = args.get(name);
        if (v == null) {
            throw new IllegalArgumentException("missing --" + name);
        }
        return v;
    }

    private void run() throws Exception {
        out.put("system", arg("system"));
        out.put("keys", workload.keys());
        out.put("rows", workload.rows());
        out.put("load_start", loadAverage());
        double jvm0 = jvmCpuSeconds();
        double gw0 = gatewayCpuSeconds();
        String table = "bench_" + System.currentTimeMillis();
        String phases = args.getOrDefault("phases", "ingest,read,freshness");
        if (phases.contains("ingest")) {
            warmUp(table + "_warmup", phases.contains("read"));
            ingest(table);
        }
        if (phases.contains("read")) {
            // One read per shape asked, in that order, on the same table (an A/B in one JVM);
            // the last one's figures are the phase's.
            Map<String, String> fold = null;
            ArrayNode reads = out.putArray("reads");
            foldedRows = -1; // the warm-up's read folded another table
            for (String shape : readShapes()) {
                Map<String, String> f = read(table, shape);
                if (f != null) {
                    fold = f;
                }
                reads.addObject().put("shape", shape).put("rows_per_s", out.get("read_rows_per_s").asDouble())
                        .put("jvm_cpu_s", out.get("read_jvm_cpu_s").asDouble()).put("gateway_cpu_s", out.get("read_gateway_cpu_s").asDouble())
                        .put("load_end", loadAverage());
            }
            checkTable(table, fold);
        }
        ArrayNode fresh = out.putArray("freshness");
        if (phases.contains("freshness")) {
            for (String c : arg("fresh-checkpoints").split(",")) {
                fresh.add(freshness(table, Long.parseLong(c.trim())));
            }
        }
        out.put("jvm_cpu_s", jvmCpuSeconds() - jvm0);
        out.put("gateway_cpu_s", gatewayCpuSeconds() - gw0);
        out.put("load_end", loadAverage());
        new ObjectMapper().writerWithDefaultPrettyPrinter().writeValue(new File(arg("out")), out);
        log("done: %s", out);
    }

    /**
     * Runs the ingest (and the read, when measured) of a smaller workload ({@code --warmup-keys},
     * 0: none) on its own table first and discards its figures (kept under {@code warmup}): the
     * measured jobs then run on a JVM whose JIT compiled the connector's, the planner's and the
     * runtime's hot code already, as a long-running job's would, for both systems alike.
     */
    private void warmUp(String table, boolean read) throws Exception {
        long keys = Long.parseLong(args.getOrDefault("warmup-keys", "0"));
        if (keys <= 0) {
            return;
        }
        Workload measured = workload;
        workload = new Workload(keys);
        try {
            ingest(table);
            ObjectNode w = out.putObject("warmup");
            w.put("keys", keys);
            w.put("ingest_rows_per_s", out.get("ingest_rows_per_s").asDouble());
            w.put("ingest_jvm_cpu_s", out.get("ingest_jvm_cpu_s").asDouble());
            if (read) {
                read(table, readShape());
                w.put("read_rows_per_s", out.get("read_rows_per_s").asDouble());
                w.put("read_jvm_cpu_s", out.get("read_jvm_cpu_s").asDouble());
            }
            log("warm-up (%d keys, discarded): %s", keys, w);
        } finally {
            workload = measured;
        }
    }

    // ---------------------------------------------------------------------------------------
    // tables

    /** A job's environments: each job runs in its own MiniCluster (Flink's local executor). */
    private static final class Env {
        final StreamExecutionEnvironment env;
        final StreamTableEnvironment t;

        Env(StreamExecutionEnvironment env, StreamTableEnvironment t) {
            this.env = env;
            this.t = t;
        }
    }

    private Env tableEnv(long checkpointMs) {
        // A failing job fails the run (no restarts that would hide it or read twice).
        org.apache.flink.configuration.Configuration conf = new org.apache.flink.configuration.Configuration();
        conf.set(org.apache.flink.configuration.RestartStrategyOptions.RESTART_STRATEGY, "none");
        StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment(conf);
        env.setParallelism(PARALLELISM);
        env.enableCheckpointing(checkpointMs);
        StreamTableEnvironment t = StreamTableEnvironment.create(env);
        if (!setats) {
            t.executeSql(paimonCatalogDdl());
        }
        return new Env(env, t);
    }

    private String paimonCatalogDdl() {
        return "CREATE CATALOG pc WITH ('type' = 'paimon', 'warehouse' = 'file://" + arg("warehouse") + "')";
    }

    /** Extra options of the Setats sink in every job ({@code --sink-options}, SQL: {@code , 'k' = 'v'}). */
    private String sinkOptions() {
        return args.getOrDefault("sink-options", "");
    }

    private String setatsWith(String connector, String table, String extra) {
        return String.format(
                "WITH ('connector' = '%s', 'manager-url' = '%s', 'warehouse' = '%s', 'catalog-type' = 'hadoop',"
                        + " 'catalog-name' = 'setats', 'catalog-database' = 'bench', 'catalog-table' = '%s'%s)",
                connector, arg("manager-url"), arg("warehouse"), table, extra);
    }

    /** Registers the sink table and returns its SQL name. */
    private String sinkTable(StreamTableEnvironment t, String table) {
        if (setats) {
            t.executeSql("CREATE TEMPORARY TABLE w (" + Workload.COLUMNS_DDL + ") PARTITIONED BY (dt) "
                    + setatsWith("setats", table, ", 'bucket' = '" + BUCKETS + "', 'bucket-key' = 'id',"
                            + " 'merge-engine' = 'DEDUPLICATE', 'sink.parallelism' = '" + PARALLELISM + "'" + sinkOptions()));
            return "w";
        }
        t.executeSql("CREATE DATABASE IF NOT EXISTS pc.bench");
        t.executeSql("CREATE TABLE IF NOT EXISTS pc.bench." + table + " (" + Workload.COLUMNS_DDL + ") PARTITIONED BY (dt)"
                + " WITH ('bucket' = '" + BUCKETS + "', 'bucket-key' = 'id', 'changelog-producer' = 'lookup',"
                + " 'sink.parallelism' = '" + PARALLELISM + "')");
        return "pc.bench." + table;
    }

    /** Registers a CDC source of the table at {@code start} (earliest, latest, initial) and returns its SQL. */
    private String cdcQuery(StreamTableEnvironment t, String table, String start) {
        String cols = "SELECT id, dt, name, address FROM ";
        if (setats) {
            String name = "r_" + start;
            t.executeSql("CREATE TEMPORARY TABLE " + name + " (" + Workload.COLUMNS_DDL + ") "
                    + setatsWith("setats-cdc", table, ", 'startup.mode' = '" + start + "'"));
            return cols + name;
        }
        String hint;
        switch (start) {
            case "earliest":
                // The changelog of every snapshot from the first one (not a full snapshot first).
                hint = "'scan.mode' = 'from-snapshot', 'scan.snapshot-id' = '1'";
                break;
            case "latest":
                hint = "'scan.mode' = 'latest'";
                break;
            default:
                throw new IllegalArgumentException(start);
        }
        // The source at the job's parallelism, as Setats' (Paimon would infer one from the buckets),
        // so the collector chains to it in both systems.
        return cols + "pc.bench." + table + " /*+ OPTIONS(" + hint + ", 'scan.parallelism' = '" + PARALLELISM + "') */";
    }

    private static TypeInformation<Row> rowType() {
        return Types.ROW_NAMED(Workload.COLUMNS, Types.STRING, Types.STRING, Types.STRING, Types.STRING);
    }

    // ---------------------------------------------------------------------------------------
    // (1) ingest

    private void ingest(String table) throws Exception {
        Env e = tableEnv(INGEST_CHECKPOINT_MS);
        StreamTableEnvironment t = e.t;
        String sink = sinkTable(t, table);
        StreamExecutionEnvironment env = e.env;
        if (Boolean.parseBoolean(args.getOrDefault("ingest-object-reuse", "true"))) {
            // As the reader jobs: no copy of each row between the chained operators of the
            // source's task (the sinks copy what they keep: Setats into its Arrow batch).
            env.getConfig().enableObjectReuse();
        }
        Workload w = workload;
        // The rows are made as the planner's own RowData (no Row and no Row -> RowData conversion
        // per row), for both systems: the harness's source is not what is measured. One split per
        // workload stream at the job's parallelism, so the source does not cap either system;
        // every key's rows come from one split, in order.
        IngestSource src = new IngestSource(w, PARALLELISM);
        FirstRowClock.reset();
        t.createTemporaryView("src", env.fromSource(src, org.apache.flink.api.common.eventtime.WatermarkStrategy.noWatermarks(), "ingest rows")
                .setParallelism(PARALLELISM)
                .map(new FirstRowClock(w, src)).returns(InternalTypeInfo.of(Workload.ROW_TYPE)).setParallelism(PARALLELISM));
        t.createStatementSet().addInsertSql("INSERT INTO " + sink + " SELECT * FROM src").attachAsDataStream();
        Cpu cpu = new Cpu();
        long start = System.nanoTime();
        JobClient job = env.executeAsync("ingest " + arg("system"));
        job.getJobExecutionResult().get();
        long end = System.nanoTime();
        cpu.put("ingest");
        double jobS = (end - FirstRowClock.first) / 1e9;
        // Committed: the system's own record of its last commit (Setats: the newest changelog
        // row's commit time, every batch is committed when acknowledged; Paimon: the newest
        // snapshot's time, it commits at checkpoints), from the first row made.
        long lastCommitMs = lastCommitMs(table);
        double s = (lastCommitMs - FirstRowClock.firstWallMs) / 1e3;
        if (s <= 0 || s > jobS + 1) {
            throw new IllegalStateException(String.format(
                    "last commit at %d ms is not within the job (first row at %d ms, job %.2f s)", lastCommitMs, FirstRowClock.firstWallMs, jobS));
        }
        out.put("ingest_s", s);
        out.put("ingest_rows_per_s", w.rows() / s);
        out.put("ingest_job_s", jobS);
        out.put("ingest_job_rows_per_s", w.rows() / jobS);
        out.put("ingest_s_from_submit", (end - start) / 1e9);
        log("ingest: %d rows committed %.2f s after the first row = %.0f rows/s; the job ended after %.2f s = %.0f rows/s (%.2f s from submission)",
                w.rows(), s, w.rows() / s, jobS, w.rows() / jobS, (end - start) / 1e9);
    }

    /** The epoch ms of the table's last commit (see {@link #ingest}); checks Setats' row count. */
    private long lastCommitMs(String table) throws IOException {
        if (setats) {
            long[] c = SetatsCommits.lastCommit(arg("manager-url"), arg("warehouse"), "bench", table);
            if (c[1] != workload.setatsChangelogRows()) {
                throw new IllegalStateException(String.format("Setats changelog has %d rows after the ingest, expected %d", c[1], workload.setatsChangelogRows()));
            }
            return c[0];
        }
        // Paimon's snapshot files (<warehouse>/<db>.db/<table>/snapshot/snapshot-N, JSON with the
        // commit's epoch ms as timeMillis).
        java.nio.file.Path dir = Paths.get(arg("warehouse"), "bench.db", table, "snapshot");
        long last = 0;
        int n = 0;
        try (java.util.stream.Stream<java.nio.file.Path> files = Files.list(dir)) {
            for (java.nio.file.Path f : (Iterable<java.nio.file.Path>) files::iterator) {
                if (f.getFileName().toString().startsWith("snapshot-")) {
                    last = Math.max(last, new ObjectMapper().readTree(f.toFile()).get("timeMillis").asLong());
                    n++;
                }
            }
        }
        if (n == 0) {
            throw new IllegalStateException("no Paimon snapshot in " + dir);
        }
        return last;
    }

    /**
     * The workload's row for a number of the {@link IngestSource} as RowData; notes when the first
     * row of any stream is made (nanoTime and epoch ms; the jobs run in this JVM), so that rates
     * do not include the job's start-up.
     */
    static final class FirstRowClock implements org.apache.flink.api.common.functions.MapFunction<Long, RowData> {
        private static final long serialVersionUID = 1L;
        static volatile long first;
        static volatile long firstWallMs;
        private static boolean started;
        private final Workload w;
        private final IngestSource src;

        FirstRowClock(Workload w, IngestSource src) {
            this.w = w;
            this.src = src;
        }

        /** Before a job: the next first row of a stream sets the clock. */
        static synchronized void reset() {
            started = false;
        }

        private static synchronized void start() {
            if (!started) {
                started = true;
                first = System.nanoTime();
                firstWallMs = System.currentTimeMillis();
            }
        }

        @Override
        public RowData map(Long n) {
            if (src.position(n) == 0) {
                start();
            }
            return w.rowData(src.rowIndex(n));
        }
    }

    // ---------------------------------------------------------------------------------------
    // (2) read the changelog from the start

    /**
     * One read of the table's changelog from the start in {@code shape}. A folding shape runs until
     * the fold equals the expected table and returns the fold. {@code count} (the same query,
     * source and chained {@code bench-fold} sink as {@code rowdata}, whose subtasks only count the
     * rows they receive) runs until the row count of the folding read before it in this run
     * ({@code foldedRows}: so the changelog is checked on every run), fails if that count is not
     * reached within the read timeout or is exceeded in the 2 s after, and returns null (the table
     * check uses the folding read's fold). Without the fold in the task threads the figure is the
     * source's, not the harness's (docs/bench-flink.md). Rate = rows / (done - first row), where
     * done is the fold's match, or the driver seeing the count (polled every 1 ms).
     */
    private Map<String, String> read(String table, String shape) throws Exception {
        boolean counting = shape.equals("count");
        if (counting && foldedRows < 0) {
            throw new IllegalArgumentException("--read-shape count must follow a folding shape, which gives the row count to read");
        }
        Env e = tableEnv(INGEST_CHECKPOINT_MS);
        StreamTableEnvironment t = e.t;
        Collector.State st = collect(e, cdcQuery(t, table, "earliest"), "read", shape);
        Cpu cpu = new Cpu();
        long start = System.nanoTime();
        JobClient job = e.env.executeAsync("read " + arg("system"));
        long rows = awaitDone(job, st, start, counting ? foldedRows : -1);
        double s = (st.doneNanos() - st.firstNanos()) / 1e9;
        out.put("read_s_from_submit", (st.doneNanos() - start) / 1e9);
        cpu.put("read");
        // Anything after the fold matched must not change it, nor add to the count.
        Thread.sleep(2000);
        job.cancel().get(60, TimeUnit.SECONDS);
        out.put("read_rows", rows);
        out.put("read_rows_after", st.rows());
        out.put("read_s", s);
        out.put("read_rows_per_s", rows / s);
        if (counting) {
            if (st.rows() != foldedRows) {
                throw new IllegalStateException(String.format("COUNT MISMATCH %s: the counting read received %d rows, the folding read %d",
                        arg("system"), st.rows(), foldedRows));
            }
            log("read (count): %d changelog rows in %.2f s = %.0f rows/s from the first row (the folding read's count)%s",
                    rows, s, rows / s, subtaskTimes(st));
            return null;
        }
        Map<String, String> folded = st.merged();
        if (st.mismatches() != 0 || st.retractOfAbsent() != 0) {
            throw new IllegalStateException(String.format(
                    "FOLD MISMATCH %s: after the changelog matched the expected table, %d keys differ, %d retractions of absent keys (%d rows read)",
                    arg("system"), st.mismatches(), st.retractOfAbsent(), st.rows()));
        }
        if (setats && st.rows() != workload.setatsChangelogRows()) {
            throw new IllegalStateException(String.format("Setats changelog has %d rows, expected %d (+I per key, -U/+U per update)",
                    st.rows(), workload.setatsChangelogRows()));
        }
        foldedRows = st.rows();
        log("read (%s): %d changelog rows in %.2f s = %.0f rows/s from the first row; fold equals the expected table", shape, rows, s, rows / s);
        return folded;
    }

    /** Changelog rows of this run's last folding read (all it received, after its 2 s settle); -1 before one. */
    private long foldedRows = -1;

    /**
     * A counting read's rows and first/last row times (ms after the read's first row) per
     * collector subtask, into the JSON ({@code read_subtasks}) and as the log line's tail.
     */
    private String subtaskTimes(Collector.State st) {
        StringBuilder line = new StringBuilder();
        ArrayNode per = out.putArray("read_subtasks");
        for (int i = 0; i < st.subtaskRows.length(); i++) {
            double first = (st.subtaskFirstNanos.get(i) - st.firstNanos()) / 1e6;
            double last = (st.subtaskLastNanos.get(i) - st.firstNanos()) / 1e6;
            long n = st.subtaskRows.get(i);
            per.addObject().put("first_ms", first).put("last_ms", last).put("rows", n);
            line.append(String.format("; subtask %d: %d rows, first +%.0f ms, last +%.0f ms", i, n, first, last));
        }
        return line.toString();
    }

    /**
     * The reader jobs' shapes ({@code --read-shape}, a comma-separated list: the read phase runs
     * once per entry, the last entry's rate is the figure, the table check and freshness use the
     * last folding entry; default {@code rowdata,count}): {@code count} counts the rows only and
     * must follow a folding entry ({@link #read}); {@code rowdata} is
     * the query inserted into a {@code 'bench-fold'} table sink ({@link FoldSinkFactory}) that
     * folds the planner's {@code RowData} itself ({@link DenseFold}: no conversion to {@code Row},
     * no strings per row), chained to the source at its parallelism with object reuse (the
     * freshness reader keeps the {@code Row} collector of {@code chained-reuse});
     * {@code chained-reuse} is {@code chained} with object reuse on in the reader job, so Flink does not copy each row
     * between the chained operators (the source, the table-to-DataStream conversion, the
     * collector; both systems' sources hand each row over once); {@code chained} runs one
     * collector per source subtask, chained to it (forward edge, each subtask folds the keys of its
     * own splits: every key lives in one bucket, every bucket in one split, every split in one
     * subtask, for both systems), so the figure measures the source; {@code single} is the shape of
     * earlier runs, one collector subtask behind a network edge from both source subtasks.
     */
    private static final java.util.List<String> SHAPES = Arrays.asList("single", "chained", "chained-reuse", "rowdata", "count");

    /** Collector subtasks of a reader job of {@code shape}; object reuse on for {@code chained-reuse}, {@code rowdata} and {@code count}. */
    private static int collectorSubtasks(Env e, String shape) {
        if (shape.equals("chained-reuse") || shape.equals("rowdata") || shape.equals("count")) {
            e.env.getConfig().enableObjectReuse();
        }
        return shape.equals("single") ? 1 : PARALLELISM;
    }

    private String[] readShapes() {
        String[] shapes = args.getOrDefault("read-shape", "rowdata,count").split(",");
        for (int i = 0; i < shapes.length; i++) {
            shapes[i] = shapes[i].trim();
            if (!SHAPES.contains(shapes[i])) {
                throw new IllegalArgumentException("--read-shape must list " + SHAPES + ", not " + shapes[i]);
            }
        }
        return shapes;
    }

    /**
     * The shape of the table check and the freshness reader: the last folding entry of {@link
     * #readShapes()} ({@code count} folds nothing), {@code rowdata} if there is none.
     */
    private String readShape() {
        String[] shapes = readShapes();
        for (int i = shapes.length - 1; i >= 0; i--) {
            if (!shapes[i].equals("count")) {
                return shapes[i];
            }
        }
        return "rowdata";
    }

    /**
     * Adds the folding collector behind the changelog of {@code query} in {@code shape} and
     * records the job's shape (vertices after chaining) under {@code phase}.
     */
    private Collector.State collect(Env e, String query, String phase, String shape) {
        int subtasks = collectorSubtasks(e, shape);
        Collector.State st;
        if (shape.equals("rowdata") || shape.equals("count")) {
            st = shape.equals("count") ? Collector.count(subtasks) : Collector.denseFold(workload, subtasks);
            String sink = (shape.equals("count") ? "count_" : "fold_") + phase;
            e.t.executeSql("CREATE TEMPORARY TABLE " + sink + " (id STRING, dt STRING, name STRING, address STRING) WITH ("
                    + "'connector' = '" + FoldSinkFactory.IDENTIFIER + "', 'sink.parallelism' = '" + subtasks + "')");
            e.t.createStatementSet().addInsertSql("INSERT INTO " + sink + " " + query).attachAsDataStream();
        } else {
            st = Collector.fold(workload::expected, workload.keys(), subtasks);
            e.t.toChangelogStream(e.t.sqlQuery(query)).addSink(new Collector()).setParallelism(subtasks).name("fold");
        }
        int vertices = e.env.getStreamGraph(false).getJobGraph().getNumberOfVertices();
        out.put(phase + "_shape", shape);
        out.put(phase + "_job_vertices", vertices);
        log("%s: collector %s at parallelism %d, %d job vertices after chaining", phase, shape, subtasks, vertices);
        return st;
    }

    /**
     * Waits until the reader job is done and returns the rows it counts: the fold's match (rows
     * the folds applied), or, with {@code countTo >= 0}, {@code countTo} rows received (noted as
     * done by this thread, polling every 1 ms). Fails when the job ends first or the read timeout
     * passes.
     */
    private long awaitDone(JobClient job, Collector.State st, long start, long countTo) throws Exception {
        boolean counting = countTo >= 0;
        long lastRows = -1;
        long lastLog = System.nanoTime();
        boolean profiling = false;
        while (true) {
            if (counting && !profiling && st.firstNanos() != 0 && ReadProfile.enabled()) {
                ReadProfile.start();
                profiling = true;
            }
            if (counting && st.rows() >= countTo) {
                st.countDone(System.nanoTime());
                if (profiling) {
                    ReadProfile.stop();
                }
                return countTo;
            }
            if (!counting && st.doneNanos() != 0) {
                return st.applied();
            }
            JobStatus status = job.getJobStatus().get();
            if (status.isGloballyTerminalState()) {
                job.getJobExecutionResult().get();
                throw new IllegalStateException(counting
                        ? "counting reader job ended (" + status + ") after " + st.rows() + " of " + countTo + " rows"
                        : "reader job ended (" + status + ") before the fold matched: " + st.mismatches() + " keys differ");
            }
            if (System.nanoTime() - start > TimeUnit.MILLISECONDS.toNanos(READ_TIMEOUT_MS)) {
                throw new IllegalStateException(counting
                        ? String.format("COUNT MISMATCH %s: after %d s the counting read has %d of the folding read's %d rows",
                                arg("system"), READ_TIMEOUT_MS / 1000, st.rows(), countTo)
                        : String.format("FOLD MISMATCH %s: after %d s the fold of %d changelog rows still differs in %d keys",
                                arg("system"), READ_TIMEOUT_MS / 1000, st.rows(), st.mismatches()));
            }
            if (!counting && System.nanoTime() - lastLog > 10e9) {
                lastLog = System.nanoTime();
                if (st.rows() == lastRows) {
                    log("read: %d rows, %d keys differ (no progress for 10 s)", st.rows(), st.mismatches());
                }
                lastRows = st.rows();
            }
            Thread.sleep(counting ? 1 : 10);
        }
    }

    // ---------------------------------------------------------------------------------------
    // (4) the table itself

    private void checkTable(String table, Map<String, String> fold) throws Exception {
        Map<String, String> tableRows = new HashMap<>();
        if (setats) {
            // The merged rows at one consistent view (SPEC section 9), as +I, then the (empty) rest.
            Env e = tableEnv(INGEST_CHECKPOINT_MS);
            StreamTableEnvironment t = e.t;
            Collector.State st = collect(e, cdcQuery(t, table, "initial"), "table", readShape());
            JobClient job = e.env.executeAsync("table " + arg("system"));
            try {
                awaitDone(job, st, System.nanoTime(), -1);
                Thread.sleep(2000);
            } finally {
                job.cancel().get(60, TimeUnit.SECONDS);
            }
            tableRows.putAll(st.merged());
            if (st.rows() != workload.keys()) {
                throw new IllegalStateException("TABLE MISMATCH: the Setats snapshot has " + st.rows() + " rows, the table " + workload.keys() + " keys");
            }
        } else {
            TableEnvironment b = TableEnvironment.create(EnvironmentSettings.inBatchMode());
            b.executeSql(paimonCatalogDdl());
            try (CloseableIterator<Row> it = b.executeSql("SELECT id, dt, name, address FROM pc.bench." + table).collect()) {
                while (it.hasNext()) {
                    Row r = it.next();
                    if (r.getKind() != RowKind.INSERT) {
                        throw new IllegalStateException("batch scan returned " + r);
                    }
                    String prev = tableRows.put(Workload.key(r.getField(0), r.getField(1)), Workload.value(r.getField(2), r.getField(3)));
                    if (prev != null) {
                        throw new IllegalStateException("TABLE MISMATCH: batch scan returned key " + r.getField(0) + "|" + r.getField(1) + " twice");
                    }
                }
            }
        }
        String d = Fold.diff("changelog fold", fold, "table", tableRows);
        if (d != null) {
            throw new IllegalStateException("FOLD MISMATCH " + arg("system") + ": " + d);
        }
        out.put("fold_equals_table", true);
        log("table: %d rows, equal to the fold of the changelog", tableRows.size());
    }

    // ---------------------------------------------------------------------------------------
    // (3) freshness

    private ObjectNode freshness(String table, long checkpointMs) throws Exception {
        int rate = Integer.parseInt(arg("fresh-rate"));
        long warmupRows = rate * Long.parseLong(arg("fresh-warmup-seconds"));
        long measured = rate * Long.parseLong(arg("fresh-seconds"));
        String prefix = "f" + checkpointMs + "-";
        Collector.State st = Collector.freshness(prefix, warmupRows);

        Env re = tableEnv(INGEST_CHECKPOINT_MS);
        String query;
        if (setats) {
            // The gateway's commit time of each row splits the latency into write -> commit and
            // commit -> arrival (both clocks are this machine's).
            re.t.executeSql("CREATE TEMPORARY TABLE r_fresh (" + Workload.COLUMNS_DDL
                    + ", commit_ts TIMESTAMP_LTZ(3) METADATA FROM 'timestamp' VIRTUAL) "
                    + setatsWith("setats-cdc", table, ", 'startup.mode' = 'latest'"));
            query = "SELECT id, dt, name, address, commit_ts FROM r_fresh";
        } else {
            query = cdcQuery(re.t, table, "latest");
        }
        // Chained to the source like the read phase's fold (no network edge and its buffer
        // timeout between the source and the arrival clock), unless --read-shape single.
        re.t.toChangelogStream(re.t.sqlQuery(query)).addSink(new Collector())
                .setParallelism(collectorSubtasks(re, readShape())).name("freshness");
        JobClient reader = re.env.executeAsync("fresh reader " + arg("system"));
        awaitRunning(reader);
        Thread.sleep(3000); // splits assigned and following

        Env we = tableEnv(checkpointMs);
        StreamTableEnvironment wt = we.t;
        String sink = sinkTable(wt, table);
        wt.createTemporaryView("fresh_src", we.env.addSource(new SteadyRows(prefix, rate, warmupRows + measured))
                .returns(rowType()).setParallelism(1));
        wt.createStatementSet().addInsertSql("INSERT INTO " + sink + " SELECT * FROM fresh_src").attachAsDataStream();
        Cpu cpu = new Cpu();
        JobClient writer = we.env.executeAsync("fresh writer " + arg("system"));
        writer.getJobExecutionResult().get();
        long deadline = System.currentTimeMillis() + 30_000 + 2 * checkpointMs;
        while (System.currentTimeMillis() < deadline) {
            synchronized (st) {
                if (st.latency.count() >= measured) {
                    break;
                }
            }
            Thread.sleep(50);
        }
        reader.cancel().get(60, TimeUnit.SECONDS);
        ObjectNode f = new ObjectMapper().createObjectNode();
        f.put("checkpoint_ms", checkpointMs);
        cpu.putInto(f, "fresh");
        synchronized (st) {
            f.put("rate", rate);
            f.put("expected", measured);
            f.put("samples", st.latency.count());
            f.put("p50_ms", st.latency.percentile(50));
            f.put("p99_ms", st.latency.percentile(99));
            f.put("max_ms", st.latency.percentile(100));
            if (st.toCommit.count() > 0) {
                f.put("write_to_commit_p50_ms", st.toCommit.percentile(50));
                f.put("write_to_commit_p99_ms", st.toCommit.percentile(99));
                f.put("commit_to_arrival_p50_ms", st.fromCommit.percentile(50));
                f.put("commit_to_arrival_p99_ms", st.fromCommit.percentile(99));
            }
        }
        log("freshness (checkpoint %d ms): %s", checkpointMs, f);
        f.put("complete", f.get("samples").asLong() >= measured);
        if (f.get("samples").asLong() < measured) {
            // Reported (BenchFlink prints it), not fatal: the percentiles are of the rows that came.
            log("WARNING freshness: only %s of %d rows arrived within %d s after the writer ended",
                    f.get("samples"), measured, (30_000 + 2 * checkpointMs) / 1000);
        }
        return f;
    }

    private static void awaitRunning(JobClient job) throws Exception {
        while (job.getJobStatus().get() != JobStatus.RUNNING) {
            if (job.getJobStatus().get().isGloballyTerminalState()) {
                job.getJobExecutionResult().get();
                throw new IllegalStateException("reader job ended before it ran");
            }
            Thread.sleep(50);
        }
    }

    /**
     * {@code n} new keys {@code prefix + i} at {@code rate} rows/s from one subtask; {@code name}
     * is the emission time (epoch ms).
     */
    static final class SteadyRows implements SourceFunction<Row> {
        private static final long serialVersionUID = 1L;
        private final String prefix;
        private final int rate;
        private final long n;
        private volatile boolean running = true;

        SteadyRows(String prefix, int rate, long n) {
            this.prefix = prefix;
            this.rate = rate;
            this.n = n;
        }

        @Override
        public void run(SourceContext<Row> ctx) throws Exception {
            long start = System.nanoTime();
            long i = 0;
            while (i < n && running) {
                long due = Math.min(n, (System.nanoTime() - start) * rate / 1_000_000_000L + 1);
                synchronized (ctx.getCheckpointLock()) {
                    for (; i < due; i++) {
                        ctx.collect(Row.ofKind(RowKind.INSERT, prefix + i, Workload.dt(i), Long.toString(System.currentTimeMillis()), "fresh"));
                    }
                }
                Thread.sleep(1);
            }
        }

        @Override
        public void cancel() {
            running = false;
        }
    }

    // ---------------------------------------------------------------------------------------
    // CPU and load

    /** CPU seconds of this JVM and of the gateway since construction. */
    private final class Cpu {
        final double jvm = jvmCpuSeconds();
        final double gw = gatewayCpuSeconds();

        void put(String phase) {
            putInto(out, phase);
        }

        void putInto(ObjectNode o, String phase) {
            o.put(phase + "_jvm_cpu_s", jvmCpuSeconds() - jvm);
            o.put(phase + "_gateway_cpu_s", gatewayCpuSeconds() - gw);
        }
    }

    static double jvmCpuSeconds() {
        return ((com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean()).getProcessCpuTime() / 1e9;
    }

    /** utime + stime of the gateway process (/proc/PID/stat, 100 ticks/s); 0 without a gateway. */
    private double gatewayCpuSeconds() {
        return gatewayPid < 0 ? 0 : BenchFlink.procCpuSeconds(gatewayPid);
    }

    static String loadAverage() {
        try {
            String[] f = new String(Files.readAllBytes(Paths.get("/proc/loadavg"))).split(" ");
            return f[0] + " " + f[1] + " " + f[2];
        } catch (IOException e) {
            return "?";
        }
    }

    static void log(String fmt, Object... a) {
        System.err.printf("%tT bench %s%n", System.currentTimeMillis(), String.format(fmt, a));
    }
}
