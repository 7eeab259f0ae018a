package io.setats.flink.utils;

import org.apache.flink.core.memory.MemorySegment;
import org.apache.flink.table.data.DecimalData;
import org.apache.flink.table.data.RowData;
import org.apache.flink.table.data.StringData;
import org.apache.flink.table.data.TimestampData;
import org.apache.flink.table.data.binary.BinaryRowData;
import org.apache.flink.table.data.binary.BinaryStringData;
import org.apache.flink.table.types.logical.DecimalType;
import org.apache.flink.table.types.logical.LocalZonedTimestampType;
import org.apache.flink.table.types.logical.LogicalType;
import org.apache.flink.table.types.logical.RowType;
import org.apache.flink.table.types.logical.TimestampType;

import org.apache.arrow.memory.ArrowBuf;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.util.MemoryUtil;
import org.apache.arrow.vector.BaseFixedWidthVector;
import org.apache.arrow.vector.BaseVariableWidthVector;
import org.apache.arrow.vector.BigIntVector;
import org.apache.arrow.vector.BitVector;
import org.apache.arrow.vector.BitVectorHelper;
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
import org.apache.arrow.vector.VectorSchemaRoot;

import java.math.BigDecimal;
import java.nio.ByteOrder;
import java.util.List;

/**
 * RowDataArrowWriter appends Flink {@link RowData} rows to the vectors of one {@link
 * VectorSchemaRoot} whose schema is {@link SetatsTypes#toArrowSchema(RowType, boolean)}: the
 * optional {@code _row_kind} column (Flink RowKind byte) and then the row type's columns.
 *
 * <p>Use: {@link #write} rows, {@link #finish()} to set the row count, send the root, then {@link
 * #reset()} which gives the vectors new buffers (the sent ones may still be referenced by a queued
 * Flight message). Not thread-safe. Closing releases the root.
 *
 * <p>How values are appended: the value capacity of all vectors is checked once per row (not per
 * value, as Arrow's {@code setSafe} does), fields are read with the row's typed getters (no boxing),
 * a variable-width value's bytes are copied once from its {@link BinaryStringData} segment into
 * the data buffer at an end offset the writer keeps (from a {@link BinaryRowData} in one heap
 * segment, the rows a shuffle deserializes, straight from the row's bytes, no object per value), and {@link #reset()} reserves the previous
 * batch's row count and data bytes so a steady stream of batches does not grow buffers mid-batch.
 * A string's validity bit, end offset and bytes are stored without ArrowBuf's per-access bounds
 * and reference-count checks ({@code MemoryUtil}), into room the writer made just before.
 * Nulls clear the validity bit; a null variable-width value repeats the end offset.
 */
public final class RowDataArrowWriter implements AutoCloseable {

    private final RowType rowType;
    private final boolean withRowKind;
    private final VectorSchemaRoot root;
    private final TinyIntVector rowKindVector;
    private final FieldWriter[] writers;
    private final int fixedBytesPerRow;

    private int rowCount;
    private long estimatedBytes;
    /** Rows every vector holds without growing (the minimum of their value capacities). */
    private int capacity;
    /** Rows to reserve at the next reset: the largest batch so far. */
    private int reserveRows;

    public RowDataArrowWriter(RowType rowType, BufferAllocator allocator, boolean withRowKind) {
        this.rowType = rowType;
        this.withRowKind = withRowKind;
        this.root = VectorSchemaRoot.create(SetatsTypes.toArrowSchema(rowType, withRowKind), allocator);
        List<FieldVector> vectors = root.getFieldVectors();
        int offset = withRowKind ? 1 : 0;
        this.rowKindVector = withRowKind ? (TinyIntVector) vectors.get(0) : null;
        int n = rowType.getFieldCount();
        this.writers = new FieldWriter[n];
        int fixed = withRowKind ? 1 : 0;
        for (int i = 0; i < n; i++) {
            LogicalType t = rowType.getTypeAt(i);
            writers[i] = writerFor(t, i, vectors.get(i + offset));
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
     *
     * @throws ArithmeticException when a decimal's scale cannot be changed to its column's
     *     without rounding
     * @throws UnsupportedOperationException when a decimal has more digits than its column's
     *     precision (Arrow's {@code DecimalUtility.checkPrecisionAndScale})
     */
    public void write(RowData row) {
        int idx = rowCount;
        if (idx >= capacity) {
            grow(idx);
        }
        if (withRowKind) {
            rowKindVector.set(idx, row.getRowKind().toByteValue());
        }
        long bytes = fixedBytesPerRow;
        for (FieldWriter w : writers) {
            bytes += w.write(row, idx);
        }
        rowCount++;
        estimatedBytes += bytes;
    }

    /** Sets the value count of every vector and the root's row count to {@link #rowCount()}. */
    public void finish() {
        for (FieldWriter w : writers) {
            w.finish(rowCount);
        }
        for (FieldVector v : root.getFieldVectors()) {
            v.setValueCount(rowCount);
        }
        root.setRowCount(rowCount);
    }

    /**
     * Releases the vectors' buffers (sent data stays alive where referenced) and starts over with
     * buffers sized for the largest batch so far.
     */
    public void reset() {
        reserveRows = Math.max(reserveRows, rowCount);
        root.clear();
        if (withRowKind) {
            allocate(rowKindVector, reserveRows);
        }
        for (FieldWriter w : writers) {
            w.reset(reserveRows);
        }
        rowCount = 0;
        estimatedBytes = 0;
        capacity = minCapacity();
    }

    @Override
    public void close() {
        root.close();
    }

    /** Grows every vector that cannot hold index {@code idx}. */
    private void grow(int idx) {
        for (FieldVector v : root.getFieldVectors()) {
            while (idx >= v.getValueCapacity()) {
                if (v instanceof BaseVariableWidthVector) {
                    ((BaseVariableWidthVector) v).reallocValidityAndOffsetBuffers();
                } else {
                    v.reAlloc();
                }
            }
        }
        capacity = minCapacity();
    }

    private int minCapacity() {
        int c = Integer.MAX_VALUE;
        for (FieldVector v : root.getFieldVectors()) {
            c = Math.min(c, v.getValueCapacity());
        }
        return c;
    }

    private static void allocate(FieldVector v, int rows) {
        if (rows > 0 && v instanceof BaseFixedWidthVector) {
            ((BaseFixedWidthVector) v).allocateNew(rows);
        } else {
            v.allocateNew();
        }
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

    /**
     * Writes field {@code pos} of a row at a vector index the vector has capacity for (the
     * writer checks once per row); returns the value's variable-length bytes.
     */
    private abstract static class FieldWriter {
        final int pos;

        FieldWriter(int pos) {
            this.pos = pos;
        }

        abstract int write(RowData row, int index);

        /** Gives the vector new buffers for about {@code rows} rows. */
        abstract void reset(int rows);

        /** Before the value count is set: makes the vector's own bookkeeping match the rows. */
        void finish(int rows) {}
    }

    /** Fixed-width values: non-null values through the vector's unchecked {@code set}. */
    private abstract static class FixedWriter extends FieldWriter {
        final BaseFixedWidthVector vector;

        FixedWriter(int pos, FieldVector vector) {
            super(pos);
            this.vector = (BaseFixedWidthVector) vector;
        }

        @Override
        final int write(RowData row, int index) {
            if (row.isNullAt(pos)) {
                BitVectorHelper.unsetBit(vector.getValidityBuffer(), index);
            } else {
                set(row, index);
            }
            return 0;
        }

        abstract void set(RowData row, int index);

        @Override
        final void reset(int rows) {
            allocate(vector, rows);
        }
    }

    /**
     * Variable-width values (strings, bytes): validity bit, the end offset at {@code index + 1}
     * and the bytes at the previous end; the data buffer grows to the next power of two when a
     * value does not fit.
     */
    private abstract static class VariableWriter extends FieldWriter {
        final BaseVariableWidthVector vector;
        /** End offset of the last value written (bytes into the data buffer). */
        int end;
        /** Data bytes to reserve at the next reset: the largest batch's so far. */
        long reserveBytes;

        VariableWriter(int pos, FieldVector vector) {
            super(pos);
            this.vector = (BaseVariableWidthVector) vector;
        }

        @Override
        final int write(RowData row, int index) {
            if (row.isNullAt(pos)) {
                BitVectorHelper.unsetBit(vector.getValidityBuffer(), index);
                vector.getOffsetBuffer().setInt((long) (index + 1) * 4, end);
                return 0;
            }
            int n = append(row, end);
            end += n;
            // Unchecked stores: the writer made room for index (grow) and the bytes (room).
            long validity = vector.getValidityBufferAddress() + (index >> 3);
            MemoryUtil.putByte(validity, (byte) (MemoryUtil.getByte(validity) | (1 << (index & 7))));
            MemoryUtil.putInt(vector.getOffsetBufferAddress() + (long) (index + 1) * 4, end);
            return n;
        }

        /** Copies the value's bytes to the data buffer at {@code at}; returns their count. */
        abstract int append(RowData row, int at);

        /** The data buffer with room for {@code n} bytes at {@code at}. */
        final ArrowBuf room(int at, int n) {
            long need = (long) at + n;
            if (need > vector.getDataBuffer().capacity()) {
                vector.reallocDataBuffer(need);
            }
            return vector.getDataBuffer();
        }

        final int appendBytes(byte[] b, int at) {
            room(at, b.length).setBytes(at, b, 0, b.length);
            return b.length;
        }

        /**
         * Copies the non-null value of field {@code pos} of a {@link BinaryRowData} held in one
         * heap segment (a row the shuffle deserialized) straight from the row's bytes to the data
         * buffer at {@code at}, without the {@link BinaryStringData} or {@code byte[]} that {@code
         * getString} / {@code getBinary} would make; returns the byte count, or -1 for any other
         * row. The field's 8-byte word is Flink's layout ({@code BinarySegmentUtils.readStringData}
         * / {@code readBinary}): highest bit clear: offset from the row's start (high 32 bits) and
         * length (low 32); set: up to 7 bytes inline in the word, length in bits 56-62.
         */
        final int appendFromBinaryRow(RowData row, int at) {
            if (!(row instanceof BinaryRowData)) {
                return -1;
            }
            BinaryRowData b = (BinaryRowData) row;
            MemorySegment[] segs = b.getSegments();
            if (segs.length != 1 || segs[0].isOffHeap()) {
                return -1;
            }
            MemorySegment seg = segs[0];
            int fieldOffset = b.getOffset() + BinaryRowData.calculateBitSetWidthInBytes(b.getArity()) + pos * 8;
            long word = seg.getLong(fieldOffset);
            int from;
            int n;
            if ((word & INLINE_MARK) == 0) {
                from = b.getOffset() + (int) (word >>> 32);
                n = (int) word;
            } else {
                n = (int) ((word & INLINE_LENGTH) >>> 56);
                from = LITTLE_ENDIAN ? fieldOffset : fieldOffset + 1;
            }
            // Unchecked copy into the room just made (no ArrowBuf bounds/refCnt check).
            MemoryUtil.copyToMemory(seg.getArray(), from, room(at, n).memoryAddress() + at, n);
            return n;
        }

        @Override
        final void reset(int rows) {
            reserveBytes = Math.max(reserveBytes, end);
            end = 0;
            if (rows > 0) {
                vector.allocateNew(Math.max(reserveBytes, 1), rows);
            } else {
                vector.allocateNew();
            }
        }

        @Override
        final void finish(int rows) {
            // setValueCount fills offsets after the last set index: tell the vector they are set.
            vector.setLastSet(rows - 1);
        }
    }

    private static FieldWriter writerFor(LogicalType type, int pos, FieldVector vector) {
        switch (type.getTypeRoot()) {
            case BOOLEAN:
                {
                    BitVector v = (BitVector) vector;
                    return new FixedWriter(pos, v) {
                        @Override
                        void set(RowData row, int i) {
                            v.set(i, row.getBoolean(pos) ? 1 : 0);
                        }
                    };
                }
            case TINYINT:
                {
                    TinyIntVector v = (TinyIntVector) vector;
                    return new FixedWriter(pos, v) {
                        @Override
                        void set(RowData row, int i) {
                            v.set(i, row.getByte(pos));
                        }
                    };
                }
            case SMALLINT:
                {
                    SmallIntVector v = (SmallIntVector) vector;
                    return new FixedWriter(pos, v) {
                        @Override
                        void set(RowData row, int i) {
                            v.set(i, row.getShort(pos));
                        }
                    };
                }
            case INTEGER:
                {
                    IntVector v = (IntVector) vector;
                    return new FixedWriter(pos, v) {
                        @Override
                        void set(RowData row, int i) {
                            v.set(i, row.getInt(pos));
                        }
                    };
                }
            case BIGINT:
                {
                    BigIntVector v = (BigIntVector) vector;
                    return new FixedWriter(pos, v) {
                        @Override
                        void set(RowData row, int i) {
                            v.set(i, row.getLong(pos));
                        }
                    };
                }
            case FLOAT:
                {
                    Float4Vector v = (Float4Vector) vector;
                    return new FixedWriter(pos, v) {
                        @Override
                        void set(RowData row, int i) {
                            v.set(i, row.getFloat(pos));
                        }
                    };
                }
            case DOUBLE:
                {
                    Float8Vector v = (Float8Vector) vector;
                    return new FixedWriter(pos, v) {
                        @Override
                        void set(RowData row, int i) {
                            v.set(i, row.getDouble(pos));
                        }
                    };
                }
            case DECIMAL:
                {
                    DecimalVector v = (DecimalVector) vector;
                    int precision = ((DecimalType) type).getPrecision();
                    int scale = ((DecimalType) type).getScale();
                    return new FixedWriter(pos, v) {
                        @Override
                        void set(RowData row, int i) {
                            DecimalData d = row.getDecimal(pos, precision, scale);
                            if (d.scale() == scale && d.isCompact() && precision <= 18) {
                                long unscaled = d.toUnscaledLong();
                                if (fitsPrecision(unscaled, precision)) {
                                    v.set(i, unscaled); // two's complement, sign-extended to 16 bytes
                                    return;
                                }
                            }
                            // Rescales exactly or throws; Arrow checks the precision.
                            BigDecimal b = d.toBigDecimal().setScale(scale);
                            v.set(i, b);
                        }
                    };
                }
            case CHAR:
            case VARCHAR:
                return new VariableWriter(pos, vector) {
                    @Override
                    int append(RowData row, int at) {
                        int copied = appendFromBinaryRow(row, at);
                        if (copied >= 0) {
                            return copied;
                        }
                        StringData o = row.getString(pos);
                        if (o instanceof BinaryStringData) {
                            // The UTF-8 bytes where they are (a deserialized row's segment), one copy.
                            BinaryStringData s = (BinaryStringData) o;
                            MemorySegment[] segs = s.getSegments();
                            if (segs.length == 1 && !segs[0].isOffHeap()) {
                                int n = s.getSizeInBytes();
                                // Unchecked copy into the room just made (no ArrowBuf bounds/refCnt check).
                                MemoryUtil.copyToMemory(
                                        segs[0].getArray(), s.getOffset(), room(at, n).memoryAddress() + at, n);
                                return n;
                            }
                        }
                        return appendBytes(o.toBytes(), at);
                    }
                };
            case BINARY:
            case VARBINARY:
                return new VariableWriter(pos, vector) {
                    @Override
                    int append(RowData row, int at) {
                        int copied = appendFromBinaryRow(row, at);
                        return copied >= 0 ? copied : appendBytes(row.getBinary(pos), at);
                    }
                };
            case DATE:
                {
                    DateDayVector v = (DateDayVector) vector;
                    return new FixedWriter(pos, v) {
                        @Override
                        void set(RowData row, int i) {
                            v.set(i, row.getInt(pos));
                        }
                    };
                }
            case TIME_WITHOUT_TIME_ZONE:
                {
                    TimeMilliVector v = (TimeMilliVector) vector;
                    return new FixedWriter(pos, v) {
                        @Override
                        void set(RowData row, int i) {
                            v.set(i, row.getInt(pos));
                        }
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
                    return new FixedWriter(pos, v) {
                        @Override
                        void set(RowData row, int i) {
                            v.set(i, timestampValue(row.getTimestamp(pos, precision), precision));
                        }
                    };
                }
            default:
                throw new IllegalArgumentException("unsupported type " + type);
        }
    }

    /** A BinaryRowData field word holding its bytes inline (Flink's HIGHEST_FIRST_BIT). */
    private static final long INLINE_MARK = 0x80L << 56;
    /** The length bits of an inline field word (Flink's HIGHEST_SECOND_TO_EIGHTH_BIT). */
    private static final long INLINE_LENGTH = 0x7FL << 56;
    /** Inline bytes start at the word's first byte in little-endian memory, after the mark byte otherwise. */
    private static final boolean LITTLE_ENDIAN = ByteOrder.nativeOrder() == ByteOrder.LITTLE_ENDIAN;

    private static final long[] POW10 = new long[19];

    static {
        POW10[0] = 1;
        for (int i = 1; i < POW10.length; i++) {
            POW10[i] = POW10[i - 1] * 10;
        }
    }

    /** Whether an unscaled value has at most {@code precision} (<= 18) digits. */
    static boolean fitsPrecision(long unscaled, int precision) {
        return unscaled > -POW10[precision] && unscaled < POW10[precision];
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
