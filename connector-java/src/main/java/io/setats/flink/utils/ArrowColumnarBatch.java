package io.setats.flink.utils;

import org.apache.arrow.vector.BigIntVector;
import org.apache.arrow.vector.FieldVector;
import org.apache.arrow.vector.TimeStampVector;
import org.apache.arrow.vector.TinyIntVector;
import org.apache.arrow.vector.VarBinaryVector;
import org.apache.arrow.vector.types.TimeUnit;
import org.apache.arrow.vector.types.pojo.ArrowType;
import org.apache.flink.table.data.RowData;
import org.apache.flink.table.data.binary.BinaryRowData;
import org.apache.flink.table.data.writer.BinaryRowWriter;
import org.apache.flink.types.RowKind;

import javax.annotation.Nullable;

import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * ArrowColumnarBatch is one record batch of a Setats stream (DoGet changelog or snapshot read)
 * that owns its Arrow memory and reads its rows through one reused {@link RowData} view over the
 * Arrow buffers ({@link ArrowRowView}): no per-row objects, no copy of fixed-width values, one
 * {@code BinaryStringData} per string read. Made by {@link ArrowRowDataReader#takeBatch}, which moves the stream root's
 * buffers into the batch (Arrow {@code TransferPair}, zero copy), so the stream may load its next
 * batch at once while this one is still read.
 *
 * <p>Lifetime: {@link #row(int)} returns one reused view, positioned at the row asked for (with its
 * RowKind from {@code _row_kind}); it and every value read from it (except strings and bytes, which
 * are views of a heap copy) are valid until the next {@link #row(int)} call or {@link #close()}; a
 * read after {@link #close()} throws IllegalStateException.
 * Whoever keeps a row longer copies it (Flink's {@code RowDataSerializer#copy} does, when object
 * reuse is off or across a network edge). {@link #close()} releases the Arrow memory, at most once,
 * from any thread; the batch's owner must call it (for the source reader: when Flink recycles the
 * fetched records, or when the reader closes). After it, {@link #row(int)} and the position
 * columns throw IllegalStateException.
 *
 * <p>Not thread-safe except {@link #close()}: one thread reads the rows (the task thread).
 */
public final class ArrowColumnarBatch implements AutoCloseable {

    private final List<FieldVector> owned;
    private final int numRows;
    private final ArrowRowView row;
    @Nullable private final TinyIntVector rowKind;
    @Nullable private final BigIntVector offset;
    @Nullable private final TimeStampVector commit;
    private final TimeUnit commitUnit;
    @Nullable private final VarBinaryVector key;
    private final AtomicBoolean closed = new AtomicBoolean();
    /** Set by {@link #emitBinaryRows()}: the one reused binary row and its writer. */
    @Nullable private BinaryRowData binary;
    @Nullable private BinaryRowWriter writer;

    ArrowColumnarBatch(
            List<FieldVector> owned,
            int numRows,
            ArrowRowView row,
            @Nullable TinyIntVector rowKind,
            @Nullable BigIntVector offset,
            @Nullable TimeStampVector commit,
            @Nullable VarBinaryVector key) {
        this.owned = owned;
        this.numRows = numRows;
        this.row = row;
        this.rowKind = rowKind;
        this.offset = offset;
        this.commit = commit;
        this.commitUnit = commit == null ? TimeUnit.MILLISECOND : ((ArrowType.Timestamp) commit.getField().getType()).getUnit();
        this.key = key;
    }

    /** Rows of the batch (>= 0). */
    public int numRows() {
        return numRows;
    }

    /**
     * Row {@code i} of the batch as the batch's one reused view (see the class comment for how long
     * it is valid).
     *
     * @throws IllegalStateException after {@link #close()}
     * @throws IndexOutOfBoundsException unless {@code 0 <= i < numRows()}
     * @throws IllegalArgumentException when {@code _row_kind} holds a value other than 0..3
     */
    public RowData row(int i) {
        checkOpen();
        if (i < 0 || i >= numRows) {
            throw new IndexOutOfBoundsException("Row " + i + " of a batch of " + numRows + " rows");
        }
        row.setRowId(i);
        row.setRowKind(rowKind(i));
        if (binary != null) {
            row.writeTo(writer, binary);
            return binary;
        }
        return row;
    }

    /**
     * From now on {@link #row(int)} returns one reused {@link BinaryRowData}, the row written into
     * it once per call, instead of the view: for jobs without object reuse, where Flink's {@code
     * RowDataSerializer#copy} copies every emitted row before the next chained operator, and copies
     * a {@code BinaryRowData} with one array copy but any other {@code RowData} field by field into
     * a {@code GenericRowData} (boxing every value, copying every string). The binary row's strings
     * point into its reused buffer: valid until the next {@link #row(int)} call, like the view.
     */
    public void emitBinaryRows() {
        if (binary == null) {
            binary = new BinaryRowData(row.getArity());
            writer = new BinaryRowWriter(binary);
        }
    }

    /** The RowKind of row {@code i} ({@code _row_kind}; INSERT without that column). */
    public RowKind rowKind(int i) {
        if (rowKind == null) {
            return RowKind.INSERT;
        }
        byte b = rowKind.get(i);
        if (b < 0 || b > 3) {
            throw new IllegalArgumentException(
                    String.format(
                            "Column '%s' holds %d, not a RowKind byte (0..3)", SetatsTypes.ROW_KIND_COLUMN, b));
        }
        return RowKind.fromByteValue(b);
    }

    /** Whether the batch has {@code _offset} and {@code _commit_timestamp} (changelog streams). */
    public boolean hasChangelogColumns() {
        return offset != null && commit != null;
    }

    /**
     * The {@code _offset} of row {@code i}.
     *
     * @throws IllegalStateException without that column or after {@link #close()}
     */
    public long offset(int i) {
        checkOpen();
        if (offset == null) {
            throw new IllegalStateException("The stream has no " + SetatsTypes.OFFSET_COLUMN + " column");
        }
        return offset.get(i);
    }

    /**
     * The {@code _commit_timestamp} of row {@code i}, ms since epoch.
     *
     * @throws IllegalStateException without that column or after {@link #close()}
     */
    public long commitTimestampMs(int i) {
        checkOpen();
        if (commit == null) {
            throw new IllegalStateException("The stream has no " + SetatsTypes.COMMIT_TIMESTAMP_COLUMN + " column");
        }
        return ArrowRowDataReader.toEpochMillis(commit.get(i), commitUnit);
    }

    /**
     * A copy of the {@code _key} of row {@code i} (snapshot reads: the row's encoded primary key,
     * the resume key).
     *
     * @throws IllegalStateException without that column or after {@link #close()}
     */
    public byte[] key(int i) {
        checkOpen();
        if (key == null) {
            throw new IllegalStateException("The stream has no " + SetatsTypes.KEY_COLUMN + " column");
        }
        return key.get(i);
    }

    /** Whether {@link #close()} was called. */
    public boolean isClosed() {
        return closed.get();
    }

    private void checkOpen() {
        if (closed.get()) {
            throw new IllegalStateException("The Arrow batch was released: its rows are no longer valid");
        }
    }

    /** Releases the batch's Arrow memory; idempotent, any thread. */
    @Override
    public void close() {
        if (closed.compareAndSet(false, true)) {
            row.release();
            for (FieldVector v : owned) {
                v.close();
            }
        }
    }
}
