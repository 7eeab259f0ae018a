package io.setats.bench.flink;

import org.apache.flink.table.data.RowData;
import org.apache.flink.table.data.StringData;
import org.apache.flink.table.data.binary.BinarySegmentUtils;
import org.apache.flink.table.data.binary.BinaryStringData;
import org.apache.flink.types.RowKind;

import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The fold of a changelog of {@link Workload}'s table read as Flink {@link RowData} ({@code id,
 * dt, name, address}), with the same rules and the same exact mismatch count as {@link Fold}
 * ({@code +I}/{@code +U} put, {@code -U}/{@code -D} remove), but without strings per row: a row
 * whose {@code (id, dt)} is a key of the workload in its canonical form ({@code id} the decimal
 * {@code k} with no sign or leading zero, {@code 0 <= k < keys}, {@code dt = Workload.dt(k)}) is
 * kept in an array slot indexed by {@code k}: its value ({@code name|address}, UTF-8) is compared
 * byte for byte, in the row's own memory, with the expected value ({@link ExpectedValues}, written
 * once before the read), so a matching value costs no allocation; only a value that differs is
 * copied (into a {@code byte[]}: the source's row may be reused after {@link #apply} returns, with
 * object reuse). Any other key (a key the table must not have) goes to a string {@link Fold} whose
 * expected table is empty, sharing the mismatch counter.
 * Not thread-safe; one per collector subtask, like {@link Fold}.
 */
public final class DenseFold implements ChangelogFold {
    private final Workload workload;
    private final AtomicLong mismatches;
    private final ExpectedValues expected;
    /** Whether the fold holds key k. */
    private final boolean[] present;
    /** Whether the fold holds key k with its expected value. */
    private final boolean[] matches;
    /**
     * The value (name|address, UTF-8) of each key k held with another value than the expected one
     * at differing[k], null otherwise: an array, not a map, so that a row costs no boxed key and no
     * hash lookup (the +I of every updated key differs until its +U comes).
     */
    private final byte[][] differing;
    private final Fold foreign;
    /** The head of an id or dt (19 bytes: longer ids are not keys of the workload). */
    private final byte[] keyBuf = new byte[19];
    private long applied;
    private long retractOfAbsent;

    /**
     * A fold of {@code workload}'s changelog whose mismatches go to {@code mismatches}, which starts
     * at {@code workload.keys()} (every key missing) and may be shared with the folds of the other
     * subtasks (exact while no key reaches two folds; {@link Fold#merge} checks that).
     */
    public DenseFold(Workload workload, AtomicLong mismatches) {
        this(workload, new ExpectedValues(workload), mismatches);
    }

    /** The same with the workload's expected values built once for every subtask's fold. */
    DenseFold(Workload workload, ExpectedValues expected, AtomicLong mismatches) {
        if (workload.keys() > Integer.MAX_VALUE - 8) {
            throw new IllegalArgumentException("a dense fold holds at most 2^31 - 9 keys, not " + workload.keys());
        }
        this.workload = workload;
        this.mismatches = mismatches;
        this.expected = expected;
        this.present = new boolean[(int) workload.keys()];
        this.matches = new boolean[(int) workload.keys()];
        this.differing = new byte[(int) workload.keys()][];
        this.foreign = new Fold(key -> null, mismatches);
    }

    /** Applies one changelog row ({@code id, dt, name, address} of any RowData class, with its RowKind). */
    public void apply(RowData row) {
        RowKind kind = row.getRowKind();
        StringData id = row.isNullAt(0) ? null : row.getString(0);
        StringData dt = row.isNullAt(1) ? null : row.getString(1);
        long k = denseKey(id, dt);
        if (k < 0) {
            applied++;
            foreign.apply(kind, Workload.key(id, dt), Workload.value(field(row, 2), field(row, 3)));
            return;
        }
        int i = (int) k;
        applied++;
        boolean before = matches[i];
        boolean after;
        switch (kind) {
            case INSERT:
            case UPDATE_AFTER:
                StringData name = row.isNullAt(2) ? null : row.getString(2);
                StringData address = row.isNullAt(3) ? null : row.getString(3);
                present[i] = true;
                after = expected.matches(i, name == null ? null : binary(name), address == null ? null : binary(address));
                differing[i] = after ? null : valueBytes(name, address);
                break;
            case UPDATE_BEFORE:
            case DELETE:
                if (!present[i]) {
                    retractOfAbsent++;
                }
                present[i] = false;
                differing[i] = null;
                after = false; // every key of the workload has a value
                break;
            default:
                throw new IllegalArgumentException("row kind " + kind);
        }
        matches[i] = after;
        if (before && !after) {
            mismatches.incrementAndGet();
        } else if (!before && after) {
            mismatches.decrementAndGet();
        }
    }

    private static String field(RowData row, int pos) {
        return row.isNullAt(pos) ? null : row.getString(pos).toString();
    }

    /** k when (id, dt) is the canonical key k of the workload, else -1. */
    private long denseKey(StringData id, StringData dt) {
        if (id == null || dt == null) {
            return -1;
        }
        int len = head(id, keyBuf);
        if (len == 0 || len > 18 || (len > 1 && keyBuf[0] == '0')) {
            return -1;
        }
        long k = 0;
        for (int j = 0; j < len; j++) {
            int c = keyBuf[j] - '0';
            if (c < 0 || c > 9) {
                return -1;
            }
            k = k * 10 + c;
        }
        if (k >= workload.keys()) {
            return -1;
        }
        // Workload.dt(k): "2026120" followed by the digit 1 + k % 4.
        if (head(dt, keyBuf) != DT_PREFIX.length + 1 || keyBuf[DT_PREFIX.length] != '1' + k % 4) {
            return -1;
        }
        for (int j = 0; j < DT_PREFIX.length; j++) {
            if (keyBuf[j] != DT_PREFIX[j]) {
                return -1;
            }
        }
        return k;
    }

    /** Copies the first bytes of {@code s} (at most buf.length) into buf; returns s's length in bytes. */
    private static int head(StringData s, byte[] buf) {
        BinaryStringData b = binary(s);
        int len = b.getSizeInBytes();
        BinarySegmentUtils.copyToBytes(b.getSegments(), b.getOffset(), buf, 0, Math.min(len, buf.length));
        return len;
    }

    private static final byte[] DT_PREFIX = "2026120".getBytes(StandardCharsets.US_ASCII);
    private static final byte[] NULL = "null".getBytes(StandardCharsets.US_ASCII);

    private static BinaryStringData binary(StringData s) {
        if (s instanceof BinaryStringData) {
            BinaryStringData b = (BinaryStringData) s;
            b.ensureMaterialized();
            return b;
        }
        return BinaryStringData.fromBytes(s.toBytes());
    }

    /** name|address as one new byte[] ("null" for a null field, as {@link Workload#value}). */
    private static byte[] valueBytes(StringData name, StringData address) {
        BinaryStringData n = name == null ? null : binary(name);
        BinaryStringData a = address == null ? null : binary(address);
        int nl = n == null ? NULL.length : n.getSizeInBytes();
        int al = a == null ? NULL.length : a.getSizeInBytes();
        byte[] v = new byte[nl + 1 + al];
        copy(n, v, 0);
        v[nl] = '|';
        copy(a, v, nl + 1);
        return v;
    }

    private static void copy(BinaryStringData s, byte[] to, int off) {
        if (s == null) {
            System.arraycopy(NULL, 0, to, off, NULL.length);
        } else {
            BinarySegmentUtils.copyToBytes(s.getSegments(), s.getOffset(), to, off, s.getSizeInBytes());
        }
    }

    @Override
    public long applied() {
        return applied;
    }

    @Override
    public long retractOfAbsent() {
        return retractOfAbsent + foreign.retractOfAbsent();
    }

    /** The folded table as strings (built on each call: for the end of a read, not per row). */
    @Override
    public Map<String, String> rows() {
        Map<String, String> all = new HashMap<>(foreign.rows());
        for (int k = 0; k < present.length; k++) {
            if (present[k]) {
                byte[] v = differing[k];
                all.put(Workload.key(Integer.toString(k), Workload.dt(k)), v == null ? expected.value(k) : new String(v, StandardCharsets.UTF_8));
            }
        }
        return all;
    }
}
