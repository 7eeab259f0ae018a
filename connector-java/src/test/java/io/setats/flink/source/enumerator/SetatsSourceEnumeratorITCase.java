package io.setats.flink.source.enumerator;

import io.setats.flink.SetatsConnectorOptions.StartupMode;
import io.setats.flink.client.GatewayClient;
import io.setats.flink.source.SetatsSourceConfig;
import io.setats.flink.source.split.SetatsSplit;
import io.setats.flink.source.split.TableBucket;
import io.setats.flink.source.state.SetatsEnumeratorState;
import io.setats.flink.source.state.SetatsEnumeratorStateSerializer;
import io.setats.flink.testutils.SetatsGatewayProcess;
import io.setats.proto.v1.BucketOffsets;
import io.setats.proto.v1.WriteAck;

import org.apache.flink.connector.testutils.source.reader.TestingSplitEnumeratorContext;
import org.apache.flink.table.api.DataTypes;
import org.apache.flink.table.types.logical.RowType;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

import javax.annotation.Nullable;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;

import static io.setats.flink.source.SourceTestTables.create;
import static io.setats.flink.source.SourceTestTables.insert;
import static io.setats.flink.source.SourceTestTables.spec;
import static io.setats.flink.source.SourceTestTables.write;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * SetatsSourceEnumerator against a real gateway, driven by Flink's TestingSplitEnumeratorContext
 * (gateway calls and periodic discovery run only when the test triggers them).
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class SetatsSourceEnumeratorITCase {

    @RegisterExtension static final SetatsGatewayProcess GATEWAY = new SetatsGatewayProcess();

    private static final String DB = "enumdb";
    private static final RowType KV =
            (RowType)
                    DataTypes.ROW(
                                    DataTypes.FIELD("id", DataTypes.INT().notNull()),
                                    DataTypes.FIELD("v", DataTypes.STRING()))
                            .getLogicalType();
    private static final RowType PARTITIONED =
            (RowType)
                    DataTypes.ROW(
                                    DataTypes.FIELD("id", DataTypes.STRING().notNull()),
                                    DataTypes.FIELD("dt", DataTypes.STRING().notNull()),
                                    DataTypes.FIELD("v", DataTypes.STRING()))
                            .getLogicalType();

    private static SetatsSourceConfig config(
            String table, StartupMode mode, @Nullable Long ts, int bucket, @Nullable String bucketKey) {
        return new SetatsSourceConfig(
                GATEWAY.managerUrl(), GATEWAY.warehouse().toString(), "hadoop", "setats", "",
                DB, table, mode, ts, Duration.ofSeconds(1), bucket, bucketKey);
    }

    private static SetatsSourceConfig config(String table, StartupMode mode) {
        return config(table, mode, null, -1, null);
    }

    private static void createKv(String table, int buckets) {
        try (GatewayClient c = GATEWAY.client()) {
            create(c, spec(DB, table, KV, Collections.singletonList("id"), Collections.emptyList(), buckets, Collections.emptyMap()));
        }
    }

    private static WriteAck writeKv(String table, int from, int to, String v) throws InterruptedException {
        List<org.apache.flink.table.data.RowData> rows = new ArrayList<>();
        for (int i = from; i < to; i++) {
            rows.add(insert(i, v));
        }
        try (GatewayClient c = GATEWAY.client()) {
            return write(c, DB, table, KV, rows);
        }
    }

    /** TableInfo.table_id of the table, from get-table. */
    private static String tableId(String table) {
        try (GatewayClient c = GATEWAY.client()) {
            String id = c.getTable(DB, table).orElseThrow(AssertionError::new).getTableId();
            assertThat(id).isNotEmpty();
            return id;
        }
    }

    private static Map<TableBucket, BucketOffsets> buckets(String table) {
        try (GatewayClient c = GATEWAY.client()) {
            return c.listBuckets(DB, table).getBucketsList().stream()
                    .collect(Collectors.toMap(b -> new TableBucket(b.getPartition(), b.getBucket()), b -> b));
        }
    }

    private static Map<Integer, List<SetatsSplit>> assignments(TestingSplitEnumeratorContext<SetatsSplit> ctx) {
        Map<Integer, List<SetatsSplit>> out = new HashMap<>();
        ctx.getSplitAssignments().forEach((k, v) -> out.put(k, new ArrayList<>(v.getAssignedSplits())));
        return out;
    }

    private static List<SetatsSplit> allAssigned(TestingSplitEnumeratorContext<SetatsSplit> ctx) {
        List<SetatsSplit> out = new ArrayList<>();
        assignments(ctx).values().forEach(out::addAll);
        return out;
    }

    private static TestingSplitEnumeratorContext<SetatsSplit> context(int parallelism, int registered) {
        TestingSplitEnumeratorContext<SetatsSplit> ctx = new TestingSplitEnumeratorContext<>(parallelism);
        for (int i = 0; i < registered; i++) {
            ctx.registerReader(i, "localhost");
        }
        return ctx;
    }

    @Test
    void latestResolvesToTheEndOffsetsAtStartAndSpreadsBucketsOverReaders() throws Exception {
        createKv("latest", 4);
        writeKv("latest", 0, 40, "a");
        Map<TableBucket, BucketOffsets> atStart = buckets("latest");
        assertThat(atStart).hasSize(4);

        TestingSplitEnumeratorContext<SetatsSplit> ctx = context(2, 2);
        try (SetatsSourceEnumerator e =
                new SetatsSourceEnumerator(ctx, config("latest", StartupMode.LATEST), KV, SetatsEnumeratorState.initial(), false)) {
            e.start();
            ctx.triggerAllActions();
            Map<Integer, List<SetatsSplit>> a = assignments(ctx);
            String id = tableId("latest");
            assertThat(allAssigned(ctx)).allSatisfy(s -> assertThat(s.tableId()).isEqualTo(id));
            assertThat(a.get(0)).extracting(s -> s.tableBucket().bucket()).containsExactlyInAnyOrder(0, 2);
            assertThat(a.get(1)).extracting(s -> s.tableBucket().bucket()).containsExactlyInAnyOrder(1, 3);
            for (SetatsSplit s : allAssigned(ctx)) {
                assertThat(s.startingOffset()).isEqualTo(atStart.get(s.tableBucket()).getEndOffset());
                assertThat(s.startingTimestampMs()).isNull();
            }
        }
    }

    @Test
    void earliestResolvesToTheOldestRetainedOffsets() throws Exception {
        createKv("earliest", 2);
        writeKv("earliest", 0, 10, "a");
        TestingSplitEnumeratorContext<SetatsSplit> ctx = context(1, 1);
        try (SetatsSourceEnumerator e =
                new SetatsSourceEnumerator(ctx, config("earliest", StartupMode.EARLIEST), KV, SetatsEnumeratorState.initial(), false)) {
            e.start();
            ctx.triggerAllActions();
            String id = tableId("earliest");
            assertThat(allAssigned(ctx))
                    .containsExactlyInAnyOrder(
                            SetatsSplit.atOffset(new TableBucket("", 0), 0, id),
                            SetatsSplit.atOffset(new TableBucket("", 1), 0, id));
        }
    }

    @Test
    void fromTimestampResolvesInclusiveAndKeepsAFutureTimestampPending() throws Exception {
        createKv("fromts", 1);
        WriteAck first = writeKv("fromts", 0, 2, "a");
        while (System.currentTimeMillis() <= first.getCommitMs()) {
            Thread.sleep(1); // the next batch gets a later commit time
        }
        WriteAck second = writeKv("fromts", 2, 3, "b");
        assertThat(second.getCommitMs()).isGreaterThan(first.getCommitMs());
        TableBucket b0 = new TableBucket("", 0);
        String id = tableId("fromts");

        Map<Long, SetatsSplit> expected = new HashMap<>();
        expected.put(first.getCommitMs() - 50, SetatsSplit.atOffset(b0, 0, id));
        expected.put(first.getCommitMs(), SetatsSplit.atOffset(b0, 0, id));
        expected.put(first.getCommitMs() + 1, SetatsSplit.atOffset(b0, 2, id));
        expected.put(second.getCommitMs(), SetatsSplit.atOffset(b0, 2, id));
        long future = second.getCommitMs() + 3_600_000;
        expected.put(future, SetatsSplit.atTimestamp(b0, 3, future, id));
        for (Map.Entry<Long, SetatsSplit> c : expected.entrySet()) {
            TestingSplitEnumeratorContext<SetatsSplit> ctx = context(1, 1);
            try (SetatsSourceEnumerator e =
                    new SetatsSourceEnumerator(
                            ctx, config("fromts", StartupMode.FROM_TIMESTAMP, c.getKey(), -1, null), KV,
                            SetatsEnumeratorState.initial(), false)) {
                e.start();
                ctx.triggerAllActions();
                assertThat(allAssigned(ctx)).as("timestamp %d", c.getKey()).containsExactly(c.getValue());
            }
        }
    }

    @Test
    void splitsWaitForTheirReaderAndAreCheckpointedAsPending() throws Exception {
        createKv("pending", 4);
        writeKv("pending", 0, 40, "a");
        TestingSplitEnumeratorContext<SetatsSplit> ctx = context(2, 1); // reader 1 not there yet
        try (SetatsSourceEnumerator e =
                new SetatsSourceEnumerator(ctx, config("pending", StartupMode.EARLIEST), KV, SetatsEnumeratorState.initial(), false)) {
            e.start();
            ctx.triggerAllActions();
            assertThat(assignments(ctx)).containsOnlyKeys(0);
            SetatsEnumeratorState state = e.snapshotState(1);
            assertThat(state.startupResolved()).isTrue();
            assertThat(state.assignedBuckets()).containsExactly(new TableBucket("", 0), new TableBucket("", 2));
            String id = tableId("pending");
            assertThat(state.pendingSplits())
                    .containsExactly(
                            SetatsSplit.atOffset(new TableBucket("", 1), 0, id),
                            SetatsSplit.atOffset(new TableBucket("", 3), 0, id));

            ctx.registerReader(1, "localhost");
            e.addReader(1);
            assertThat(assignments(ctx).get(1)).extracting(s -> s.tableBucket().bucket()).containsExactly(1, 3);
            assertThat(e.snapshotState(2).pendingSplits()).isEmpty();

            // A failed reader's splits come back and go to it again once it is there.
            List<SetatsSplit> back = Collections.singletonList(SetatsSplit.atOffset(new TableBucket("", 1), 7, id));
            e.addSplitsBack(back, 1);
            assertThat(assignments(ctx).get(1)).hasSize(3).last().isEqualTo(back.get(0));
        }
    }

    /** Read-case R3 at the enumerator: a partition that appears after start is read from offset 0. */
    @Test
    void bucketsFoundAfterStartReadFromTheirEarliestOffset() throws Exception {
        try (GatewayClient c = GATEWAY.client()) {
            create(c, spec(DB, "parts", PARTITIONED, Arrays.asList("id", "dt"), Collections.singletonList("dt"), 2, Collections.emptyMap()));
            write(c, DB, "parts", PARTITIONED, Arrays.asList(insert("k0", "d1", "x"), insert("k1", "d1", "y"), insert("k2", "d1", "z")));
        }
        TestingSplitEnumeratorContext<SetatsSplit> ctx = context(1, 1);
        try (SetatsSourceEnumerator e =
                new SetatsSourceEnumerator(ctx, config("parts", StartupMode.LATEST), PARTITIONED, SetatsEnumeratorState.initial(), false)) {
            e.start();
            ctx.triggerAllActions();
            List<SetatsSplit> initial = allAssigned(ctx);
            assertThat(initial).allSatisfy(s -> assertThat(s.tableBucket().partition()).isEqualTo("dt=d1"));
            assertThat(initial).allSatisfy(s -> assertThat(s.startingOffset()).isPositive());

            try (GatewayClient c = GATEWAY.client()) {
                write(c, DB, "parts", PARTITIONED, Collections.singletonList(insert("k1", "d2", "r1")));
                write(c, DB, "parts", PARTITIONED, Collections.singletonList(insert("k2", "d2", "s1")));
            }
            ctx.getExecutorService().triggerPeriodicScheduledTasks(); // one discovery interval
            List<SetatsSplit> found = allAssigned(ctx);
            found.removeAll(initial);
            assertThat(found).isNotEmpty();
            String id = tableId("parts");
            assertThat(found).allSatisfy(s -> {
                assertThat(s.tableBucket().partition()).isEqualTo("dt=d2");
                assertThat(s.startingOffset()).isZero();
                assertThat(s.tableId()).isEqualTo(id);
            });
            Map<TableBucket, BucketOffsets> now = buckets("parts");
            assertThat(found).extracting(SetatsSplit::tableBucket)
                    .containsExactlyInAnyOrderElementsOf(
                            now.keySet().stream().filter(b -> b.partition().equals("dt=d2")).collect(Collectors.toList()));
        }
    }

    @Test
    void theWatchStreamFindsNewBucketsWithoutWaitingForTheInterval() throws Exception {
        try (GatewayClient c = GATEWAY.client()) {
            create(c, spec(DB, "watched", PARTITIONED, Arrays.asList("id", "dt"), Collections.singletonList("dt"), 1, Collections.emptyMap()));
            write(c, DB, "watched", PARTITIONED, Collections.singletonList(insert("k0", "d1", "x")));
        }
        TestingSplitEnumeratorContext<SetatsSplit> ctx = context(1, 1);
        try (SetatsSourceEnumerator e =
                new SetatsSourceEnumerator(ctx, config("watched", StartupMode.LATEST), PARTITIONED, SetatsEnumeratorState.initial(), true)) {
            e.start();
            ctx.getExecutorService().triggerAll(); // startup only; periodic discovery is never triggered here
            assertThat(allAssigned(ctx)).extracting(s -> s.tableBucket().partition()).containsExactly("dt=d1");

            try (GatewayClient c = GATEWAY.client()) {
                write(c, DB, "watched", PARTITIONED, Collections.singletonList(insert("k1", "d2", "r1")));
            }
            // NEW_BUCKET reaches the watch thread, which posts a discovery to the coordinator.
            long deadline = System.currentTimeMillis() + 60_000;
            while (allAssigned(ctx).size() < 2 && System.currentTimeMillis() < deadline) {
                ctx.getExecutorService().triggerAll();
                Thread.sleep(20);
            }
            assertThat(allAssigned(ctx)).contains(SetatsSplit.atOffset(new TableBucket("dt=d2", 0), 0, tableId("watched")));
        }
    }

    @Test
    void aRestoredEnumeratorKeepsResolvedPositionsAndReadsNewBucketsFromEarliest() throws Exception {
        createKv("restore", 2);
        writeKv("restore", 0, 20, "a");
        TestingSplitEnumeratorContext<SetatsSplit> ctx = context(2, 1);
        SetatsEnumeratorState state;
        try (SetatsSourceEnumerator e =
                new SetatsSourceEnumerator(ctx, config("restore", StartupMode.LATEST), KV, SetatsEnumeratorState.initial(), false)) {
            e.start();
            ctx.triggerAllActions();
            SetatsEnumeratorStateSerializer ser = SetatsEnumeratorStateSerializer.INSTANCE;
            state = ser.deserialize(ser.getVersion(), ser.serialize(e.snapshotState(1)));
        }
        assertThat(state.pendingSplits()).hasSize(1); // bucket 1 waits for reader 1
        SetatsSplit pending = state.pendingSplits().get(0);
        assertThat(pending.tableId()).isEqualTo(tableId("restore"));

        writeKv("restore", 0, 20, "b"); // moves every bucket's end offset

        TestingSplitEnumeratorContext<SetatsSplit> ctx2 = context(2, 2);
        try (SetatsSourceEnumerator e =
                new SetatsSourceEnumerator(ctx2, config("restore", StartupMode.LATEST), KV, state, false)) {
            e.start();
            ctx2.triggerAllActions();
            // Bucket 0 was assigned before (its position is in the reader's state): not again.
            // Bucket 1 keeps the position resolved at the first start, not the new end offset.
            assertThat(allAssigned(ctx2)).containsExactly(pending);
        }
    }

    @Test
    void aDeclaredBucketCountOrBucketKeyThatDiffersFailsTheStartNamingBoth() throws Exception {
        createKv("layout", 2);
        writeKv("layout", 0, 4, "a");
        TestingSplitEnumeratorContext<SetatsSplit> ctx = context(1, 1);
        try (SetatsSourceEnumerator e =
                new SetatsSourceEnumerator(ctx, config("layout", StartupMode.EARLIEST, null, 3, null), KV, SetatsEnumeratorState.initial(), false)) {
            e.start();
            assertThatThrownBy(ctx::triggerAllActions)
                    .hasMessageContaining("'bucket' = 3")
                    .hasMessageContaining("2 buckets")
                    .hasMessageContaining(DB + ".layout");
        }
        TestingSplitEnumeratorContext<SetatsSplit> ctx2 = context(1, 1);
        try (SetatsSourceEnumerator e =
                new SetatsSourceEnumerator(ctx2, config("layout", StartupMode.EARLIEST, null, 2, "v"), KV, SetatsEnumeratorState.initial(), false)) {
            e.start();
            assertThatThrownBy(ctx2::triggerAllActions)
                    .hasMessageContaining("'bucket-key' = 'v'")
                    .hasMessageContaining("[id]");
        }
        TestingSplitEnumeratorContext<SetatsSplit> ctx3 = context(1, 1);
        try (SetatsSourceEnumerator e =
                new SetatsSourceEnumerator(ctx3, config("layout", StartupMode.EARLIEST, null, 2, "id"), KV, SetatsEnumeratorState.initial(), false)) {
            e.start();
            ctx3.triggerAllActions();
            assertThat(allAssigned(ctx3)).hasSize(2);
        }
    }

    @Test
    void aMissingTableOrColumnFailsTheStart() throws Exception {
        TestingSplitEnumeratorContext<SetatsSplit> ctx = context(1, 1);
        try (SetatsSourceEnumerator e =
                new SetatsSourceEnumerator(ctx, config("no_such_table", StartupMode.EARLIEST), KV, SetatsEnumeratorState.initial(), false)) {
            e.start();
            assertThatThrownBy(ctx::triggerAllActions).hasMessageContaining(DB + ".no_such_table").hasMessageContaining("does not exist");
        }
        createKv("columns", 1);
        RowType wrong =
                (RowType) DataTypes.ROW(DataTypes.FIELD("id", DataTypes.INT()), DataTypes.FIELD("name", DataTypes.STRING())).getLogicalType();
        TestingSplitEnumeratorContext<SetatsSplit> ctx2 = context(1, 1);
        try (SetatsSourceEnumerator e =
                new SetatsSourceEnumerator(ctx2, config("columns", StartupMode.EARLIEST), wrong, SetatsEnumeratorState.initial(), false)) {
            e.start();
            assertThatThrownBy(ctx2::triggerAllActions).hasMessageContaining("'name'").hasMessageContaining("[id, v]");
        }
    }
}
