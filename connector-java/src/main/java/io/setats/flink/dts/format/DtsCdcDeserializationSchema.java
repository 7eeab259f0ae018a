package io.setats.flink.dts.format;

import io.setats.flink.dts.DtsRecord;
import io.setats.flink.dts.source.DtsDeserializationSchema;

import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.table.data.DecimalData;
import org.apache.flink.table.data.GenericRowData;
import org.apache.flink.table.data.RowData;
import org.apache.flink.table.data.StringData;
import org.apache.flink.table.data.TimestampData;
import org.apache.flink.table.types.logical.DecimalType;
import org.apache.flink.table.types.logical.LogicalType;
import org.apache.flink.table.types.logical.RowType;
import org.apache.flink.types.RowKind;
import org.apache.flink.util.Collector;

import java.math.BigDecimal;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.time.LocalDate;
import java.time.LocalDateTime;
import java.time.LocalTime;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.time.format.DateTimeFormatterBuilder;
import java.time.temporal.ChronoField;
import java.util.List;

/**
 * The {@code dts-cdc} format (SPEC section 11): the INSERT, UPDATE and DELETE records of the tables
 * {@code dts-cdc.table.name} selects become {@code +I}, {@code -U} then {@code +U}, and {@code -D}
 * rows; everything else (HEARTBEAT, BEGIN, COMMIT, DDL, other tables) emits nothing.
 *
 * <p>Columns are matched to record fields by name (case-insensitive); a column the record lacks is
 * null. Values are parsed from the record's canonical text into the column's Flink type; a value
 * that does not parse fails the job with an error naming the table, column, type and value.
 * Metadata columns follow the physical ones in the order the planner asked for: {@code timestamp}
 * (source time, TIMESTAMP_LTZ(3)), {@code offset} (record id), {@code topic} (channel),
 * {@code partition} (always 0: one split per channel) and {@code table} (object name).
 */
public final class DtsCdcDeserializationSchema implements DtsDeserializationSchema<RowData> {
    private static final long serialVersionUID = 1L;

    private static final DateTimeFormatter TS = new DateTimeFormatterBuilder()
            .appendPattern("yyyy-MM-dd[ ]['T']HH:mm:ss")
            .optionalStart().appendFraction(ChronoField.NANO_OF_SECOND, 0, 9, true).optionalEnd()
            .toFormatter();

    private final RowType physical;
    private final List<String> metadataKeys;
    private final DtsTableFilter filter;
    private final String channel;
    private final TypeInformation<RowData> producedType;

    public DtsCdcDeserializationSchema(RowType physical, List<String> metadataKeys, DtsTableFilter filter, String channel, TypeInformation<RowData> producedType) {
        this.physical = physical;
        this.metadataKeys = metadataKeys;
        this.filter = filter;
        this.channel = channel;
        this.producedType = producedType;
    }

    @Override
    public void deserialize(DtsRecord r, Collector<RowData> out) {
        switch (r.getOperationType()) {
            case INSERT:
                if (filter.matches(r.getObjectName())) {
                    out.collect(row(r, r.getAfterImage(), RowKind.INSERT));
                }
                break;
            case UPDATE:
                if (filter.matches(r.getObjectName())) {
                    out.collect(row(r, r.getBeforeImage(), RowKind.UPDATE_BEFORE));
                    out.collect(row(r, r.getAfterImage(), RowKind.UPDATE_AFTER));
                }
                break;
            case DELETE:
                if (filter.matches(r.getObjectName())) {
                    out.collect(row(r, r.getBeforeImage(), RowKind.DELETE));
                }
                break;
            default:
        }
    }

    private RowData row(DtsRecord r, List<byte[]> img, RowKind kind) {
        int n = physical.getFieldCount();
        GenericRowData row = new GenericRowData(kind, n + metadataKeys.size());
        for (int i = 0; i < n; i++) {
            String name = physical.getFieldNames().get(i);
            int f = r.fieldIndex(name);
            if (img == null || f < 0 || f >= img.size() || img.get(f) == null) {
                continue;
            }
            LogicalType t = physical.getTypeAt(i);
            try {
                row.setField(i, convert(t, img.get(f), r.getFields().get(f).getType()));
            } catch (RuntimeException e) {
                throw new IllegalArgumentException(String.format(
                        "dts-cdc: table %s column %s (%s): cannot read the value '%s' of record %s: %s",
                        r.getObjectName(), name, t, new String(img.get(f), StandardCharsets.UTF_8), r.getCheckpoint(), e.getMessage()), e);
            }
        }
        for (int i = 0; i < metadataKeys.size(); i++) {
            row.setField(n + i, metadata(metadataKeys.get(i), r));
        }
        return row;
    }

    private Object metadata(String key, DtsRecord r) {
        switch (key) {
            case "timestamp":
                return TimestampData.fromEpochMillis(r.getSourceTimestampMs());
            case "offset":
                return r.getId();
            case "topic":
                return StringData.fromString(channel);
            case "partition":
                return 0;
            case "table":
                return StringData.fromString(r.getObjectName());
            default:
                throw new IllegalStateException("unknown metadata key " + key);
        }
    }

    /** Converts a record value (canonical text, raw bytes for BYTES) to Flink's internal data. */
    static Object convert(LogicalType t, byte[] v, String recordType) {
        String s = null;
        switch (t.getTypeRoot()) {
            case BINARY:
            case VARBINARY:
                return "BYTES".equals(recordType) ? v : v.clone();
            default:
                s = new String(v, StandardCharsets.UTF_8).trim();
        }
        switch (t.getTypeRoot()) {
            case CHAR:
            case VARCHAR:
                return StringData.fromBytes(v);
            case BOOLEAN:
                return s.equalsIgnoreCase("true") || s.equals("1") || s.equalsIgnoreCase("t");
            case TINYINT:
                return Byte.parseByte(s);
            case SMALLINT:
                return Short.parseShort(s);
            case INTEGER:
                return Integer.parseInt(s);
            case BIGINT:
                return Long.parseLong(s);
            case FLOAT:
                return Float.parseFloat(s);
            case DOUBLE:
                return Double.parseDouble(s);
            case DECIMAL:
                DecimalType d = (DecimalType) t;
                return DecimalData.fromBigDecimal(new BigDecimal(s), d.getPrecision(), d.getScale());
            case DATE:
                return (int) LocalDate.parse(s).toEpochDay();
            case TIME_WITHOUT_TIME_ZONE:
                return (int) (LocalTime.parse(s).toNanoOfDay() / 1_000_000);
            case TIMESTAMP_WITHOUT_TIME_ZONE:
                return TimestampData.fromLocalDateTime(LocalDateTime.parse(stripOffset(s), TS));
            case TIMESTAMP_WITH_LOCAL_TIME_ZONE:
                return TimestampData.fromInstant(instant(s));
            default:
                throw new IllegalArgumentException("unsupported column type " + t);
        }
    }

    /** "2021-06-23 18:32:17.391+00" (PostgreSQL timestamptz in UTC) or a plain UTC date-time. */
    private static Instant instant(String s) {
        int i = offsetStart(s);
        if (i < 0) {
            return LocalDateTime.parse(s, TS).toInstant(ZoneOffset.UTC);
        }
        String off = s.substring(i);
        if (off.length() == 3) {
            off += ":00";
        }
        return OffsetDateTime.of(LocalDateTime.parse(s.substring(0, i), TS), ZoneOffset.of(off)).toInstant();
    }

    private static String stripOffset(String s) {
        int i = offsetStart(s);
        return i < 0 ? s : s.substring(0, i);
    }

    private static int offsetStart(String s) {
        int t = Math.max(s.indexOf(' '), s.indexOf('T'));
        if (t < 0) {
            return -1;
        }
        for (int i = s.length() - 1; i > t; i--) {
            char c = s.charAt(i);
            if (c == '+' || c == '-') {
                return i;
            }
        }
        return -1;
    }

    @Override
    public TypeInformation<RowData> getProducedType() {
        return producedType;
    }
}
