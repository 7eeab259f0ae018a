package io.setats.flink.utils;

import io.setats.flink.utils.ArrowRowDataReader.ColumnKind;

import org.apache.arrow.memory.ArrowBuf;
import org.apache.arrow.vector.BaseVariableWidthVector;
import org.apache.arrow.vector.DecimalVector;
import org.apache.arrow.vector.FieldVector;
import org.apache.arrow.vector.TimeStampVector;
import org.apache.arrow.vector.types.TimeUnit;
import org.apache.arrow.vector.types.pojo.ArrowType;
import org.apache.flink.core.memory.MemorySegment;
import org.apache.flink.core.memory.MemorySegmentFactory;
import org.apache.flink.table.data.ArrayData;
import org.apache.flink.table.data.DecimalData;
import org.apache.flink.table.data.MapData;
import org.apache.flink.table.data.RawValueData;
import org.apache.flink.table.data.RowData;
import org.apache.flink.table.data.StringData;
import org.apache.flink.table.data.TimestampData;
import org.apache.flink.table.data.binary.BinaryRowData;
import org.apache.flink.table.data.binary.BinaryStringData;
import org.apache.flink.table.data.writer.BinaryRowWriter;
import org.apache.flink.table.types.logical.DecimalType;
import org.apache.flink.table.types.logical.LogicalType;
import org.apache.flink.table.types.logical.utils.LogicalTypeChecks;
import org.apache.flink.types.RowKind;

import javax.annotation.Nullable;

/**
 * ArrowRowView is the one reused {@link RowData} of an {@link ArrowColumnarBatch}: a cursor over
 * the batch's columns, moved to a row with {@link #setRowId(int)}. It replaces Flink's {@code
 * ColumnarRowData} over per-column {@code ColumnVector}s so that a value costs no more than Flink's
 * {@code RowData} contract needs:
 *
 * <ul>
 *   <li>fixed-width values (proto/README.md "Types": BOOLEAN, TINYINT..BIGINT, FLOAT, DOUBLE,
 *       DECIMAL(p <= 18), DATE, TIME, TIMESTAMP) and the validity bitmaps are read through one
 *       Flink {@link MemorySegment} per Arrow buffer per batch, little-endian, without Arrow's
 *       per-value bounds and reference-count checks ({@code ArrowBuf.checkIndexD}): the sizes of
 *       every buffer are checked once, when the view is made ({@link #validate});
 *   <li>STRING values are {@link BinaryStringData} pointed at the value's bytes in one heap copy of
 *       the column's data buffer (one heap {@link MemorySegment} per column per batch): one object
 *       per string read, instead of the three of {@code StringData.fromBytes} (a {@code Bytes}, a
 *       {@code MemorySegment}, a {@code BinaryStringData});
 *   <li>BYTES values are a new {@code byte[]} (Flink's type for them), DECIMAL(p > 18) a {@link
 *       DecimalData} over Arrow's {@code BigDecimal}, TIMESTAMP a new {@link TimestampData} (both
 *       immutable by Flink's contract).
 * </ul>
 *
 * <p>Values follow {@link ArrowRowDataReader#read(int)}: TIME as ms of the day (int), DATE as days
 * since epoch, TIMESTAMP(p) / TIMESTAMP_LTZ(p) as {@link TimestampData} of the read type's precision p
 * (the digits of the second past p dropped, whatever the Arrow unit holds).
 *
 * <p>Lifetime: fixed-width values are read from the batch's Arrow memory, so the view is valid until
 * its batch is closed ({@link #release()}: every off-heap segment is freed, after which a read throws
 * {@link IllegalStateException} instead of touching released memory). Strings and bytes read from
 * it stay valid after that (they point into heap copies). {@link #writeTo} writes the current row
 * into a {@link BinaryRowData} (what Flink's {@code RowDataSerializer} copies with one array copy,
 * for jobs without object reuse). Not thread-safe: one thread reads (the task thread).
 */
final class ArrowRowView implements RowData {

    private static final MemorySegment EMPTY = MemorySegmentFactory.wrap(new byte[0]);

    private final ColumnKind[] kinds;
    /** Fixed widths: the data buffer (off-heap); STRING / BYTES: the heap copy of the data buffer. */
    private final MemorySegment[] data;
    /** STRING / BYTES: the value segment as the one-element array BinaryStringData wants. */
    private final MemorySegment[][] dataArrays;
    /** STRING / BYTES: the offsets buffer (off-heap). */
    private final MemorySegment[] offsets;
    /** The validity bitmap (off-heap); null for a column without nulls in this batch. */
    private final MemorySegment[] validity;
    private final TimeUnit[] units;
    /** TIMESTAMP only: the read type's precision (digits of the second past it are dropped). */
    private final int[] precisions;
    /** DECIMAL(p > 18) only: the Arrow vector (BigDecimal read through Arrow). */
    private final FieldVector[] vectors;
    /** The read type's field types (precisions for {@link #writeTo}). */
    private final LogicalType[] types;
    private final int numRows;

    private int rowId;
    private RowKind rowKind = RowKind.INSERT;
    private boolean released;

    private ArrowRowView(int n, int numRows, ColumnKind[] kinds, LogicalType[] types) {
        this.kinds = kinds;
        this.types = types;
        this.numRows = numRows;
        this.data = new MemorySegment[n];
        this.dataArrays = new MemorySegment[n][];
        this.offsets = new MemorySegment[n];
        this.validity = new MemorySegment[n];
        this.units = new TimeUnit[n];
        this.precisions = new int[n];
        this.vectors = new FieldVector[n];
    }

    /**
     * A view over {@code vectors} (the batch's read columns, of {@code kinds} and Flink {@code
     * types}) holding {@code numRows} rows.
     *
     * @throws IllegalArgumentException when a buffer is smaller than {@code numRows} values need, or
     *     a string column's offsets are negative, decrease or point past its data buffer (a
     *     malformed batch from the wire)
     */
    static ArrowRowView of(ColumnKind[] kinds, LogicalType[] types, FieldVector[] vectors, int numRows) {
        ArrowRowView view = new ArrowRowView(kinds.length, numRows, kinds, types);
        for (int i = 0; i < kinds.length; i++) {
            view.bind(i, vectors[i]);
        }
        return view;
    }

    private void bind(int i, FieldVector v) {
        String column = v.getField().getName();
        if (v.getValueCount() < numRows) {
            throw malformed(column, "holds " + v.getValueCount() + " values for " + numRows + " rows");
        }
        if (v.getNullCount() > 0) {
            validity[i] = offHeap(v.getValidityBuffer(), (numRows + 7) / 8, column, "validity");
        }
        switch (kinds[i]) {
            case STRING:
            case BYTES:
                bindVariable(i, (BaseVariableWidthVector) v, column);
                return;
            case DECIMAL:
                if (!DecimalData.isCompact(((DecimalType) types[i]).getPrecision())) {
                    vectors[i] = v;
                }
                break;
            case TIMESTAMP:
                units[i] = ((ArrowType.Timestamp) ((TimeStampVector) v).getField().getType()).getUnit();
                precisions[i] = LogicalTypeChecks.getPrecision(types[i]);
                break;
            default:
                break;
        }
        data[i] = offHeap(v.getDataBuffer(), fixedBytes(kinds[i], numRows), column, "data");
    }

    private void bindVariable(int i, BaseVariableWidthVector v, String column) {
        int w = BaseVariableWidthVector.OFFSET_WIDTH;
        if (numRows == 0) {
            offsets[i] = EMPTY;
            data[i] = EMPTY;
            dataArrays[i] = new MemorySegment[] {EMPTY};
            return;
        }
        MemorySegment off = offHeap(v.getOffsetBuffer(), (numRows + 1) * w, column, "offsets");
        int prev = off.getIntLittleEndian(0);
        if (prev < 0) {
            throw malformed(column, "has a negative first offset " + prev);
        }
        for (int r = 1; r <= numRows; r++) {
            int o = off.getIntLittleEndian(r * w);
            if (o < prev) {
                throw malformed(column, "has decreasing offsets at row " + r);
            }
            prev = o;
        }
        ArrowBuf buf = v.getDataBuffer();
        if (prev > buf.capacity()) {
            throw malformed(column, "has offsets up to " + prev + " past its " + buf.capacity() + " data bytes");
        }
        byte[] heap = new byte[prev];
        if (prev > 0) {
            buf.getBytes(0, heap, 0, prev);
        }
        offsets[i] = off;
        data[i] = MemorySegmentFactory.wrap(heap);
        dataArrays[i] = new MemorySegment[] {data[i]};
    }

    /** Bytes the data buffer of a fixed-width column of {@code kind} needs for {@code rows} values. */
    private static long fixedBytes(ColumnKind kind, int rows) {
        switch (kind) {
            case BOOLEAN:
                return (rows + 7) / 8;
            case TINYINT:
                return rows;
            case SMALLINT:
                return 2L * rows;
            case INT:
            case DATE:
            case TIME_SEC:
            case TIME_MILLI:
            case FLOAT:
                return 4L * rows;
            case BIGINT:
            case DOUBLE:
            case TIME_MICRO:
            case TIME_NANO:
            case TIMESTAMP:
                return 8L * rows;
            case DECIMAL:
                return (long) DecimalVector.TYPE_WIDTH * rows;
            default:
                throw new IllegalStateException("Unhandled column kind " + kind);
        }
    }

    /** An off-heap segment over the first {@code need} bytes of {@code buf} (checked to be there). */
    private static MemorySegment offHeap(ArrowBuf buf, long need, String column, String what) {
        if (need == 0) {
            return EMPTY;
        }
        if (buf.capacity() < need || need > Integer.MAX_VALUE) {
            throw malformed(column, "has a " + what + " buffer of " + buf.capacity() + " bytes, needs " + need);
        }
        return MemorySegmentFactory.wrapOffHeapMemory(buf.nioBuffer(0, (int) need));
    }

    private static IllegalArgumentException malformed(String column, String what) {
        return new IllegalArgumentException("Malformed Arrow batch: column '" + column + "' " + what);
    }

    /** Positions the view at row {@code i} ({@code 0 <= i < numRows}, checked by the batch). */
    void setRowId(int i) {
        rowId = i;
    }

    /** Frees the off-heap segments: any later read throws IllegalStateException. Idempotent. */
    void release() {
        if (released) {
            return;
        }
        released = true;
        for (int i = 0; i < kinds.length; i++) {
            freeOffHeap(data[i]);
            freeOffHeap(offsets[i]);
            freeOffHeap(validity[i]);
        }
    }

    private static void freeOffHeap(@Nullable MemorySegment s) {
        if (s != null && s.isOffHeap() && !s.isFreed()) {
            s.free();
        }
    }

    @Override
    public int getArity() {
        return kinds.length;
    }

    @Override
    public RowKind getRowKind() {
        return rowKind;
    }

    @Override
    public void setRowKind(RowKind kind) {
        this.rowKind = kind;
    }

    @Override
    public boolean isNullAt(int pos) {
        MemorySegment v = validity[pos];
        return v != null && (v.get(rowId >>> 3) & (1 << (rowId & 7))) == 0;
    }

    @Override
    public boolean getBoolean(int pos) {
        return (data[pos].get(rowId >>> 3) & (1 << (rowId & 7))) != 0;
    }

    @Override
    public byte getByte(int pos) {
        return data[pos].get(rowId);
    }

    @Override
    public short getShort(int pos) {
        return data[pos].getShortLittleEndian(rowId * 2);
    }

    @Override
    public int getInt(int pos) {
        MemorySegment d = data[pos];
        switch (kinds[pos]) {
            case TIME_SEC:
                return d.getIntLittleEndian(rowId * 4) * 1000;
            case TIME_MICRO:
                return (int) (d.getLongLittleEndian(rowId * 8) / 1000L);
            case TIME_NANO:
                return (int) (d.getLongLittleEndian(rowId * 8) / 1_000_000L);
            default:
                return d.getIntLittleEndian(rowId * 4);
        }
    }

    @Override
    public long getLong(int pos) {
        return data[pos].getLongLittleEndian(rowId * 8);
    }

    @Override
    public float getFloat(int pos) {
        return data[pos].getFloatLittleEndian(rowId * 4);
    }

    @Override
    public double getDouble(int pos) {
        return data[pos].getDoubleLittleEndian(rowId * 8);
    }

    @Override
    public StringData getString(int pos) {
        int start = offsets[pos].getIntLittleEndian(rowId * 4);
        int end = offsets[pos].getIntLittleEndian(rowId * 4 + 4);
        return BinaryStringData.fromAddress(dataArrays[pos], start, end - start);
    }

    @Override
    public byte[] getBinary(int pos) {
        int start = offsets[pos].getIntLittleEndian(rowId * 4);
        int end = offsets[pos].getIntLittleEndian(rowId * 4 + 4);
        byte[] out = new byte[end - start];
        data[pos].get(start, out, 0, out.length);
        return out;
    }

    /**
     * DECIMAL(p, s) from Arrow's 128-bit little-endian two's complement: for {@code p <= 18}
     * (Flink's compact decimals) the low 64 bits are the unscaled value, no BigDecimal.
     */
    @Override
    public DecimalData getDecimal(int pos, int precision, int scale) {
        if (DecimalData.isCompact(precision)) {
            return DecimalData.fromUnscaledLong(
                    data[pos].getLongLittleEndian(rowId * DecimalVector.TYPE_WIDTH), precision, scale);
        }
        if (released) {
            throw new IllegalStateException("The Arrow batch was released: its rows are no longer valid");
        }
        return DecimalData.fromBigDecimal(((DecimalVector) vectors[pos]).getObject(rowId), precision, scale);
    }

    /**
     * TIMESTAMP(p) / TIMESTAMP_LTZ(p) at the read type's precision p, whatever {@code precision}
     * the caller passes (Flink's getters pass p): digits of the second past p are dropped ({@link
     * ArrowRowDataReader#toTimestampData(long, TimeUnit, int)}), as {@link #writeTo} writes them.
     */
    @Override
    public TimestampData getTimestamp(int pos, int precision) {
        return ArrowRowDataReader.toTimestampData(
                data[pos].getLongLittleEndian(rowId * 8), units[pos], precisions[pos]);
    }

    @Override
    public <T> RawValueData<T> getRawValue(int pos) {
        throw unsupported(pos);
    }

    @Override
    public ArrayData getArray(int pos) {
        throw unsupported(pos);
    }

    @Override
    public MapData getMap(int pos) {
        throw unsupported(pos);
    }

    @Override
    public RowData getRow(int pos, int numFields) {
        throw unsupported(pos);
    }

    private UnsupportedOperationException unsupported(int pos) {
        return new UnsupportedOperationException(
                "Setats columns hold no " + types[pos].asSummaryString() + " values");
    }

    /**
     * Writes the current row (its fields and RowKind) into {@code writer}'s row: {@code
     * writer.reset()}, one write per field, {@code writer.complete()}. TIMESTAMP fields are written
     * at the read type's precision, as {@link #getTimestamp} reads them (Flink's serializer would keep
     * every digit for p > 3 and the milliseconds for p <= 3).
     */
    void writeTo(BinaryRowWriter writer, BinaryRowData target) {
        writer.reset();
        target.setRowKind(rowKind);
        for (int pos = 0; pos < kinds.length; pos++) {
            if (isNullAt(pos)) {
                writer.setNullAt(pos);
                continue;
            }
            switch (kinds[pos]) {
                case BOOLEAN:
                    writer.writeBoolean(pos, getBoolean(pos));
                    break;
                case TINYINT:
                    writer.writeByte(pos, getByte(pos));
                    break;
                case SMALLINT:
                    writer.writeShort(pos, getShort(pos));
                    break;
                case INT:
                case DATE:
                case TIME_SEC:
                case TIME_MILLI:
                case TIME_MICRO:
                case TIME_NANO:
                    writer.writeInt(pos, getInt(pos));
                    break;
                case BIGINT:
                    writer.writeLong(pos, getLong(pos));
                    break;
                case FLOAT:
                    writer.writeFloat(pos, getFloat(pos));
                    break;
                case DOUBLE:
                    writer.writeDouble(pos, getDouble(pos));
                    break;
                case DECIMAL: {
                    DecimalType t = (DecimalType) types[pos];
                    writer.writeDecimal(pos, getDecimal(pos, t.getPrecision(), t.getScale()), t.getPrecision());
                    break;
                }
                case STRING:
                    writer.writeString(pos, getString(pos));
                    break;
                case BYTES:
                    writer.writeBinary(pos, getBinary(pos));
                    break;
                case TIMESTAMP:
                    writer.writeTimestamp(pos, getTimestamp(pos, precisions[pos]), precisions[pos]);
                    break;
                default:
                    throw new IllegalStateException("Unhandled column kind " + kinds[pos]);
            }
        }
        writer.complete();
    }
}
