package io.setats.flink.source.deserializer;

import io.setats.flink.source.split.TableBucket;
import io.setats.flink.utils.ArrowColumnarBatch;

import org.apache.flink.annotation.Internal;
import org.apache.flink.table.data.GenericRowData;
import org.apache.flink.table.data.RowData;
import org.apache.flink.table.data.binary.BinaryRowData;

import javax.annotation.Nullable;

import java.util.Objects;

/**
 * ChangelogRecord is one row of a bucket's changelog as the source reader fetched it: the row's
 * columns (in the reader's read type, {@link RowData#getRowKind()} set from {@code _row_kind}),
 * its offset in the bucket, its commit timestamp (ms since epoch) and its bucket. The row may be of
 * any {@link RowData} class: read it with the typed getters, or {@link #field(int)}.
 *
 * <p>Lifetime: the source reader hands out the rows of one Arrow record batch through one reused
 * record (a cursor, {@link #overBatch}) whose row is one reused {@code RowData} view of the batch's Arrow buffers; the
 * record and its row are valid only while the deserialization schema handles them, and move to the
 * next row afterwards. Whoever keeps one longer keeps {@link #copy()} (Flink's own serializers copy
 * emitted {@code RowData} when they must: no object reuse, network edges). Records made with the
 * constructors and the other factories are immutable.
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
    @Nullable private RowData row;
    private long offset;
    private long commitTimestampMs;
    private final TableBucket tableBucket;
    @Nullable private byte[] snapshotKey;
    private final long viewOffset;
    @Nullable private RowData.FieldGetter[] getters;
    /** The batch a cursor reads ({@link #overBatch}); null for an immutable record. */
    @Nullable private ArrowColumnarBatch batch;
    private int index = -1;

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

    /**
     * A cursor over the rows of {@code batch} of {@code kind} ({@link Kind#CHANGELOG}, {@link
     * Kind#CATCH_UP}: offsets and commit timestamps from the batch; {@link Kind#SNAPSHOT}: keys from
     * the batch, view offset {@code viewOffset}); {@link #moveTo(int)} positions it. Used by the
     * source reader; see the class comment for the lifetime of what it returns.
     */
    @Internal
    public static ChangelogRecord overBatch(
            Kind kind, ArrowColumnarBatch batch, long viewOffset, TableBucket tableBucket, RowData.FieldGetter[] getters) {
        if (kind != Kind.CHANGELOG && kind != Kind.CATCH_UP && kind != Kind.SNAPSHOT) {
            throw new IllegalArgumentException(kind + " records have no rows");
        }
        ChangelogRecord r = new ChangelogRecord(kind, null, -1, 0, tableBucket, null, kind == Kind.SNAPSHOT ? viewOffset : -1);
        r.batch = Objects.requireNonNull(batch, "batch");
        r.getters = Objects.requireNonNull(getters, "getters");
        return r;
    }

    /**
     * Moves a cursor ({@link #overBatch}) to row {@code i} of its batch; the previous row's view is
     * reused.
     *
     * @throws IllegalStateException for a record that is not a cursor, or when the batch was released
     */
    @Internal
    public void moveTo(int i) {
        ArrowColumnarBatch b = batch;
        if (b == null) {
            throw new IllegalStateException(this + " is not a cursor over a batch");
        }
        row = b.row(i);
        index = i;
        if (kind != Kind.SNAPSHOT) {
            offset = b.offset(i);
            commitTimestampMs = b.commitTimestampMs(i);
        }
    }

    /**
     * This record as an immutable record that owns its data: for a cursor a copy of its current row
     * (a {@link GenericRowData} of Flink internal data read with the field getters, or a copy of a
     * {@link BinaryRowData} row, the key copied),
     * which stays valid after the batch is released; any other record is returned as it is.
     */
    public ChangelogRecord copy() {
        if (batch == null) {
            return this;
        }
        RowData r = row();
        RowData owned;
        if (r instanceof BinaryRowData) {
            // Its strings point into the cursor's reused buffer: copy the bytes, not the views.
            owned = ((BinaryRowData) r).copy();
        } else {
            GenericRowData g = new GenericRowData(r.getRowKind(), r.getArity());
            for (int i = 0; i < r.getArity(); i++) {
                g.setField(i, getters[i].getFieldOrNull(r));
            }
            owned = g;
        }
        ChangelogRecord c = new ChangelogRecord(kind, owned, offset, commitTimestampMs, tableBucket, snapshotKey(), viewOffset);
        c.getters = getters;
        return c;
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
        return kind == Kind.VIEW || kind == Kind.SNAPSHOT_DONE;
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
        if (batch != null && kind == Kind.SNAPSHOT) {
            if (index < 0) {
                throw new IllegalStateException(this + " is not positioned");
            }
            return batch.key(index);
        }
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
