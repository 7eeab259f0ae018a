package io.setats.bench.flink;

import org.apache.flink.types.RowKind;

import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Function;

/**
 * The fold of a changelog into the table it describes: {@code +I}/{@code +U} put the row's value
 * under its primary key, {@code -U}/{@code -D} remove it. Tracks, while rows arrive, how many keys
 * differ from an expected table (missing, extra or another value), so a reader knows when it has
 * seen the whole changelog without rescanning. One fold per collector subtask, not thread-safe;
 * folds of subtasks that see disjoint keys (each key in one bucket, each bucket in one split, each
 * split in one subtask) may share one mismatch counter ({@link #Fold(Function, AtomicLong)}), which
 * then counts the keys of the whole table that differ.
 */
public final class Fold implements ChangelogFold {
    private final Map<String, String> rows = new HashMap<>();
    private final Function<String, String> expected;
    private final AtomicLong mismatches;
    private long applied;
    private long retractOfAbsent;

    /**
     * A fold compared against {@code expected} (key to value, null for keys that must be absent);
     * {@code expectedSize} is the number of keys with a non-null expected value (all missing at start).
     */
    public Fold(Function<String, String> expected, long expectedSize) {
        this(expected, new AtomicLong(expectedSize));
    }

    /**
     * A fold whose mismatches go to {@code mismatches}, a counter shared with the folds of the
     * other subtasks that starts at the number of keys with a non-null expected value. Exact only
     * while no key reaches two of these folds ({@link #merge} checks that at the end).
     */
    public Fold(Function<String, String> expected, AtomicLong mismatches) {
        this.expected = expected;
        this.mismatches = mismatches;
    }

    /** Applies one changelog row of kind {@code kind} with primary key {@code key} and value {@code value}. */
    public void apply(RowKind kind, String key, String value) {
        applied++;
        String want = expected.apply(key);
        boolean before = same(rows.get(key), want);
        switch (kind) {
            case INSERT:
            case UPDATE_AFTER:
                rows.put(key, value);
                break;
            case UPDATE_BEFORE:
            case DELETE:
                if (rows.remove(key) == null) {
                    retractOfAbsent++;
                }
                break;
            default:
                throw new IllegalArgumentException("row kind " + kind);
        }
        boolean after = same(rows.get(key), want);
        if (before && !after) {
            mismatches.incrementAndGet();
        } else if (!before && after) {
            mismatches.decrementAndGet();
        }
    }

    private static boolean same(String a, String b) {
        return a == null ? b == null : a.equals(b);
    }

    /** Keys whose folded value differs from the expected one (0: the fold equals the expected table). */
    public long mismatches() {
        return mismatches.get();
    }

    /** Changelog rows applied. */
    @Override
    public long applied() {
        return applied;
    }

    /** -U/-D rows of a key the fold did not hold (a changelog that is not a valid fold). */
    @Override
    public long retractOfAbsent() {
        return retractOfAbsent;
    }

    /** The folded table (key to value). */
    @Override
    public Map<String, String> rows() {
        return rows;
    }

    /**
     * The union of the folds of subtasks that each saw their own keys; holds each fold's monitor
     * while reading it (the lock its collector subtask applies rows under).
     *
     * @throws IllegalStateException naming a key that two folds hold (a key read by two subtasks:
     *     the folds, and their shared mismatch count, are then not the table's)
     */
    public static Map<String, String> merge(Iterable<? extends ChangelogFold> folds) {
        Map<String, String> all = new HashMap<>();
        int i = 0;
        for (ChangelogFold f : folds) {
            synchronized (f) {
                for (Map.Entry<String, String> e : f.rows().entrySet()) {
                    if (all.put(e.getKey(), e.getValue()) != null) {
                        throw new IllegalStateException("FOLD MISMATCH: key " + e.getKey() + " reached two collector subtasks (the second is fold " + i + ")");
                    }
                }
            }
            i++;
        }
        return all;
    }

    /**
     * Compares two tables and returns null when they are equal, else a message with the sizes
     * and up to 5 differing keys.
     */
    public static String diff(String leftName, Map<String, String> left, String rightName, Map<String, String> right) {
        StringBuilder sb = new StringBuilder();
        int shown = 0;
        long differ = 0;
        for (Map.Entry<String, String> e : left.entrySet()) {
            String r = right.get(e.getKey());
            if (!e.getValue().equals(r)) {
                differ++;
                if (shown++ < 5) {
                    sb.append(String.format(" %s: %s=%s %s=%s;", e.getKey(), leftName, e.getValue(), rightName, r));
                }
            }
        }
        for (Map.Entry<String, String> e : right.entrySet()) {
            if (!left.containsKey(e.getKey())) {
                differ++;
                if (shown++ < 5) {
                    sb.append(String.format(" %s: %s=null %s=%s;", e.getKey(), leftName, rightName, e.getValue()));
                }
            }
        }
        if (differ == 0) {
            return null;
        }
        return String.format("%s (%d rows) and %s (%d rows) differ in %d keys:%s",
                leftName, left.size(), rightName, right.size(), differ, sb);
    }
}
