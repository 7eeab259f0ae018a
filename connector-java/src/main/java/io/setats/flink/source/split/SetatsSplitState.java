package io.setats.flink.source.split;

import javax.annotation.Nullable;

/**
 * SetatsSplitState is the mutable reading position of a {@link SetatsSplit} inside a source reader.
 * It is advanced by the record emitter right after a row was handed downstream, in the task's
 * mailbox thread, so a checkpoint taken between two rows stores exactly the offset after the last
 * emitted row (SPEC section 5: nothing lost, nothing repeated).
 *
 * <p>A split in its snapshot phase ({@code startup.mode = 'initial'}, SPEC section 9) keeps a
 * {@link SnapshotPosition} instead: {@link #snapshotRowEmitted}, {@link #catchUpRowEmitted} and
 * {@link #viewMovedTo} move it, and {@link #snapshotDone} turns the split into a changelog split at
 * the view's end offset, for good.
 */
public final class SetatsSplitState {

    private final TableBucket tableBucket;
    private long nextOffset;
    @Nullable private Long startingTimestampMs;
    private final String tableId;
    @Nullable private SnapshotPosition snapshot;

    public SetatsSplitState(SetatsSplit split) {
        this.tableBucket = split.tableBucket();
        this.nextOffset = split.startingOffset();
        this.startingTimestampMs = split.startingTimestampMs();
        this.tableId = split.tableId();
        this.snapshot = split.snapshot();
    }

    /** Whether the split is still in its snapshot phase. */
    public boolean inSnapshot() {
        return snapshot != null;
    }

    /** The snapshot phase's position, null once the changelog is read. */
    @Nullable
    public SnapshotPosition snapshot() {
        return snapshot;
    }

    /** A snapshot row of key {@code key} at view offset {@code viewOffset} was emitted. */
    public void snapshotRowEmitted(long viewOffset, byte[] key) {
        requireSnapshot();
        this.snapshot = new SnapshotPosition(viewOffset, key);
    }

    /**
     * A catch-up changelog row (a key already emitted, SPEC section 9) at {@code offset} was
     * emitted: the emitted keys are now at {@code offset + 1}.
     */
    public void catchUpRowEmitted(long offset) {
        requireSnapshot();
        this.snapshot = new SnapshotPosition(offset + 1, snapshot.afterKey());
    }

    /** The emitted keys are caught up to view offset {@code viewOffset} (a newer view). */
    public void viewMovedTo(long viewOffset) {
        requireSnapshot();
        if (snapshot.hasKey()) {
            this.snapshot = new SnapshotPosition(viewOffset, snapshot.afterKey());
        }
    }

    /** Every snapshot row of the view at {@code endOffset} was emitted: read the changelog from it. */
    public void snapshotDone(long endOffset) {
        requireSnapshot();
        this.snapshot = null;
        this.nextOffset = endOffset;
        this.startingTimestampMs = null;
    }

    private void requireSnapshot() {
        if (snapshot == null) {
            throw new IllegalStateException(tableBucket + " is not in its snapshot phase");
        }
    }

    public TableBucket tableBucket() {
        return tableBucket;
    }

    /** Offset of the next row to emit. */
    public long nextOffset() {
        return nextOffset;
    }

    /** Records that the row at {@code offset} was emitted: the position becomes {@code offset + 1}. */
    public void emitted(long offset) {
        if (snapshot != null) {
            throw new IllegalStateException(tableBucket + " emitted changelog offset " + offset + " during its snapshot");
        }
        this.nextOffset = offset + 1;
        this.startingTimestampMs = null;
    }

    /** The split to checkpoint: same bucket and table id, starting at the next row to emit. */
    public SetatsSplit toSplit() {
        if (snapshot != null) {
            return SetatsSplit.inSnapshot(tableBucket, snapshot, tableId);
        }
        return new SetatsSplit(tableBucket, nextOffset, startingTimestampMs, tableId);
    }
}
