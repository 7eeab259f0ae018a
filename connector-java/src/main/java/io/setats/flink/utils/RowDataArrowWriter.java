package io.setats.flink.utils;

import org.apache.flink.table.data.DecimalData;
import org.apache.flink.table.data.RowData;
import org.apache.flink.table.data.TimestampData;
import org.apache.flink.table.data.binary.BinaryStringData;
import org.apache.flink.core.memory.MemorySegment;
import org.apache.flink.table.types.logical.DecimalType;
import org.apache.flink.table.types.logical.LocalZonedTimestampType;
import org.apache.flink.table.types.logical.LogicalType;
import org.apache.flink.table.types.logical.RowType;
import org.apache.flink.table.types.logical.TimestampType;

import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.vector.BigIntVector;
import org.apache.arrow.vector.BitVector;
import org.apache.arrow.vector.DateDayVector;
import org.apache.arrow.vector.DecimalVector;
import org.apache.arrow.vector.FieldVector;
import org.apache.arrow.vector.Float4Vector;
import org.apache.arrow.vector.Float8Vector;
import org.apache.arrow.vector.IntVector;
import org.apache.arrow.vector.SmallIntVector;
import org.apache.arrow.vector.TimeMilliVector;
import org.apache.arrow.vector.TimeStampVector;
import org.apache.arrow.vector.TinyIntVector;
import org.apache.arrow.vector.VarBinaryVector;
import org.apache.arrow.vector.VarCharVector;
import org.apache.arrow.vector.VectorSchemaRoot;

import java.util.List;

/**
 * RowDataArrowWriter appends Flink {@link RowData} rows to the vectors of one {@link
 * VectorSchemaRoot} whose schema is {@link SetatsTypes#toArrowSchema(RowType, boolean)}: the
 * optional {@code _row_kind} column (Flink RowKind byte) and then the row type's columns.
 *
 * <p>Use: {@link #write} rows, {@link #finish()} to set the row count, send the root, then {@link
 * #reset()} which gives the vectors new buffers (the sent ones may still be referenced by a queued
 * Flight message). Not thread-safe. Closing releases the root.
 */
public final class RowDataArrowWriter implements AutoCloseable {

    private final RowType rowType;
    private final boolean withRowKind;
    private final VectorSchemaRoot root;
    private final TinyIntVector rowKindVector;
    private final FieldWriter[] writers;
    private final java.util.function.IntConsumer[] nullSetters;
    private final RowData.FieldGetter[] getters;
    private final int fixedBytesPerRow;

    private int rowCount;
    private long estimatedBytes;

    public RowDataArrowWriter(RowType rowType, BufferAllocator allocator, boolean withRowKind) {
        this.rowType = rowType;
        this.withRowKind = withRowKind;
        this.root = VectorSchemaRoot.create(SetatsTypes.toArrowSchema(rowType, withRowKind), allocator);
        List<FieldVector> vectors = root.getFieldVectors();
        int offset = withRowKind ? 1 : 0;
        this.rowKindVector = withRowKind ? (TinyIntVector) vectors.get(0) : null;
        int n = rowType.getFieldCount();
        this.writers = new FieldWriter[n];
        this.nullSetters = new java.util.function.IntConsumer[n];
        this.getters = new RowData.FieldGetter[n];
        int fixed = withRowKind ? 1 : 0;
        for (int i = 0; i < n; i++) {
            LogicalType t = rowType.getTypeAt(i);
            writers[i] = writerFor(t, vectors.get(i + offset));
            nullSetters[i] = nullSetterFor(vectors.get(i + offset));
            getters[i] = RowData.createFieldGetter(t, i);
            fixed += fixedWidth(t);
        }
        this.fixedBytesPerRow = fixed;
        reset();
    }

    /** The root the rows are written to; its schema never changes. */
    public VectorSchemaRoot root() {
        return root;
    }

    public RowType rowType() {
        return rowType;
    }

    /** Rows written since the last {@link #reset()}. */
    public int rowCount() {
        return rowCount;
    }

    /** Estimated bytes of the rows written since the last reset (values + offsets + validity). */
    public long estimatedBytes() {
        return estimatedBytes;
    }

    /**
     * Appends {@code row}: its RowKind byte (when the schema has {@code _row_kind}) and its
     * fields, positionally matching the row type.
     */
    public void write(RowData row) {
        int idx = rowCount;
        if (withRowKind) {
            rowKindVector.setSafe(idx, row.getRowKind().toByteValue());
        }
        long bytes = fixedBytesPerRow;
        for (int i = 0; i < writers.length; i++) {
            Object v = getters[i].getFieldOrNull(row);
            if (v == null) {
                nullSetters[i].accept(idx);
            } else {
                bytes += writers[i].write(idx, v);
            }
        }
        rowCount++;
        estimatedBytes += bytes;
    }

    /** Sets the value count of every vector and the root's row count to {@link #rowCount()}. */
    public void finish() {
        for (FieldVector v : root.getFieldVectors()) {
            v.setValueCount(rowCount);
        }
        root.setRowCount(rowCount);
    }

    /** Releases the vectors' buffers (sent data stays alive where referenced) and starts over. */
    public void reset() {
        root.clear();
        for (FieldVector v : root.getFieldVectors()) {
            v.allocateNew();
        }
        rowCount = 0;
        estimatedBytes = 0;
    }

    @Override
    public void close() {
        root.close();
    }

    private static int fixedWidth(LogicalType t) {
        switch (t.getTypeRoot()) {
            case BOOLEAN:
            case TINYINT:
                return 1;
            case SMALLINT:
                return 2;
            case INTEGER:
            case DATE:
            case TIME_WITHOUT_TIME_ZONE:
            case FLOAT:
                return 4;
            case DECIMAL:
                return 16;
            case CHAR:
            case VARCHAR:
            case BINARY:
            case VARBINARY:
                return 4; // offset
            default:
                return 8;
        }
    }

    /** Writes one non-null value at an index; returns its variable-length bytes. */
    private interface FieldWriter {
        int write(int index, Object value);
    }

    /** Sets an index to null: every vector this writer builds is fixed- or variable-width. */
    private static java.util.function.IntConsumer nullSetterFor(FieldVector vector) {
        if (vector instanceof org.apache.arrow.vector.BaseFixedWidthVector) {
            return ((org.apache.arrow.vector.BaseFixedWidthVector) vector)::setNull;
        }
        if (vector instanceof org.apache.arrow.vector.BaseVariableWidthVector) {
            return ((org.apache.arrow.vector.BaseVariableWidthVector) vector)::setNull;
        }
        throw new IllegalArgumentException("unsupported vector " + vector.getClass().getName());
    }

    private static FieldWriter writerFor(LogicalType type, FieldVector vector) {
        switch (type.getTypeRoot()) {
            case BOOLEAN:
                {
                    BitVector v = (BitVector) vector;
                    return (i, o) -> {
                        v.setSafe(i, ((Boolean) o) ? 1 : 0);
                        return 0;
                    };
                }
            case TINYINT:
                {
                    TinyIntVector v = (TinyIntVector) vector;
                    return (i, o) -> {
                        v.setSafe(i, (Byte) o);
                        return 0;
                    };
                }
            case SMALLINT:
                {
                    SmallIntVector v = (SmallIntVector) vector;
                    return (i, o) -> {
                        v.setSafe(i, (Short) o);
                        return 0;
                    };
                }
            case INTEGER:
                {
                    IntVector v = (IntVector) vector;
                    return (i, o) -> {
                        v.setSafe(i, (Integer) o);
                        return 0;
                    };
                }
            case BIGINT:
                {
                    BigIntVector v = (BigIntVector) vector;
                    return (i, o) -> {
                        v.setSafe(i, (Long) o);
                        return 0;
                    };
                }
            case FLOAT:
                {
                    Float4Vector v = (Float4Vector) vector;
                    return (i, o) -> {
                        v.setSafe(i, (Float) o);
                        return 0;
                    };
                }
            case DOUBLE:
                {
                    Float8Vector v = (Float8Vector) vector;
                    return (i, o) -> {
                        v.setSafe(i, (Double) o);
                        return 0;
                    };
                }
            case DECIMAL:
                {
                    DecimalVector v = (DecimalVector) vector;
                    int scale = ((DecimalType) type).getScale();
                    return (i, o) -> {
                        v.setSafe(i, ((DecimalData) o).toBigDecimal().setScale(scale));
                        return 0;
                    };
                }
            case CHAR:
            case VARCHAR:
                {
                    VarCharVector v = (VarCharVector) vector;
                    return (i, o) -> {
                        if (o instanceof BinaryStringData) {
                            // The UTF-8 bytes where they are (a deserialized row's segment), not a copy.
                            BinaryStringData s = (BinaryStringData) o;
                            MemorySegment[] segs = s.getSegments();
                            if (segs.length == 1 && !segs[0].isOffHeap()) {
                                int n = s.getSizeInBytes();
                                v.setSafe(i, segs[0].getArray(), s.getOffset(), n);
                                return n;
                            }
                        }
                        byte[] b = ((org.apache.flink.table.data.StringData) o).toBytes();
                        v.setSafe(i, b);
                        return b.length;
                    };
                }
            case BINARY:
            case VARBINARY:
                {
                    VarBinaryVector v = (VarBinaryVector) vector;
                    return (i, o) -> {
                        byte[] b = (byte[]) o;
                        v.setSafe(i, b);
                        return b.length;
                    };
                }
            case DATE:
                {
                    DateDayVector v = (DateDayVector) vector;
                    return (i, o) -> {
                        v.setSafe(i, (Integer) o);
                        return 0;
                    };
                }
            case TIME_WITHOUT_TIME_ZONE:
                {
                    TimeMilliVector v = (TimeMilliVector) vector;
                    return (i, o) -> {
                        v.setSafe(i, (Integer) o);
                        return 0;
                    };
                }
            case TIMESTAMP_WITHOUT_TIME_ZONE:
            case TIMESTAMP_WITH_LOCAL_TIME_ZONE:
                {
                    TimeStampVector v = (TimeStampVector) vector;
                    int precision =
                            type instanceof TimestampType
                                    ? ((TimestampType) type).getPrecision()
                                    : ((LocalZonedTimestampType) type).getPrecision();
                    return (i, o) -> {
                        v.setSafe(i, timestampValue((TimestampData) o, precision));
                        return 0;
                    };
                }
            default:
                throw new IllegalArgumentException("unsupported type " + type);
        }
    }

    /** The Arrow value of a timestamp in the unit of {@link SetatsTypes#timestampUnit}. */
    static long timestampValue(TimestampData ts, int precision) {
        long ms = ts.getMillisecond();
        int nanoOfMs = ts.getNanoOfMillisecond();
        if (precision == 0) {
            return Math.floorDiv(ms, 1000L);
        } else if (precision <= 3) {
            return ms;
        } else if (precision <= 6) {
            return ms * 1000L + nanoOfMs / 1000;
        }
        return ms * 1_000_000L + nanoOfMs;
    }
}
