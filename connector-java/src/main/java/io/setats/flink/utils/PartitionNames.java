package io.setats.flink.utils;

import org.apache.flink.table.data.DecimalData;
import org.apache.flink.table.data.RowData;
import org.apache.flink.table.data.StringData;
import org.apache.flink.table.data.TimestampData;
import org.apache.flink.table.types.logical.LogicalType;
import org.apache.flink.table.types.logical.RowType;

import java.io.Serializable;
import java.time.LocalDate;
import java.time.LocalTime;
import java.util.List;

/**
 * PartitionNames computes a row's partition name (proto/README.md, "Partition names"): {@code ""}
 * for an unpartitioned table, else {@code k1=v1/k2=v2} in partition-key order, each value in its
 * string form (integers in decimal, DATE as {@code yyyy-MM-dd}, strings as they are) with {@code
 * %}, {@code /}, {@code =} and control characters escaped as upper-case {@code %XX}.
 *
 * <p>For types the contract does not spell out (BOOLEAN, DECIMAL, floating point, TIME,
 * TIMESTAMP, binaries) the form used here is Java's natural one ({@code true}, plain decimal,
 * ISO-8601 time/date-time, hex); the connector uses names for routing rows to writers only.
 */
public final class PartitionNames implements Serializable {

    private static final long serialVersionUID = 1L;
    private static final char[] HEX = "0123456789ABCDEF".toCharArray();

    private final String[] names;
    private final LogicalType[] types;
    private final RowData.FieldGetter[] getters;

    /**
     * @param rowType the type of the rows
     * @param partitionKeys partition-key column names in order (may be empty)
     */
    public PartitionNames(RowType rowType, List<String> partitionKeys) {
        int n = partitionKeys.size();
        names = new String[n];
        types = new LogicalType[n];
        getters = new RowData.FieldGetter[n];
        for (int i = 0; i < n; i++) {
            int pos = rowType.getFieldIndex(partitionKeys.get(i));
            if (pos < 0) {
                throw new IllegalArgumentException(
                        "partition key '"
                                + partitionKeys.get(i)
                                + "' is not in "
                                + rowType.getFieldNames());
            }
            names[i] = partitionKeys.get(i);
            types[i] = rowType.getTypeAt(pos);
            getters[i] = RowData.createFieldGetter(types[i], pos);
        }
    }

    /** Whether the table is partitioned. */
    public boolean isPartitioned() {
        return names.length > 0;
    }

    /**
     * The partition name of {@code row}.
     *
     * @throws BucketHasher.NullKeyException when a partition-key value is null
     */
    public String of(RowData row) {
        if (names.length == 0) {
            return "";
        }
        StringBuilder sb = new StringBuilder();
        for (int i = 0; i < names.length; i++) {
            Object v = getters[i].getFieldOrNull(row);
            if (v == null) {
                throw new BucketHasher.NullKeyException(names[i]);
            }
            if (i > 0) {
                sb.append('/');
            }
            escape(sb, names[i]);
            sb.append('=');
            escape(sb, valueString(types[i], v));
        }
        return sb.toString();
    }

    /** The string form of an internal Flink value of {@code type}. */
    static String valueString(LogicalType type, Object v) {
        switch (type.getTypeRoot()) {
            case CHAR:
            case VARCHAR:
                return ((StringData) v).toString();
            case DATE:
                return LocalDate.ofEpochDay((Integer) v).toString();
            case TIME_WITHOUT_TIME_ZONE:
                return LocalTime.ofNanoOfDay((Integer) v * 1_000_000L).toString();
            case DECIMAL:
                return ((DecimalData) v).toBigDecimal().toPlainString();
            case TIMESTAMP_WITHOUT_TIME_ZONE:
            case TIMESTAMP_WITH_LOCAL_TIME_ZONE:
                return ((TimestampData) v).toLocalDateTime().toString();
            case BINARY:
            case VARBINARY:
                {
                    StringBuilder sb = new StringBuilder();
                    for (byte b : (byte[]) v) {
                        sb.append(HEX[(b >> 4) & 0xf]).append(HEX[b & 0xf]);
                    }
                    return sb.toString();
                }
            default:
                return String.valueOf(v);
        }
    }

    /** Appends {@code s} with {@code %}, {@code /}, {@code =} and control chars as {@code %XX}. */
    public static void escape(StringBuilder sb, String s) {
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            if (c == '%' || c == '/' || c == '=' || c < 0x20 || c == 0x7f) {
                sb.append('%').append(HEX[(c >> 4) & 0xf]).append(HEX[c & 0xf]);
            } else {
                sb.append(c);
            }
        }
    }

    /**
     * The partition name of a partition spec (partition-key column to value string), in the order
     * of {@code partitionKeys}: the inverse of {@link #parse}.
     *
     * @throws IllegalArgumentException naming the key when {@code spec} lacks one of them
     */
    public static String format(List<String> partitionKeys, java.util.Map<String, String> spec) {
        StringBuilder sb = new StringBuilder();
        for (String k : partitionKeys) {
            String v = spec.get(k);
            if (v == null) {
                throw new IllegalArgumentException("partition spec " + spec + " lacks key '" + k + "'");
            }
            if (sb.length() > 0) {
                sb.append('/');
            }
            escape(sb, k);
            sb.append('=');
            escape(sb, v);
        }
        return sb.toString();
    }

    /**
     * The partition spec of a partition name ({@code k1=v1/k2=v2}, values unescaped), in name order;
     * empty for {@code ""} (an unpartitioned table).
     *
     * @throws IllegalArgumentException naming the name when a segment has no {@code '='} or a bad
     *     {@code %XX} escape
     */
    public static java.util.LinkedHashMap<String, String> parse(String name) {
        java.util.LinkedHashMap<String, String> out = new java.util.LinkedHashMap<>();
        if (name.isEmpty()) {
            return out;
        }
        for (String seg : name.split("/", -1)) {
            int eq = seg.indexOf('=');
            if (eq <= 0) {
                throw new IllegalArgumentException("malformed partition name '" + name + "'");
            }
            out.put(unescape(seg.substring(0, eq), name), unescape(seg.substring(eq + 1), name));
        }
        return out;
    }

    private static String unescape(String s, String name) {
        if (s.indexOf('%') < 0) {
            return s;
        }
        StringBuilder sb = new StringBuilder(s.length());
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            if (c != '%') {
                sb.append(c);
                continue;
            }
            if (i + 2 >= s.length()) {
                throw new IllegalArgumentException("bad escape in partition name '" + name + "'");
            }
            int hi = Character.digit(s.charAt(i + 1), 16);
            int lo = Character.digit(s.charAt(i + 2), 16);
            if (hi < 0 || lo < 0) {
                throw new IllegalArgumentException("bad escape in partition name '" + name + "'");
            }
            sb.append((char) (hi << 4 | lo));
            i += 2;
        }
        return sb.toString();
    }
}
