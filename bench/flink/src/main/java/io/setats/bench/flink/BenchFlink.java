package io.setats.bench.flink;

import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.databind.JsonNode;
import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.databind.ObjectMapper;
import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.databind.node.ArrayNode;
import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.databind.node.ObjectNode;

import java.io.File;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.function.ToDoubleFunction;
import java.util.stream.Collectors;

/**
 * {@code make bench-flink}: Setats against Apache Paimon ({@code changelog-producer = lookup})
 * through Flink 1.20, one JVM per system and run ({@link SystemRun}), alternating A/B, on the same
 * deterministic data ({@link Workload}); plus the gateway's own DoPut / DoGet rates from {@code
 * setats-loadgen} in the same run. Prints {@code figure <name> setats=X paimon=Y ratio=R} lines
 * (medians over the runs), the load average and CPU seconds per process, and writes the JSON file
 * it names. See docs/bench-flink.md.
 *
 * <p>Environment: {@code BENCH_ROWS} (distinct keys, default 1000000; 20% more rows update keys),
 * {@code BENCH_RUNS} (3), {@code BENCH_FRESH_SECONDS} (60), {@code BENCH_FRESH_RATE} (10000 rows/s),
 * {@code BENCH_DIR} (work dir, default a new one under java.io.tmpdir), {@code BENCH_OUT} (JSON
 * path), {@code BENCH_READ_SHAPE} ({@code rowdata}, {@code chained-reuse}, {@code chained}, {@code
 * single} or {@code count}, or a list of them, default {@code rowdata,count}: the reader jobs' collector, see {@link SystemRun}), {@code BENCH_JVM_OPTS} (extra options of the system JVMs,
 * space-separated, e.g. a JFR recording), {@code BENCH_WARMUP_ROWS} (keys of the discarded warm-up ingest and
 * read each system JVM runs first, default min(200000, BENCH_ROWS / 5); 0: none), {@code
 * BENCH_INGEST_OBJECT_REUSE} (true: the ingest job runs with object reuse, as the reader jobs). System properties (set by the Makefile): {@code bench.gateway} (bin/setats), {@code
 * bench.loadgen} (bin/setats-loadgen), {@code bench.connector} (the shaded jar), {@code
 * bench.classpath} (file with the Maven class path), {@code bench.classes} (this module's classes).
 */
public final class BenchFlink {
    static final List<String> JVM_OPENS = Arrays.asList(
            "--add-opens=java.base/java.nio=ALL-UNNAMED", "--add-opens=java.base/java.lang=ALL-UNNAMED",
            "--add-opens=java.base/java.util=ALL-UNNAMED", "--add-opens=java.base/java.lang.reflect=ALL-UNNAMED",
            "--add-opens=java.base/java.io=ALL-UNNAMED", "--add-opens=java.base/sun.nio.ch=ALL-UNNAMED",
            "--add-opens=java.base/java.net=ALL-UNNAMED", "--add-opens=java.base/java.util.concurrent=ALL-UNNAMED",
            "--add-opens=java.base/java.util.concurrent.atomic=ALL-UNNAMED", "--add-opens=java.base/java.text=ALL-UNNAMED",
            "--add-opens=java.base/java.time=ALL-UNNAMED", "--add-opens=java.sql/java.sql=ALL-UNNAMED");

    private final long keys = envLong("BENCH_ROWS", 1_000_000);
    private final int runs = (int) envLong("BENCH_RUNS", 3);
    private final long freshSeconds = envLong("BENCH_FRESH_SECONDS", 60);
    private final long freshRate = envLong("BENCH_FRESH_RATE", 10_000);
    private final String readShape = envString("BENCH_READ_SHAPE", "rowdata,count");
    private final String jvmOpts = envString("BENCH_JVM_OPTS", "");
    private final String ingestObjectReuse = envString("BENCH_INGEST_OBJECT_REUSE", "true");
    private final long warmupKeys = envLong("BENCH_WARMUP_ROWS", Math.min(200_000, keys / 5));
    private final Path dir;
    private final ObjectMapper json = new ObjectMapper();

    private BenchFlink() throws IOException {
        String d = System.getenv("BENCH_DIR");
        dir = d == null || d.isEmpty() ? Files.createTempDirectory("bench-flink-") : Files.createDirectories(Paths.get(d));
    }

    public static void main(String[] args) throws Exception {
        new BenchFlink().run();
    }

    private void run() throws Exception {
        ObjectNode report = json.createObjectNode();
        report.put("keys", keys);
        report.put("rows", new Workload(keys).rows());
        report.put("runs", runs);
        report.put("fresh_seconds", freshSeconds);
        report.put("fresh_rate", freshRate);
        report.put("read_shape", readShape);
        report.put("load_start", SystemRun.loadAverage());
        ArrayNode setats = report.putArray("setats");
        ArrayNode paimon = report.putArray("paimon");
        ArrayNode loadgen = report.putArray("loadgen");
        report.put("warmup_keys", warmupKeys);
        log("work dir %s; %d keys + %d updates, %d runs, freshness %d rows/s for %d s, warm-up %d keys", dir, keys, keys / 5, runs, freshRate, freshSeconds, warmupKeys);
        for (int r = 1; r <= runs; r++) {
            // A/B, then B/A: neither system always runs first.
            for (String system : r % 2 == 1 ? new String[] {"setats", "paimon"} : new String[] {"paimon", "setats"}) {
                JsonNode res = system.equals("setats") ? runSetats(r) : runPaimon(r);
                (system.equals("setats") ? setats : paimon).add(res);
            }
            loadgen.add(runLoadgen(r));
        }
        report.put("load_end", SystemRun.loadAverage());
        print(report);
        String outPath = System.getenv("BENCH_OUT");
        Path out = outPath == null || outPath.isEmpty() ? dir.resolve("bench-flink.json") : Paths.get(outPath);
        json.writerWithDefaultPrettyPrinter().writeValue(out.toFile(), report);
        System.out.println("json " + out.toAbsolutePath());
    }

    // ---------------------------------------------------------------------------------------
    // the figures

    /** Prints the figures of a report (medians of its runs) and adds them to it. */
    static void print(ObjectNode report) {
        JsonNode s = report.get("setats");
        JsonNode p = report.get("paimon");
        JsonNode g = report.get("loadgen");
        double sIngest = median(s, n -> n.get("ingest_rows_per_s").asDouble());
        double pIngest = median(p, n -> n.get("ingest_rows_per_s").asDouble());
        double sRead = median(s, n -> n.get("read_rows_per_s").asDouble());
        double pRead = median(p, n -> n.get("read_rows_per_s").asDouble());
        ObjectNode figures = report.putObject("figures");
        figure(figures, "ingest", sIngest, pIngest, "rows/s from the first row until the last commit, higher is better");
        figure(figures, "ingest-until-job-end", median(s, n -> n.path("ingest_job_rows_per_s").asDouble(Double.NaN)),
                median(p, n -> n.path("ingest_job_rows_per_s").asDouble(Double.NaN)),
                "rows/s until the ingest job ended, incl. the wait for Flink's final checkpoint, higher is better");
        figure(figures, "read", sRead, pRead, "changelog rows/s from the start, higher is better");
        figure(figures, "freshness-p50", median(s, n -> fresh(n, 0, "p50_ms")), median(p, n -> fresh(n, 0, "p50_ms")),
                "ms, lower is better; Paimon checkpoint " + p.get(0).get("freshness").get(0).get("checkpoint_ms") + " ms");
        figure(figures, "freshness-p99", median(s, n -> fresh(n, 0, "p99_ms")), median(p, n -> fresh(n, 0, "p99_ms")),
                "ms, lower is better; Paimon checkpoint " + p.get(0).get("freshness").get(0).get("checkpoint_ms") + " ms");
        if (p.get(0).get("freshness").size() > 1) {
            String c = p.get(0).get("freshness").get(1).get("checkpoint_ms").asText();
            figure(figures, "freshness-p50-paimon-" + c + "ms", median(s, n -> fresh(n, 0, "p50_ms")), median(p, n -> fresh(n, 1, "p50_ms")),
                    "ms; Paimon checkpoint " + c + " ms");
            figure(figures, "freshness-p99-paimon-" + c + "ms", median(s, n -> fresh(n, 0, "p99_ms")), median(p, n -> fresh(n, 1, "p99_ms")),
                    "ms; Paimon checkpoint " + c + " ms");
        }
        figure(figures, "ingest-cpu-s",
                median(s, n -> n.get("ingest_jvm_cpu_s").asDouble() + n.get("ingest_gateway_cpu_s").asDouble()),
                median(p, n -> n.get("ingest_jvm_cpu_s").asDouble()), "CPU seconds of the ingest, Setats = JVM + gateway, lower is better");
        figure(figures, "read-cpu-s",
                median(s, n -> n.get("read_jvm_cpu_s").asDouble() + n.get("read_gateway_cpu_s").asDouble()),
                median(p, n -> n.get("read_jvm_cpu_s").asDouble()), "CPU seconds of the read, Setats = JVM + gateway, lower is better");
        System.out.printf("cpu ingest setats jvm=%.1f gateway=%.1f paimon jvm=%.1f; read setats jvm=%.1f gateway=%.1f paimon jvm=%.1f (CPU-s, medians)%n",
                median(s, n -> n.get("ingest_jvm_cpu_s").asDouble()), median(s, n -> n.get("ingest_gateway_cpu_s").asDouble()),
                median(p, n -> n.get("ingest_jvm_cpu_s").asDouble()), median(s, n -> n.get("read_jvm_cpu_s").asDouble()),
                median(s, n -> n.get("read_gateway_cpu_s").asDouble()), median(p, n -> n.get("read_jvm_cpu_s").asDouble()));
        System.out.printf("cpu whole process setats jvm=%.1f gateway=%.1f paimon jvm=%.1f (CPU-s per run, medians; includes JVM start and freshness)%n",
                median(s, n -> n.get("jvm_cpu_s").asDouble()), median(s, n -> n.get("gateway_cpu_s").asDouble()),
                median(p, n -> n.get("jvm_cpu_s").asDouble()));
        double doPut = median(g, n -> n.get("IngestRowsPerSec").asDouble());
        double doGet = median(g, n -> n.get("ReadRowsPerSec").asDouble());
        ObjectNode gw = report.putObject("gateway");
        gw.put("doput_rows_per_s", doPut);
        gw.put("doget_rows_per_s", doGet);
        gw.put("ingest_over_doput", sIngest / doPut);
        gw.put("read_over_doget", sRead / doGet);
        System.out.printf("gateway setats-loadgen doput=%.0f doget=%.0f rows/s; flink ingest/doput=%.2f (target >= 0.85) read/doget=%.2f (target >= 0.6)%n",
                doPut, doGet, sIngest / doPut, sRead / doGet);
        // An A/B of the read phase's shapes in each JVM (BENCH_READ_SHAPE=single,chained).
        for (String sys : new String[] {"setats", "paimon"}) {
            for (JsonNode n : report.get(sys)) {
                if (n.path("reads").size() > 1) {
                    StringBuilder sb = new StringBuilder();
                    for (JsonNode x : n.get("reads")) {
                        sb.append(String.format(" %s=%.0f rows/s (cpu jvm %.1f s, load %s);", x.get("shape").asText(),
                                x.get("rows_per_s").asDouble(), x.get("jvm_cpu_s").asDouble(), x.get("load_end").asText()));
                    }
                    System.out.printf("read shapes %s#%d%s%n", sys, n.get("run").asInt(), sb);
                }
            }
        }
        // The reader's hop without Flink: a raw follow DoGet's receive time minus the commit time.
        double gwCommitP50 = median(g, n -> n.path("CommitP50Ms").asDouble(Double.NaN));
        double gwCommitP99 = median(g, n -> n.path("CommitP99Ms").asDouble(Double.NaN));
        double flinkCommitP50 = median(s, n -> fresh(n, 0, "commit_to_arrival_p50_ms"));
        double flinkCommitP99 = median(s, n -> fresh(n, 0, "commit_to_arrival_p99_ms"));
        gw.put("commit_to_doget_p50_ms", gwCommitP50);
        gw.put("commit_to_doget_p99_ms", gwCommitP99);
        System.out.printf("freshness hops setats write->commit p50=%.0f p99=%.0f ms; commit->arrival p50=%.0f p99=%.0f ms"
                        + " (gateway alone, commit->raw follow DoGet: p50=%.1f p99=%.1f ms)%n",
                median(s, n -> fresh(n, 0, "write_to_commit_p50_ms")), median(s, n -> fresh(n, 0, "write_to_commit_p99_ms")),
                flinkCommitP50, flinkCommitP99, gwCommitP50, gwCommitP99);
        StringBuilder loads = new StringBuilder();
        for (String sys : new String[] {"setats", "paimon"}) {
            for (JsonNode n : report.get(sys)) {
                loads.append(String.format(" %s#%d %s -> %s;", sys, n.get("run").asInt(), n.get("load_start").asText(), n.get("load_end").asText()));
            }
        }
        System.out.printf("load average start %s, end %s; per run:%s%n", report.get("load_start").asText(), report.get("load_end").asText(), loads);
        for (String sys : new String[] {"setats", "paimon"}) {
            for (JsonNode n : report.get(sys)) {
                for (JsonNode f : n.get("freshness")) {
                    if (!f.path("complete").asBoolean(true)) {
                        System.out.printf("WARNING %s run %d freshness checkpoint %s ms: %s of %s rows arrived%n", sys,
                                n.get("run").asInt(), f.get("checkpoint_ms").asText(), f.get("samples").asText(), f.get("expected").asText());
                    }
                }
            }
        }
    }

    private static double fresh(JsonNode n, int i, String field) {
        return n.get("freshness").get(i).path(field).asDouble(Double.NaN); // NaN: not measured (Paimon's commit split)
    }

    private static void figure(ObjectNode figures, String name, double setats, double paimon, String unit) {
        double ratio = setats / paimon;
        System.out.printf("figure %s setats=%.1f paimon=%.1f ratio=%.3f (%s)%n", name, setats, paimon, ratio, unit);
        ObjectNode f = figures.putObject(name);
        f.put("setats", setats);
        f.put("paimon", paimon);
        f.put("ratio", ratio);
        f.put("unit", unit);
    }

    private static double median(JsonNode runs, ToDoubleFunction<JsonNode> f) {
        double[] v = new double[runs.size()];
        for (int i = 0; i < v.length; i++) {
            v[i] = f.applyAsDouble(runs.get(i));
        }
        return Percentiles.median(v);
    }

    // ---------------------------------------------------------------------------------------
    // processes

    private JsonNode runSetats(int run) throws Exception {
        Path d = Files.createDirectories(dir.resolve("setats-" + run));
        Path warehouse = Files.createDirectories(d.resolve("warehouse"));
        Path ready = d.resolve("ready.json");
        List<String> cmd = new ArrayList<>(Arrays.asList(prop("bench.gateway"), "serve",
                "--warehouse", warehouse.toString(), "--flight-addr", "127.0.0.1:0", "--admin-addr", "127.0.0.1:0",
                "--nats-listen", "127.0.0.1:-1", "--ready-file", ready.toString()));
        Process gw = new ProcessBuilder(cmd).redirectErrorStream(true).redirectOutput(d.resolve("gateway.log").toFile()).start();
        try {
            JsonNode addr = awaitReady(gw, ready, d.resolve("gateway.log"));
            String url = "grpc://" + addr.get("flight_addr").asText();
            List<String> cp = classpath(true);
            return child("setats", run, cp, d, "--manager-url", url, "--warehouse", warehouse.toString(),
                    "--gateway-pid", Long.toString(gw.pid()), "--fresh-checkpoints", "10000");
        } finally {
            gw.destroy();
            if (!gw.waitFor(30, TimeUnit.SECONDS)) {
                gw.destroyForcibly();
            }
            deleteTree(warehouse);
        }
    }

    private JsonNode runPaimon(int run) throws Exception {
        Path d = Files.createDirectories(dir.resolve("paimon-" + run));
        Path warehouse = Files.createDirectories(d.resolve("warehouse"));
        try {
            return child("paimon", run, classpath(false), d, "--warehouse", warehouse.toString(), "--fresh-checkpoints", "1000,10000");
        } finally {
            deleteTree(warehouse);
        }
    }

    private JsonNode child(String system, int run, List<String> cp, Path d, String... extra) throws Exception {
        Path out = d.resolve("result.json");
        List<String> cmd = new ArrayList<>();
        cmd.add(Paths.get(System.getProperty("java.home"), "bin", "java").toString());
        cmd.add("-Xmx3g");
        cmd.add("-Djava.io.tmpdir=" + Files.createDirectories(d.resolve("tmp")));
        cmd.addAll(JVM_OPENS);
        for (String o : jvmOpts.trim().split("\\s+")) {
            if (!o.isEmpty()) {
                cmd.add(o.replace("{system}", system).replace("{run}", Integer.toString(run)));
            }
        }
        cmd.add("-cp");
        cmd.add(String.join(File.pathSeparator, cp));
        cmd.add(SystemRun.class.getName());
        cmd.addAll(Arrays.asList("--system", system, "--keys", Long.toString(keys), "--out", out.toString(),
                "--fresh-seconds", Long.toString(freshSeconds), "--fresh-rate", Long.toString(freshRate), "--fresh-warmup-seconds", "5",
                "--read-shape", readShape, "--warmup-keys", Long.toString(warmupKeys),
                "--ingest-object-reuse", ingestObjectReuse));
        cmd.addAll(Arrays.asList(extra));
        log("run %d: %s (log %s)", run, system, d.resolve("jvm.log"));
        Process p = new ProcessBuilder(cmd).redirectErrorStream(true).redirectOutput(d.resolve("jvm.log").toFile()).start();
        int rc = p.waitFor();
        if (rc != 0 || !Files.exists(out)) {
            throw new IllegalStateException(system + " run " + run + " failed (exit " + rc + "); last lines of " + d.resolve("jvm.log") + ":\n" + tail(d.resolve("jvm.log"), 40));
        }
        ObjectNode res = (ObjectNode) json.readTree(out.toFile());
        res.put("run", run);
        log("run %d: %s ingest %.0f rows/s, read %.0f rows/s, freshness %s", run, system,
                res.get("ingest_rows_per_s").asDouble(), res.get("read_rows_per_s").asDouble(), res.get("freshness"));
        return res;
    }

    private JsonNode runLoadgen(int run) throws Exception {
        Path d = Files.createDirectories(dir.resolve("loadgen-" + run));
        Path out = d.resolve("loadgen.json");
        Files.createDirectories(d.resolve("work")); // setats-loadgen -workdir must exist
        List<String> cmd = Arrays.asList(prop("bench.loadgen"), "-bin", prop("bench.gateway"), "-keys", Long.toString(keys),
                "-skip-raw", "-latency-duration", "2s", "-workdir", d.resolve("work").toString(), "-json", out.toString());
        log("run %d: setats-loadgen (gateway DoPut / DoGet)", run);
        Process p = new ProcessBuilder(cmd).redirectErrorStream(true).redirectOutput(d.resolve("loadgen.log").toFile()).start();
        if (p.waitFor() != 0) {
            throw new IllegalStateException("setats-loadgen failed:\n" + tail(d.resolve("loadgen.log"), 30));
        }
        deleteTree(d.resolve("work"));
        ObjectNode res = (ObjectNode) json.readTree(out.toFile());
        res.put("run", run);
        log("run %d: loadgen DoPut %.0f rows/s, DoGet %.0f rows/s", run, res.get("IngestRowsPerSec").asDouble(), res.get("ReadRowsPerSec").asDouble());
        return res;
    }

    /**
     * This module's class path for one system: Paimon's jar and the Hadoop client only for Paimon,
     * the shaded connector only for Setats.
     */
    private static List<String> classpath(boolean setats) throws IOException {
        List<String> cp = new ArrayList<>();
        cp.add(prop("bench.classes"));
        for (String e : new String(Files.readAllBytes(Paths.get(prop("bench.classpath"))), StandardCharsets.UTF_8).trim().split(File.pathSeparator)) {
            String jar = Paths.get(e).getFileName().toString();
            boolean isPaimon = jar.startsWith("paimon-") || jar.startsWith("hadoop-");
            if (!e.isEmpty() && (!setats || !isPaimon)) {
                cp.add(e);
            }
        }
        if (setats) {
            cp.add(prop("bench.connector"));
        }
        return cp;
    }

    private static JsonNode awaitReady(Process gw, Path ready, Path log) throws Exception {
        long deadline = System.currentTimeMillis() + 60_000;
        while (System.currentTimeMillis() < deadline) {
            if (Files.exists(ready)) {
                try {
                    JsonNode n = new ObjectMapper().readTree(ready.toFile());
                    if (n != null && n.hasNonNull("flight_addr")) {
                        return n;
                    }
                } catch (IOException partial) {
                    // being written
                }
            }
            if (!gw.isAlive()) {
                break;
            }
            Thread.sleep(50);
        }
        throw new IllegalStateException("gateway did not start:\n" + tail(log, 30));
    }

    /** utime + stime of a process in seconds, from /proc/PID/stat (100 clock ticks per second). */
    static double procCpuSeconds(long pid) {
        try {
            String stat = new String(Files.readAllBytes(Paths.get("/proc/" + pid + "/stat")), StandardCharsets.UTF_8);
            String[] f = stat.substring(stat.lastIndexOf(')') + 2).split(" ");
            return (Long.parseLong(f[11]) + Long.parseLong(f[12])) / 100.0;
        } catch (IOException e) {
            throw new IllegalStateException("read /proc/" + pid + "/stat", e);
        }
    }

    private static String prop(String name) {
        String v = System.getProperty(name);
        if (v == null) {
            throw new IllegalStateException("system property " + name + " is not set (run through make bench-flink)");
        }
        if (!name.equals("bench.classpath") && !new File(v).exists()) {
            throw new IllegalStateException(name + " = " + v + " does not exist (make build first)");
        }
        return v;
    }

    private static long envLong(String name, long def) {
        String v = System.getenv(name);
        return v == null || v.isEmpty() ? def : Long.parseLong(v.trim());
    }

    private static String envString(String name, String def) {
        String v = System.getenv(name);
        return v == null || v.isEmpty() ? def : v;
    }

    private static String tail(Path f, int lines) throws IOException {
        if (!Files.exists(f)) {
            return "";
        }
        List<String> all = Files.readAllLines(f, StandardCharsets.UTF_8);
        return all.subList(Math.max(0, all.size() - lines), all.size()).stream().collect(Collectors.joining("\n"));
    }

    private static void deleteTree(Path p) throws IOException {
        if (!Files.exists(p)) {
            return;
        }
        try (java.util.stream.Stream<Path> s = Files.walk(p)) {
            s.sorted(java.util.Comparator.reverseOrder()).forEach(x -> x.toFile().delete());
        }
    }

    private static void log(String fmt, Object... a) {
        System.err.printf("%tT bench-flink %s%n", System.currentTimeMillis(), String.format(fmt, a));
    }
}
