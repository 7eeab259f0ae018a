package io.setats.flink.dts;

import io.setats.flink.dts.typeutils.DtsRecordTypeInfo;

import org.apache.flink.api.common.typeinfo.TypeInfo;

import java.io.Serializable;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import java.util.Objects;

/**
 * DtsRecord is one record of a subscription channel as the DataStream API delivers it (SPEC
 * section 11): id, operation (HEARTBEAT, BEGIN and COMMIT included), object name {@code db.table},
 * source position, source timestamp, transaction id, fields and the before and after images.
 *
 * <p>{@link #toString()} prints the way the seed's example shows its records: {@code DtsRecord
 * {operationType [HEARTBEAT], checkpoint [0@12006303@289540@2688@1625045211000]}}.
 *
 * <p>Image values are in field order: the column's canonical text in UTF-8 (see the source's type
 * table) or the raw bytes for {@code BYTES}; a null element is SQL NULL. An image is null when the
 * record has none (INSERT has no before image, DELETE no after image).
 *
 * <p>Flink type: {@link DtsRecordTypeInfo} (through {@code @TypeInfo}), serialized field by field
 * by {@link io.setats.flink.dts.typeutils.DtsRecordSerializer}, never by Kryo. Two records are
 * equal when every field is, image values compared by content.
 */
@TypeInfo(DtsRecordTypeInfo.Factory.class)
public final class DtsRecord implements Serializable {
    private static final long serialVersionUID = 1L;

    private final long id;
    private final DtsOperation operationType;
    private final String objectName;
    private final String sourcePosition;
    private final long sourceTimestampMs;
    private final String transactionId;
    private final List<DtsField> fields;
    private final List<byte[]> beforeImage;
    private final List<byte[]> afterImage;

    public DtsRecord(
            long id,
            DtsOperation operationType,
            String objectName,
            String sourcePosition,
            long sourceTimestampMs,
            String transactionId,
            List<DtsField> fields,
            List<byte[]> beforeImage,
            List<byte[]> afterImage) {
        this.id = id;
        this.operationType = operationType;
        this.objectName = objectName;
        this.sourcePosition = sourcePosition;
        this.sourceTimestampMs = sourceTimestampMs;
        this.transactionId = transactionId;
        this.fields = fields == null ? Collections.emptyList() : fields;
        this.beforeImage = beforeImage;
        this.afterImage = afterImage;
    }

    /** The record's id in its channel: dense, +1 per record. */
    public long getId() {
        return id;
    }

    public DtsOperation getOperationType() {
        return operationType;
    }

    /** {@code db.table} (schema.table for PostgreSQL); null for BEGIN, COMMIT and HEARTBEAT. */
    public String getObjectName() {
        return objectName;
    }

    /** The source position (PostgreSQL LSN, MySQL/MariaDB GTID position). */
    public String getSourcePosition() {
        return sourcePosition;
    }

    /** Source timestamp in ms since the epoch (commit time; gateway time for HEARTBEAT). */
    public long getSourceTimestampMs() {
        return sourceTimestampMs;
    }

    /** Source timestamp in seconds since the epoch, as {@code dts.checkpoint} counts. */
    public long getSourceTimestamp() {
        return sourceTimestampMs / 1000;
    }

    public String getTransactionId() {
        return transactionId;
    }

    public List<DtsField> getFields() {
        return fields;
    }

    /** The before image, null when the record has none. */
    public List<byte[]> getBeforeImage() {
        return beforeImage;
    }

    /** The after image, null when the record has none. */
    public List<byte[]> getAfterImage() {
        return afterImage;
    }

    /** Index of field {@code name} (case-insensitive), -1 when absent. */
    public int fieldIndex(String name) {
        for (int i = 0; i < fields.size(); i++) {
            if (fields.get(i).getName().equalsIgnoreCase(name)) {
                return i;
            }
        }
        return -1;
    }

    /** The before value of field {@code name} as text (UTF-8), null when NULL or absent. */
    public String getBeforeValue(String name) {
        return text(beforeImage, fieldIndex(name));
    }

    /** The after value of field {@code name} as text (UTF-8), null when NULL or absent. */
    public String getAfterValue(String name) {
        return text(afterImage, fieldIndex(name));
    }

    private static String text(List<byte[]> img, int i) {
        if (img == null || i < 0 || i >= img.size() || img.get(i) == null) {
            return null;
        }
        return new String(img.get(i), StandardCharsets.UTF_8);
    }

    /** The checkpoint string of this record: {@code 0@<id>@<source position>@<source timestamp ms>}. */
    public String getCheckpoint() {
        return DtsCheckpoint.format(id, sourcePosition, sourceTimestampMs);
    }

    @Override
    public boolean equals(Object o) {
        if (this == o) {
            return true;
        }
        if (!(o instanceof DtsRecord)) {
            return false;
        }
        DtsRecord r = (DtsRecord) o;
        return id == r.id && sourceTimestampMs == r.sourceTimestampMs && operationType == r.operationType
                && Objects.equals(objectName, r.objectName) && Objects.equals(sourcePosition, r.sourcePosition)
                && Objects.equals(transactionId, r.transactionId) && fields.equals(r.fields)
                && imageEquals(beforeImage, r.beforeImage) && imageEquals(afterImage, r.afterImage);
    }

    private static boolean imageEquals(List<byte[]> a, List<byte[]> b) {
        if (a == null || b == null) {
            return a == b;
        }
        if (a.size() != b.size()) {
            return false;
        }
        for (int i = 0; i < a.size(); i++) {
            if (!Arrays.equals(a.get(i), b.get(i))) {
                return false;
            }
        }
        return true;
    }

    @Override
    public int hashCode() {
        return Objects.hash(id, operationType, objectName, sourcePosition);
    }

    @Override
    public String toString() {
        return "DtsRecord {operationType [" + operationType + "], checkpoint [" + getCheckpoint() + "]}";
    }
}
