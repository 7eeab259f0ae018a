package io.setats.flink.source.batch;

import io.setats.flink.source.snapshot.SnapshotRow;

import org.apache.flink.api.connector.source.SourceOutput;
import org.apache.flink.api.connector.source.SourceReaderContext;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.connector.base.source.reader.RecordEmitter;
import org.apache.flink.connector.base.source.reader.SingleThreadMultiplexSourceReaderBase;
import org.apache.flink.connector.base.source.reader.splitreader.SplitReader;
import org.apache.flink.table.data.RowData;

import java.util.Map;
import java.util.function.Supplier;

/**
 * SnapshotSourceReader is one parallel reader of a batch scan (SPEC section 13): it asks the
 * {@link SnapshotEnumerator} for one split at a time (when it starts and whenever a split is
 * read), reads it with a {@link SnapshotSplitReader} and emits the merged rows as {@code +I}
 * RowData. Its checkpoint holds, per unfinished split, the key of the last row emitted.
 */
final class SnapshotSourceReader
        extends SingleThreadMultiplexSourceReaderBase<SnapshotRow, RowData, SnapshotSplit, SnapshotSplitState> {

    SnapshotSourceReader(
            Supplier<SplitReader<SnapshotRow, SnapshotSplit>> splitReader,
            Configuration config,
            SourceReaderContext context) {
        super(splitReader, new Emitter(), config, context);
    }

    private static final class Emitter implements RecordEmitter<SnapshotRow, RowData, SnapshotSplitState> {
        @Override
        public void emitRecord(SnapshotRow row, SourceOutput<RowData> output, SnapshotSplitState state) {
            output.collect(row.row());
            state.emitted(row.key());
        }
    }

    @Override
    public void start() {
        context.sendSplitRequest();
    }

    @Override
    protected void onSplitFinished(Map<String, SnapshotSplitState> finished) {
        context.sendSplitRequest();
    }

    @Override
    protected SnapshotSplitState initializedState(SnapshotSplit split) {
        return new SnapshotSplitState(split);
    }

    @Override
    protected SnapshotSplit toSplitType(String splitId, SnapshotSplitState state) {
        return state.toSplit();
    }
}
