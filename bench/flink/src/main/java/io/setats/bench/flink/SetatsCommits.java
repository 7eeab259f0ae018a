package io.setats.bench.flink;

import io.setats.flink.client.GatewayClient;
import io.setats.proto.v1.BucketOffsets;
import io.setats.proto.v1.CatalogContext;

/**
 * When a Setats table's last changelog row was committed, from the gateway's own record of it
 * ({@code list-buckets}: {@code BucketOffsets.last_commit_ms} per bucket, epoch ms). Used by the
 * Setats JVM only: it compiles against the connector's shaded jar, which only that JVM has on its
 * class path (never loaded in the Paimon JVM).
 */
final class SetatsCommits {
    private SetatsCommits() {}

    /**
     * The newest {@code last_commit_ms} over every bucket of {@code database.table} and the total
     * of their end offsets (changelog rows ever written).
     *
     * @return {last commit epoch ms, changelog rows}
     */
    static long[] lastCommit(String managerUrl, String warehouse, String database, String table) {
        CatalogContext catalog =
                CatalogContext.newBuilder()
                        .setWarehouse(warehouse)
                        .setCatalogType("hadoop")
                        .setCatalogName("setats")
                        .build();
        long last = 0;
        long rows = 0;
        try (GatewayClient c = GatewayClient.connect(managerUrl, catalog)) {
            for (BucketOffsets b : c.listBuckets(database, table).getBucketsList()) {
                last = Math.max(last, b.getLastCommitMs());
                rows += b.getEndOffset();
            }
        }
        return new long[] {last, rows};
    }
}
