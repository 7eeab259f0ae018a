package io.setats.flink.source.snapshot;

import org.apache.flink.table.data.RowData;

import java.util.Objects;

/**
 * SnapshotRow is one merged row of a bucket as a snapshot read returned it (SPEC sections 9 and
 * 13): the row's columns in the reader's read type ({@link RowData#getRowKind()} is always {@code
 * +I}) and its resume key, the opaque encoded primary key of the {@code _key} column. Rows of one
 * bucket come in ascending key order (unsigned byte order); {@link #key()} passed back as {@code
 * after_key} resumes the read right after this row. Immutable; owns its data (no Arrow memory).
 */
public final class SnapshotRow {

    private final byte[] key;
    private final RowData row;

    public SnapshotRow(byte[] key, RowData row) {
        this.key = Objects.requireNonNull(key, "key");
        this.row = Objects.requireNonNull(row, "row");
    }

    /** The row's encoded primary key (do not modify). */
    public byte[] key() {
        return key;
    }

    /** The row's columns, RowKind {@code +I}. */
    public RowData row() {
        return row;
    }

    @Override
    public String toString() {
        return "SnapshotRow{" + row + "}";
    }
}
