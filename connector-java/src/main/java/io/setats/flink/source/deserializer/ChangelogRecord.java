package io.setats.flink.source.deserializer;

import io.setats.flink.source.split.TableBucket;

import org.apache.flink.table.data.RowData;

import java.util.Objects;

/**
 * ChangelogRecord is one row of a bucket's changelog as the source reader fetched it: the row's
 * columns (in the reader's read type, {@link RowData#getRowKind()} set from {@code _row_kind}),
 * its offset in the bucket, its commit timestamp (ms since epoch) and its bucket. Immutable; the
 * row is owned by the record (no Arrow memory behind it).
 */
public final class ChangelogRecord {

    private final RowData row;
    private final long offset;
    private final long commitTimestampMs;
    private final TableBucket tableBucket;

    public ChangelogRecord(RowData row, long offset, long commitTimestampMs, TableBucket tableBucket) {
        this.row = Objects.requireNonNull(row, "row");
        this.offset = offset;
        this.commitTimestampMs = commitTimestampMs;
        this.tableBucket = Objects.requireNonNull(tableBucket, "tableBucket");
    }

    /** The row's columns with its RowKind (+I, -U, +U, -D). */
    public RowData row() {
        return row;
    }

    /** Offset of the row in its bucket's changelog. */
    public long offset() {
        return offset;
    }

    /** Commit timestamp of the row, ms since epoch (non-decreasing per bucket). */
    public long commitTimestampMs() {
        return commitTimestampMs;
    }

    /** The (partition, bucket) the row belongs to. */
    public TableBucket tableBucket() {
        return tableBucket;
    }

    @Override
    public String toString() {
        return "ChangelogRecord{" + tableBucket + " @" + offset + " t=" + commitTimestampMs + " " + row + "}";
    }
}
