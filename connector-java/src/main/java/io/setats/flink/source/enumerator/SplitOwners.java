package io.setats.flink.source.enumerator;

import io.setats.flink.source.split.TableBucket;

/**
 * SplitOwners decides which reader (subtask) reads a bucket: the buckets of one partition go round
 * robin over the readers, starting at a reader picked by the partition name's hash, so buckets
 * spread evenly and the owner of a bucket depends only on (partition, bucket, parallelism), never
 * on discovery order. For an unpartitioned table bucket {@code b} goes to reader {@code b mod p}.
 */
public final class SplitOwners {

    private SplitOwners() {}

    /**
     * The subtask index, in {@code [0, parallelism)}, that reads {@code bucket}.
     *
     * @throws IllegalArgumentException when parallelism is not positive
     */
    public static int ownerOf(TableBucket bucket, int parallelism) {
        if (parallelism <= 0) {
            throw new IllegalArgumentException("parallelism must be positive, got " + parallelism);
        }
        int start = Math.floorMod(bucket.partition().hashCode(), parallelism);
        return (int) ((start + (long) bucket.bucket()) % parallelism);
    }
}
