package io.setats.flink.utils;

import org.apache.arrow.vector.BigIntVector;
import org.apache.arrow.vector.BitVector;
import org.apache.arrow.vector.DateDayVector;
import org.apache.arrow.vector.DecimalVector;
import org.apache.arrow.vector.FieldVector;
import org.apache.arrow.vector.Float4Vector;
import org.apache.arrow.vector.Float8Vector;
import org.apache.arrow.vector.IntVector;
import org.apache.arrow.vector.SmallIntVector;
import org.apache.arrow.vector.TimeMicroVector;
import org.apache.arrow.vector.TimeMilliVector;
import org.apache.arrow.vector.TimeNanoVector;
import org.apache.arrow.vector.TimeSecVector;
import org.apache.arrow.vector.TimeStampVector;
import org.apache.arrow.vector.TinyIntVector;
import org.apache.arrow.vector.VarBinaryVector;
import org.apache.arrow.vector.VarCharVector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.types.DateUnit;
import org.apache.arrow.vector.types.FloatingPointPrecision;
import org.apache.arrow.vector.types.TimeUnit;
import org.apache.arrow.vector.types.pojo.ArrowType;
import org.apache.arrow.vector.types.pojo.Field;
import org.apache.arrow.vector.types.pojo.Schema;
import org.apache.flink.table.data.DecimalData;
import org.apache.flink.table.data.GenericRowData;
import org.apache.flink.table.data.StringData;
import org.apache.flink.table.data.TimestampData;
import org.apache.flink.table.types.logical.DecimalType;
import org.apache.flink.table.types.logical.LogicalType;
import org.apache.flink.table.types.logical.RowType;
import org.apache.flink.table.types.logical.utils.LogicalTypeChecks;
import org.apache.flink.types.RowKind;

import java.math.BigDecimal;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;

/**
 * ArrowRowDataReader turns the rows of Arrow record batches of a Setats changelog stream (DoGet,
 * proto/README.md "Reserved columns" and "Types") into Flink {@link GenericRowData}.
 *
 * <p>A reader is planned once per stream schema with {@link #create(RowType, Schema)}: every field
 * of the read type is looked up <em>by name</em> among the Arrow fields and checked against the
 * type mapping of proto/README.md; columns of the stream that the read type does not name are
 * skipped. Then, for each record batch, {@link #bind(VectorSchemaRoot)} attaches the batch's
 * vectors (cheap) and {@link #read(int)}, {@link #offset(int)}, {@link #commitTimestampMs(int)} read
 * one row. The returned rows own their data (strings and bytes are copied out of Arrow memory), so
 * they stay valid after the batch is released. {@link #takeBatch(VectorSchemaRoot)} instead moves a
 * whole record batch into an {@link ArrowColumnarBatch} (columnar views, no object per row): what
 * the CDC source and the snapshot reads use.
 *
 * <p>The row's {@link RowKind} comes from the {@code _row_kind} column (Flink's byte values 0..3);
 * without that column every row is {@link RowKind#INSERT}. Not thread-safe: one reader per stream.
 */
public final class ArrowRowDataReader {

    private static final String ROW_KIND_COLUMN = SetatsTypes.ROW_KIND_COLUMN;
    private static final String OFFSET_COLUMN = SetatsTypes.OFFSET_COLUMN;
    private static final String COMMIT_TIMESTAMP_COLUMN = SetatsTypes.COMMIT_TIMESTAMP_COLUMN;
    private static final String KEY_COLUMN = SetatsTypes.KEY_COLUMN;

    private final RowType readType;
    /** Index of each read field in the Arrow schema. */
    private final int[] arrowIndexes;
    private final ColumnKind[] kinds;
    private final int rowKindIndex;
    private final int offsetIndex;
    private final int commitTimestampIndex;
    private final int keyIndex;

    /** The Flink type of each read field. */
    private final LogicalType[] types;
    private org.apache.flink.table.data.RowData.FieldGetter[] getters;

    // Bound per record batch.
    private final FieldVector[] vectors;
    private TinyIntVector rowKindVector;
    private BigIntVector offsetVector;
    private TimeStampVector commitTimestampVector;
    private VarBinaryVector keyVector;

    private ArrowRowDataReader(
            RowType readType,
            int[] arrowIndexes,
            ColumnKind[] kinds,
            int rowKindIndex,
            int offsetIndex,
            int commitTimestampIndex,
            int keyIndex) {
        this.readType = readType;
        this.arrowIndexes = arrowIndexes;
        this.kinds = kinds;
        this.rowKindIndex = rowKindIndex;
        this.offsetIndex = offsetIndex;
        this.commitTimestampIndex = commitTimestampIndex;
        this.keyIndex = keyIndex;
        this.vectors = new FieldVector[arrowIndexes.length];
        this.types = readType.getChildren().toArray(new LogicalType[0]);
    }

    /**
     * Plans a reader of {@code readType} over streams of {@code arrowSchema}.
     *
     * @throws IllegalArgumentException naming the column when a read field is missing from the
     *     schema or its Arrow type cannot be read as the field's Flink type
     */
    public static ArrowRowDataReader create(RowType readType, Schema arrowSchema) {
        List<Field> fields = arrowSchema.getFields();
        int n = readType.getFieldCount();
        int[] indexes = new int[n];
        ColumnKind[] kinds = new ColumnKind[n];
        for (int i = 0; i < n; i++) {
            String name = readType.getFieldNames().get(i);
            int index = indexOf(fields, name);
            if (index < 0) {
                throw new IllegalArgumentException(
                        String.format(
                                "Column '%s' does not exist in the Setats table; its columns are %s",
                                name, dataColumnNames(fields)));
            }
            indexes[i] = index;
            kinds[i] = kindOf(name, readType.getTypeAt(i), fields.get(index).getType());
        }
        int rowKind = indexOf(fields, ROW_KIND_COLUMN);
        if (rowKind >= 0) {
            requireType(fields.get(rowKind), new ArrowType.Int(8, true));
        }
        int offset = indexOf(fields, OFFSET_COLUMN);
        if (offset >= 0) {
            requireType(fields.get(offset), new ArrowType.Int(64, true));
        }
        int commit = indexOf(fields, COMMIT_TIMESTAMP_COLUMN);
        if (commit >= 0 && !(fields.get(commit).getType() instanceof ArrowType.Timestamp)) {
            throw new IllegalArgumentException(
                    String.format(
                            "Column '%s' must be an Arrow timestamp, got %s",
                            COMMIT_TIMESTAMP_COLUMN, fields.get(commit).getType()));
        }
        int key = indexOf(fields, KEY_COLUMN);
        if (key >= 0) {
            requireType(fields.get(key), ArrowType.Binary.INSTANCE);
        }
        return new ArrowRowDataReader(readType, indexes, kinds, rowKind, offset, commit, key);
    }

    /**
     * Checks that every field of {@code readType} can be read from a table whose columns have the
     * Arrow schema {@code arrowSchema}, without keeping a reader.
     *
     * @throws IllegalArgumentException as {@link #create(RowType, Schema)}
     */
    public static void validate(RowType readType, Schema arrowSchema) {
        create(readType, arrowSchema);
    }

    /**
     * Field getters of the read type (Flink's internal data objects of each field), for callers
     * that need a field's value of a row of any {@link org.apache.flink.table.data.RowData} class.
     */
    public org.apache.flink.table.data.RowData.FieldGetter[] fieldGetters() {
        if (getters == null) {
            getters = new org.apache.flink.table.data.RowData.FieldGetter[types.length];
            for (int i = 0; i < types.length; i++) {
                getters[i] = org.apache.flink.table.data.RowData.createFieldGetter(types[i], i);
            }
        }
        return getters;
    }

    /** The Flink type of the rows this reader produces. */
    public RowType readType() {
        return readType;
    }

    /** Whether the stream carries {@code _offset} and {@code _commit_timestamp} (DoGet streams do). */
    public boolean hasChangelogColumns() {
        return offsetIndex >= 0 && commitTimestampIndex >= 0;
    }

    /**
     * Whether the stream carries the {@code _key} column (snapshot reads, proto/README.md "Snapshot
     * reads": the row's encoded primary key, the resume key).
     */
    public boolean hasKeyColumn() {
        return keyIndex >= 0;
    }

    /** Attaches the vectors of one record batch; the root must have the planned schema. */
    public void bind(VectorSchemaRoot root) {
        List<FieldVector> all = root.getFieldVectors();
        for (int i = 0; i < arrowIndexes.length; i++) {
            vectors[i] = all.get(arrowIndexes[i]);
        }
        rowKindVector = rowKindIndex >= 0 ? (TinyIntVector) all.get(rowKindIndex) : null;
        offsetVector = offsetIndex >= 0 ? (BigIntVector) all.get(offsetIndex) : null;
        commitTimestampVector =
                commitTimestampIndex >= 0 ? (TimeStampVector) all.get(commitTimestampIndex) : null;
        keyVector = keyIndex >= 0 ? (VarBinaryVector) all.get(keyIndex) : null;
    }

    /**
     * The {@code _key} of row {@code row} of the bound batch of a snapshot read (a copy: opaque
     * encoded primary key bytes, ordered as the gateway orders rows; resume with it as {@code
     * SnapshotRead.after_key}).
     */
    public byte[] key(int row) {
        if (keyVector == null) {
            throw new IllegalStateException("The stream has no " + KEY_COLUMN + " column");
        }
        return keyVector.get(row);
    }

    /**
     * Reads row {@code row} of the bound batch as a row of the read type, with its RowKind.
     *
     * @throws IllegalArgumentException when {@code _row_kind} holds a value other than 0..3
     */
    public GenericRowData read(int row) {
        RowKind kind = rowKind(row);
        GenericRowData out = new GenericRowData(kind, vectors.length);
        for (int i = 0; i < vectors.length; i++) {
            FieldVector v = vectors[i];
            out.setField(i, v.isNull(row) ? null : readValue(kinds[i], types[i], v, row));
        }
        return out;
    }

    /**
     * The RowKind of row {@code row} of the bound batch ({@code _row_kind}; INSERT without it).
     *
     * @throws IllegalArgumentException when {@code _row_kind} holds a value other than 0..3
     */
    public RowKind rowKind(int row) {
        if (rowKindVector == null) {
            return RowKind.INSERT;
        }
        byte b = rowKindVector.get(row);
        if (b < 0 || b > 3) {
            throw new IllegalArgumentException(
                    String.format("Column '%s' holds %d, not a RowKind byte (0..3)", ROW_KIND_COLUMN, b));
        }
        return RowKind.fromByteValue(b);
    }

    /**
     * Takes the rows of {@code root} (a stream's root holding one record batch of the planned
     * schema) into a new {@link ArrowColumnarBatch}: the buffers of the read columns and of {@code
     * _row_kind}, {@code _offset}, {@code _commit_timestamp} and {@code _key} move into the batch
     * (Arrow {@code TransferPair}, zero copy; those vectors of {@code root} are left empty, the
     * stream loads its next batch into them), strings and bytes are copied once into heap arrays.
     * The caller owns the batch and closes it; the other columns stay in {@code root}.
     *
     * @throws IllegalArgumentException when a column holds fewer values than the batch has rows, or
     *     its buffers are too small for them, or a string column's offsets are malformed (the batch
     *     is checked once here, so its rows are read without per-value bounds checks)
     */
    public ArrowColumnarBatch takeBatch(VectorSchemaRoot root) {
        int n = root.getRowCount();
        List<FieldVector> all = root.getFieldVectors();
        List<FieldVector> owned = new ArrayList<>(arrowIndexes.length + 4);
        FieldVector[] columns = new FieldVector[arrowIndexes.length];
        try {
            for (int i = 0; i < arrowIndexes.length; i++) {
                columns[i] = transfer(all.get(arrowIndexes[i]), owned);
            }
            TinyIntVector rk = rowKindIndex >= 0 ? (TinyIntVector) transfer(all.get(rowKindIndex), owned) : null;
            BigIntVector off = offsetIndex >= 0 ? (BigIntVector) transfer(all.get(offsetIndex), owned) : null;
            TimeStampVector ts =
                    commitTimestampIndex >= 0 ? (TimeStampVector) transfer(all.get(commitTimestampIndex), owned) : null;
            VarBinaryVector k = keyIndex >= 0 ? (VarBinaryVector) transfer(all.get(keyIndex), owned) : null;
            requireRows(rk, n);
            requireRows(off, n);
            requireRows(ts, n);
            requireRows(k, n);
            ArrowRowView view = ArrowRowView.of(kinds, types, columns, n);
            return new ArrowColumnarBatch(owned, n, view, rk, off, ts, k);
        } catch (RuntimeException e) {
            for (FieldVector v : owned) {
                v.close();
            }
            throw e;
        }
    }

    /** Checks that a reserved column holds a value per row (its reads go through Arrow's checks). */
    private static void requireRows(@javax.annotation.Nullable FieldVector v, int n) {
        if (v != null && v.getValueCount() < n) {
            throw new IllegalArgumentException(
                    "Malformed Arrow batch: column '" + v.getField().getName() + "' holds "
                            + v.getValueCount() + " values for " + n + " rows");
        }
    }

    private static FieldVector transfer(FieldVector from, List<FieldVector> owned) {
        org.apache.arrow.vector.util.TransferPair tp = from.getTransferPair(from.getAllocator());
        tp.transfer();
        FieldVector to = (FieldVector) tp.getTo();
        owned.add(to);
        return to;
    }

    /** The {@code _offset} of row {@code row} of the bound batch. */
    public long offset(int row) {
        if (offsetVector == null) {
            throw new IllegalStateException("The stream has no " + OFFSET_COLUMN + " column");
        }
        return offsetVector.get(row);
    }

    /** The {@code _commit_timestamp} of row {@code row} of the bound batch, in ms since epoch. */
    public long commitTimestampMs(int row) {
        if (commitTimestampVector == null) {
            throw new IllegalStateException("The stream has no " + COMMIT_TIMESTAMP_COLUMN + " column");
        }
        ArrowType.Timestamp t = (ArrowType.Timestamp) commitTimestampVector.getField().getType();
        return toEpochMillis(commitTimestampVector.get(row), t.getUnit());
    }

    // ------------------------------------------------------------------------------------------

    /** How a column's value is read; chosen once per stream from (Flink type, Arrow type). */
    enum ColumnKind {
        BOOLEAN,
        TINYINT,
        SMALLINT,
        INT,
        BIGINT,
        FLOAT,
        DOUBLE,
        DECIMAL,
        STRING,
        BYTES,
        DATE,
        TIME_SEC,
        TIME_MILLI,
        TIME_MICRO,
        TIME_NANO,
        TIMESTAMP
    }

    private static Object readValue(ColumnKind kind, LogicalType type, FieldVector v, int row) {
        switch (kind) {
            case BOOLEAN:
                return ((BitVector) v).get(row) != 0;
            case TINYINT:
                return ((TinyIntVector) v).get(row);
            case SMALLINT:
                return ((SmallIntVector) v).get(row);
            case INT:
                return ((IntVector) v).get(row);
            case BIGINT:
                return ((BigIntVector) v).get(row);
            case FLOAT:
                return ((Float4Vector) v).get(row);
            case DOUBLE:
                return ((Float8Vector) v).get(row);
            case DECIMAL:
                {
                    DecimalVector d = (DecimalVector) v;
                    BigDecimal value = d.getObject(row);
                    return DecimalData.fromBigDecimal(value, d.getPrecision(), d.getScale());
                }
            case STRING:
                return StringData.fromBytes(((VarCharVector) v).get(row));
            case BYTES:
                return ((VarBinaryVector) v).get(row);
            case DATE:
                return ((DateDayVector) v).get(row);
            case TIME_SEC:
                return ((TimeSecVector) v).get(row) * 1000;
            case TIME_MILLI:
                return ((TimeMilliVector) v).get(row);
            case TIME_MICRO:
                return (int) (((TimeMicroVector) v).get(row) / 1000L);
            case TIME_NANO:
                return (int) (((TimeNanoVector) v).get(row) / 1_000_000L);
            case TIMESTAMP:
                {
                    TimeStampVector t = (TimeStampVector) v;
                    TimeUnit unit = ((ArrowType.Timestamp) t.getField().getType()).getUnit();
                    return toTimestampData(t.get(row), unit, LogicalTypeChecks.getPrecision(type));
                }
            default:
                throw new IllegalStateException("Unhandled column kind " + kind);
        }
    }

    private static ColumnKind kindOf(String column, LogicalType flinkType, ArrowType arrow) {
        ColumnKind kind = null;
        switch (flinkType.getTypeRoot()) {
            case BOOLEAN:
                kind = arrow instanceof ArrowType.Bool ? ColumnKind.BOOLEAN : null;
                break;
            case TINYINT:
                kind = isInt(arrow, 8) ? ColumnKind.TINYINT : null;
                break;
            case SMALLINT:
                kind = isInt(arrow, 16) ? ColumnKind.SMALLINT : null;
                break;
            case INTEGER:
                kind = isInt(arrow, 32) ? ColumnKind.INT : null;
                break;
            case BIGINT:
                kind = isInt(arrow, 64) ? ColumnKind.BIGINT : null;
                break;
            case FLOAT:
                kind = isFloat(arrow, FloatingPointPrecision.SINGLE) ? ColumnKind.FLOAT : null;
                break;
            case DOUBLE:
                kind = isFloat(arrow, FloatingPointPrecision.DOUBLE) ? ColumnKind.DOUBLE : null;
                break;
            case DECIMAL:
                if (arrow instanceof ArrowType.Decimal) {
                    ArrowType.Decimal d = (ArrowType.Decimal) arrow;
                    DecimalType f = (DecimalType) flinkType;
                    if (d.getBitWidth() == 128
                            && d.getScale() == f.getScale()
                            && d.getPrecision() == f.getPrecision()) {
                        kind = ColumnKind.DECIMAL;
                    }
                }
                break;
            case CHAR:
            case VARCHAR:
                kind = arrow instanceof ArrowType.Utf8 ? ColumnKind.STRING : null;
                break;
            case BINARY:
            case VARBINARY:
                kind = arrow instanceof ArrowType.Binary ? ColumnKind.BYTES : null;
                break;
            case DATE:
                kind =
                        arrow instanceof ArrowType.Date
                                        && ((ArrowType.Date) arrow).getUnit() == DateUnit.DAY
                                ? ColumnKind.DATE
                                : null;
                break;
            case TIME_WITHOUT_TIME_ZONE:
                if (arrow instanceof ArrowType.Time) {
                    switch (((ArrowType.Time) arrow).getUnit()) {
                        case SECOND:
                            kind = ColumnKind.TIME_SEC;
                            break;
                        case MILLISECOND:
                            kind = ColumnKind.TIME_MILLI;
                            break;
                        case MICROSECOND:
                            kind = ColumnKind.TIME_MICRO;
                            break;
                        case NANOSECOND:
                            kind = ColumnKind.TIME_NANO;
                            break;
                        default:
                            kind = null;
                    }
                }
                break;
            case TIMESTAMP_WITHOUT_TIME_ZONE:
                kind =
                        arrow instanceof ArrowType.Timestamp
                                        && ((ArrowType.Timestamp) arrow).getTimezone() == null
                                ? ColumnKind.TIMESTAMP
                                : null;
                break;
            case TIMESTAMP_WITH_LOCAL_TIME_ZONE:
                kind =
                        arrow instanceof ArrowType.Timestamp
                                        && ((ArrowType.Timestamp) arrow).getTimezone() != null
                                ? ColumnKind.TIMESTAMP
                                : null;
                break;
            default:
                throw new IllegalArgumentException(
                        String.format(
                                "Column '%s' has Flink type %s, which Setats does not support",
                                column, flinkType.asSummaryString()));
        }
        if (kind == null) {
            throw new IllegalArgumentException(
                    String.format(
                            "Column '%s' is declared as %s but the Setats table stores it as Arrow %s",
                            column, flinkType.asSummaryString(), arrow));
        }
        return kind;
    }

    private static boolean isInt(ArrowType arrow, int bits) {
        return arrow instanceof ArrowType.Int
                && ((ArrowType.Int) arrow).getBitWidth() == bits
                && ((ArrowType.Int) arrow).getIsSigned();
    }

    private static boolean isFloat(ArrowType arrow, FloatingPointPrecision precision) {
        return arrow instanceof ArrowType.FloatingPoint
                && ((ArrowType.FloatingPoint) arrow).getPrecision() == precision;
    }

    private static void requireType(Field field, ArrowType expected) {
        if (!Objects.equals(field.getType(), expected)) {
            throw new IllegalArgumentException(
                    String.format(
                            "Column '%s' must be Arrow %s, got %s",
                            field.getName(), expected, field.getType()));
        }
    }

    private static int indexOf(List<Field> fields, String name) {
        for (int i = 0; i < fields.size(); i++) {
            if (fields.get(i).getName().equals(name)) {
                return i;
            }
        }
        return -1;
    }

    private static List<String> dataColumnNames(List<Field> fields) {
        List<String> names = new ArrayList<>();
        for (Field f : fields) {
            if (!f.getName().startsWith("_")) {
                names.add(f.getName());
            }
        }
        return names;
    }

    /** Converts a raw Arrow timestamp value of {@code unit} to ms since epoch (floor). */
    static long toEpochMillis(long value, TimeUnit unit) {
        switch (unit) {
            case SECOND:
                return value * 1000L;
            case MILLISECOND:
                return value;
            case MICROSECOND:
                return Math.floorDiv(value, 1000L);
            case NANOSECOND:
                return Math.floorDiv(value, 1_000_000L);
            default:
                throw new IllegalArgumentException("Unknown time unit " + unit);
        }
    }

    /** 10^i for i in 0..9. */
    private static final long[] POW10 = {
        1L, 10L, 100L, 1_000L, 10_000L, 100_000L, 1_000_000L, 10_000_000L, 100_000_000L, 1_000_000_000L
    };

    /** Digits of the second that a raw Arrow timestamp value of {@code unit} holds (s 0, ms 3, us 6, ns 9). */
    static int unitDigits(TimeUnit unit) {
        switch (unit) {
            case SECOND:
                return 0;
            case MILLISECOND:
                return 3;
            case MICROSECOND:
                return 6;
            case NANOSECOND:
                return 9;
            default:
                throw new IllegalArgumentException("Unknown time unit " + unit);
        }
    }

    /**
     * Converts a raw Arrow timestamp value of {@code unit} to Flink's TimestampData of a
     * TIMESTAMP(p) / TIMESTAMP_LTZ(p) with {@code precision} p (0..9): the digits of the second
     * past p are dropped, towards the past (floor, as the epoch milliseconds of {@code
     * TimestampData} and of proto/README.md "Bucket hash" are), so that 1.2345678 s read as
     * TIMESTAMP(3) is 1.234 s and -0.0005 s is -0.001 s.
     *
     * <p>Why: the gateway stores the Arrow value as DoPut sent it, in the column's unit
     * (proto/README.md "Types": s for p = 0, ms for p = 1..3, us for 4..6, ns for 7..9), so a
     * TIMESTAMP(2) holds 3 digits and a TIMESTAMP(5) 6; and the Flink table may declare a precision
     * below the column's. Flink's {@code BinaryRowData} keeps only the milliseconds for p <= 3 and
     * every digit for p > 3, its Arrow readers ({@code ArrowTimestampColumnVector}) every digit of
     * the unit: the declared precision is what both the view and the binary rows of a batch return.
     */
    static TimestampData toTimestampData(long value, TimeUnit unit, int precision) {
        int digits = unitDigits(unit);
        if (digits <= precision) {
            return toTimestampData(value, unit);
        }
        long perSecond = POW10[digits];
        long seconds = Math.floorDiv(value, perSecond);
        long fraction = Math.floorMod(value, perSecond);
        fraction -= fraction % POW10[digits - precision];
        long nanos = fraction * POW10[9 - digits];
        return TimestampData.fromEpochMillis(seconds * 1000L + nanos / 1_000_000L, (int) (nanos % 1_000_000L));
    }

    /** Converts a raw Arrow timestamp value of {@code unit} to Flink's TimestampData, every digit kept. */
    static TimestampData toTimestampData(long value, TimeUnit unit) {
        switch (unit) {
            case SECOND:
                return TimestampData.fromEpochMillis(value * 1000L);
            case MILLISECOND:
                return TimestampData.fromEpochMillis(value);
            case MICROSECOND:
                return TimestampData.fromEpochMillis(
                        Math.floorDiv(value, 1000L), (int) Math.floorMod(value, 1000L) * 1000);
            case NANOSECOND:
                return TimestampData.fromEpochMillis(
                        Math.floorDiv(value, 1_000_000L), (int) Math.floorMod(value, 1_000_000L));
            default:
                throw new IllegalArgumentException("Unknown time unit " + unit);
        }
    }
}
