package io.setats.sqlrunner;

import java.io.FileOutputStream;
import java.io.FileDescriptor;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

import org.apache.flink.configuration.Configuration;
import org.apache.flink.core.execution.JobClient;
import org.apache.flink.table.api.EnvironmentSettings;
import org.apache.flink.table.api.ResultKind;
import org.apache.flink.table.api.StatementSet;
import org.apache.flink.table.api.TableEnvironment;
import org.apache.flink.table.api.TableResult;
import org.apache.flink.types.Row;
import org.apache.flink.util.CloseableIterator;

/**
 * Runs a Flink SQL file statement by statement in an embedded Flink (a MiniCluster per job).
 *
 * <pre>
 * java --add-opens=java.base/java.nio=ALL-UNNAMED -cp setats-sql-runner-0.1.0.jar:CONNECTOR.jar \
 *      io.setats.sqlrunner.SqlRunner FILE.sql [options]
 *
 *   --set KEY=VALUE        Flink configuration option, applied before the first statement (repeatable)
 *   --var NAME=VALUE       value of ${NAME} in the file; the environment is looked at next (repeatable)
 *   --stop-after-rows N    once N changelog rows were printed, cancel the running job and stop (exit 0):
 *                          the way to end an unbounded job such as a setats-cdc read
 *   --stop-grace-ms MS     after the Nth row, wait MS before cancelling (rows arriving meanwhile are
 *                          printed and counted too); default 0
 *   --timeout SECONDS      cancel what runs once the whole file took longer, exit 3; default none
 *   --dry-run              print the statements after substitution, run nothing
 * </pre>
 *
 * <p>Statements run in file order. {@code SET 'k' = 'v'} sets a Flink option; DDL runs at once;
 * an INSERT (or a statement set) submits a job and waits for it to end before the next statement,
 * as the SQL client does with {@code table.dml-sync}; a SELECT prints its rows, one per line, as
 * {@code +I[...]}, like the {@code print} connector does with the rows of its sink. Standard output
 * carries only rows (and the tables of SHOW/DESCRIBE); the runner's own messages go to standard
 * error with the prefix {@code [sql-runner]}.
 *
 * <p>Exit codes: 0 all statements ran (or the row limit was reached), 1 a statement or job failed,
 * 2 bad arguments or file, 3 timeout.
 */
public final class SqlRunner {

    private static final PrintStream ERR = System.err;
    /** How long a job cancelled by --stop-after-rows may take to end before the runner stops anyway. */
    private static final int CANCEL_WAIT_SECONDS = 10;

    private final Map<String, String> flinkConf = new LinkedHashMap<>();
    private final Map<String, String> vars = new LinkedHashMap<>();
    private Path file;
    private long stopAfterRows;
    private long stopGraceMs;
    private long timeoutMs;
    private boolean dryRun;

    private final java.io.OutputStream stdout;
    private RowCountingStream out;
    private volatile JobClient current;
    private volatile boolean timedOut;
    private int jobs;

    /** Thrown when the runner must stop with an exit code. */
    static final class Exit extends RuntimeException {
        final int code;

        Exit(int code, String message, Throwable cause) {
            super(message, cause);
            this.code = code;
        }
    }

    /** @param stdout where rows are printed (the process's standard output in {@link #main}) */
    SqlRunner(java.io.OutputStream stdout) {
        this.stdout = stdout;
    }

    public static void main(String[] args) {
        int code;
        try {
            code = new SqlRunner(new FileOutputStream(FileDescriptor.out)).run(args);
        } catch (Exit e) {
            if (e.code == 0) {
                System.exit(0);
            }
            log("ERROR: " + e.getMessage());
            String last = e.getMessage();
            for (Throwable c = e.getCause(); c != null; c = c.getCause()) {
                String m = String.valueOf(c.getMessage());
                if (!last.contains(m)) {
                    log("  caused by: " + c.getClass().getName() + ": " + m);
                }
                last = m;
            }
            if (e.getCause() != null && System.getenv("SQL_RUNNER_DEBUG") != null) {
                e.getCause().printStackTrace(ERR);
            }
            code = e.code;
        }
        System.out.flush();
        System.exit(code);
    }

    private static void log(String msg) {
        ERR.println(java.time.LocalTime.now().truncatedTo(java.time.temporal.ChronoUnit.MILLIS) + " [sql-runner] " + msg);
        ERR.flush();
    }

    private static String usage() {
        return "usage: SqlRunner FILE.sql [--set KEY=VALUE]... [--var NAME=VALUE]... [--stop-after-rows N]"
                + " [--stop-grace-ms MS] [--timeout SECONDS] [--dry-run]";
    }

    private void parseArgs(String[] args) {
        for (int i = 0; i < args.length; i++) {
            String a = args[i];
            switch (a) {
                case "--set" -> putPair(flinkConf, a, next(args, ++i, a));
                case "--var" -> putPair(vars, a, next(args, ++i, a));
                case "--stop-after-rows" -> stopAfterRows = parseLong(a, next(args, ++i, a));
                case "--stop-grace-ms" -> stopGraceMs = parseLong(a, next(args, ++i, a));
                case "--timeout" -> timeoutMs = parseLong(a, next(args, ++i, a)) * 1000L;
                case "--dry-run" -> dryRun = true;
                case "-h", "--help" -> {
                    ERR.println(usage());
                    throw new Exit(0, "help", null);
                }
                default -> {
                    if (a.startsWith("--")) {
                        throw new Exit(2, "unknown option " + a + "\n" + usage(), null);
                    }
                    if (file != null) {
                        throw new Exit(2, "one SQL file only, got " + file + " and " + a + "\n" + usage(), null);
                    }
                    file = Path.of(a);
                }
            }
        }
        if (file == null) {
            throw new Exit(2, "no SQL file given\n" + usage(), null);
        }
    }

    private static String next(String[] args, int i, String opt) {
        if (i >= args.length) {
            throw new Exit(2, opt + " needs a value\n" + usage(), null);
        }
        return args[i];
    }

    private static void putPair(Map<String, String> m, String opt, String kv) {
        int eq = kv.indexOf('=');
        if (eq <= 0) {
            throw new Exit(2, opt + " takes KEY=VALUE, got " + kv, null);
        }
        m.put(kv.substring(0, eq), kv.substring(eq + 1));
    }

    private static long parseLong(String opt, String v) {
        try {
            return Long.parseLong(v);
        } catch (NumberFormatException e) {
            throw new Exit(2, opt + " takes a number, got " + v, null);
        }
    }

    int run(String[] args) {
        parseArgs(args);
        String text;
        try {
            text = Files.readString(file, StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new Exit(2, "cannot read " + file + ": " + e, e);
        }
        List<SqlScript.Statement> statements;
        try {
            statements = SqlScript.parse(text, name -> vars.containsKey(name) ? vars.get(name) : System.getenv(name));
        } catch (IllegalArgumentException e) {
            throw new Exit(2, file + ": " + e.getMessage(), null);
        }
        if (dryRun) {
            PrintStream p = new PrintStream(stdout, true, StandardCharsets.UTF_8);
            for (SqlScript.Statement s : statements) {
                p.println("-- line " + s.line() + " (" + s.kind() + ")");
                p.println(s.kind() == SqlScript.Kind.STATEMENT_SET
                        ? "EXECUTE STATEMENT SET BEGIN\n" + String.join(";\n", s.inner()) + ";\nEND;"
                        : s.sql() + ";");
            }
            return 0;
        }

        out = new RowCountingStream(stdout, stopAfterRows);
        PrintStream previous = System.out;
        System.setOut(out);
        try {
            return runStatements(statements);
        } finally {
            out.flush();
            System.setOut(previous);
        }
    }

    /** Rows printed by the last {@link #run}. */
    long rowsPrinted() {
        return out == null ? 0 : out.rows();
    }

    private int runStatements(List<SqlScript.Statement> statements) {
        long started = System.nanoTime();
        startWatchdog();
        Runtime.getRuntime().addShutdownHook(new Thread(this::cancelCurrent, "sql-runner-shutdown"));

        Configuration conf = new Configuration();
        flinkConf.forEach(conf::setString);
        // Flink fixes the runtime mode when the table environment is created (a later change is
        // refused): the SETs before the first other statement go into its configuration, so a
        // file may start with SET 'execution.runtime-mode' = 'batch' as in Flink's SQL client.
        for (SqlScript.Statement s : statements) {
            if (s.kind() != SqlScript.Kind.SET) {
                break;
            }
            conf.setString(s.key(), s.value());
        }
        TableEnvironment tEnv = TableEnvironment.create(
                EnvironmentSettings.newInstance().inStreamingMode().withConfiguration(conf).build());
        log("running " + file + ": " + statements.size() + " statements");

        boolean stopped = false;
        for (SqlScript.Statement s : statements) {
            if (out.limitReached().isDone()) {
                log("row limit reached: skipping the statements from line " + s.line());
                stopped = true;
                break;
            }
            stopped = execute(tEnv, s);
            if (stopped) {
                break;
            }
        }
        long ms = (System.nanoTime() - started) / 1_000_000L;
        log(String.format(Locale.ROOT, "done: %d statements, %d jobs, %d rows printed, %d ms%s",
                statements.size(), jobs, out.rows(), ms, stopped ? " (stopped after " + stopAfterRows + " rows)" : ""));
        return 0;
    }

    /** Runs one statement; returns true when the row limit stopped it. */
    private boolean execute(TableEnvironment tEnv, SqlScript.Statement s) {
        String where = file.getFileName() + ":" + s.line();
        try {
            switch (s.kind()) {
                case SET -> {
                    tEnv.getConfig().getConfiguration().setString(s.key(), s.value());
                    log(where + " SET " + s.key() + " = " + s.value());
                    return false;
                }
                case RESET -> {
                    if (s.key() == null) {
                        throw new Exit(1, where + ": bare RESET is not supported; name the key", null);
                    }
                    tEnv.getConfig().getConfiguration().removeKey(s.key());
                    log(where + " RESET " + s.key());
                    return false;
                }
                case STATEMENT_SET -> {
                    StatementSet set = tEnv.createStatementSet();
                    s.inner().forEach(set::addInsertSql);
                    return awaitJob(set.execute(), where + " statement set of " + s.inner().size() + " INSERTs");
                }
                default -> {
                    String head = s.sql().trim().split("\\s+", 2)[0].toUpperCase(Locale.ROOT);
                    TableResult r = tEnv.executeSql(s.sql());
                    if (r.getJobClient().isPresent()) {
                        if (head.equals("INSERT") || head.equals("EXECUTE")) {
                            return awaitJob(r, where + " " + firstLine(s.sql()));
                        }
                        return printQuery(r, where + " " + firstLine(s.sql()));
                    }
                    if (r.getResultKind() == ResultKind.SUCCESS) {
                        log(where + " OK " + firstLine(s.sql()));
                    } else {
                        r.print();
                    }
                    return false;
                }
            }
        } catch (Exit e) {
            throw e;
        } catch (Exception e) {
            if (timedOut) {
                throw new Exit(3, where + ": timed out after " + timeoutMs / 1000 + " s", null);
            }
            throw new Exit(1, where + ": " + firstLine(s.sql()) + " failed: " + e.getMessage(), e);
        }
    }

    private boolean awaitJob(TableResult r, String what) throws Exception {
        JobClient jc = r.getJobClient().orElseThrow();
        current = jc;
        jobs++;
        long t0 = System.nanoTime();
        log(what + ": job " + jc.getJobID() + " submitted");
        CompletableFuture<?> result = jc.getJobExecutionResult();
        try {
            CompletableFuture.anyOf(result, out.limitReached()).get();
        } catch (ExecutionException e) {
            // the job ended badly; reported below
        }
        if (!result.isDone() && out.limitReached().isDone()) {
            log(String.format(Locale.ROOT, "%s: job %s printed %d rows in %d ms", what, jc.getJobID(),
                    out.rows(), (System.nanoTime() - t0) / 1_000_000L));
            if (stopGraceMs > 0) {
                Thread.sleep(stopGraceMs);
            }
            log("printed " + out.rows() + " rows (limit " + stopAfterRows + "): cancelling job " + jc.getJobID());
            try {
                jc.cancel().get(CANCEL_WAIT_SECONDS, TimeUnit.SECONDS);
                result.get(CANCEL_WAIT_SECONDS, TimeUnit.SECONDS);
            } catch (ExecutionException e) {
                // cancelled, as asked
            } catch (TimeoutException e) {
                log("job " + jc.getJobID() + " still cancelling after " + CANCEL_WAIT_SECONDS
                        + " s; stopping anyway (the embedded cluster ends with this process)");
            }
            current = null;
            return true;
        }
        try {
            result.get();
        } catch (ExecutionException e) {
            current = null;
            if (timedOut) {
                throw new Exit(3, what + ": timed out after " + timeoutMs / 1000 + " s; job cancelled", null);
            }
            throw new Exit(1, what + ": job " + jc.getJobID() + " failed", e.getCause());
        }
        current = null;
        log(String.format(Locale.ROOT, "%s: job %s finished in %d ms", what, jc.getJobID(),
                (System.nanoTime() - t0) / 1_000_000L));
        return false;
    }

    private boolean printQuery(TableResult r, String what) throws Exception {
        current = r.getJobClient().orElse(null);
        jobs++;
        log(what + ": query submitted");
        try (CloseableIterator<Row> it = r.collect()) {
            while (it.hasNext()) {
                out.println(it.next().toString());
                if (out.limitReached().isDone()) {
                    if (stopGraceMs > 0) {
                        Thread.sleep(stopGraceMs);
                    }
                    log("printed " + out.rows() + " rows (limit " + stopAfterRows + "): cancelling the query");
                    return true; // closing the iterator cancels the job
                }
            }
        } finally {
            current = null;
        }
        return false;
    }

    private void startWatchdog() {
        if (timeoutMs <= 0) {
            return;
        }
        Thread t = new Thread(() -> {
            try {
                Thread.sleep(timeoutMs);
            } catch (InterruptedException e) {
                return;
            }
            timedOut = true;
            log("timeout: " + timeoutMs / 1000 + " s passed, cancelling");
            cancelCurrent();
            // A statement that is not a job (or a stuck cancel) cannot be interrupted: give up.
            try {
                Thread.sleep(30_000);
            } catch (InterruptedException e) {
                return;
            }
            log("timeout: still running 30 s after cancel, exiting");
            Runtime.getRuntime().halt(3);
        }, "sql-runner-timeout");
        t.setDaemon(true);
        t.start();
    }

    private void cancelCurrent() {
        JobClient jc = current;
        if (jc == null) {
            return;
        }
        try {
            jc.cancel().get(20, TimeUnit.SECONDS);
        } catch (Exception e) {
            // the job may already be gone
        }
    }

    private static String firstLine(String sql) {
        String one = sql.strip().replaceAll("\\s+", " ");
        return one.length() > 90 ? one.substring(0, 87) + "..." : one;
    }
}
