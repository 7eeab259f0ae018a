package io.setats.sqlrunner;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.function.Function;

/**
 * Turns the text of a Flink SQL file into statements.
 *
 * <p>Splitting: statements end at a {@code ;} outside string literals ({@code '...'} with {@code ''}
 * as the escaped quote), quoted identifiers ({@code `...`}, {@code "..."}) and comments ({@code --}
 * to the end of the line, {@code /* ... *&#47;}). Comments are dropped, except query hints
 * ({@code /*+ OPTIONS('startup.mode' = 'earliest') *&#47;}), which stay in the statement verbatim
 * for Flink's planner; blank statements are skipped. A statement set, either {@code EXECUTE STATEMENT SET BEGIN ...; ...; END;} or the SQL
 * client's {@code BEGIN STATEMENT SET; ...; END;}, becomes one {@link Statement} of kind
 * {@link Kind#STATEMENT_SET} whose {@link Statement#inner} holds the INSERTs.
 *
 * <p>Substitution: {@code ${NAME}} and {@code ${NAME:-default}} are replaced by the value that the
 * lookup returns for NAME (the runner looks in {@code --var} values, then in the environment);
 * {@code $${} stays a literal {@code ${}. A name without a value and without a default is an error
 * naming the variable and the statement's line.
 */
public final class SqlScript {

    /** What a statement is, as far as the runner treats it differently. */
    public enum Kind {
        /** {@code SET 'key' = 'value'}: a Flink configuration option. */
        SET,
        /** {@code RESET 'key'} or {@code RESET}. */
        RESET,
        /** A group of INSERTs run as one job. */
        STATEMENT_SET,
        /** Anything else, given to {@code TableEnvironment#executeSql}. */
        SQL
    }

    /**
     * One statement of the file.
     *
     * @param sql the statement text without the closing {@code ;}, comments removed, trimmed
     * @param line the 1-based line where the statement starts in the file
     * @param kind how the runner executes it
     * @param inner for {@link Kind#STATEMENT_SET}, the INSERT statements; else empty
     */
    public record Statement(String sql, int line, Kind kind, List<String> inner) {
        /** For {@link Kind#SET}/{@link Kind#RESET}: the option key, unquoted, or null for a bare RESET. */
        public String key() {
            String body = sql.substring(kind == Kind.SET ? 3 : 5).trim();
            if (body.isEmpty()) {
                return null;
            }
            int eq = kind == Kind.SET ? indexOfEquals(body) : -1;
            return unquote(eq < 0 ? body : body.substring(0, eq).trim());
        }

        /** For {@link Kind#SET}: the option value, unquoted. */
        public String value() {
            String body = sql.substring(3).trim();
            int eq = indexOfEquals(body);
            if (eq < 0) {
                throw new IllegalArgumentException("line " + line + ": SET needs 'key' = 'value': " + sql);
            }
            return unquote(body.substring(eq + 1).trim());
        }
    }

    private SqlScript() {}

    /**
     * Splits {@code text} into statements and substitutes variables in each.
     *
     * @param text the file's content
     * @param lookup variable name to value, or null when unset
     * @return the statements in file order
     * @throws IllegalArgumentException on an unterminated literal, comment or statement set, or an
     *     unset variable without default
     */
    public static List<Statement> parse(String text, Function<String, String> lookup) {
        List<Statement> out = new ArrayList<>();
        List<String> setInner = null;
        int setLine = 0;
        for (Raw raw : split(text)) {
            String sql = substitute(raw.sql, lookup, raw.line);
            String norm = normalize(sql);
            if (setInner != null) {
                if (norm.equals("END")) {
                    out.add(new Statement("STATEMENT SET", setLine, Kind.STATEMENT_SET, List.copyOf(setInner)));
                    setInner = null;
                } else {
                    setInner.add(sql);
                }
                continue;
            }
            if (norm.equals("BEGIN STATEMENT SET")) {
                setInner = new ArrayList<>();
                setLine = raw.line;
            } else if (norm.startsWith("EXECUTE STATEMENT SET BEGIN")) {
                setInner = new ArrayList<>();
                setLine = raw.line;
                String first = sql.replaceFirst("(?is)^\\s*EXECUTE\\s+STATEMENT\\s+SET\\s+BEGIN", "").trim();
                if (!first.isEmpty()) {
                    setInner.add(first);
                }
            } else if (norm.equals("SET") || norm.startsWith("SET ")) {
                out.add(new Statement(sql, raw.line, Kind.SET, List.of()));
            } else if (norm.equals("RESET") || norm.startsWith("RESET ")) {
                out.add(new Statement(sql, raw.line, Kind.RESET, List.of()));
            } else {
                out.add(new Statement(sql, raw.line, Kind.SQL, List.of()));
            }
        }
        if (setInner != null) {
            throw new IllegalArgumentException("line " + setLine + ": statement set without END;");
        }
        return out;
    }

    /** Convenience for {@link #parse(String, Function)} with a map of variables. */
    public static List<Statement> parse(String text, Map<String, String> vars) {
        return parse(text, vars::get);
    }

    private record Raw(String sql, int line) {}

    private static List<Raw> split(String text) {
        List<Raw> out = new ArrayList<>();
        StringBuilder cur = new StringBuilder();
        int line = 1;
        int startLine = -1;
        int n = text.length();
        for (int i = 0; i < n; i++) {
            char c = text.charAt(i);
            char next = i + 1 < n ? text.charAt(i + 1) : '\0';
            if (c == '-' && next == '-') {
                while (i < n && text.charAt(i) != '\n') {
                    i++;
                }
                if (i < n) {
                    line++;
                    cur.append('\n');
                }
                continue;
            }
            if (c == '/' && next == '*') {
                int open = line;
                boolean hint = i + 2 < n && text.charAt(i + 2) == '+';
                if (hint && startLine < 0) {
                    startLine = line;
                }
                if (hint) {
                    cur.append("/*");
                }
                i += 2;
                while (i < n && !(text.charAt(i) == '*' && i + 1 < n && text.charAt(i + 1) == '/')) {
                    if (text.charAt(i) == '\n') {
                        line++;
                    }
                    if (hint) {
                        cur.append(text.charAt(i));
                    }
                    i++;
                }
                if (i >= n) {
                    throw new IllegalArgumentException("line " + open + ": unterminated /* comment");
                }
                i++; // at '/'
                cur.append(hint ? "*/" : " ");
                continue;
            }
            if (c == ';') {
                String sql = cur.toString().trim();
                if (!sql.isEmpty()) {
                    out.add(new Raw(sql, startLine));
                }
                cur.setLength(0);
                startLine = -1;
                continue;
            }
            if (!Character.isWhitespace(c) && startLine < 0) {
                startLine = line;
            }
            if (c == '\'' || c == '"' || c == '`') {
                int open = line;
                cur.append(c);
                i++;
                while (true) {
                    if (i >= n) {
                        throw new IllegalArgumentException("line " + open + ": unterminated " + c + " quote");
                    }
                    char d = text.charAt(i);
                    cur.append(d);
                    if (d == '\n') {
                        line++;
                    }
                    if (d == c) {
                        if (i + 1 < n && text.charAt(i + 1) == c) { // doubled quote: escaped
                            cur.append(c);
                            i += 2;
                            continue;
                        }
                        break;
                    }
                    i++;
                }
                continue;
            }
            if (c == '\n') {
                line++;
            }
            cur.append(c);
        }
        String rest = cur.toString().trim();
        if (!rest.isEmpty()) {
            out.add(new Raw(rest, startLine));
        }
        return out;
    }

    /**
     * Replaces {@code ${NAME}} / {@code ${NAME:-default}} in {@code sql}; {@code $${} is a literal {@code ${}.
     *
     * @throws IllegalArgumentException naming the variable when it has no value and no default
     */
    public static String substitute(String sql, Function<String, String> lookup, int line) {
        StringBuilder out = new StringBuilder(sql.length());
        int i = 0;
        while (i < sql.length()) {
            if (sql.startsWith("$${", i)) {
                out.append("${");
                i += 3;
                continue;
            }
            if (sql.startsWith("${", i)) {
                int close = sql.indexOf('}', i + 2);
                if (close < 0) {
                    throw new IllegalArgumentException("line " + line + ": unterminated ${ in: " + sql);
                }
                String expr = sql.substring(i + 2, close);
                String name = expr;
                String dflt = null;
                int sep = expr.indexOf(":-");
                if (sep >= 0) {
                    name = expr.substring(0, sep);
                    dflt = expr.substring(sep + 2);
                }
                String value = lookup.apply(name);
                if (value == null || (value.isEmpty() && dflt != null)) {
                    value = dflt;
                }
                if (value == null) {
                    throw new IllegalArgumentException(
                            "line " + line + ": variable ${" + name + "} is not set (set it in the environment or with --var "
                                    + name + "=VALUE)");
                }
                out.append(value);
                i = close + 1;
                continue;
            }
            out.append(sql.charAt(i));
            i++;
        }
        return out.toString();
    }

    private static String normalize(String sql) {
        return sql.trim().replaceAll("\\s+", " ").toUpperCase(Locale.ROOT);
    }

    private static int indexOfEquals(String s) {
        char quote = 0;
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            if (quote != 0) {
                if (c == quote) {
                    quote = 0;
                }
            } else if (c == '\'' || c == '`' || c == '"') {
                quote = c;
            } else if (c == '=') {
                return i;
            }
        }
        return -1;
    }

    private static String unquote(String s) {
        if (s.length() >= 2) {
            char q = s.charAt(0);
            if ((q == '\'' || q == '`' || q == '"') && s.charAt(s.length() - 1) == q) {
                String body = s.substring(1, s.length() - 1);
                return body.replace(String.valueOf(q) + q, String.valueOf(q));
            }
        }
        return s;
    }
}
