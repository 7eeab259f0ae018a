package io.setats.flink.source.deserializer;

import io.setats.flink.source.split.TableBucket;

import org.apache.flink.table.data.RowData;

import javax.annotation.Nullable;

import java.util.Objects;

/**
 * ChangelogRecord is one row of a bucket's changelog as the source reader fetched it: the row's
 * columns (in the reader's read type, {@link RowData#getRowKind()} set from {@code _row_kind}),
 * its offset in the bucket, its commit timestamp (ms since epoch) and its bucket. Immutable; the
 * row is owned by the record (no Arrow memory behind it). The row may be of any {@link RowData}
 * class: changelog rows read from a stream are {@link
 * org.apache.flink.table.data.binary.BinaryRowData} (read them with the typed getters, or {@link
 * #field(int)}), and so are snapshot rows (BucketSnapshotReader).
 *
 * <p>With {@code startup.mode = 'initial'} (SPEC section 9) a split first yields {@link
 * Kind#SNAPSHOT} rows: the bucket's merged rows as {@code +I}, with offset -1 and commit timestamp
 * 0 (a merged row has no single changelog row), then, after a restore mid-snapshot, {@link
 * Kind#CATCH_UP} rows (changelog rows of keys already emitted, with their offsets), then {@link
 * Kind#CHANGELOG} rows. Deserialization schemas see only these three kinds; the reader's
 * position markers ({@link Kind#VIEW}, {@link Kind#SNAPSHOT_DONE}) carry no row and are not handed
 * to them.
 */
public final class ChangelogRecord {

    /** What a record is; see the class comment. */
    public enum Kind {
        /** A changelog row. */
        CHANGELOG,
        /** A merged row of the snapshot phase ({@code +I}). */
        SNAPSHOT,
        /** A changelog row of a key already emitted, read while a resumed snapshot catches up. */
        CATCH_UP,
        /** Marker: the emitted keys are caught up to the view offset; no row. */
        VIEW,
        /** Marker: the snapshot is done; the changelog follows from the view offset; no row. */
        SNAPSHOT_DONE
    }

    private final Kind kind;
    @Nullable private final RowData row;
    private final long offset;
    private final long commitTimestampMs;
    private final TableBucket tableBucket;
    @Nullable private final byte[] snapshotKey;
    private final long viewOffset;
    @Nullable private RowData.FieldGetter[] getters;

    public ChangelogRecord(RowData row, long offset, long commitTimestampMs, TableBucket tableBucket) {
        this(Kind.CHANGELOG, Objects.requireNonNull(row, "row"), offset, commitTimestampMs, tableBucket, null, -1);
    }

    /**
     * A changelog row whose fields {@link #field(int)} reads with {@code getters} (one per field of
     * the read type, shared by all rows of a stream).
     */
    public ChangelogRecord(
            RowData row, long offset, long commitTimestampMs, TableBucket tableBucket, RowData.FieldGetter[] getters) {
        this(row, offset, commitTimestampMs, tableBucket);
        this.getters = Objects.requireNonNull(getters, "getters");
    }

    private ChangelogRecord(
            Kind kind,
            @Nullable RowData row,
            long offset,
            long commitTimestampMs,
            TableBucket tableBucket,
            @Nullable byte[] snapshotKey,
            long viewOffset) {
        this.kind = kind;
        this.row = row;
        this.offset = offset;
        this.commitTimestampMs = commitTimestampMs;
        this.tableBucket = Objects.requireNonNull(tableBucket, "tableBucket");
        this.snapshotKey = snapshotKey;
        this.viewOffset = viewOffset;
    }

    /** A merged row of a snapshot at view offset {@code viewOffset} with its encoded key. */
    public static ChangelogRecord snapshotRow(RowData row, byte[] key, long viewOffset, TableBucket tableBucket) {
        return new ChangelogRecord(
                Kind.SNAPSHOT, Objects.requireNonNull(row, "row"), -1, 0, tableBucket,
                Objects.requireNonNull(key, "key"), viewOffset);
    }

    /** A changelog row of a key already emitted by a resumed snapshot (catch-up). */
    public static ChangelogRecord catchUpRow(RowData row, long offset, long commitTimestampMs, TableBucket tableBucket) {
        return new ChangelogRecord(Kind.CATCH_UP, Objects.requireNonNull(row, "row"), offset, commitTimestampMs, tableBucket, null, -1);
    }

    /**
     * A merged row of a snapshot, as {@link #snapshotRow(RowData, byte[], long, TableBucket)},
     * whose fields {@link #field(int)} reads with {@code getters} (one per field of the read type;
     * snapshot reads return {@link org.apache.flink.table.data.binary.BinaryRowData}).
     */
    public static ChangelogRecord snapshotRow(
            RowData row, byte[] key, long viewOffset, TableBucket tableBucket, RowData.FieldGetter[] getters) {
        ChangelogRecord r = snapshotRow(row, key, viewOffset, tableBucket);
        r.getters = Objects.requireNonNull(getters, "getters");
        return r;
    }

    /** Marker: the emitted keys are caught up to {@code viewOffset}. */
    public static ChangelogRecord viewMarker(long viewOffset, TableBucket tableBucket) {
        return new ChangelogRecord(Kind.VIEW, null, -1, 0, tableBucket, null, viewOffset);
    }

    /** Marker: the snapshot at {@code endOffset} is done; the changelog follows from it. */
    public static ChangelogRecord snapshotDone(long endOffset, TableBucket tableBucket) {
        return new ChangelogRecord(Kind.SNAPSHOT_DONE, null, -1, 0, tableBucket, null, endOffset);
    }

    /** What this record is. */
    public Kind kind() {
        return kind;
    }

    /** Whether this is a position marker without a row ({@link Kind#VIEW}, {@link Kind#SNAPSHOT_DONE}). */
    public boolean isMarker() {
        return row == null;
    }

    /** The row's columns with its RowKind (+I, -U, +U, -D). */
    public RowData row() {
        if (row == null) {
            throw new IllegalStateException(kind + " marker of " + tableBucket + " has no row");
        }
        return row;
    }

    /**
     * Field {@code pos} of the row as Flink's internal data object ({@code StringData}, {@code
     * Integer}, ...; null for SQL NULL), whatever the row's class.
     *
     * @throws IllegalStateException for a marker, or a row of a class without generic access
     *     created without field getters
     */
    @Nullable
    public Object field(int pos) {
        RowData r = row();
        if (r instanceof org.apache.flink.table.data.GenericRowData) {
            return ((org.apache.flink.table.data.GenericRowData) r).getField(pos);
        }
        if (getters == null) {
            throw new IllegalStateException("The row of " + this + " has no field getters");
        }
        return getters[pos].getFieldOrNull(r);
    }

    /** The encoded primary key of a {@link Kind#SNAPSHOT} row; null for other kinds. */
    @Nullable
    public byte[] snapshotKey() {
        return snapshotKey;
    }

    /** The view offset of a {@link Kind#SNAPSHOT} row or a marker; -1 for other kinds. */
    public long viewOffset() {
        return viewOffset;
    }

    /** Offset of the row in its bucket's changelog; -1 for snapshot rows and markers. */
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
        if (kind != Kind.CHANGELOG) {
            return "ChangelogRecord{" + kind + " " + tableBucket + " @" + offset + " view=" + viewOffset + " " + row + "}";
        }
        return "ChangelogRecord{" + tableBucket + " @" + offset + " t=" + commitTimestampMs + " " + row + "}";
    }
}
