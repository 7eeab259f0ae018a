package io.setats.flink.source.split;

import javax.annotation.Nullable;

/**
 * SetatsSplitState is the mutable reading position of a {@link SetatsSplit} inside a source reader.
 * It is advanced by the record emitter right after a row was handed downstream, in the task's
 * mailbox thread, so a checkpoint taken between two rows stores exactly the offset after the last
 * emitted row (SPEC section 5: nothing lost, nothing repeated).
 */
public final class SetatsSplitState {

    private final TableBucket tableBucket;
    private long nextOffset;
    @Nullable private Long startingTimestampMs;
    private final String tableId;

    public SetatsSplitState(SetatsSplit split) {
        this.tableBucket = split.tableBucket();
        this.nextOffset = split.startingOffset();
        this.startingTimestampMs = split.startingTimestampMs();
        this.tableId = split.tableId();
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
        this.nextOffset = offset + 1;
        this.startingTimestampMs = null;
    }

    /** The split to checkpoint: same bucket and table id, starting at the next row to emit. */
    public SetatsSplit toSplit() {
        return new SetatsSplit(tableBucket, nextOffset, startingTimestampMs, tableId);
    }
}
