package io.setats.flink.source.deserializer;

import org.apache.flink.table.api.DataTypes;
import org.apache.flink.table.data.StringData;
import org.apache.flink.table.data.TimestampData;
import org.apache.flink.table.types.DataType;

import java.util.Locale;

/**
 * ChangelogMetadata lists the metadata columns of the {@code setats-cdc} source (SPEC section 5),
 * readable with {@code METADATA FROM '<key>' VIRTUAL}: {@code timestamp} (commit time,
 * TIMESTAMP_LTZ(3)), {@code offset} (BIGINT), {@code bucket} (INT) and {@code partition} (STRING,
 * {@code ""} for an unpartitioned table). Values are Flink internal data structures.
 */
public enum ChangelogMetadata {
    TIMESTAMP("timestamp", DataTypes.TIMESTAMP_LTZ(3).notNull()) {
        @Override
        public Object read(ChangelogRecord record) {
            return TimestampData.fromEpochMillis(record.commitTimestampMs());
        }
    },
    OFFSET("offset", DataTypes.BIGINT().notNull()) {
        @Override
        public Object read(ChangelogRecord record) {
            return record.offset();
        }
    },
    BUCKET("bucket", DataTypes.INT().notNull()) {
        @Override
        public Object read(ChangelogRecord record) {
            return record.tableBucket().bucket();
        }
    },
    PARTITION("partition", DataTypes.STRING().notNull()) {
        @Override
        public Object read(ChangelogRecord record) {
            return StringData.fromString(record.tableBucket().partition());
        }
    };

    private final String key;
    private final DataType dataType;

    ChangelogMetadata(String key, DataType dataType) {
        this.key = key;
        this.dataType = dataType;
    }

    /** The key used in {@code METADATA FROM '<key>'}. */
    public String key() {
        return key;
    }

    /** The column's data type. */
    public DataType dataType() {
        return dataType;
    }

    /** The value of this metadata for {@code record}, as Flink internal data. */
    public abstract Object read(ChangelogRecord record);

    /**
     * Looks a metadata key up.
     *
     * @throws IllegalArgumentException naming the key and the known keys
     */
    public static ChangelogMetadata ofKey(String key) {
        for (ChangelogMetadata m : values()) {
            if (m.key.equals(key)) {
                return m;
            }
        }
        StringBuilder known = new StringBuilder();
        for (ChangelogMetadata m : values()) {
            known.append(known.length() == 0 ? "" : ", ").append(m.key);
        }
        throw new IllegalArgumentException(
                String.format(Locale.ROOT, "Unknown metadata key '%s'; known keys: %s", key, known));
    }
}
