package io.setats.flink.source.reader;

import io.setats.flink.source.deserializer.ChangelogRecord;
import io.setats.flink.source.slot.SlotSyncPoints;
import io.setats.flink.source.split.SetatsSplit;
import io.setats.flink.source.split.SetatsSplitState;

import org.apache.flink.api.connector.source.SourceReaderContext;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.connector.base.source.reader.RecordEmitter;
import org.apache.flink.connector.base.source.reader.SingleThreadMultiplexSourceReaderBase;
import org.apache.flink.connector.base.source.reader.splitreader.SplitReader;

import javax.annotation.Nullable;

import java.util.List;
import java.util.Map;
import java.util.function.Supplier;

/**
 * SetatsSourceReader is the source reader of {@link io.setats.flink.source.SetatsCdcSource}: one
 * fetcher thread running a {@link SetatsSplitReader}, which multiplexes the DoGets of all the
 * reader's splits (no thread per split);
 * the split state is the next offset after the last emitted row ({@link SetatsSplitState}), which
 * {@code snapshotState} stores in each checkpoint.
 *
 * <p>With {@code slot.name} it registers sync points through {@link SlotSyncPoints}: the positions
 * a checkpoint stored are registered in the slot only once that checkpoint completes ({@code
 * notifyCheckpointComplete}, SPEC section 8), never in {@code snapshotState}.
 */
public final class SetatsSourceReader<T>
        extends SingleThreadMultiplexSourceReaderBase<ChangelogRecord, T, SetatsSplit, SetatsSplitState> {

    /**
     * @param fetched the batches the split readers made by {@code splitReaderSupplier} hand out
     *     ({@link SetatsSplitReader}'s constructor with it): those never recycled are released when
     *     this reader closes
     * @param syncPoints the slot's sync points (closed with this reader), or null without a slot
     */
    public SetatsSourceReader(
            Supplier<SplitReader<ChangelogRecord, SetatsSplit>> splitReaderSupplier,
            RecordEmitter<ChangelogRecord, T, SetatsSplitState> recordEmitter,
            Configuration config,
            SourceReaderContext context,
            FetchedBatches fetched,
            @Nullable SlotSyncPoints syncPoints) {
        super(splitReaderSupplier, recordEmitter, config, context);
        this.fetched = fetched;
        this.syncPoints = syncPoints;
    }

    private final FetchedBatches fetched;
    @Nullable private final SlotSyncPoints syncPoints;

    @Override
    public List<SetatsSplit> snapshotState(long checkpointId) {
        List<SetatsSplit> splits = super.snapshotState(checkpointId);
        if (syncPoints != null) {
            syncPoints.checkpointTaken(checkpointId, splits);
        }
        return splits;
    }

    @Override
    public void notifyCheckpointComplete(long checkpointId) throws Exception {
        super.notifyCheckpointComplete(checkpointId);
        if (syncPoints != null) {
            syncPoints.checkpointCompleted(checkpointId);
        }
    }

    @Override
    public void notifyCheckpointAborted(long checkpointId) throws Exception {
        super.notifyCheckpointAborted(checkpointId);
        if (syncPoints != null) {
            syncPoints.checkpointAborted(checkpointId);
        }
    }

    @Override
    public void close() throws Exception {
        try {
            super.close();
        } finally {
            // The fetchers are shut down: the fetches Flink still queued are dropped unrecycled.
            fetched.releaseAll();
            if (syncPoints != null) {
                syncPoints.close();
            }
        }
    }

    @Override
    protected void onSplitFinished(Map<String, SetatsSplitState> finishedSplitIds) {
        // A changelog split ends only when its partition was dropped (BucketStream#isRetired):
        // the enumerator forgets it (it never assigns it again, its checkpoints drop it).
        if (finishedSplitIds.isEmpty()) {
            return;
        }
        java.util.List<io.setats.flink.source.split.TableBucket> buckets = new java.util.ArrayList<>();
        for (SetatsSplitState state : finishedSplitIds.values()) {
            buckets.add(state.toSplit().tableBucket());
        }
        context.sendSourceEventToCoordinator(
                new io.setats.flink.source.enumerator.SplitsRetiredEvent(buckets));
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
