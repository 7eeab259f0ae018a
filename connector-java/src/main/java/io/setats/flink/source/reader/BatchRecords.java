package io.setats.flink.source.reader;

import io.setats.flink.source.deserializer.ChangelogRecord;
import io.setats.flink.utils.ArrowColumnarBatch;

import org.apache.flink.connector.base.source.reader.RecordsWithSplitIds;

import javax.annotation.Nullable;

import java.util.Collections;
import java.util.Iterator;
import java.util.List;
import java.util.Set;

/**
 * BatchRecords is what one fetch of {@link SetatsSplitReader} hands to the task thread: the rows of
 * one Arrow record batch of one split, emitted through one reused cursor record ({@link
 * ChangelogRecord#overBatch}: a {@code RowData} view over the Arrow buffers moved row by row, no object per row),
 * or a few position markers; plus the splits that finished. {@link #recycle()} (called by Flink's
 * {@code SourceReaderBase} once every row was emitted) hands the batch to its owner ({@link
 * FetchedBatches}), which releases its Arrow memory.
 */
final class BatchRecords implements RecordsWithSplitIds<ChangelogRecord> {

    /** Told by {@link #recycle()}: releases the batch. */
    interface Owner {
        void recycled(ArrowColumnarBatch batch);
    }

    @Nullable private String splitId;
    @Nullable private final ArrowColumnarBatch batch;
    @Nullable private final ChangelogRecord cursor;
    @Nullable private final Iterator<ChangelogRecord> records;
    private final Set<String> finished;
    @Nullable private final Owner owner;
    private int next;

    private BatchRecords(
            String splitId,
            @Nullable ArrowColumnarBatch batch,
            @Nullable ChangelogRecord cursor,
            @Nullable List<ChangelogRecord> records,
            Set<String> finished,
            @Nullable Owner owner) {
        this.splitId = splitId;
        this.batch = batch;
        this.cursor = cursor;
        this.records = records == null ? null : records.iterator();
        this.finished = finished;
        this.owner = owner;
    }

    /** The rows of {@code batch} through {@code cursor} (a cursor over that batch). */
    static BatchRecords ofBatch(
            String splitId, ArrowColumnarBatch batch, ChangelogRecord cursor, Set<String> finished, Owner owner) {
        return new BatchRecords(splitId, batch, cursor, null, finished, owner);
    }

    /** Records that own their data (position markers). */
    static BatchRecords ofRecords(String splitId, List<ChangelogRecord> records, Set<String> finished) {
        return new BatchRecords(splitId, null, null, records, finished, null);
    }

    @Nullable
    @Override
    public String nextSplit() {
        String id = splitId;
        splitId = null;
        return id;
    }

    @Nullable
    @Override
    public ChangelogRecord nextRecordFromSplit() {
        if (records != null) {
            return records.hasNext() ? records.next() : null;
        }
        if (next >= batch.numRows()) {
            return null;
        }
        cursor.moveTo(next++);
        return cursor;
    }

    @Override
    public Set<String> finishedSplits() {
        return finished;
    }

    @Override
    public void recycle() {
        if (batch != null) {
            owner.recycled(batch);
        }
    }

    static Set<String> none() {
        return Collections.emptySet();
    }
}
