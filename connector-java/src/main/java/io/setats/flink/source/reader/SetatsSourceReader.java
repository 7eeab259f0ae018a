package io.setats.flink.source.reader;

import io.setats.flink.source.deserializer.ChangelogRecord;
import io.setats.flink.source.split.SetatsSplit;
import io.setats.flink.source.split.SetatsSplitState;

import org.apache.flink.api.connector.source.SourceReaderContext;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.connector.base.source.reader.RecordEmitter;
import org.apache.flink.connector.base.source.reader.SingleThreadMultiplexSourceReaderBase;
import org.apache.flink.connector.base.source.reader.splitreader.SplitReader;

import java.util.Map;
import java.util.function.Supplier;

/**
 * SetatsSourceReader is the source reader of {@link io.setats.flink.source.SetatsCdcSource}: one
 * fetcher thread running a {@link SetatsSplitReader}, whose bucket streams push changelog rows;
 * the split state is the next offset after the last emitted row ({@link SetatsSplitState}), which
 * {@code snapshotState} stores in each checkpoint.
 */
public final class SetatsSourceReader<T>
        extends SingleThreadMultiplexSourceReaderBase<ChangelogRecord, T, SetatsSplit, SetatsSplitState> {

    public SetatsSourceReader(
            Supplier<SplitReader<ChangelogRecord, SetatsSplit>> splitReaderSupplier,
            RecordEmitter<ChangelogRecord, T, SetatsSplitState> recordEmitter,
            Configuration config,
            SourceReaderContext context) {
        super(splitReaderSupplier, recordEmitter, config, context);
    }

    @Override
    protected void onSplitFinished(Map<String, SetatsSplitState> finishedSplitIds) {
        // Changelog splits never end while the table exists; removed splits need no clean-up here.
    }

    @Override
    protected SetatsSplitState initializedState(SetatsSplit split) {
        return new SetatsSplitState(split);
    }

    @Override
    protected SetatsSplit toSplitType(String splitId, SetatsSplitState splitState) {
        return splitState.toSplit();
    }
}
