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
 */
public final class SetatsSplit implements SourceSplit {

    private final TableBucket tableBucket;
    private final long startingOffset;
    @Nullable private final Long startingTimestampMs;

    public SetatsSplit(TableBucket tableBucket, long startingOffset, @Nullable Long startingTimestampMs) {
        this.tableBucket = Objects.requireNonNull(tableBucket, "tableBucket");
        if (startingOffset < 0) {
            throw new IllegalArgumentException(
                    "startingOffset must be >= 0, got " + startingOffset + " for " + tableBucket);
        }
        this.startingOffset = startingOffset;
        this.startingTimestampMs = startingTimestampMs;
    }

    /** A split that reads from offset {@code startingOffset}. */
    public static SetatsSplit atOffset(TableBucket tableBucket, long startingOffset) {
        return new SetatsSplit(tableBucket, startingOffset, null);
    }

    /**
     * A split that reads from the first row committed at or after {@code timestampMs}; {@code
     * endOffset} is the bucket's end offset when the timestamp was looked up.
     */
    public static SetatsSplit atTimestamp(TableBucket tableBucket, long endOffset, long timestampMs) {
        return new SetatsSplit(tableBucket, endOffset, timestampMs);
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
                && Objects.equals(startingTimestampMs, that.startingTimestampMs);
    }

    @Override
    public int hashCode() {
        return Objects.hash(tableBucket, startingOffset, startingTimestampMs);
    }

    @Override
    public String toString() {
        return startingTimestampMs == null
                ? "SetatsSplit{" + tableBucket + ", offset " + startingOffset + "}"
                : "SetatsSplit{" + tableBucket + ", first row committed at or after "
                        + startingTimestampMs + " ms (end offset " + startingOffset + ")}";
    }
}
