package io.setats.sqlrunner;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Runs SQL files in the embedded Flink, as users do, and reads what the print sink printed. */
class SqlRunnerTest {

    @TempDir
    Path dir;

    private List<String> run(String sql, String... opts) throws Exception {
        Path f = dir.resolve("job.sql");
        Files.writeString(f, sql);
        ByteArrayOutputStream buf = new ByteArrayOutputStream();
        String[] args = new String[opts.length + 1];
        args[0] = f.toString();
        System.arraycopy(opts, 0, args, 1, opts.length);
        assertEquals(0, new SqlRunner(buf).run(args));
        return Arrays.stream(buf.toString(StandardCharsets.UTF_8).split("\n")).filter(l -> !l.isEmpty()).toList();
    }

    @Test
    void boundedInsertIntoPrintSinkPrintsEveryRow() throws Exception {
        List<String> lines = run("""
                SET 'parallelism.default' = '1';
                CREATE TABLE src (id BIGINT) WITH (
                  'connector' = 'datagen', 'number-of-rows' = '${ROWS}',
                  'fields.id.kind' = 'sequence', 'fields.id.start' = '1', 'fields.id.end' = '${ROWS}');
                CREATE TABLE sink (id BIGINT, twice BIGINT) WITH ('connector' = 'print');
                INSERT INTO sink SELECT id, id * 2 FROM src;
                """, "--var", "ROWS=5");
        assertEquals(List.of("+I[1, 2]", "+I[2, 4]", "+I[3, 6]", "+I[4, 8]", "+I[5, 10]"), lines);
    }

    @Test
    void updatesShowAsRetractions() throws Exception {
        List<String> lines = run("""
                SET 'parallelism.default' = '1';
                CREATE TABLE src (id BIGINT) WITH (
                  'connector' = 'datagen', 'number-of-rows' = '3',
                  'fields.id.kind' = 'sequence', 'fields.id.start' = '1', 'fields.id.end' = '3');
                CREATE TABLE sink (k INT, n BIGINT) WITH ('connector' = 'print');
                INSERT INTO sink SELECT 0, COUNT(*) FROM src GROUP BY 0;
                """);
        assertEquals(List.of("+I[0, 1]", "-U[0, 1]", "+U[0, 2]", "-U[0, 2]", "+U[0, 3]"), lines);
    }

    @Test
    void stopAfterRowsEndsAnUnboundedJob() throws Exception {
        List<String> lines = run("""
                SET 'parallelism.default' = '1';
                CREATE TABLE src (id BIGINT) WITH ('connector' = 'datagen', 'rows-per-second' = '50',
                  'fields.id.kind' = 'random', 'fields.id.min' = '1', 'fields.id.max' = '9');
                CREATE TABLE sink (id BIGINT) WITH ('connector' = 'print', 'print-identifier' = 'DebugData');
                INSERT INTO sink SELECT id FROM src;
                CREATE TABLE never_reached (id BIGINT) WITH ('connector' = 'nope');
                """, "--stop-after-rows", "7");
        assertTrue(lines.size() >= 7, lines.toString());
        assertTrue(lines.stream().allMatch(l -> l.startsWith("DebugData> +I[")), lines.toString());
    }

    @Test
    void selectPrintsRows() throws Exception {
        List<String> lines = run("SELECT * FROM (VALUES (1, 'a'), (2, 'b')) AS t(x, y);");
        assertEquals(List.of("+I[1, a]", "+I[2, b]"), lines);
    }

    /** A file that starts with SET 'execution.runtime-mode' = 'batch' runs in batch mode: an
     * aggregate prints its final row only (streaming would print its retractions). */
    @Test
    void leadingRuntimeModeSetRunsInBatchMode() throws Exception {
        List<String> lines = run("""
                SET 'execution.runtime-mode' = 'batch';
                SET 'parallelism.default' = '1';
                CREATE TABLE src (id BIGINT) WITH (
                  'connector' = 'datagen', 'number-of-rows' = '3',
                  'fields.id.kind' = 'sequence', 'fields.id.start' = '1', 'fields.id.end' = '3');
                SELECT COUNT(*) FROM src;
                """);
        assertEquals(List.of("+I[3]"), lines);
    }

    @Test
    void badStatementFailsNamingTheLine() throws Exception {
        Path f = dir.resolve("bad.sql");
        Files.writeString(f, "SELECT 1;\nCREATE TABLE t (x INT) WITH ('connector' = 'no-such-connector');\nINSERT INTO t SELECT 1;");
        SqlRunner.Exit e = assertThrows(SqlRunner.Exit.class,
                () -> new SqlRunner(new ByteArrayOutputStream()).run(new String[] {f.toString()}));
        assertEquals(1, e.code);
        assertTrue(e.getMessage().startsWith("bad.sql:3"), e.getMessage());
    }
}
