package io.setats.bench.flink;

import org.apache.flink.streaming.api.functions.sink.SinkFunction;
import org.apache.flink.types.Row;
import org.apache.flink.types.RowKind;

import java.time.Instant;

/**
 * The end of a reader job (parallelism 1): folds the changelog it receives ({@link Fold}) or
 * records freshness (arrival time minus the row's write time, carried in {@code name} as epoch ms)
 * into static state of this JVM. Every job of the benchmark runs in a MiniCluster inside the same
 * JVM, so the driver thread reads that state directly.
 */
public final class Collector implements SinkFunction<Row> {
    private static final long serialVersionUID = 1L;

    /** What the collector of the running reader job does. */
    public static final class State {
        final Fold fold;
        final Percentiles latency;
        /** Write time -> the gateway's commit time, and commit time -> arrival (Setats only). */
        final Percentiles toCommit = new Percentiles();
        final Percentiles fromCommit = new Percentiles();
        final String freshPrefix;
        final long freshFrom;
        volatile long rows;
        volatile long firstNanos;
        volatile long doneNanos;

        State(Fold fold, Percentiles latency, String freshPrefix, long freshFrom) {
            this.fold = fold;
            this.latency = latency;
            this.freshPrefix = freshPrefix;
            this.freshFrom = freshFrom;
        }
    }

    private static volatile State state;

    /** Starts folding into {@code fold}; {@link #doneNanos()} is set when it has no mismatch left. */
    static State fold(Fold fold) {
        state = new State(fold, null, null, 0);
        return state;
    }

    /**
     * Starts recording latencies of +I/+U rows whose id is {@code prefix + i} with {@code i >=
     * from} (the rows after the writer's warm-up).
     */
    static State freshness(String prefix, long from) {
        state = new State(null, new Percentiles(), prefix, from);
        return state;
    }

    @Override
    public void invoke(Row r, Context ctx) {
        State s = state;
        synchronized (s) {
            if (s.rows++ == 0) {
                s.firstNanos = System.nanoTime();
            }
            if (s.fold != null) {
                s.fold.apply(r.getKind(), Workload.key(r.getField(0), r.getField(1)), Workload.value(r.getField(2), r.getField(3)));
                if (s.doneNanos == 0 && s.fold.mismatches() == 0) {
                    s.doneNanos = System.nanoTime();
                }
            } else if (r.getKind() == RowKind.INSERT || r.getKind() == RowKind.UPDATE_AFTER) {
                long now = System.currentTimeMillis();
                String id = (String) r.getField(0);
                if (id.startsWith(s.freshPrefix) && Long.parseLong(id.substring(s.freshPrefix.length())) >= s.freshFrom) {
                    long written = Long.parseLong((String) r.getField(2));
                    s.latency.add(now - written);
                    if (r.getArity() > 4 && r.getField(4) instanceof Instant) {
                        long committed = ((Instant) r.getField(4)).toEpochMilli();
                        s.toCommit.add(committed - written);
                        s.fromCommit.add(now - committed);
                    }
                }
            }
        }
    }
}
