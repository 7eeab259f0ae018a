package io.setats.flink.sink;

import java.io.Serializable;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;

/**
 * SetatsTableLayout is what routing needs to know about a table (SPEC section 3): partition keys,
 * bucket count and bucket key. The sink resolves it once when the job is built: from the
 * existing table, or from the sink's options and the gateway's default bucket count when the sink
 * will create the table.
 */
public final class SetatsTableLayout implements Serializable {

    private static final long serialVersionUID = 1L;

    private final List<String> partitionKeys;
    private final int bucketCount;
    private final List<String> bucketKey;

    public SetatsTableLayout(List<String> partitionKeys, int bucketCount, List<String> bucketKey) {
        if (bucketCount <= 0) {
            throw new IllegalArgumentException("bucket count must be positive: " + bucketCount);
        }
        this.partitionKeys = new ArrayList<>(partitionKeys);
        this.bucketCount = bucketCount;
        this.bucketKey = new ArrayList<>(bucketKey);
    }

    public List<String> partitionKeys() {
        return partitionKeys;
    }

    /** Buckets per partition (&gt; 0). */
    public int bucketCount() {
        return bucketCount;
    }

    public List<String> bucketKey() {
        return bucketKey;
    }

    @Override
    public boolean equals(Object o) {
        if (!(o instanceof SetatsTableLayout)) {
            return false;
        }
        SetatsTableLayout that = (SetatsTableLayout) o;
        return bucketCount == that.bucketCount
                && partitionKeys.equals(that.partitionKeys)
                && bucketKey.equals(that.bucketKey);
    }

    @Override
    public int hashCode() {
        return Objects.hash(partitionKeys, bucketCount, bucketKey);
    }

    @Override
    public String toString() {
        return "partition keys "
                + partitionKeys
                + ", "
                + bucketCount
                + " buckets, bucket key "
                + bucketKey;
    }
}
