package io.setats.flink.source.batch;

import io.setats.flink.client.GatewayClient;
import io.setats.flink.source.SetatsSourceConfig;
import io.setats.flink.source.snapshot.BucketSnapshotReader;
import io.setats.flink.source.snapshot.SnapshotRow;

import org.apache.flink.connector.base.source.reader.RecordsBySplits;
import org.apache.flink.connector.base.source.reader.RecordsWithSplitIds;
import org.apache.flink.connector.base.source.reader.splitreader.SplitReader;
import org.apache.flink.connector.base.source.reader.splitreader.SplitsAddition;
import org.apache.flink.connector.base.source.reader.splitreader.SplitsChange;
import org.apache.flink.table.types.logical.RowType;

import javax.annotation.Nullable;

import java.io.IOException;
import java.util.ArrayDeque;
import java.util.Deque;
import java.util.List;

/**
 * SnapshotSplitReader reads the splits of one batch-scan reader one after the other, each with a
 * {@link BucketSnapshotReader} (the connector's one snapshot reading, shared with {@code
 * setats-cdc} {@code startup.mode = 'initial'}): one fetch = one Arrow record batch of merged rows
 * ({@code +I}), converted. The read type's columns go to the gateway as the projection.
 *
 * <p>Limit push-down: with {@code limit >= 0} the reader stops once it has returned that many rows
 * in total (over all its splits) and finishes every further split without reading it; the gateway
 * is asked for batches of at most {@code limit} rows. Flink's own Limit above the source trims the
 * union of the readers to the exact count.
 *
 * <p>Runs in the fetcher thread only; {@link #wakeUp()} has nothing to do because a fetch returns
 * after one record batch of a bounded read.
 */
final class SnapshotSplitReader implements SplitReader<SnapshotRow, SnapshotSplit> {

    private final SetatsSourceConfig config;
    private final RowType readType;
    private final long limit;
    private final Deque<SnapshotSplit> splits = new ArrayDeque<>();
    @Nullable private GatewayClient client;
    @Nullable private BucketSnapshotReader current;
    @Nullable private SnapshotSplit currentSplit;
    private long returned;

    /** @param limit most rows to return in total; negative: no limit */
    SnapshotSplitReader(SetatsSourceConfig config, RowType readType, long limit) {
        this.config = config;
        this.readType = readType;
        this.limit = limit;
    }

    private boolean limitReached() {
        return limit >= 0 && returned >= limit;
    }

    @Override
    public RecordsWithSplitIds<SnapshotRow> fetch() throws IOException {
        RecordsBySplits.Builder<SnapshotRow> out = new RecordsBySplits.Builder<>();
        if (current == null) {
            currentSplit = splits.poll();
            if (currentSplit == null) {
                return out.build();
            }
            if (limitReached()) {
                out.addFinishedSplit(currentSplit.splitId());
                currentSplit = null;
                return out.build();
            }
            if (client == null) {
                client = config.connect();
            }
            int maxBatchRows = limit >= 0 ? (int) Math.min(limit - returned, 4096) : 0;
            current =
                    BucketSnapshotReader.open(
                            client, config.database(), config.table(), currentSplit.tableId(),
                            currentSplit.bucket(), readType, currentSplit.afterKey(), maxBatchRows, true);
        }
        String id = currentSplit.splitId();
        List<SnapshotRow> batch = current.nextBatch();
        if (batch != null && limit >= 0 && returned + batch.size() > limit) {
            batch = batch.subList(0, (int) (limit - returned));
        }
        if (batch != null) {
            returned += batch.size();
            out.addAll(id, batch);
        }
        if (batch == null || limitReached()) {
            closeCurrent();
            out.addFinishedSplit(id);
        }
        return out.build();
    }

    @Override
    public void handleSplitsChanges(SplitsChange<SnapshotSplit> change) {
        if (!(change instanceof SplitsAddition)) {
            throw new UnsupportedOperationException("Unsupported split change " + change.getClass());
        }
        splits.addAll(change.splits());
    }

    @Override
    public void wakeUp() {}

    private void closeCurrent() {
        if (current != null) {
            current.close();
            current = null;
        }
        currentSplit = null;
    }

    @Override
    public void close() {
        closeCurrent();
        if (client != null) {
            client.close();
            client = null;
        }
    }
}
