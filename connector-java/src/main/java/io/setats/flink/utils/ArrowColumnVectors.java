package io.setats.flink.utils;

import io.setats.flink.utils.ArrowRowDataReader.ColumnKind;

import org.apache.arrow.memory.ArrowBuf;
import org.apache.arrow.vector.BaseVariableWidthVector;
import org.apache.arrow.vector.BigIntVector;
import org.apache.arrow.vector.BitVector;
import org.apache.arrow.vector.DecimalVector;
import org.apache.arrow.vector.FieldVector;
import org.apache.arrow.vector.Float4Vector;
import org.apache.arrow.vector.Float8Vector;
import org.apache.arrow.vector.SmallIntVector;
import org.apache.arrow.vector.TimeMicroVector;
import org.apache.arrow.vector.TimeNanoVector;
import org.apache.arrow.vector.TimeSecVector;
import org.apache.arrow.vector.TimeStampVector;
import org.apache.arrow.vector.TinyIntVector;
import org.apache.arrow.vector.types.TimeUnit;
import org.apache.arrow.vector.types.pojo.ArrowType;
import org.apache.flink.table.data.DecimalData;
import org.apache.flink.table.data.TimestampData;
import org.apache.flink.table.data.columnar.vector.BooleanColumnVector;
import org.apache.flink.table.data.columnar.vector.ByteColumnVector;
import org.apache.flink.table.data.columnar.vector.BytesColumnVector;
import org.apache.flink.table.data.columnar.vector.ColumnVector;
import org.apache.flink.table.data.columnar.vector.DecimalColumnVector;
import org.apache.flink.table.data.columnar.vector.DoubleColumnVector;
import org.apache.flink.table.data.columnar.vector.FloatColumnVector;
import org.apache.flink.table.data.columnar.vector.IntColumnVector;
import org.apache.flink.table.data.columnar.vector.LongColumnVector;
import org.apache.flink.table.data.columnar.vector.ShortColumnVector;
import org.apache.flink.table.data.columnar.vector.TimestampColumnVector;

/**
 * ArrowColumnVectors are Flink's columnar {@link ColumnVector}s (flink-table-common, read by {@link
 * org.apache.flink.table.data.columnar.ColumnarRowData}) backed by the Arrow vectors of one record
 * batch of a Setats stream, one class per {@link ColumnKind} of proto/README.md "Types". Fixed-width
 * values are read straight from the Arrow buffers, nulls from the Arrow validity bitmap. Strings
 * and bytes are copied once per batch: the whole Arrow data buffer into one heap {@code byte[]}
 * when the vector is made, and {@link BytesColumnVector#getBytes(int)} then returns a {@code Bytes}
 * view into that array (the offsets stay in Arrow memory).
 *
 * <p>Values follow {@link ArrowRowDataReader#read(int)}: TIME as ms of the day (int), DATE as days
 * since epoch, TIMESTAMP / TIMESTAMP_LTZ as {@link TimestampData} of the Arrow unit's full precision.
 * A vector reads Arrow memory only while its batch is open ({@link ArrowColumnarBatch}).
 */
final class ArrowColumnVectors {

    private ArrowColumnVectors() {}

    /** The column vector of {@code kind} over {@code v} (a vector of the Arrow type {@code kind} was planned for). */
    static ColumnVector of(ColumnKind kind, FieldVector v) {
        switch (kind) {
            case BOOLEAN:
                return new Bool((BitVector) v);
            case TINYINT:
                return new Tiny((TinyIntVector) v);
            case SMALLINT:
                return new Small((SmallIntVector) v);
            case INT:
            case DATE:
            case TIME_MILLI:
                return new Int32(v);
            case TIME_SEC:
                return new TimeSec((TimeSecVector) v);
            case TIME_MICRO:
                return new TimeMicro((TimeMicroVector) v);
            case TIME_NANO:
                return new TimeNano((TimeNanoVector) v);
            case BIGINT:
                return new Int64((BigIntVector) v);
            case FLOAT:
                return new Float32((Float4Vector) v);
            case DOUBLE:
                return new Float64((Float8Vector) v);
            case DECIMAL:
                return new Decimal((DecimalVector) v);
            case STRING:
            case BYTES:
                return new Var((BaseVariableWidthVector) v);
            case TIMESTAMP:
                return new Timestamp((TimeStampVector) v);
            default:
                throw new IllegalStateException("Unhandled column kind " + kind);
        }
    }

    /**
     * Nulls from the Arrow validity bitmap; a vector without nulls in this batch (counted once,
     * when the batch is taken) answers without reading the bitmap per value.
     */
    private abstract static class Base implements ColumnVector {
        final FieldVector v;
        private final boolean noNulls;

        Base(FieldVector v) {
            this.v = v;
            this.noNulls = v.getNullCount() == 0;
        }

        @Override
        public boolean isNullAt(int i) {
            return !noNulls && v.isNull(i);
        }
    }

    private static final class Bool extends Base implements BooleanColumnVector {
        private final BitVector b;

        Bool(BitVector v) {
            super(v);
            this.b = v;
        }

        @Override
        public boolean getBoolean(int i) {
            return b.get(i) != 0;
        }
    }

    private static final class Tiny extends Base implements ByteColumnVector {
        private final TinyIntVector t;

        Tiny(TinyIntVector v) {
            super(v);
            this.t = v;
        }

        @Override
        public byte getByte(int i) {
            return t.get(i);
        }
    }

    private static final class Small extends Base implements ShortColumnVector {
        private final SmallIntVector s;

        Small(SmallIntVector v) {
            super(v);
            this.s = v;
        }

        @Override
        public short getShort(int i) {
            return s.get(i);
        }
    }

    /** 32-bit values used as they are: INT, DATE (days), TIME(ms). */
    private static final class Int32 extends Base implements IntColumnVector {
        Int32(FieldVector v) {
            super(v);
        }

        @Override
        public int getInt(int i) {
            return v.getDataBuffer().getInt((long) i * 4);
        }
    }

    private static final class TimeSec extends Base implements IntColumnVector {
        private final TimeSecVector t;

        TimeSec(TimeSecVector v) {
            super(v);
            this.t = v;
        }

        @Override
        public int getInt(int i) {
            return t.get(i) * 1000;
        }
    }

    private static final class TimeMicro extends Base implements IntColumnVector {
        private final TimeMicroVector t;

        TimeMicro(TimeMicroVector v) {
            super(v);
            this.t = v;
        }

        @Override
        public int getInt(int i) {
            return (int) (t.get(i) / 1000L);
        }
    }

    private static final class TimeNano extends Base implements IntColumnVector {
        private final TimeNanoVector t;

        TimeNano(TimeNanoVector v) {
            super(v);
            this.t = v;
        }

        @Override
        public int getInt(int i) {
            return (int) (t.get(i) / 1_000_000L);
        }
    }

    private static final class Int64 extends Base implements LongColumnVector {
        private final BigIntVector l;

        Int64(BigIntVector v) {
            super(v);
            this.l = v;
        }

        @Override
        public long getLong(int i) {
            return l.get(i);
        }
    }

    private static final class Float32 extends Base implements FloatColumnVector {
        private final Float4Vector f;

        Float32(Float4Vector v) {
            super(v);
            this.f = v;
        }

        @Override
        public float getFloat(int i) {
            return f.get(i);
        }
    }

    private static final class Float64 extends Base implements DoubleColumnVector {
        private final Float8Vector d;

        Float64(Float8Vector v) {
            super(v);
            this.d = v;
        }

        @Override
        public double getDouble(int i) {
            return d.get(i);
        }
    }

    /**
     * DECIMAL(p, s) from Arrow's 128-bit little-endian two's complement: for {@code p <= 18}
     * (Flink's compact decimals) the low 64 bits are the unscaled value, no BigDecimal.
     */
    private static final class Decimal extends Base implements DecimalColumnVector {
        private final DecimalVector d;

        Decimal(DecimalVector v) {
            super(v);
            this.d = v;
        }

        @Override
        public DecimalData getDecimal(int i, int precision, int scale) {
            if (DecimalData.isCompact(precision)) {
                return DecimalData.fromUnscaledLong(
                        d.getDataBuffer().getLong((long) i * DecimalVector.TYPE_WIDTH), precision, scale);
            }
            return DecimalData.fromBigDecimal(d.getObject(i), precision, scale);
        }
    }

    /**
     * VARCHAR / VARBINARY: the batch's value bytes copied once into a heap array; {@link
     * #getBytes(int)} is a view into it (valid as long as anyone holds it, even after the batch).
     */
    private static final class Var extends Base implements BytesColumnVector {
        private final BaseVariableWidthVector s;
        private final byte[] heap;

        Var(BaseVariableWidthVector v) {
            super(v);
            this.s = v;
            int n = v.getValueCount();
            int end = n == 0 ? 0 : v.getOffsetBuffer().getInt((long) n * BaseVariableWidthVector.OFFSET_WIDTH);
            this.heap = new byte[end];
            if (end > 0) {
                ArrowBuf data = v.getDataBuffer();
                data.getBytes(0, heap, 0, end);
            }
        }

        @Override
        public Bytes getBytes(int i) {
            ArrowBuf offsets = s.getOffsetBuffer();
            int start = offsets.getInt((long) i * BaseVariableWidthVector.OFFSET_WIDTH);
            int end = offsets.getInt((long) (i + 1) * BaseVariableWidthVector.OFFSET_WIDTH);
            return new Bytes(heap, start, end - start);
        }
    }

    /** TIMESTAMP / TIMESTAMP_LTZ at the Arrow unit's precision (the precision argument is the Flink type's). */
    private static final class Timestamp extends Base implements TimestampColumnVector {
        private final TimeStampVector t;
        private final TimeUnit unit;

        Timestamp(TimeStampVector v) {
            super(v);
            this.t = v;
            this.unit = ((ArrowType.Timestamp) v.getField().getType()).getUnit();
        }

        @Override
        public TimestampData getTimestamp(int i, int precision) {
            return ArrowRowDataReader.toTimestampData(t.get(i), unit);
        }
    }
}
