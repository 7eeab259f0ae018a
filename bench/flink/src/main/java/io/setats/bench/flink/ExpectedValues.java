package io.setats.bench.flink;

import org.apache.flink.core.memory.MemorySegment;
import org.apache.flink.core.memory.MemorySegmentFactory;
import org.apache.flink.table.data.binary.BinarySegmentUtils;
import org.apache.flink.table.data.binary.BinaryStringData;

/**
 * Every key's final value of a {@link Workload} ({@link Workload#expectedValueBytes}, {@code
 * name|address}, ASCII) written once into one arena, so that {@link DenseFold} compares a row's
 * {@code name} and {@code address} bytes with them in place, per row with no allocation and no
 * base-36 formatting. Built before a reader job starts (outside its measured window): about 36
 * bytes per key (1M keys: ~30 MB of values and 8 MB of offsets). Immutable, shared by the folds
 * of all collector subtasks.
 */
final class ExpectedValues {
    private static final byte[] NULL = "null".getBytes(java.nio.charset.StandardCharsets.US_ASCII);
    private static final MemorySegment[] NULL_SEGMENTS = {MemorySegmentFactory.wrap(NULL)};

    private final byte[] arena;
    private final MemorySegment[] segments;
    /** Key k's value starts at start[k] and ends at start[k + 1]. */
    private final int[] start;
    /** Offset of key k's '|' in the arena. */
    private final int[] bar;

    ExpectedValues(Workload w) {
        if (w.keys() > Integer.MAX_VALUE / Workload.MAX_VALUE_BYTES) {
            throw new IllegalArgumentException("expected values of at most " + Integer.MAX_VALUE / Workload.MAX_VALUE_BYTES
                    + " keys in one arena, not " + w.keys());
        }
        int keys = (int) w.keys();
        byte[] buf = new byte[Workload.MAX_VALUE_BYTES];
        start = new int[keys + 1];
        bar = new int[keys];
        byte[] a = new byte[keys * 32];
        int n = 0;
        for (int k = 0; k < keys; k++) {
            int len = w.expectedValueBytes(k, buf);
            if (n + len > a.length) {
                a = java.util.Arrays.copyOf(a, Math.max(n + len, a.length + a.length / 2));
            }
            System.arraycopy(buf, 0, a, n, len);
            start[k] = n;
            int b = 0;
            while (buf[b] != '|') {
                b++;
            }
            bar[k] = n + b;
            n += len;
        }
        start[keys] = n;
        arena = a;
        segments = new MemorySegment[] {MemorySegmentFactory.wrap(arena)};
    }

    /**
     * Whether {@code name|address} (a null field spelled {@code null}, as {@link Workload#value})
     * equals key k's expected value, compared in place.
     */
    boolean matches(int k, BinaryStringData name, BinaryStringData address) {
        int b = bar[k];
        return equal(name, start[k], b - start[k]) && equal(address, b + 1, start[k + 1] - b - 1);
    }

    /** Key k's expected value as a String (for the folded table at the end of a read). */
    String value(int k) {
        return new String(arena, start[k], start[k + 1] - start[k], java.nio.charset.StandardCharsets.US_ASCII);
    }

    private boolean equal(BinaryStringData s, int off, int len) {
        if (s == null) {
            return len == NULL.length && BinarySegmentUtils.equals(NULL_SEGMENTS, 0, segments, off, len);
        }
        return s.getSizeInBytes() == len && BinarySegmentUtils.equals(s.getSegments(), s.getOffset(), segments, off, len);
    }
}
