package io.setats.flink.sink;

import io.setats.flink.sink.serializer.SetatsRecordSerializer;
import io.setats.flink.utils.BucketHasher;
import io.setats.flink.utils.SetatsTypes;

import org.apache.flink.table.data.GenericRowData;
import org.apache.flink.table.data.RowData;
import org.apache.flink.table.data.StringData;
import org.apache.flink.table.runtime.typeutils.RowDataSerializer;
import org.apache.flink.table.types.logical.LogicalType;
import org.apache.flink.table.types.logical.RowType;

import org.junit.jupiter.api.Test;

import java.util.Arrays;
import java.util.Collections;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Map;
import java.util.Set;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * BucketOwnerRouter: every row of one (partition, bucket) gets one owner, the bucket part is the
 * gateway's bucket (BucketHasher, checked against the Go vectors in BucketHasherTest), and a
 * generic row routes as its binary form does (the planner hands either).
 */
class BucketOwnerRouterTest {

    private static final LogicalType S = SetatsTypes.parse("x", "STRING");
    private static final RowType RT =
            RowType.of(new LogicalType[] {S, S, S}, new String[] {"id", "dt", "name"});
    private static final int BUCKETS = 4;

    private static GenericRowData row(String id, String dt, String name) {
        return GenericRowData.of(
                StringData.fromString(id), StringData.fromString(dt), StringData.fromString(name));
    }

    private static BucketOwnerRouter<RowData> router(boolean partitioned) {
        SetatsTableLayout layout =
                new SetatsTableLayout(
                        partitioned ? Collections.singletonList("dt") : Collections.emptyList(),
                        BUCKETS,
                        Collections.singletonList("id"));
        return new BucketOwnerRouter<>(SetatsRecordSerializer.rowData(), RT, layout);
    }

    @Test
    void unpartitionedOwnerIsTheGatewayBucket() {
        BucketOwnerRouter<RowData> r = router(false);
        BucketHasher h = new BucketHasher(RT, Collections.singletonList("id"));
        Set<Integer> owners = new HashSet<>();
        for (int i = 0; i < 200; i++) {
            GenericRowData g = row("k" + i, "d" + (i % 3), "n" + i);
            assertThat(r.owner(g)).isEqualTo(h.bucket(g, BUCKETS));
            owners.add(r.owner(g));
        }
        assertThat(owners).hasSize(BUCKETS);
    }

    @Test
    void oneOwnerPerPartitionAndBucket() {
        BucketOwnerRouter<RowData> r = router(true);
        BucketHasher h = new BucketHasher(RT, Collections.singletonList("id"));
        RowDataSerializer ser = new RowDataSerializer(RT);
        // owner - bucket depends on the partition only; different partitions spread.
        Map<String, Integer> base = new HashMap<>();
        for (int i = 0; i < 400; i++) {
            String dt = "2026120" + (i % 4);
            GenericRowData g = row("k" + i, dt, "n" + (i % 7));
            int owner = r.owner(g);
            assertThat(r.owner(ser.toBinaryRow(g))).isEqualTo(owner);
            int b = h.bucket(g, BUCKETS);
            Integer prev = base.putIfAbsent(dt, owner - b);
            if (prev != null) {
                assertThat(owner - b).as("partition %s", dt).isEqualTo(prev);
            }
            // Rows of the same key (an update) go to the same owner whatever else changed.
            assertThat(r.owner(row("k" + i, dt, "other"))).isEqualTo(owner);
        }
        assertThat(new HashSet<>(base.values())).hasSize(4);
        Set<Integer> writers = new HashSet<>();
        for (int i = 0; i < 400; i++) {
            writers.add(
                    new BucketOwnerRouter.OwnerPartitioner()
                            .partition(r.owner(row("k" + i, "2026120" + (i % 4), "n")), 2));
        }
        assertThat(writers).containsExactlyInAnyOrder(0, 1);
    }

    @Test
    void nullPartitionOrKeyGoesToOwnerZero() {
        BucketOwnerRouter<RowData> r = router(true);
        assertThat(r.owner(GenericRowData.of(StringData.fromString("k"), null, null))).isZero();
        assertThat(r.owner(GenericRowData.of(null, StringData.fromString("d"), null))).isZero();
        assertThat(Arrays.asList(r.getKey(row("k", "d", "n")))).doesNotContainNull();
    }
}
