package io.setats.flink.source.batch;

import io.setats.flink.source.split.TableBucket;

import org.apache.flink.api.connector.source.SourceSplit;

import javax.annotation.Nullable;

import java.util.Arrays;
import java.util.Objects;

/**
 * SnapshotSplit is one split of a batch scan of the merged table (SPEC section 13): the merged
 * rows of one (partition, bucket), read at one consistent view by a {@link
 * io.setats.flink.source.snapshot.BucketSnapshotReader}. {@code tableId} is the {@code
 * TableInfo.table_id} the scan was planned against (a re-created table fails the read with
 * NotFound). {@code afterKey} is the resume key of the last row emitted before a checkpoint
 * (null: from the first row); a resumed split reads the rows after it on a newer view, so no key
 * is emitted twice. Immutable.
 */
public final class SnapshotSplit implements SourceSplit {

    private final TableBucket bucket;
    private final String tableId;
    @Nullable private final byte[] afterKey;

    public SnapshotSplit(TableBucket bucket, String tableId, @Nullable byte[] afterKey) {
        this.bucket = Objects.requireNonNull(bucket, "bucket");
        this.tableId = Objects.requireNonNull(tableId, "tableId");
        this.afterKey = afterKey == null || afterKey.length == 0 ? null : afterKey;
    }

    /** The (partition, bucket) read. */
    public TableBucket bucket() {
        return bucket;
    }

    /** {@code TableInfo.table_id} planned against; {@code ""}: not checked. */
    public String tableId() {
        return tableId;
    }

    /** Resume after this key; null: from the first row. Do not modify. */
    @Nullable
    public byte[] afterKey() {
        return afterKey;
    }

    /** This split resuming after {@code key}. */
    public SnapshotSplit withAfterKey(@Nullable byte[] key) {
        return new SnapshotSplit(bucket, tableId, key);
    }

    @Override
    public String splitId() {
        return bucket.splitId();
    }

    @Override
    public boolean equals(Object o) {
        if (!(o instanceof SnapshotSplit)) {
            return false;
        }
        SnapshotSplit s = (SnapshotSplit) o;
        return bucket.equals(s.bucket) && tableId.equals(s.tableId) && Arrays.equals(afterKey, s.afterKey);
    }

    @Override
    public int hashCode() {
        return 31 * bucket.hashCode() + Arrays.hashCode(afterKey);
    }

    @Override
    public String toString() {
        return "SnapshotSplit{" + bucket + (afterKey != null ? " after a key of " + afterKey.length + " bytes" : "") + "}";
    }
}
