package io.setats.bench.flink;

import org.apache.flink.configuration.Configuration;
import org.apache.flink.streaming.api.functions.sink.RichSinkFunction;
import org.apache.flink.types.Row;
import org.apache.flink.types.RowKind;

import java.time.Instant;
import java.util.Arrays;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicLongArray;
import java.util.concurrent.atomic.LongAdder;
import java.util.function.Function;
import java.util.function.ToLongFunction;

/**
 * The end of a reader job: folds the changelog it receives ({@link Fold}) or records freshness
 * (arrival time minus the row's write time, carried in {@code name} as epoch ms) into static state
 * of this JVM. Every job of the benchmark runs in a MiniCluster inside the same JVM, so the driver
 * thread reads that state directly.
 *
 * <p>It runs at any parallelism: at the source's, it is chained to the source (a forward edge, no
 * network buffer, no serialization) and each subtask folds the keys of its own splits into its own
 * {@link Fold}; the folds share one mismatch counter, so the fold of the whole table is known to
 * match without a merge, and {@link State#merged()} joins them at the end (failing if a key reached
 * two subtasks). At parallelism 1 behind a shuffle, it is the single collector of earlier runs.
 */
public final class Collector extends RichSinkFunction<Row> {
    private static final long serialVersionUID = 1L;

    /** What the collector of the running reader job does. */
    public static final class State {
        /** One fold per collector subtask (null when recording freshness). */
        final ChangelogFold[] folds;
        final AtomicLong mismatches;
        final Percentiles latency;
        /** Write time -> the gateway's commit time, and commit time -> arrival (Setats only). */
        final Percentiles toCommit = new Percentiles();
        final Percentiles fromCommit = new Percentiles();
        final String freshPrefix;
        final long freshFrom;
        /**
         * Rows received, counted per row by every collector subtask: a LongAdder, not one shared
         * AtomicLong, whose cache line the subtasks' threads would pass back and forth at every row.
         */
        final LongAdder rows = new LongAdder();
        final AtomicLong firstNanos = new AtomicLong();
        /**
         * Counting reads only ({@link #count}), per collector subtask: System.nanoTime() of its
         * first row, of its last row (taken every 256th row and at the first), and its rows.
         */
        AtomicLongArray subtaskFirstNanos, subtaskLastNanos, subtaskRows;
        final AtomicLong doneNanos = new AtomicLong();

        State(ChangelogFold[] folds, AtomicLong mismatches, Percentiles latency, String freshPrefix, long freshFrom) {
            this.folds = folds;
            this.mismatches = mismatches;
            this.latency = latency;
            this.freshPrefix = freshPrefix;
            this.freshFrom = freshFrom;
        }

        /** Keys of the whole table whose folded value differs from the expected one. */
        long mismatches() {
            return mismatches.get();
        }

        /** Changelog rows the collector subtasks received. */
        long rows() {
            return rows.sum();
        }

        /** System.nanoTime() of the first row, 0 before it. */
        long firstNanos() {
            return firstNanos.get();
        }

        /** System.nanoTime() when the fold first equalled the expected table, 0 before. */
        long doneNanos() {
            return doneNanos.get();
        }

        /** -U/-D rows of keys a fold did not hold, over all subtasks. */
        long retractOfAbsent() {
            return sum(ChangelogFold::retractOfAbsent);
        }

        /** Changelog rows the folds applied, over all subtasks. */
        long applied() {
            return sum(ChangelogFold::applied);
        }

        private long sum(ToLongFunction<ChangelogFold> f) {
            long n = 0;
            for (ChangelogFold fold : folds) {
                synchronized (fold) {
                    n += f.applyAsLong(fold);
                }
            }
            return n;
        }

        /** The union of the subtasks' folds; throws if a key reached two subtasks. */
        Map<String, String> merged() {
            return Fold.merge(Arrays.asList(folds));
        }

        /** Notes a row's arrival at a collector subtask (the first one starts the clock). */
        void arrived() {
            rows.increment();
            if (firstNanos.get() == 0) { // written once: the read stays in every core's cache
                firstNanos.compareAndSet(0, System.nanoTime());
            }
        }

        /** Notes the time when the folds first equal the expected table. */
        void checkDone() {
            if (mismatches.get() == 0) {
                doneNanos.compareAndSet(0, System.nanoTime());
            }
        }

        /** Notes the time when a counting read reached its expected row count. */
        void countDone(long nanos) {
            doneNanos.compareAndSet(0, nanos);
        }

        /** The fold of collector subtask {@code i}. */
        ChangelogFold fold(int i) {
            if (i >= folds.length) {
                throw new IllegalStateException("collector subtask " + i + " of a fold for " + folds.length + " subtasks");
            }
            return folds[i];
        }
    }

    private static volatile State state;

    private transient State mine;
    private transient Fold fold;

    /**
     * Starts folding against {@code expected} (key to value) of {@code keys} keys with {@code
     * subtasks} collector subtasks; {@link State#doneNanos()} is set when no key differs.
     */
    static State fold(Function<String, String> expected, long keys, int subtasks) {
        AtomicLong mismatches = new AtomicLong(keys);
        Fold[] folds = new Fold[subtasks];
        for (int i = 0; i < subtasks; i++) {
            folds[i] = new Fold(expected, mismatches);
        }
        state = new State(folds, mismatches, null, null, 0);
        return state;
    }

    /**
     * Starts folding {@code w}'s changelog as {@code RowData} ({@link DenseFold}, for {@link
     * RowDataCollector}) with {@code subtasks} collector subtasks.
     */
    static State denseFold(Workload w, int subtasks) {
        AtomicLong mismatches = new AtomicLong(w.keys());
        DenseFold[] folds = new DenseFold[subtasks];
        ExpectedValues expected = new ExpectedValues(w);
        for (int i = 0; i < subtasks; i++) {
            folds[i] = new DenseFold(w, expected, mismatches);
        }
        state = new State(folds, mismatches, null, null, 0);
        return state;
    }

    /**
     * Starts counting the rows of a reader job that only counts ({@code --read-shape count}) with
     * {@code subtasks} collector subtasks: no fold, {@link State#doneNanos()} is set by the driver
     * ({@link State#countDone}).
     */
    static State count(int subtasks) {
        state = new State(null, null, null, null, 0);
        state.subtaskFirstNanos = new AtomicLongArray(subtasks);
        state.subtaskLastNanos = new AtomicLongArray(subtasks);
        state.subtaskRows = new AtomicLongArray(subtasks);
        return state;
    }

    /** The state of the running reader job. */
    static State current() {
        return state;
    }

    /**
     * Starts recording latencies of +I/+U rows whose id is {@code prefix + i} with {@code i >=
     * from} (the rows after the writer's warm-up).
     */
    static State freshness(String prefix, long from) {
        state = new State(null, null, new Percentiles(), prefix, from);
        return state;
    }

    @Override
    public void open(Configuration parameters) {
        mine = state;
        if (mine.folds != null) {
            fold = (Fold) mine.fold(getRuntimeContext().getTaskInfo().getIndexOfThisSubtask());
        }
    }

    @Override
    public void invoke(Row r, Context ctx) {
        State s = mine;
        s.arrived();
        if (fold != null) {
            synchronized (fold) {
                fold.apply(r.getKind(), Workload.key(r.getField(0), r.getField(1)), Workload.value(r.getField(2), r.getField(3)));
            }
            s.checkDone();
        } else if (r.getKind() == RowKind.INSERT || r.getKind() == RowKind.UPDATE_AFTER) {
            long now = System.currentTimeMillis();
            String id = (String) r.getField(0);
            if (id.startsWith(s.freshPrefix) && Long.parseLong(id.substring(s.freshPrefix.length())) >= s.freshFrom) {
                long written = Long.parseLong((String) r.getField(2));
                synchronized (s) {
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
