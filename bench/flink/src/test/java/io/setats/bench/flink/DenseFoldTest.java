package io.setats.bench.flink;

import org.apache.flink.table.data.GenericRowData;
import org.apache.flink.table.data.RowData;
import org.apache.flink.table.data.StringData;
import org.apache.flink.table.data.binary.BinaryRowData;
import org.apache.flink.table.data.binary.BinaryStringData;
import org.apache.flink.table.data.writer.BinaryRowWriter;
import org.apache.flink.types.RowKind;
import org.junit.jupiter.api.Test;

import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Random;
import java.util.concurrent.atomic.AtomicLong;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

/** {@link DenseFold} (RowData, keys by index) against {@link Fold} (strings): the same exact fold. */
class DenseFoldTest {

    /** The allocation-free expected value is the string one's bytes, for updated and other keys. */
    @Test
    void expectedValueBytesEqualExpected() {
        Workload w = new Workload(200_000);
        byte[] buf = new byte[Workload.MAX_VALUE_BYTES];
        for (long k = 0; k < w.keys(); k += (k < 1000 ? 1 : 997)) {
            int n = w.expectedValueBytes(k, buf);
            assertArrayEquals(w.expected(k).getBytes(StandardCharsets.UTF_8), java.util.Arrays.copyOf(buf, n), "key " + k);
        }
    }

    /** The arena of expected values holds every key's expected value, its '|' where the string has it. */
    @Test
    void expectedValuesHoldEveryKeysValue() {
        Workload w = new Workload(200_000);
        ExpectedValues e = new ExpectedValues(w);
        for (int k = 0; k < w.keys(); k++) {
            String want = w.expected(k);
            assertEquals(want, e.value(k), "key " + k);
            String[] v = want.split("\\|");
            assertEquals(true, e.matches(k, BinaryStringData.fromString(v[0]), BinaryStringData.fromString(v[1])), "key " + k);
            assertEquals(false, e.matches(k, BinaryStringData.fromString(v[0] + "x"), BinaryStringData.fromString(v[1])), "key " + k);
            assertEquals(false, e.matches(k, BinaryStringData.fromString(v[0]), BinaryStringData.fromString(v[1].substring(1))), "key " + k);
        }
    }

    /**
     * A null name folds as the string fold spells it ("null"): for the key whose expected name is
     * the string "null" (n + base 36 "ull"), a null name matches, as in {@link Fold}.
     */
    @Test
    void aNullNameIsSpelledNull() {
        Workload w = new Workload(200_000);
        long k = 0;
        while (!w.expected(k).startsWith("null|")) {
            k++;
        }
        String address = w.expected(k).substring("null|".length());
        Fold ref = new Fold(w::expected, w.keys());
        AtomicLong shared = new AtomicLong(w.keys());
        DenseFold dense = new DenseFold(w, shared);
        String[] r = {Long.toString(k), Workload.dt(k), null, address};
        ref.apply(RowKind.INSERT, Workload.key(r[0], r[1]), Workload.value(r[2], r[3]));
        dense.apply(row(RowKind.INSERT, r, true));
        assertEquals(w.keys() - 1, ref.mismatches());
        assertEquals(ref.mismatches(), shared.get());
        assertEquals(ref.rows(), dense.rows());
    }

    private static final RowKind[] KINDS = {RowKind.INSERT, RowKind.UPDATE_BEFORE, RowKind.UPDATE_AFTER, RowKind.DELETE};

    /**
     * Random changelogs (right and wrong values, retractions of present and absent keys, keys the
     * table must not have: out of range, another dt, not a number, a null id) give the same
     * mismatch count after every row, the same counters and the same folded table in both folds,
     * for GenericRowData and BinaryRowData rows; the dense fold's shared counter reaches 0 exactly
     * when the string fold's does.
     */
    @Test
    void randomChangelogsFoldAsTheStringFold() {
        Workload w = new Workload(50);
        Random rnd = new Random(12);
        for (int round = 0; round < 200; round++) {
            Fold ref = new Fold(w::expected, w.keys());
            AtomicLong shared = new AtomicLong(w.keys());
            DenseFold dense = new DenseFold(w, shared);
            boolean binary = round % 2 == 1;
            for (int i = 0; i < 400; i++) {
                String[] r = randomRow(w, rnd);
                RowKind kind = KINDS[rnd.nextInt(KINDS.length)];
                if (rnd.nextInt(3) == 0) {
                    kind = RowKind.INSERT; // more puts than retractions, so folds often match
                }
                ref.apply(kind, Workload.key(r[0], r[1]), Workload.value(r[2], r[3]));
                dense.apply(row(kind, r, binary));
                assertEquals(ref.mismatches(), shared.get(), "round " + round + " row " + i + " " + kind + " " + String.join(",", String.valueOf(r[0]), r[1], r[2], r[3]));
            }
            assertEquals(ref.applied(), dense.applied());
            assertEquals(ref.retractOfAbsent(), dense.retractOfAbsent());
            assertEquals(ref.rows(), dense.rows());
        }
    }

    /** The workload's own changelog (+I per key, -U/+U per update) ends with no mismatch. */
    @Test
    void workloadChangelogMatches() {
        Workload w = new Workload(1000);
        AtomicLong shared = new AtomicLong(w.keys());
        DenseFold f = new DenseFold(w, shared);
        for (long k = 0; k < w.keys(); k++) {
            String[] v = w.expected(k).split("\\|");
            if (w.updated(k)) {
                f.apply(row(RowKind.INSERT, new String[] {Long.toString(k), Workload.dt(k), "old", "old"}, true));
                f.apply(row(RowKind.UPDATE_BEFORE, new String[] {Long.toString(k), Workload.dt(k), "old", "old"}, true));
                f.apply(row(RowKind.UPDATE_AFTER, new String[] {Long.toString(k), Workload.dt(k), v[0], v[1]}, true));
            } else {
                f.apply(row(RowKind.INSERT, new String[] {Long.toString(k), Workload.dt(k), v[0], v[1]}, true));
            }
        }
        assertEquals(0, shared.get());
        assertEquals(w.setatsChangelogRows(), f.applied());
        assertEquals(0, f.retractOfAbsent());
        assertEquals(w.keys(), f.rows().size());
    }

    /** An id that names key k in another spelling ("07", "+7") is not key k: the table must not have it. */
    @Test
    void nonCanonicalIdIsNotTheKey() {
        Workload w = new Workload(10);
        for (String id : new String[] {"07", "+7", " 7", "7 ", "", "99999999999999999999"}) {
            AtomicLong shared = new AtomicLong(w.keys());
            DenseFold f = new DenseFold(w, shared);
            String[] v = w.expected(7).split("\\|");
            f.apply(row(RowKind.INSERT, new String[] {id, Workload.dt(7), v[0], v[1]}, true));
            assertEquals(w.keys() + 1, shared.get(), "id '" + id + "'");
            assertEquals(1, f.rows().size());
        }
    }

    /** A key reaching two subtasks' dense folds fails the merge, as for string folds. */
    @Test
    void mergeRefusesAKeyInTwoDenseFolds() {
        Workload w = new Workload(10);
        AtomicLong shared = new AtomicLong(w.keys());
        DenseFold a = new DenseFold(w, shared);
        DenseFold b = new DenseFold(w, shared);
        String[] r = {"3", Workload.dt(3), "n", "a"};
        a.apply(row(RowKind.INSERT, r, false));
        b.apply(row(RowKind.INSERT, r, true));
        IllegalStateException e = assertThrows(IllegalStateException.class, () -> Fold.merge(List.of(a, b)));
        assertEquals(true, e.getMessage().contains("3|" + Workload.dt(3)), e.getMessage());
    }

    private static String[] randomRow(Workload w, Random rnd) {
        long k = rnd.nextInt((int) w.keys() + 5); // some out of range
        String id = Long.toString(k);
        String dt = Workload.dt(k);
        switch (rnd.nextInt(12)) {
            case 0:
                dt = Workload.dt(k + 1); // another partition: not a key of the table
                break;
            case 1:
                id = "x" + k;
                break;
            case 2:
                id = null;
                break;
            default:
                break;
        }
        String name;
        String address;
        if (k < w.keys() && rnd.nextBoolean()) {
            String[] v = w.expected(k).split("\\|");
            name = v[0];
            address = v[1];
        } else {
            name = rnd.nextBoolean() ? "n" + rnd.nextInt(3) : "é" + rnd.nextInt(3);
            address = rnd.nextInt(10) == 0 ? null : "addr-" + rnd.nextInt(3);
        }
        return new String[] {id, dt, name, address};
    }

    private static RowData row(RowKind kind, String[] f, boolean binary) {
        if (!binary) {
            GenericRowData g = new GenericRowData(kind, 4);
            for (int i = 0; i < 4; i++) {
                g.setField(i, f[i] == null ? null : StringData.fromString(f[i]));
            }
            return g;
        }
        BinaryRowData b = new BinaryRowData(4);
        BinaryRowWriter wr = new BinaryRowWriter(b);
        wr.writeRowKind(kind);
        for (int i = 0; i < 4; i++) {
            if (f[i] == null) {
                wr.setNullAt(i);
            } else {
                wr.writeString(i, StringData.fromString(f[i]));
            }
        }
        wr.complete();
        return b;
    }
}
