package io.setats.bench.flink;

import org.apache.flink.configuration.Configuration;
import org.apache.flink.streaming.api.functions.sink.RichSinkFunction;
import org.apache.flink.table.data.RowData;

/**
 * The folding end of a reader job that takes the source's {@link RowData} as the planner hands it
 * to a table sink ({@link FoldSinkFactory}, {@code 'connector' = 'bench-fold'}): no conversion to
 * {@code Row}, no strings per row ({@link DenseFold}). Same state, clock and mismatch counter as
 * {@link Collector}'s fold; one {@link DenseFold} per subtask, chained to the source at its
 * parallelism. In a counting read ({@link Collector#count()}) it counts the rows and folds none.
 */
final class RowDataCollector extends RichSinkFunction<RowData> {
    private static final long serialVersionUID = 1L;

    private transient Collector.State mine;
    private transient DenseFold fold;

    @Override
    public void open(Configuration parameters) {
        mine = Collector.current();
        if (mine.folds != null) {
            fold = (DenseFold) mine.fold(getRuntimeContext().getTaskInfo().getIndexOfThisSubtask());
        }
    }

    @Override
    public void invoke(RowData row, Context ctx) {
        mine.arrived();
        if (fold == null) {
            return;
        }
        synchronized (fold) {
            fold.apply(row);
        }
        mine.checkDone();
    }
}
