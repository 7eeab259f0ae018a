package io.setats.flink.client;

import io.setats.flink.testutils.ChangelogReader;
import io.setats.flink.testutils.ChangelogReader.ChangelogRow;
import io.setats.flink.testutils.SetatsGatewayProcess;
import io.setats.flink.utils.BucketHasher;
import io.setats.flink.utils.PartitionNames;
import io.setats.flink.utils.RowDataArrowWriter;
import io.setats.proto.v1.BucketOffsets;
import io.setats.proto.v1.CatalogContext;
import io.setats.proto.v1.Column;
import io.setats.proto.v1.GatewayInfo;
import io.setats.proto.v1.TableInfo;
import io.setats.proto.v1.TableSpec;
import io.setats.proto.v1.WriteAck;
import io.setats.proto.v1.WriteCommand;

import org.apache.flink.table.data.GenericRowData;
import org.apache.flink.table.data.RowData;
import org.apache.flink.table.data.StringData;
import org.apache.flink.table.types.logical.LogicalType;
import org.apache.flink.table.types.logical.RowType;
import org.apache.flink.table.types.logical.VarCharType;
import org.apache.flink.types.RowKind;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** GatewayClient against a real gateway: actions, DoPut with acks, DoGet, error mapping. */
class GatewayClientITCase {

    @RegisterExtension static final SetatsGatewayProcess GATEWAY = new SetatsGatewayProcess();

    private static final RowType SEED =
            RowType.of(
                    new LogicalType[] {
                        new VarCharType(false, VarCharType.MAX_LENGTH),
                        new VarCharType(false, VarCharType.MAX_LENGTH),
                        new VarCharType(VarCharType.MAX_LENGTH),
                        new VarCharType(VarCharType.MAX_LENGTH)
                    },
                    new String[] {"id", "dt", "name", "address"});

    private static TableSpec seedSpec(String table, int buckets) {
        TableSpec.Builder b =
                TableSpec.newBuilder()
                        .setDatabase("testdb")
                        .setTable(table)
                        .addAllPrimaryKey(Arrays.asList("id", "dt"))
                        .addPartitionKeys("dt")
                        .setBucketCount(buckets)
                        .addBucketKey("id")
                        .setMergeEngine("PARTIAL_UPDATE");
        for (String c : SEED.getFieldNames()) {
            b.addColumns(Column.newBuilder().setName(c).setType("STRING"));
        }
        return b.build();
    }

    /** A DoPut command for testdb.table that creates it with spec when absent. */
    private static WriteCommand createIfAbsent(String table, TableSpec spec) {
        return WriteCommand.newBuilder().setDatabase("testdb").setTable(table).setCreateIfAbsent(spec).build();
    }

    private static RowData row(RowKind kind, String id, String dt, String name, String address) {
        GenericRowData r =
                GenericRowData.of(
                        StringData.fromString(id),
                        StringData.fromString(dt),
                        name == null ? null : StringData.fromString(name),
                        address == null ? null : StringData.fromString(address));
        r.setRowKind(kind);
        return r;
    }

    @Test
    void gatewayInfoAndWarehouseCheck() {
        try (GatewayClient c = GATEWAY.client()) {
            GatewayInfo info = c.gatewayInfo();
            assertThat(info.getWarehouse()).isEqualTo(GATEWAY.warehouseUri().replaceAll("/$", ""));
            assertThat(info.getDefaultBucketCount()).isPositive();
            c.checkWarehouse(GATEWAY.warehouse().toString());
            c.checkWarehouse(GATEWAY.warehouseUri());
            assertThatThrownBy(() -> c.checkWarehouse("/elsewhere/wh"))
                    .isInstanceOf(SetatsGatewayException.class)
                    .hasMessageContaining("/elsewhere/wh")
                    .hasMessageContaining(info.getWarehouse());
        }
    }

    @Test
    void gatewayRejectsOtherWarehouseInCatalogContext() {
        CatalogContext wrong =
                GATEWAY.catalogContext().toBuilder().setWarehouse("/not/the/warehouse").build();
        try (GatewayClient c = GatewayClient.connect(GATEWAY.managerUrl(), wrong)) {
            assertThatThrownBy(() -> c.getTable("testdb", "nope"))
                    .isInstanceOf(SetatsGatewayException.class)
                    .satisfies(
                            e ->
                                    assertThat(((SetatsGatewayException) e).code())
                                            .isEqualTo("FAILED_PRECONDITION"))
                    .hasMessageContaining("/not/the/warehouse");
        }
    }

    @Test
    void createGetListDropTable() {
        try (GatewayClient c = GATEWAY.client()) {
            assertThat(c.getTable("testdb", "t_crud")).isEmpty();
            TableInfo created = c.createTable(seedSpec("t_crud", 3), false, true);
            assertThat(created.getSpec().getBucketCount()).isEqualTo(3);
            assertThat(created.getSpec().getBucketKeyList()).containsExactly("id");
            assertThat(c.getTable("testdb", "t_crud")).isPresent();
            assertThat(c.listTables("testdb")).contains("t_crud");
            assertThat(c.listDatabases()).contains("testdb");
            assertThatThrownBy(() -> c.createTable(seedSpec("t_crud", 3), false, true))
                    .isInstanceOf(SetatsGatewayException.class)
                    .satisfies(
                            e ->
                                    assertThat(((SetatsGatewayException) e).code())
                                            .isEqualTo("ALREADY_EXISTS"));
            c.dropTable("testdb", "t_crud", false);
            assertThat(c.getTable("testdb", "t_crud")).isEmpty();
        }
    }

    @Test
    void putAcksThenReadBackWithJavaBucketsMatchingGateway() throws Exception {
        String table = "t_put";
        int buckets = 4;
        List<RowData> rows = new ArrayList<>();
        for (int i = 0; i < 40; i++) {
            rows.add(row(RowKind.INSERT, "id" + i, "20261129", "n" + i, "a" + i));
        }
        rows.add(row(RowKind.UPDATE_AFTER, "id0", "20261129", "changed", null));
        rows.add(row(RowKind.DELETE, "id1", "20261129", null, null));
        List<WriteAck> acks = Collections.synchronizedList(new ArrayList<>());
        try (GatewayClient c = GATEWAY.client();
                RowDataArrowWriter w = new RowDataArrowWriter(SEED, c.allocator(), true)) {
            WriteCommand cmd = createIfAbsent(table,
                    seedSpec(table, buckets).toBuilder().setMergeEngine("DEDUPLICATE").build());
            PutStream ps = c.startPut(cmd, w.root(), 2, acks::add);
            for (int batch = 0; batch < 2; batch++) {
                List<RowData> part = batch == 0 ? rows.subList(0, 40) : rows.subList(40, 42);
                part.forEach(w::write);
                w.finish();
                ps.putNext();
                w.reset();
            }
            ps.awaitAcks();
            assertThat(ps.ackedBatches()).isEqualTo(2);
            assertThat(ps.ackedRows()).isEqualTo(42);
            ps.complete();
            assertThat(acks).extracting(WriteAck::getBatchSeq).containsExactly(0L, 1L);
            // 40 +I, then -U/+U for id0 and -D for id1.
            assertThat(acks.get(0).getChangelogRows()).isEqualTo(40);
            assertThat(acks.get(1).getChangelogRows()).isEqualTo(3);

            List<ChangelogRow> changelog = ChangelogReader.readAll(c, "testdb", table);
            assertThat(changelog).hasSize(43);
            assertThat(ChangelogReader.fold(changelog, Arrays.asList("id", "dt")))
                    .hasSize(39)
                    .containsKey("[id0, 20261129]")
                    .doesNotContainKey("[id1, 20261129]");
            assertThat(ChangelogReader.fold(changelog, Arrays.asList("id", "dt")).get("[id0, 20261129]").toString())
                    .isEqualTo("+U[id0, 20261129, changed, null]");

            // Every row sits in the bucket (and partition) the Java hasher computes.
            BucketHasher hasher = new BucketHasher(SEED, Collections.singletonList("id"));
            PartitionNames names = new PartitionNames(SEED, Collections.singletonList("dt"));
            for (ChangelogRow r : changelog) {
                RowData rd = row(RowKind.INSERT, (String) r.get("id"), (String) r.get("dt"), null, null);
                assertThat(r.bucket).as("bucket of %s", r).isEqualTo(hasher.bucket(rd, buckets));
                assertThat(r.partition).isEqualTo(names.of(rd));
            }
            List<BucketOffsets> offsets = c.listBuckets("testdb", table).getBucketsList();
            assertThat(offsets.stream().mapToLong(BucketOffsets::getEndOffset).sum()).isEqualTo(43);
            assertThat(offsets.stream().map(BucketOffsets::getPartition).collect(Collectors.toSet()))
                    .containsExactly("dt=20261129");
        }
    }

    @Test
    void putErrorKeepsGatewayMessage() throws Exception {
        String table = "t_nullkey";
        try (GatewayClient c = GATEWAY.client()) {
            c.createTable(seedSpec(table, 2), false, true);
            RowType nullableId =
                    RowType.of(
                            new LogicalType[] {
                                new VarCharType(VarCharType.MAX_LENGTH),
                                new VarCharType(VarCharType.MAX_LENGTH)
                            },
                            new String[] {"id", "dt"});
            try (RowDataArrowWriter w = new RowDataArrowWriter(nullableId, c.allocator(), true)) {
                WriteCommand cmd =
                        WriteCommand.newBuilder().setDatabase("testdb").setTable(table).build();
                PutStream ps = c.startPut(cmd, w.root(), 4, null);
                GenericRowData r = GenericRowData.of(null, StringData.fromString("20261129"));
                w.write(r);
                w.finish();
                ps.putNext();
                assertThatThrownBy(ps::awaitAcks)
                        .isInstanceOf(SetatsGatewayException.class)
                        .hasMessageContaining("INVALID_ARGUMENT")
                        .hasMessageContaining("id");
                ps.close();
            }
        }
    }

    /** A test body with an open DoPut stream and the writer of its Arrow root. */
    private interface PutBody {
        void run(PutStream ps, RowDataArrowWriter w) throws Exception;
    }

    /**
     * Opens a DoPut stream on testdb.table (created with the seed's layout when absent, 2
     * buckets) whose ack timeout is ackTimeout, runs body, and closes the stream.
     */
    private static void withPut(String table, java.time.Duration ackTimeout, PutBody body) throws Exception {
        try (GatewayClient c = GATEWAY.client();
                RowDataArrowWriter w = new RowDataArrowWriter(SEED, c.allocator(), true)) {
            PutStream ps = c.startPut(createIfAbsent(table, seedSpec(table, 2)), w.root(), 4, ackTimeout, null);
            try {
                body.run(ps, w);
            } finally {
                ps.close();
            }
        }
    }

    /** Sends rows prefix0..prefix(n-1) (partition 20261129) as one record batch. */
    private static void send(PutStream ps, RowDataArrowWriter w, String prefix, int n) throws InterruptedException {
        for (int i = 0; i < n; i++) {
            w.write(row(RowKind.INSERT, prefix + i, "20261129", "n", "x"));
        }
        w.finish();
        ps.putNext(n);
        w.reset();
    }

    /** A test step that may throw. */
    private interface Step {
        void run() throws Exception;
    }

    /** Runs step while the gateway is suspended (SIGSTOP), resuming it afterwards. */
    private static void whileSuspended(Step step) throws Exception {
        GATEWAY.suspend();
        try {
            step.run();
        } finally {
            GATEWAY.resume();
        }
    }

    /**
     * A gateway that stops answering (SIGSTOP) after a batch was sent: the batch is not
     * acknowledged within the ack timeout, and awaitAcks fails with DEADLINE_EXCEEDED naming the
     * table, the gateway and the batch instead of waiting forever (issue 12, item 5).
     */
    @Test
    void unacknowledgedBatchFailsAfterAckTimeout() throws Exception {
        String table = "t_ack_timeout";
        // 5 s, not less: batch 0 (the table's first write) must be acknowledged within it on a
        // loaded machine too, or awaitAcks fails for batch 0 before the gateway is suspended.
        withPut(table, java.time.Duration.ofSeconds(5), (ps, w) -> {
            send(ps, w, "a", 1);
            ps.awaitAcks(); // batch 0 is acknowledged normally
            whileSuspended(() -> {
                send(ps, w, "b", 3);
                assertThatThrownBy(ps::awaitAcks)
                        .isInstanceOf(SetatsGatewayException.class)
                        .hasMessageContaining("DEADLINE_EXCEEDED")
                        .hasMessageContaining("testdb." + table)
                        .hasMessageContaining(GATEWAY.flightAddr())
                        .hasMessageContaining("batch 1 (3 rows)")
                        .hasMessageContaining("setats.sink.ack-timeout");
                // The failure sticks: every later call throws it too.
                assertThatThrownBy(ps::check).hasMessageContaining("batch 1 (3 rows)");
            });
        });
    }

    /** checkAckTimeout (the idle writer's timer) reports the timeout without anyone waiting. */
    @Test
    void checkAckTimeoutFailsAnIdleStream() throws Exception {
        String table = "t_ack_timeout_idle";
        // 5 s, not 1 s: "not due yet" right after the send must not depend on the JVM getting
        // there within the timeout on a loaded machine; then wait until it is due, not a fixed time.
        withPut(table, java.time.Duration.ofSeconds(5), (ps, w) -> {
          // The stream is up (batch 0 acknowledged) before the gateway stops answering: a
          // stream that is not ready yet when it stops is the case below.
          send(ps, w, "a", 1);
          ps.awaitAcks();
          whileSuspended(() -> {
            send(ps, w, "b", 1);
            ps.checkAckTimeout(); // not due yet
            assertThat(ps.msUntilAckTimeout()).isBetween(0L, 5000L);
            for (long left = ps.msUntilAckTimeout(); left > 0; left = ps.msUntilAckTimeout()) {
                Thread.sleep(left);
            }
            assertThatThrownBy(ps::checkAckTimeout)
                    .isInstanceOf(SetatsGatewayException.class)
                    .hasMessageContaining("batch 1 (1 rows)")
                    .hasMessageContaining("DoPut testdb." + table);
            assertThat(ps.failed()).isTrue();
          });
        });
    }

    /**
     * A gateway that stops answering before a new connection's DoPut stream is up: the stream
     * never becomes ready, and the first batch fails after the ack timeout instead of waiting
     * forever in putNext (it hung CI at stop 19: nothing was pending, so no ack timeout ran).
     */
    @Test
    @Timeout(value = 60, unit = TimeUnit.SECONDS)
    void firstBatchFailsWhenTheStreamNeverBecomesReady() throws Exception {
        String table = "t_never_ready";
        whileSuspended(() -> withPut(table, java.time.Duration.ofSeconds(1), (ps, w) -> {
            long t0 = System.nanoTime();
            assertThatThrownBy(() -> send(ps, w, "a", 2))
                    .isInstanceOf(SetatsGatewayException.class)
                    .hasMessageContaining("DEADLINE_EXCEEDED")
                    .hasMessageContaining("DoPut testdb." + table)
                    .hasMessageContaining(GATEWAY.flightAddr())
                    .hasMessageContaining("batch 0 (2 rows) could not be sent within 1000 ms")
                    .hasMessageContaining("setats.sink.ack-timeout");
            assertThat(System.nanoTime() - t0).isGreaterThanOrEqualTo(TimeUnit.SECONDS.toNanos(1));
            assertThat(ps.failed()).isTrue();
        }));
        // The gateway serves the table afterwards, and nothing of the failed batch was applied.
        withPut(table, java.time.Duration.ofSeconds(30), (ps, w) -> {
            send(ps, w, "b", 1);
            ps.awaitAcks();
        });
        try (GatewayClient c = GATEWAY.client()) {
            assertThat(ChangelogReader.readAll(c, "testdb", table))
                    .extracting(r -> (String) r.get("id"))
                    .containsExactly("b0");
        }
    }
}
