package io.setats.flink.source.enumerator;

import io.setats.flink.source.split.TableBucket;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import java.util.Arrays;
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

    /**
     * The owners of buckets 0..7, pinned: the start reader is floorMod(partition.hashCode(), p)
     * (String.hashCode: "dt=2026-11-29" 1735902710, "dt=2026-11-30" 1735902732, "k=%2F/x=1"
     * -1211331900), then round robin. A change of the rule moves splits between subtasks of a
     * restored job, so it must show up here.
     */
    @ParameterizedTest(name = "{0} p={1}")
    @CsvSource(
            delimiter = ';',
            value = {
                "'';3;0,1,2,0,1,2,0,1",
                "'';7;0,1,2,3,4,5,6,0",
                "dt=2026-11-29;3;2,0,1,2,0,1,2,0",
                "dt=2026-11-29;7;3,4,5,6,0,1,2,3",
                "dt=2026-11-30;3;0,1,2,0,1,2,0,1",
                "dt=2026-11-30;7;4,5,6,0,1,2,3,4",
                "k=%2F/x=1;3;0,1,2,0,1,2,0,1",
                "k=%2F/x=1;7;5,6,0,1,2,3,4,5",
            })
    void ownersArePinned(String partition, int parallelism, String owners) {
        int[] want = Arrays.stream(owners.split(",")).mapToInt(Integer::parseInt).toArray();
        int[] got = new int[want.length];
        for (int b = 0; b < got.length; b++) {
            got[b] = SplitOwners.ownerOf(new TableBucket(partition, b), parallelism);
        }
        assertThat(got).containsExactly(want);
    }

    /**
     * For every parallelism and bucket count, each bucket of a partition has one owner in [0, p)
     * and the readers' shares differ by at most one bucket.
     */
    @Test
    void everyBucketHasOneOwnerAndSharesAreBalanced() {
        for (String partition : new String[] {"", "dt=2026-11-29", "region=north/dt=1"}) {
            for (int p = 1; p <= 9; p++) {
                for (int n = 1; n <= 32; n++) {
                    int[] share = new int[p];
                    for (int b = 0; b < n; b++) {
                        int owner = SplitOwners.ownerOf(new TableBucket(partition, b), p);
                        assertThat(owner).as("%s bucket %d p=%d", partition, b, p).isBetween(0, p - 1);
                        share[owner]++;
                    }
                    int min = Arrays.stream(share).min().getAsInt();
                    int max = Arrays.stream(share).max().getAsInt();
                    assertThat(max - min).as("%s n=%d p=%d shares %s", partition, n, p, Arrays.toString(share)).isLessThanOrEqualTo(1);
                    assertThat(Arrays.stream(share).sum()).isEqualTo(n);
                }
            }
        }
    }

    @Test
    void parallelismMustBePositive() {
        TableBucket tb = new TableBucket("dt=2026-11-29", 5);
        assertThat(SplitOwners.ownerOf(tb, 1)).isZero();
        assertThatThrownBy(() -> SplitOwners.ownerOf(tb, 0)).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> SplitOwners.ownerOf(tb, -3)).isInstanceOf(IllegalArgumentException.class);
    }
}
