package io.setats.sqlrunner;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.Map;
import java.util.stream.Stream;

import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;
import org.junit.jupiter.api.Test;

class SqlScriptTest {

    static Stream<Arguments> splits() {
        return Stream.of(
                Arguments.of("CREATE TABLE a (x INT);\nINSERT INTO a VALUES (1);",
                        List.of("CREATE TABLE a (x INT)", "INSERT INTO a VALUES (1)")),
                Arguments.of("SELECT ';' AS s, 'it''s;' AS t;", List.of("SELECT ';' AS s, 'it''s;' AS t")),
                Arguments.of("-- a comment; with a semicolon\nSELECT 1; -- trailing\n", List.of("SELECT 1")),
                Arguments.of("/* block; comment */ SELECT `a;b` FROM t;;  ;", List.of("SELECT `a;b` FROM t")),
                Arguments.of("SELECT \"x;y\"", List.of("SELECT \"x;y\"")),
                Arguments.of("SELECT '--not a comment';", List.of("SELECT '--not a comment'")),
                Arguments.of("  \n -- only a comment\n", List.of()),
                // Query hints are not comments: Flink reads them (the README's per-query OPTIONS).
                Arguments.of("SELECT * FROM t /*+ OPTIONS('startup.mode' = 'earliest') */; -- streaming\n",
                        List.of("SELECT * FROM t /*+ OPTIONS('startup.mode' = 'earliest') */")),
                Arguments.of("INSERT INTO s SELECT * FROM t /*+ OPTIONS('a' = 'x;y',\n 'b' = '1') */;",
                        List.of("INSERT INTO s SELECT * FROM t /*+ OPTIONS('a' = 'x;y',\n 'b' = '1') */")));
    }

    @ParameterizedTest
    @MethodSource("splits")
    void splitsStatements(String text, List<String> want) {
        List<String> got = SqlScript.parse(text, Map.of()).stream().map(SqlScript.Statement::sql).toList();
        assertEquals(want, got);
    }

    @Test
    void recordsStartLines() {
        List<SqlScript.Statement> st = SqlScript.parse("-- head\n\nSELECT 1;\n/* x\n y */\nSELECT\n 2;", Map.of());
        assertEquals(List.of(3, 6), st.stream().map(SqlScript.Statement::line).toList());
    }

    static Stream<Arguments> substitutions() {
        return Stream.of(
                Arguments.of("'${URL}'", "'grpc://h:1'"),
                Arguments.of("${MISSING:-dflt}", "dflt"),
                Arguments.of("${EMPTY:-dflt}", "dflt"),
                Arguments.of("$${URL} stays", "${URL} stays"),
                Arguments.of("a${URL}b${URL}", "agrpc://h:1bgrpc://h:1"));
    }

    @ParameterizedTest
    @MethodSource("substitutions")
    void substitutesVariables(String in, String want) {
        Map<String, String> vars = Map.of("URL", "grpc://h:1", "EMPTY", "");
        assertEquals(want, SqlScript.substitute(in, vars::get, 1));
    }

    @Test
    void unsetVariableNamesItAndTheLine() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> SqlScript.parse("\n\nSELECT '${NOPE_NOT_SET}';", Map.of()));
        assertTrue(e.getMessage().contains("NOPE_NOT_SET"), e.getMessage());
        assertTrue(e.getMessage().startsWith("line 3"), e.getMessage());
    }

    @Test
    void variablesInCommentsAreIgnored() {
        assertEquals(1, SqlScript.parse("-- ${NOPE_NOT_SET}\nSELECT 1;", Map.of()).size());
    }

    @Test
    void unterminatedQuoteFails() {
        assertThrows(IllegalArgumentException.class, () -> SqlScript.parse("SELECT 'abc;", Map.of()));
        assertThrows(IllegalArgumentException.class, () -> SqlScript.parse("SELECT 1 /* abc;", Map.of()));
    }

    @Test
    void setAndReset() {
        List<SqlScript.Statement> st = SqlScript.parse(
                "SET 'parallelism.default' = '1';\nset pipeline.name = 'a=b';\nRESET 'x.y';", Map.of());
        assertEquals(SqlScript.Kind.SET, st.get(0).kind());
        assertEquals("parallelism.default", st.get(0).key());
        assertEquals("1", st.get(0).value());
        assertEquals("pipeline.name", st.get(1).key());
        assertEquals("a=b", st.get(1).value());
        assertEquals(SqlScript.Kind.RESET, st.get(2).kind());
        assertEquals("x.y", st.get(2).key());
    }

    @Test
    void statementSets() {
        String text = "EXECUTE STATEMENT SET BEGIN\nINSERT INTO a SELECT 1;\nINSERT INTO b SELECT 2;\nEND;\n"
                + "BEGIN STATEMENT SET;\nINSERT INTO c SELECT 3;\nEND;\nSELECT 4;";
        List<SqlScript.Statement> st = SqlScript.parse(text, Map.of());
        assertEquals(3, st.size());
        assertEquals(SqlScript.Kind.STATEMENT_SET, st.get(0).kind());
        assertEquals(List.of("INSERT INTO a SELECT 1", "INSERT INTO b SELECT 2"), st.get(0).inner());
        assertEquals(List.of("INSERT INTO c SELECT 3"), st.get(1).inner());
        assertEquals(SqlScript.Kind.SQL, st.get(2).kind());
        assertThrows(IllegalArgumentException.class,
                () -> SqlScript.parse("BEGIN STATEMENT SET; INSERT INTO c SELECT 3;", Map.of()));
    }

    @ParameterizedTest
    @MethodSource("rowLines")
    void countsPrintedRows(String line, boolean isRow) {
        assertEquals(isRow, RowCountingStream.ROW.matcher(line).matches(), line);
    }

    static Stream<Arguments> rowLines() {
        return Stream.of(
                Arguments.of("+I[1, a]", true),
                Arguments.of("-U[1, a]", true),
                Arguments.of("+U[1, b]", true),
                Arguments.of("-D[1, b]", true),
                Arguments.of("2> +I[1, a]", true),
                Arguments.of("DebugData:1> -D[x]", true),
                Arguments.of("DebugData> +U[x]", true),
                Arguments.of("[sql-runner] done", false),
                Arguments.of("+X[1]", false),
                Arguments.of("+----+", false));
    }
}
