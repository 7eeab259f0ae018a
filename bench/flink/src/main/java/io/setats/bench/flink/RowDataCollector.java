package io.setats.bench.flink;

import org.apache.flink.configuration.Configuration;
import org.apache.flink.streaming.api.functions.sink.RichSinkFunction;
import org.apache.flink.table.data.RowData;

/**
 * The folding end of a reader job that takes the source's {@link RowData} as the planner hands it
 * to a table sink ({@link FoldSinkFactory}, {@code 'connector' = 'bench-fold'}): no conversion to
 * {@code Row}, no strings per row ({@link DenseFold}). Same state, clock and mismatch counter as
 * {@link Collector}'s fold; one {@link DenseFold} per subtask, chained to the source at its
 * parallelism. In a counting read ({@link Collector#count(int)}) it counts the rows and folds none.
 */
final class RowDataCollector extends RichSinkFunction<RowData> {
    private static final long serialVersionUID = 1L;

    private transient Collector.State mine;
    private transient DenseFold fold;
    /** Counting reads: this subtask's index and rows; its first and (every 256th) last row time. */
    private transient int subtask;
    private transient long rows;

    @Override
    public void open(Configuration parameters) {
        mine = Collector.current();
        subtask = getRuntimeContext().getTaskInfo().getIndexOfThisSubtask();
        if (mine.folds != null) {
            fold = (DenseFold) mine.fold(subtask);
        }
    }

    @Override
    public void invoke(RowData row, Context ctx) {
        mine.arrived();
        if (fold == null) {
            if ((rows++ & 255) == 0) {
                long now = System.nanoTime();
                mine.subtaskFirstNanos.compareAndSet(subtask, 0, now);
                mine.subtaskLastNanos.set(subtask, now);
            }
            mine.subtaskRows.lazySet(subtask, rows);
            return;
        }
        synchronized (fold) {
            fold.apply(row);
        }
        mine.checkDone();
    }
}
