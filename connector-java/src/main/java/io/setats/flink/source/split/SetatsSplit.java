package io.setats.flink.source.split;

import org.apache.flink.api.connector.source.SourceSplit;

import javax.annotation.Nullable;

import java.util.Objects;

/**
 * SetatsSplit is one (partition, bucket) of the table with the position its changelog is read
 * from (SPEC section 5). Immutable; the mutable reading position lives in {@link SetatsSplitState}.
 *
 * <p>The position is {@link #startingOffset()}: the offset of the next changelog row to emit. Only
 * for {@code from-timestamp} starts that the gateway could not resolve to an offset yet (the
 * timestamp lies beyond the bucket's newest row, LookupOffsets {@code resolved = false}) the split
 * also carries {@link #startingTimestampMs()}: the stream then starts at the first row whose commit
 * timestamp is {@code >=} it, and {@code startingOffset} is only the bucket's end offset when the
 * position was looked up. Once a row was emitted the position is always an offset.
 *
 * <p>{@link #tableId()} is the {@code TableInfo.table_id} of the table the position belongs to
 * (learned by the enumerator from {@code get-table} at start). The split reader puts it into {@code
 * ChangelogTicket.table_id}, so a split restored after the table was dropped and re-created fails
 * with the gateway's NotFound instead of reading the new table from an offset of the old one. It is
 * {@code ""} for splits restored from split serializer version 1 (the gateway then skips the check).
 *
 * <p>A split of {@code startup.mode = 'initial'} starts in its <b>snapshot phase</b> ({@link
 * #snapshot()} not null, SPEC section 9): it emits the bucket's merged rows as {@code +I} from one
 * view, then the changelog from that view's end offset; {@code startingOffset} is then unused (0).
 * Once the snapshot is done the split is an ordinary changelog split and never re-enters it.
 */
public final class SetatsSplit implements SourceSplit {

    private final TableBucket tableBucket;
    private final long startingOffset;
    @Nullable private final Long startingTimestampMs;
    private final String tableId;
    @Nullable private final SnapshotPosition snapshot;

    /**
     * @param tableId {@code TableInfo.table_id} of the table the position belongs to; {@code ""}
     *     when unknown (the gateway then does not check it)
     */
    public SetatsSplit(
            TableBucket tableBucket,
            long startingOffset,
            @Nullable Long startingTimestampMs,
            String tableId) {
        this(tableBucket, startingOffset, startingTimestampMs, tableId, null);
    }

    /**
     * @param snapshot the snapshot phase's position, or null for a changelog split
     */
    public SetatsSplit(
            TableBucket tableBucket,
            long startingOffset,
            @Nullable Long startingTimestampMs,
            String tableId,
            @Nullable SnapshotPosition snapshot) {
        this.snapshot = snapshot;
        if (snapshot != null && startingTimestampMs != null) {
            throw new IllegalArgumentException("a split in its snapshot phase has no start timestamp");
        }
        this.tableBucket = Objects.requireNonNull(tableBucket, "tableBucket");
        this.tableId = Objects.requireNonNull(tableId, "tableId");
        if (startingOffset < 0) {
            throw new IllegalArgumentException(
                    "startingOffset must be >= 0, got " + startingOffset + " for " + tableBucket);
        }
        this.startingOffset = startingOffset;
        this.startingTimestampMs = startingTimestampMs;
    }

    /** A split that reads from offset {@code startingOffset}, with no table id (""). */
    public static SetatsSplit atOffset(TableBucket tableBucket, long startingOffset) {
        return new SetatsSplit(tableBucket, startingOffset, null, "");
    }

    /** A split of the table with id {@code tableId} that reads from offset {@code startingOffset}. */
    public static SetatsSplit atOffset(TableBucket tableBucket, long startingOffset, String tableId) {
        return new SetatsSplit(tableBucket, startingOffset, null, tableId);
    }

    /**
     * A split that reads from the first row committed at or after {@code timestampMs}; {@code
     * endOffset} is the bucket's end offset when the timestamp was looked up.
     */
    public static SetatsSplit atTimestamp(TableBucket tableBucket, long endOffset, long timestampMs) {
        return new SetatsSplit(tableBucket, endOffset, timestampMs, "");
    }

    /** As {@link #atTimestamp(TableBucket, long, long)}, for the table with id {@code tableId}. */
    public static SetatsSplit atTimestamp(
            TableBucket tableBucket, long endOffset, long timestampMs, String tableId) {
        return new SetatsSplit(tableBucket, endOffset, timestampMs, tableId);
    }

    /** A split of {@code startup.mode = 'initial'} in its snapshot phase at {@code position}. */
    public static SetatsSplit inSnapshot(TableBucket tableBucket, SnapshotPosition position, String tableId) {
        return new SetatsSplit(tableBucket, 0, null, tableId, Objects.requireNonNull(position, "position"));
    }

    /** This split with table id {@code tableId} (same bucket and position). */
    public SetatsSplit withTableId(String tableId) {
        return new SetatsSplit(tableBucket, startingOffset, startingTimestampMs, tableId, snapshot);
    }

    /** The snapshot phase's position; null once the split reads the changelog. */
    @Nullable
    public SnapshotPosition snapshot() {
        return snapshot;
    }

    public TableBucket tableBucket() {
        return tableBucket;
    }

    /** Offset of the next changelog row to emit (see the class comment for timestamp starts). */
    public long startingOffset() {
        return startingOffset;
    }

    /** Commit-timestamp start (ms) of a split whose position is still a timestamp, else null. */
    @Nullable
    public Long startingTimestampMs() {
        return startingTimestampMs;
    }

    /** {@code TableInfo.table_id} of the table the position belongs to; {@code ""} when unknown. */
    public String tableId() {
        return tableId;
    }

    @Override
    public String splitId() {
        return tableBucket.splitId();
    }

    @Override
    public boolean equals(Object o) {
        if (this == o) {
            return true;
        }
        if (!(o instanceof SetatsSplit)) {
            return false;
        }
        SetatsSplit that = (SetatsSplit) o;
        return startingOffset == that.startingOffset
                && tableBucket.equals(that.tableBucket)
                && Objects.equals(startingTimestampMs, that.startingTimestampMs)
                && tableId.equals(that.tableId)
                && Objects.equals(snapshot, that.snapshot);
    }

    @Override
    public int hashCode() {
        return Objects.hash(tableBucket, startingOffset, startingTimestampMs, tableId, snapshot);
    }

    @Override
    public String toString() {
        String id = tableId.isEmpty() ? "" : ", table id " + tableId;
        if (snapshot != null) {
            return "SetatsSplit{" + tableBucket + ", " + snapshot + id + "}";
        }
        return startingTimestampMs == null
                ? "SetatsSplit{" + tableBucket + ", offset " + startingOffset + id + "}"
                : "SetatsSplit{" + tableBucket + ", first row committed at or after "
                        + startingTimestampMs + " ms (end offset " + startingOffset + ")" + id + "}";
    }
}
