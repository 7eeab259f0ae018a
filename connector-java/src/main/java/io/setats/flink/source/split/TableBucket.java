package io.setats.flink.source.split;

import java.io.Serializable;
import java.util.Comparator;
import java.util.Objects;

/**
 * TableBucket names one bucket of one partition of the table a source reads (SPEC section 5: one
 * split per (partition, bucket)). {@code partition} is {@code ""} for an unpartitioned table, else
 * the Hive-style name {@code k1=v1/k2=v2} of proto/README.md; {@code bucket} counts from 0.
 * Ordered by partition, then bucket (the gateway's listing order).
 */
public final class TableBucket implements Serializable, Comparable<TableBucket> {

    private static final long serialVersionUID = 1L;

    private static final Comparator<TableBucket> ORDER =
            Comparator.comparing(TableBucket::partition).thenComparingInt(TableBucket::bucket);

    private final String partition;
    private final int bucket;

    public TableBucket(String partition, int bucket) {
        this.partition = Objects.requireNonNull(partition, "partition");
        if (bucket < 0) {
            throw new IllegalArgumentException("bucket must be >= 0, got " + bucket);
        }
        this.bucket = bucket;
    }

    /** The partition name, {@code ""} for an unpartitioned table. */
    public String partition() {
        return partition;
    }

    /** The bucket number inside the partition, from 0. */
    public int bucket() {
        return bucket;
    }

    /**
     * The split id of this bucket: {@code bucket-<n>} for an unpartitioned table, else {@code
     * <partition>/bucket-<n>}. Unique because partition name segments always contain {@code '='}.
     */
    public String splitId() {
        return partition.isEmpty() ? "bucket-" + bucket : partition + "/bucket-" + bucket;
    }

    @Override
    public int compareTo(TableBucket o) {
        return ORDER.compare(this, o);
    }

    @Override
    public boolean equals(Object o) {
        if (this == o) {
            return true;
        }
        if (!(o instanceof TableBucket)) {
            return false;
        }
        TableBucket that = (TableBucket) o;
        return bucket == that.bucket && partition.equals(that.partition);
    }

    @Override
    public int hashCode() {
        return 31 * partition.hashCode() + bucket;
    }

    @Override
    public String toString() {
        return partition.isEmpty() ? "bucket " + bucket : "partition '" + partition + "' bucket " + bucket;
    }
}
