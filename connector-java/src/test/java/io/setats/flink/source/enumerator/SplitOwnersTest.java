package io.setats.flink.source.enumerator;

import io.setats.flink.source.split.TableBucket;

import org.junit.jupiter.api.Test;

import java.util.HashMap;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class SplitOwnersTest {

    @Test
    void unpartitionedBucketsGoRoundRobin() {
        for (int b = 0; b < 8; b++) {
            assertThat(SplitOwners.ownerOf(new TableBucket("", b), 4)).isEqualTo(b % 4);
        }
    }

    @Test
    void bucketsOfOnePartitionSpreadEvenly() {
        for (String partition : new String[] {"dt=d1", "dt=d2", "k=%2F/x=1"}) {
            Map<Integer, Integer> perReader = new HashMap<>();
            for (int b = 0; b < 12; b++) {
                int owner = SplitOwners.ownerOf(new TableBucket(partition, b), 3);
                assertThat(owner).isBetween(0, 2);
                perReader.merge(owner, 1, Integer::sum);
            }
            assertThat(perReader).containsOnlyKeys(0, 1, 2);
            assertThat(perReader.values()).containsOnly(4);
        }
    }

    @Test
    void ownerDependsOnlyOnBucketAndParallelism() {
        TableBucket tb = new TableBucket("dt=2026-11-29", 5);
        assertThat(SplitOwners.ownerOf(tb, 7)).isEqualTo(SplitOwners.ownerOf(new TableBucket("dt=2026-11-29", 5), 7));
        assertThat(SplitOwners.ownerOf(tb, 1)).isZero();
        assertThatThrownBy(() -> SplitOwners.ownerOf(tb, 0)).isInstanceOf(IllegalArgumentException.class);
    }
}
