package io.setats.sqlrunner;

import java.io.OutputStream;
import java.io.PrintStream;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicLong;
import java.util.regex.Pattern;

/**
 * Standard output that counts the changelog rows printed on it.
 *
 * <p>Flink's {@code print} sink writes one line per row, {@code +I[a, b]}, {@code -U[...]},
 * {@code +U[...]} or {@code -D[...]}, optionally prefixed by {@code identifier>},
 * {@code identifier:subtask>} or {@code subtask>}; the runner prints the rows of a SELECT in the
 * same form. Every such line printed through {@link #println(String)} or {@link #println(Object)}
 * counts as one row. {@link #limitReached()} completes once {@code limit} rows were counted
 * (never when the limit is 0 or less). Lines are flushed at once, so a reader sees each row as it
 * arrives.
 */
public final class RowCountingStream extends PrintStream {

    /** A printed changelog row: optional {@code prefix> }, then RowKind short string and {@code [}. */
    static final Pattern ROW = Pattern.compile("^(?:[^\\[\\]]*?> )?[+-][IUD]\\[.*", Pattern.DOTALL);

    private final AtomicLong rows = new AtomicLong();
    private final long limit;
    private final CompletableFuture<Long> reached = new CompletableFuture<>();

    /**
     * @param out where the lines go (the process's original standard output)
     * @param limit number of rows after which {@link #limitReached()} completes; <= 0: never
     */
    public RowCountingStream(OutputStream out, long limit) {
        super(out, true);
        this.limit = limit;
    }

    /** Rows counted so far. */
    public long rows() {
        return rows.get();
    }

    /** Completes with the row count once {@code limit} rows were printed. */
    public CompletableFuture<Long> limitReached() {
        return reached;
    }

    @Override
    public void println(String x) {
        synchronized (this) {
            super.println(x);
        }
        count(x);
    }

    @Override
    public void println(Object x) {
        String s = String.valueOf(x);
        synchronized (this) {
            super.println(s);
        }
        count(s);
    }

    private void count(String line) {
        if (line != null && ROW.matcher(line).matches()) {
            long n = rows.incrementAndGet();
            if (limit > 0 && n >= limit) {
                reached.complete(n);
            }
        }
    }
}
