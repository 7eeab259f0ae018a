package io.setats.flink.sink;

import io.setats.flink.sink.serializer.SetatsRecordSerializer;
import io.setats.flink.utils.BucketHasher;

import org.apache.flink.api.common.functions.Partitioner;
import org.apache.flink.api.java.functions.KeySelector;
import org.apache.flink.table.data.RowData;
import org.apache.flink.table.types.logical.RowType;

/**
 * BucketOwnerRouter sends every row of one (partition, bucket) to the same sink writer subtask,
 * using the gateway's bucket hash ({@link BucketHasher}). Its key is an owner number: the bucket
 * for an unpartitioned table, else the bucket plus a hash of the partition-key values (their
 * key bytes as {@link BucketHasher} encodes them, not the partition name: the owner only has to
 * be the same for every row of one partition, and building the name cost more than the rest of
 * the routing); {@link
 * OwnerPartitioner} maps it to {@code floorMod(owner, parallelism)}, so with as many writers as
 * buckets each writer owns exactly one bucket of an unpartitioned table.
 *
 * <p>A row with a null bucket-key or partition-key value gets owner 0: the gateway rejects it with
 * a message naming the column (SPEC section 3), which then fails the job.
 */
public final class BucketOwnerRouter<IN> implements KeySelector<IN, Integer> {

    private static final long serialVersionUID = 1L;

    private final SetatsRecordSerializer<IN> serializer;
    private final RowType rowType;
    private final SetatsTableLayout layout;
    private transient BucketHasher hasher;
    /** Hashes the partition-key values; null for an unpartitioned table. */
    private transient BucketHasher partitions;
    private transient boolean ready;

    public BucketOwnerRouter(
            SetatsRecordSerializer<IN> serializer, RowType rowType, SetatsTableLayout layout) {
        this.serializer = serializer;
        this.rowType = rowType;
        this.layout = layout;
    }

    @Override
    public Integer getKey(IN value) {
        return owner(serializer.serialize(value));
    }

    /** The owner number of {@code row} (see class comment). */
    public int owner(RowData row) {
        if (!ready) {
            hasher = new BucketHasher(rowType, layout.bucketKey());
            partitions =
                    layout.partitionKeys().isEmpty()
                            ? null
                            : new BucketHasher(rowType, layout.partitionKeys());
            ready = true;
        }
        try {
            int bucket = hasher.bucket(row, layout.bucketCount());
            if (partitions == null) {
                return bucket;
            }
            return (partitions.hash(row) & 0x7fffffff) + bucket;
        } catch (BucketHasher.NullKeyException e) {
            return 0;
        }
    }

    /** OwnerPartitioner maps an owner number to a writer subtask: floorMod(owner, parallelism). */
    public static final class OwnerPartitioner implements Partitioner<Integer> {
        private static final long serialVersionUID = 1L;

        @Override
        public int partition(Integer owner, int numPartitions) {
            return Math.floorMod(owner, numPartitions);
        }
    }
}
