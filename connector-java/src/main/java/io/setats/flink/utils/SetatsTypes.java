package io.setats.flink.utils;

import org.apache.flink.table.api.ValidationException;
import org.apache.flink.table.types.logical.BinaryType;
import org.apache.flink.table.types.logical.CharType;
import org.apache.flink.table.types.logical.DecimalType;
import org.apache.flink.table.types.logical.LocalZonedTimestampType;
import org.apache.flink.table.types.logical.LogicalType;
import org.apache.flink.table.types.logical.RowType;
import org.apache.flink.table.types.logical.TimeType;
import org.apache.flink.table.types.logical.TimestampType;
import org.apache.flink.table.types.logical.VarBinaryType;
import org.apache.flink.table.types.logical.VarCharType;
import org.apache.flink.table.types.logical.utils.LogicalTypeParser;

import org.apache.arrow.vector.types.DateUnit;
import org.apache.arrow.vector.types.FloatingPointPrecision;
import org.apache.arrow.vector.types.TimeUnit;
import org.apache.arrow.vector.types.pojo.ArrowType;
import org.apache.arrow.vector.types.pojo.Field;
import org.apache.arrow.vector.types.pojo.FieldType;
import org.apache.arrow.vector.types.pojo.Schema;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;

/**
 * SetatsTypes maps Flink logical types to Setats type strings and Arrow types (proto/README.md,
 * "Types: Flink SQL to Arrow").
 *
 * <p>A Setats type string is a Flink SQL type without nullability: {@code INT}, {@code
 * DECIMAL(10, 2)}, {@code VARCHAR(20)}, {@code STRING}, {@code TIMESTAMP(3)}, {@code
 * TIMESTAMP_LTZ(6)}. Types outside the table (ARRAY, MAP, ROW, MULTISET, RAW, INTERVAL, TIMESTAMP
 * WITH TIME ZONE, ...) are rejected with a ValidationException naming the column.
 */
public final class SetatsTypes {

    /** Arrow field metadata key holding the exact Flink type string. */
    public static final String FLINK_TYPE_METADATA = "setats.flink_type";

    /** Reserved changelog columns (proto/README.md, "Reserved columns"). */
    public static final String ROW_KIND_COLUMN = "_row_kind";

    public static final String OFFSET_COLUMN = "_offset";
    public static final String COMMIT_TIMESTAMP_COLUMN = "_commit_timestamp";
    /** Column of snapshot reads: the row's encoded primary key (binary; proto/README.md). */
    public static final String KEY_COLUMN = "_key";
    /** Schema metadata of snapshot reads: the view's end offset E (decimal). */
    public static final String SNAPSHOT_END_OFFSET_METADATA = "setats.snapshot.end_offset";

    private SetatsTypes() {}

    /**
     * The Setats type string of {@code type}, e.g. {@code STRING} for VARCHAR(2147483647).
     *
     * @param column the column name, for the error message
     * @throws ValidationException when the type is not supported
     */
    public static String toTypeString(String column, LogicalType type) {
        switch (type.getTypeRoot()) {
            case BOOLEAN:
                return "BOOLEAN";
            case TINYINT:
                return "TINYINT";
            case SMALLINT:
                return "SMALLINT";
            case INTEGER:
                return "INT";
            case BIGINT:
                return "BIGINT";
            case FLOAT:
                return "FLOAT";
            case DOUBLE:
                return "DOUBLE";
            case DECIMAL:
                {
                    DecimalType d = (DecimalType) type;
                    return "DECIMAL(" + d.getPrecision() + ", " + d.getScale() + ")";
                }
            case CHAR:
                return "CHAR(" + ((CharType) type).getLength() + ")";
            case VARCHAR:
                {
                    int len = ((VarCharType) type).getLength();
                    return len == VarCharType.MAX_LENGTH ? "STRING" : "VARCHAR(" + len + ")";
                }
            case BINARY:
                return "BINARY(" + ((BinaryType) type).getLength() + ")";
            case VARBINARY:
                {
                    int len = ((VarBinaryType) type).getLength();
                    return len == VarBinaryType.MAX_LENGTH ? "BYTES" : "VARBINARY(" + len + ")";
                }
            case DATE:
                return "DATE";
            case TIME_WITHOUT_TIME_ZONE:
                return "TIME(" + ((TimeType) type).getPrecision() + ")";
            case TIMESTAMP_WITHOUT_TIME_ZONE:
                return "TIMESTAMP(" + ((TimestampType) type).getPrecision() + ")";
            case TIMESTAMP_WITH_LOCAL_TIME_ZONE:
                return "TIMESTAMP_LTZ(" + ((LocalZonedTimestampType) type).getPrecision() + ")";
            default:
                throw unsupported(column, type);
        }
    }

    /**
     * Parses a Setats type string into a nullable Flink logical type.
     *
     * @throws ValidationException when the string is no supported type
     */
    public static LogicalType parse(String column, String typeString) {
        LogicalType t;
        try {
            t =
                    LogicalTypeParser.parse(
                            typeString, Thread.currentThread().getContextClassLoader());
        } catch (RuntimeException e) {
            throw new ValidationException(
                    "Column '" + column + "': cannot parse Setats type '" + typeString + "'.", e);
        }
        toTypeString(column, t); // rejects unsupported types
        return t.copy(true);
    }

    /**
     * The Arrow type of a column of {@code type}.
     *
     * @throws ValidationException when the type is not supported
     */
    public static ArrowType toArrowType(String column, LogicalType type) {
        switch (type.getTypeRoot()) {
            case BOOLEAN:
                return ArrowType.Bool.INSTANCE;
            case TINYINT:
                return new ArrowType.Int(8, true);
            case SMALLINT:
                return new ArrowType.Int(16, true);
            case INTEGER:
                return new ArrowType.Int(32, true);
            case BIGINT:
                return new ArrowType.Int(64, true);
            case FLOAT:
                return new ArrowType.FloatingPoint(FloatingPointPrecision.SINGLE);
            case DOUBLE:
                return new ArrowType.FloatingPoint(FloatingPointPrecision.DOUBLE);
            case DECIMAL:
                {
                    DecimalType d = (DecimalType) type;
                    return new ArrowType.Decimal(d.getPrecision(), d.getScale(), 128);
                }
            case CHAR:
            case VARCHAR:
                return ArrowType.Utf8.INSTANCE;
            case BINARY:
            case VARBINARY:
                return ArrowType.Binary.INSTANCE;
            case DATE:
                return new ArrowType.Date(DateUnit.DAY);
            case TIME_WITHOUT_TIME_ZONE:
                return new ArrowType.Time(TimeUnit.MILLISECOND, 32);
            case TIMESTAMP_WITHOUT_TIME_ZONE:
                return new ArrowType.Timestamp(
                        timestampUnit(((TimestampType) type).getPrecision()), null);
            case TIMESTAMP_WITH_LOCAL_TIME_ZONE:
                return new ArrowType.Timestamp(
                        timestampUnit(((LocalZonedTimestampType) type).getPrecision()), "UTC");
            default:
                throw unsupported(column, type);
        }
    }

    /** Arrow timestamp unit for a precision: s for 0, ms 1..3, us 4..6, ns 7..9. */
    public static TimeUnit timestampUnit(int precision) {
        if (precision == 0) {
            return TimeUnit.SECOND;
        } else if (precision <= 3) {
            return TimeUnit.MILLISECOND;
        } else if (precision <= 6) {
            return TimeUnit.MICROSECOND;
        }
        return TimeUnit.NANOSECOND;
    }

    /** The Arrow field of a column: mapped type, nullability, {@value #FLINK_TYPE_METADATA}. */
    public static Field toArrowField(String column, LogicalType type) {
        Map<String, String> meta =
                Collections.singletonMap(FLINK_TYPE_METADATA, toTypeString(column, type));
        return new Field(
                column,
                new FieldType(type.isNullable(), toArrowType(column, type), null, meta),
                null);
    }

    /** The {@value #ROW_KIND_COLUMN} field: int8, not null. */
    public static Field rowKindField() {
        return new Field(
                ROW_KIND_COLUMN,
                new FieldType(false, new ArrowType.Int(8, true), null, null),
                null);
    }

    /**
     * The Arrow schema of a DoPut: optionally {@value #ROW_KIND_COLUMN} first, then the row
     * type's columns in order.
     */
    public static Schema toArrowSchema(RowType rowType, boolean withRowKind) {
        List<Field> fields = new ArrayList<>();
        if (withRowKind) {
            fields.add(rowKindField());
        }
        for (RowType.RowField f : rowType.getFields()) {
            fields.add(toArrowField(f.getName(), f.getType()));
        }
        return new Schema(fields);
    }

    private static ValidationException unsupported(String column, LogicalType type) {
        return new ValidationException(
                "Column '"
                        + column
                        + "' has type "
                        + type.asSummaryString()
                        + ", which Setats does not support. Supported: BOOLEAN, TINYINT, SMALLINT, "
                        + "INT, BIGINT, FLOAT, DOUBLE, DECIMAL(p, s), CHAR, VARCHAR, STRING, BINARY, "
                        + "VARBINARY, BYTES, DATE, TIME(p), TIMESTAMP(p), TIMESTAMP_LTZ(p).");
    }
}
