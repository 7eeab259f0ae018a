package io.setats.bench.flink;

import org.apache.flink.types.Row;
import org.apache.flink.types.RowKind;
import org.junit.jupiter.api.Test;

import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The benchmark's own logic: the workload's expected table, the changelog fold, percentiles. */
class FoldTest {

    /** Folding the workload's rows as a Setats DEDUPLICATE changelog ends at the expected table. */
    @Test
    void workloadFoldEqualsExpected() {
        Workload w = new Workload(1000);
        assertEquals(1200, w.rows());
        Fold f = new Fold(w::expected, w.keys());
        Map<String, String> state = new HashMap<>();
        long changelog = 0;
        for (long i = 0; i < w.rows(); i++) {
            Row r = w.row(i);
            String k = Workload.key(r.getField(0), r.getField(1));
            String v = Workload.value(r.getField(2), r.getField(3));
            String old = state.put(k, v);
            if (old == null) {
                f.apply(RowKind.INSERT, k, v);
                changelog++;
            } else {
                assertTrue(!old.equals(v), "an update changes the value of " + k);
                f.apply(RowKind.UPDATE_BEFORE, k, old);
                f.apply(RowKind.UPDATE_AFTER, k, v);
                changelog += 2;
            }
        }
        assertEquals(0, f.mismatches());
        assertEquals(w.setatsChangelogRows(), changelog);
        assertEquals(w.setatsChangelogRows(), f.applied());
        assertEquals(0, f.retractOfAbsent());
        assertEquals(1000, f.rows().size());
    }

    /** The fold counts mismatches while rows arrive: missing, stale, extra and retracted keys. */
    @Test
    void mismatchesTrackTheExpectedTable() {
        Map<String, String> want = Map.of("a", "1", "b", "2");
        Fold f = new Fold(want::get, want.size());
        assertEquals(2, f.mismatches());
        f.apply(RowKind.INSERT, "a", "0"); // stale value
        assertEquals(2, f.mismatches());
        f.apply(RowKind.UPDATE_BEFORE, "a", "0");
        f.apply(RowKind.UPDATE_AFTER, "a", "1");
        assertEquals(1, f.mismatches());
        f.apply(RowKind.INSERT, "x", "9"); // not in the table
        assertEquals(2, f.mismatches());
        f.apply(RowKind.INSERT, "b", "2");
        f.apply(RowKind.DELETE, "x", "9");
        assertEquals(0, f.mismatches());
        f.apply(RowKind.DELETE, "b", "2"); // a later retraction breaks it again
        assertEquals(1, f.mismatches());
        f.apply(RowKind.DELETE, "zz", "0");
        assertEquals(1, f.retractOfAbsent());
    }

    /**
     * Folds of two subtasks with disjoint keys share one mismatch count: it reaches 0 only when
     * both subtasks' keys match, and the merge is the whole table.
     */
    @Test
    void subtaskFoldsShareTheMismatchCount() {
        Map<String, String> want = Map.of("a", "1", "b", "2", "c", "3");
        AtomicLong m = new AtomicLong(want.size());
        Fold left = new Fold(want::get, m);
        Fold right = new Fold(want::get, m);
        left.apply(RowKind.INSERT, "a", "1");
        left.apply(RowKind.INSERT, "b", "0");
        right.apply(RowKind.INSERT, "c", "3");
        assertEquals(1, m.get());
        assertEquals(1, right.mismatches());
        left.apply(RowKind.UPDATE_BEFORE, "b", "0");
        left.apply(RowKind.UPDATE_AFTER, "b", "2");
        assertEquals(0, left.mismatches());
        assertEquals(want, Fold.merge(List.of(left, right)));
    }

    /** A key that reached two subtasks (a split read by both) fails the merge, naming the key. */
    @Test
    void mergeRefusesAKeyInTwoSubtasks() {
        Map<String, String> want = Map.of("a", "1");
        AtomicLong m = new AtomicLong(1);
        Fold left = new Fold(want::get, m);
        Fold right = new Fold(want::get, m);
        left.apply(RowKind.INSERT, "a", "1");
        right.apply(RowKind.INSERT, "a", "1");
        IllegalStateException e = assertThrows(IllegalStateException.class, () -> Fold.merge(List.of(left, right)));
        assertTrue(e.getMessage().contains("key a reached two collector subtasks"), e.getMessage());
    }

    @Test
    void diffNamesTheDifferingKeys() {
        assertNull(Fold.diff("fold", Map.of("a", "1"), "table", Map.of("a", "1")));
        String d = Fold.diff("fold", Map.of("a", "1", "b", "2"), "table", Map.of("a", "1", "c", "3"));
        assertTrue(d.contains("differ in 2 keys"), d);
        assertTrue(d.contains("b: fold=2 table=null"), d);
        assertTrue(d.contains("c: fold=null table=3"), d);
    }

    @Test
    void workloadExpectedAndKeys() {
        Workload w = new Workload(100);
        assertNull(w.expected("100|20261201"));
        assertNull(w.expected("3|20261201")); // key 3 lives in dt 20261204
        assertNull(w.expected("nonsense"));
        assertEquals(w.expected(3), w.expected("3|" + Workload.dt(3)));
        assertTrue(w.updated(0) && w.updated(95) && !w.updated(96) && !w.updated(3));
        assertThrows(IllegalArgumentException.class, () -> new Workload(10, 3));
    }

    @Test
    void nearestRankPercentiles() {
        Percentiles p = new Percentiles();
        assertTrue(Double.isNaN(p.percentile(50)));
        for (long v = 100; v >= 1; v--) {
            p.add(v); // 1..100, unsorted, more than the initial capacity after the loop below
        }
        assertEquals(50, p.percentile(50));
        assertEquals(99, p.percentile(99));
        assertEquals(100, p.percentile(100));
        assertEquals(1, p.percentile(0.5));
        for (int i = 0; i < 5000; i++) {
            p.add(1000);
        }
        assertEquals(5100, p.count());
        assertEquals(1000, p.percentile(50));
        assertThrows(IllegalArgumentException.class, () -> p.percentile(0));
        assertEquals(2.5, Percentiles.median(4, 1, 2, 3));
        assertEquals(2, Percentiles.median(3, Double.NaN, 1, 2));
        assertTrue(Double.isNaN(Percentiles.median()));
    }
}
