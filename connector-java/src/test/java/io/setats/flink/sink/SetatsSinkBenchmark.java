package io.setats.flink.sink;

import io.setats.flink.SetatsConnectorOptions.MergeEngine;
import io.setats.flink.client.GatewayClient;
import io.setats.flink.testutils.SetatsGatewayProcess;
import io.setats.proto.v1.BucketOffsets;

import org.apache.flink.api.common.functions.MapFunction;
import org.apache.flink.runtime.testutils.MiniClusterResourceConfiguration;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.table.data.GenericRowData;
import org.apache.flink.table.data.RowData;
import org.apache.flink.table.data.StringData;
import org.apache.flink.table.runtime.typeutils.InternalTypeInfo;
import org.apache.flink.table.types.logical.LogicalType;
import org.apache.flink.table.types.logical.RowType;
import org.apache.flink.table.types.logical.VarCharType;
import org.apache.flink.test.junit5.MiniClusterExtension;
import org.apache.flink.types.RowKind;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Throughput of the sink: a Flink job (parallelism 2) writing upserts of the seed's shape (id, dt,
 * name, address; PK (id, dt); PARTITIONED BY dt; 10 buckets; PARTIAL_UPDATE) through a real
 * gateway. Not part of {@code mvn verify}; run with
 *
 * <pre>
 * mvn -f connector-java/pom.xml test -Dtest=SetatsSinkBenchmark -Dsetats.bench.rows=1000000
 * </pre>
 *
 * It prints rows/s measured from job submission until the job finished (end of input waits for
 * every WriteAck, so all rows are durable at that point).
 */
class SetatsSinkBenchmark {

    @RegisterExtension static final SetatsGatewayProcess GATEWAY = new SetatsGatewayProcess();

    @RegisterExtension
    static final MiniClusterExtension MINI_CLUSTER =
            new MiniClusterExtension(
                    new MiniClusterResourceConfiguration.Builder()
                            .setNumberTaskManagers(1)
                            .setNumberSlotsPerTaskManager(2)
                            .build());

    private static final RowType SEED =
            RowType.of(
                    new LogicalType[] {
                        new VarCharType(false, VarCharType.MAX_LENGTH),
                        new VarCharType(false, VarCharType.MAX_LENGTH),
                        new VarCharType(VarCharType.MAX_LENGTH),
                        new VarCharType(VarCharType.MAX_LENGTH)
                    },
                    new String[] {"id", "dt", "name", "address"});

    /** Row i: key i % keys (so each key is written rows/keys times), two dt values. */
    static final class SeedRows implements MapFunction<Long, RowData> {
        private final long keys;

        SeedRows(long keys) {
            this.keys = keys;
        }

        @Override
        public RowData map(Long i) {
            long k = i % keys;
            GenericRowData r =
                    GenericRowData.of(
                            StringData.fromString(Long.toString(k)),
                            StringData.fromString(k % 2 == 0 ? "20261128" : "20261129"),
                            StringData.fromString(Long.toString(i % 99991 + 10000, 36)),
                            StringData.fromString("addr-" + Long.toHexString(i * 0x9E3779B97F4A7C15L)));
            r.setRowKind(i < keys ? RowKind.INSERT : RowKind.UPDATE_AFTER);
            return r;
        }
    }

    @Test
    void upsertThroughput() throws Exception {
        long rows = Long.getLong("setats.bench.rows", 1_000_000L);
        long keys = Math.max(1, rows / 4);
        SetatsSink<RowData> sink =
                SetatsSink.builder()
                        .setManagerUrl(GATEWAY.managerUrl())
                        .setWarehouse(GATEWAY.warehouse().toString())
                        .setCatalogType("hadoop")
                        .setCatalogName("setats")
                        .setDatabase("bench")
                        .setTable("seed_upserts")
                        .setRowType(SEED)
                        .setPrimaryKey("id", "dt")
                        .setPartitionKeys("dt")
                        .setBucket(10)
                        .setBucketKey("id")
                        .setMergeEngine(MergeEngine.PARTIAL_UPDATE)
                        .build();
        StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment();
        env.setParallelism(2);
        env.enableCheckpointing(5_000);
        env.fromSequence(0, rows - 1)
                .map(new SeedRows(keys))
                .returns(InternalTypeInfo.of(SEED))
                .sinkTo(sink);

        long start = System.nanoTime();
        env.execute("setats sink benchmark");
        double seconds = (System.nanoTime() - start) / 1e9;

        try (GatewayClient c = GATEWAY.client()) {
            long changelog = 0;
            for (BucketOffsets b : c.listBuckets("bench", "seed_upserts").getBucketsList()) {
                changelog += b.getEndOffset();
            }
            System.out.printf(
                    "SETATS-BENCH rows=%d keys=%d parallelism=2 seconds=%.2f rows_per_s=%.0f changelog_rows=%d%n",
                    rows, keys, seconds, rows / seconds, changelog);
            assertThat(changelog).isGreaterThanOrEqualTo(keys);
        }
    }
}
