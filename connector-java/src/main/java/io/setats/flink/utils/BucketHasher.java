package io.setats.flink.utils;

import org.apache.flink.core.memory.MemorySegment;
import org.apache.flink.table.data.DecimalData;
import org.apache.flink.table.data.RowData;
import org.apache.flink.table.data.StringData;
import org.apache.flink.table.data.TimestampData;
import org.apache.flink.table.data.binary.BinaryStringData;
import org.apache.flink.table.types.logical.LogicalType;
import org.apache.flink.table.types.logical.RowType;

import com.google.common.hash.HashFunction;
import com.google.common.hash.Hashing;

import java.io.Serializable;
import java.math.BigInteger;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.Arrays;
import java.util.List;

/**
 * BucketHasher computes the bucket of a row exactly as the gateway does (proto/README.md, "Bucket
 * hash"; SPEC section 3):
 *
 * <pre>
 * bucket = (murmur3_x86_32(key_bytes, seed = 0) &amp; 0x7fffffff) % bucket_count
 * </pre>
 *
 * <p>{@code key_bytes} concatenates, per bucket-key column in bucket-key order: BOOLEAN 1 byte;
 * TINYINT..BIGINT, DATE (days), TIME (ms of day) 8 bytes LE int64; FLOAT/DOUBLE 8 bytes LE IEEE-754
 * binary64 of the value as a double (-0.0 as 0.0, NaN canonical); DECIMAL 16 bytes LE two's
 * complement of the unscaled value; strings and binaries a 4-byte LE length then the bytes;
 * TIMESTAMP/TIMESTAMP_LTZ 8 bytes LE epoch ms (floor) then 4 bytes LE nano-of-millisecond.
 *
 * <p>Bucket-key values are never null in a valid row; {@link #keyBytes} throws a {@link
 * NullKeyException} naming the column for a null one.
 */
public final class BucketHasher implements Serializable {

    private static final long serialVersionUID = 1L;

    private static final HashFunction MURMUR3 = Hashing.murmur3_32_fixed(0);
    private static final long CANONICAL_NAN = 0x7ff8000000000000L;

    private final String[] names;
    private final LogicalType[] types;
    private final RowData.FieldGetter[] getters;
    /** The key values of the row being encoded (reused). */
    private transient Object[] values;
    /** The key bytes of the last row (reused, grown as needed). */
    private transient ByteBuffer scratch;

    /**
     * @param rowType the type of the rows that will be hashed
     * @param bucketKey bucket-key column names, in bucket-key order; each must be in rowType
     * @throws IllegalArgumentException when a bucket-key column is not in rowType
     */
    public BucketHasher(RowType rowType, List<String> bucketKey) {
        int n = bucketKey.size();
        this.names = new String[n];
        this.types = new LogicalType[n];
        this.getters = new RowData.FieldGetter[n];
        for (int i = 0; i < n; i++) {
            String c = bucketKey.get(i);
            int pos = rowType.getFieldIndex(c);
            if (pos < 0) {
                throw new IllegalArgumentException(
                        "bucket-key column '" + c + "' is not in " + rowType.getFieldNames());
            }
            names[i] = c;
            types[i] = rowType.getTypeAt(pos);
            getters[i] = RowData.createFieldGetter(types[i], pos);
            SetatsTypes.toTypeString(c, types[i]); // rejects unsupported types
        }
    }

    /** The bucket of {@code row} among {@code bucketCount} buckets (bucketCount &gt; 0). */
    public int bucket(RowData row, int bucketCount) {
        return bucketOf(hash(row), bucketCount);
    }

    /**
     * The 32-bit murmur3 hash of the row's key bytes (before masking). The key bytes are encoded
     * once into a buffer this hasher reuses (strings straight from the row's memory segment), so
     * a hasher must not be used by two threads at once.
     */
    public int hash(RowData row) {
        ByteBuffer buf = encode(row);
        return MURMUR3.hashBytes(buf.array(), 0, buf.position()).asInt();
    }

    /** {@code (hash & 0x7fffffff) % bucketCount}. */
    public static int bucketOf(int hash, int bucketCount) {
        if (bucketCount <= 0) {
            throw new IllegalArgumentException("bucket count must be positive: " + bucketCount);
        }
        return (hash & 0x7fffffff) % bucketCount;
    }

    /** murmur3_x86_32 with seed 0 of {@code keyBytes}. */
    public static int hashBytes(byte[] keyBytes) {
        return MURMUR3.hashBytes(keyBytes).asInt();
    }

    /** The key bytes of {@code row} (see class comment), a new array. */
    public byte[] keyBytes(RowData row) {
        ByteBuffer buf = encode(row);
        return Arrays.copyOf(buf.array(), buf.position());
    }

    /** Encodes the row's key bytes into the reused buffer; they are [0, position). */
    private ByteBuffer encode(RowData row) {
        if (values == null) {
            values = new Object[getters.length];
        }
        int size = 0;
        for (int i = 0; i < getters.length; i++) {
            Object v = getters[i].getFieldOrNull(row);
            if (v == null) {
                throw new NullKeyException(names[i]);
            }
            values[i] = v;
            size += encodedSize(types[i], v);
        }
        ByteBuffer buf = scratch;
        if (buf == null || buf.capacity() < size) {
            buf = ByteBuffer.allocate(Math.max(size, 64)).order(ByteOrder.LITTLE_ENDIAN);
            scratch = buf;
        }
        buf.clear();
        for (int i = 0; i < getters.length; i++) {
            encode(buf, types[i], values[i]);
            values[i] = null;
        }
        return buf;
    }

    /**
     * The key bytes of internal Flink values (Integer, Long, StringData, DecimalData,
     * TimestampData, byte[], ...) of the given types.
     */
    public static byte[] keyBytes(LogicalType[] types, List<Object> values) {
        int size = 0;
        for (int i = 0; i < types.length; i++) {
            size += encodedSize(types[i], values.get(i));
        }
        ByteBuffer buf = ByteBuffer.allocate(size).order(ByteOrder.LITTLE_ENDIAN);
        for (int i = 0; i < types.length; i++) {
            encode(buf, types[i], values.get(i));
        }
        return buf.array();
    }

    private static int encodedSize(LogicalType type, Object v) {
        switch (type.getTypeRoot()) {
            case BOOLEAN:
                return 1;
            case TINYINT:
            case SMALLINT:
            case INTEGER:
            case BIGINT:
            case DATE:
            case TIME_WITHOUT_TIME_ZONE:
            case FLOAT:
            case DOUBLE:
                return 8;
            case DECIMAL:
                return 16;
            case CHAR:
            case VARCHAR:
                return 4 + utf8Length((StringData) v);
            case BINARY:
            case VARBINARY:
                return 4 + ((byte[]) v).length;
            case TIMESTAMP_WITHOUT_TIME_ZONE:
            case TIMESTAMP_WITH_LOCAL_TIME_ZONE:
                return 12;
            default:
                throw new IllegalArgumentException("unsupported bucket-key type " + type);
        }
    }

    private static void encode(ByteBuffer buf, LogicalType type, Object v) {
        switch (type.getTypeRoot()) {
            case BOOLEAN:
                buf.put((byte) (((Boolean) v) ? 1 : 0));
                return;
            case TINYINT:
                buf.putLong((Byte) v);
                return;
            case SMALLINT:
                buf.putLong((Short) v);
                return;
            case INTEGER:
            case DATE:
            case TIME_WITHOUT_TIME_ZONE:
                buf.putLong((Integer) v);
                return;
            case BIGINT:
                buf.putLong((Long) v);
                return;
            case FLOAT:
                buf.putLong(doubleBits((Float) v));
                return;
            case DOUBLE:
                buf.putLong(doubleBits((Double) v));
                return;
            case DECIMAL:
                buf.put(int128LittleEndian(((DecimalData) v).toBigDecimal().unscaledValue()));
                return;
            case CHAR:
            case VARCHAR:
                {
                    if (v instanceof BinaryStringData) {
                        BinaryStringData s = (BinaryStringData) v;
                        MemorySegment[] segs = s.getSegments();
                        int n = s.getSizeInBytes();
                        if (segs.length == 1 && !segs[0].isOffHeap()) {
                            // The UTF-8 bytes where they are (a deserialized row's segment).
                            buf.putInt(n);
                            buf.put(segs[0].getArray(), s.getOffset(), n);
                            return;
                        }
                    }
                    byte[] b = ((StringData) v).toBytes();
                    buf.putInt(b.length);
                    buf.put(b);
                    return;
                }
            case BINARY:
            case VARBINARY:
                {
                    byte[] b = (byte[]) v;
                    buf.putInt(b.length);
                    buf.put(b);
                    return;
                }
            case TIMESTAMP_WITHOUT_TIME_ZONE:
            case TIMESTAMP_WITH_LOCAL_TIME_ZONE:
                {
                    TimestampData ts = (TimestampData) v;
                    buf.putLong(ts.getMillisecond());
                    buf.putInt(ts.getNanoOfMillisecond());
                    return;
                }
            default:
                throw new IllegalArgumentException("unsupported bucket-key type " + type);
        }
    }

    /** UTF-8 length of a string value, without copying its bytes when it is binary. */
    private static int utf8Length(StringData v) {
        if (v instanceof BinaryStringData) {
            return ((BinaryStringData) v).getSizeInBytes(); // materializes a lazy string
        }
        return v.toBytes().length;
    }

    private static long doubleBits(double d) {
        if (Double.isNaN(d)) {
            return CANONICAL_NAN;
        }
        if (d == 0.0) {
            return 0L; // -0.0 is written as 0.0
        }
        return Double.doubleToRawLongBits(d);
    }

    /** 16 bytes, little-endian two's complement of {@code v} (which fits in 128 bits). */
    static byte[] int128LittleEndian(BigInteger v) {
        byte[] be = v.toByteArray(); // big-endian, minimal, sign included
        if (be.length > 16) {
            throw new IllegalArgumentException("decimal unscaled value exceeds 128 bits: " + v);
        }
        byte[] le = new byte[16];
        byte fill = (byte) (v.signum() < 0 ? 0xff : 0x00);
        for (int i = 0; i < 16; i++) {
            le[i] = i < be.length ? be[be.length - 1 - i] : fill;
        }
        return le;
    }

    /** NullKeyException: a bucket-key (so primary-key) column is null. */
    public static final class NullKeyException extends IllegalArgumentException {
        private static final long serialVersionUID = 1L;
        private final String column;

        public NullKeyException(String column) {
            super("primary-key column '" + column + "' is null");
            this.column = column;
        }

        public String column() {
            return column;
        }
    }
}
