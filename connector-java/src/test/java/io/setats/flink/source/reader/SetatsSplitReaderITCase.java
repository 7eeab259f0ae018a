package io.setats.flink.source.reader;

import io.setats.flink.SetatsConnectorOptions.StartupMode;
import io.setats.flink.client.GatewayClient;
import io.setats.flink.source.SetatsSourceConfig;
import io.setats.flink.source.deserializer.ChangelogRecord;
import io.setats.flink.source.split.SetatsSplit;
import io.setats.flink.source.split.TableBucket;
import io.setats.flink.testutils.SetatsGatewayProcess;
import io.setats.proto.v1.BucketOffsets;
import io.setats.proto.v1.WriteAck;

import org.apache.flink.connector.base.source.reader.RecordsWithSplitIds;
import org.apache.flink.connector.base.source.reader.splitreader.SplitsAddition;
import org.apache.flink.table.api.DataTypes;
import org.apache.flink.table.data.RowData;
import org.apache.flink.table.types.logical.RowType;
import org.apache.flink.types.RowKind;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

import java.io.IOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import static io.setats.flink.source.SourceTestTables.create;
import static io.setats.flink.source.SourceTestTables.insert;
import static io.setats.flink.source.SourceTestTables.row;
import static io.setats.flink.source.SourceTestTables.spec;
import static io.setats.flink.source.SourceTestTables.write;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** SetatsSplitReader against a real gateway: live DoGet streams per split, positions, errors. */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class SetatsSplitReaderITCase {

    /** Retention runs every 100 ms so that read-case R6 needs no long wait. */
    @RegisterExtension
    static final SetatsGatewayProcess GATEWAY = new SetatsGatewayProcess("--retention-interval", "100ms");

    private static final String DB = "readerdb";
    private static final RowType TYPE =
            (RowType)
                    DataTypes.ROW(
                                    DataTypes.FIELD("id", DataTypes.INT().notNull()),
                                    DataTypes.FIELD("v", DataTypes.STRING()))
                            .getLogicalType();
    private static final TableBucket B0 = new TableBucket("", 0);

    private static final List<WriteAck> ACKS = new ArrayList<>();

    @BeforeAll
    static void writeTable() throws Exception {
        try (GatewayClient c = GATEWAY.client()) {
            create(c, spec(DB, "t", TYPE, Collections.singletonList("id"), Collections.emptyList(), 1, Collections.emptyMap()));
            ACKS.add(write(c, DB, "t", TYPE, Arrays.asList(insert(1, "a"), insert(2, "b"), insert(3, "c"))));
            ACKS.add(write(c, DB, "t", TYPE, Arrays.asList(insert(1, "a2"), row(RowKind.DELETE, 2, null))));
        }
    }

    private static SetatsSourceConfig config(String table) {
        return new SetatsSourceConfig(
                GATEWAY.managerUrl(), GATEWAY.warehouse().toString(), "hadoop", "setats", "",
                DB, table, StartupMode.EARLIEST, null, Duration.ofSeconds(300), -1, null);
    }

    private static List<ChangelogRecord> fetch(SetatsSplitReader reader, int n) throws IOException {
        List<ChangelogRecord> out = new ArrayList<>();
        while (out.size() < n) {
            RecordsWithSplitIds<ChangelogRecord> batch = reader.fetch();
            for (String split = batch.nextSplit(); split != null; split = batch.nextSplit()) {
                for (ChangelogRecord r = batch.nextRecordFromSplit(); r != null; r = batch.nextRecordFromSplit()) {
                    out.add(r.copy()); // the cursor moves on: keep a copy
                }
            }
            batch.recycle();
        }
        return out;
    }

    private static List<String> describe(List<ChangelogRecord> records) {
        List<String> out = new ArrayList<>();
        for (ChangelogRecord r : records) {
            out.add(r.offset() + " " + r.row().getRowKind().shortString() + "[" + r.row().getInt(0) + ", "
                    + (r.row().isNullAt(1) ? "null" : r.row().getString(1)) + "]");
        }
        return out;
    }

    @Test
    void readsTheChangelogFromAnOffsetAndFollowsNewRows() throws Exception {
        try (SetatsSplitReader reader = new SetatsSplitReader(config("t"), TYPE, 0)) {
            reader.handleSplitsChanges(new SplitsAddition<>(Collections.singletonList(SetatsSplit.atOffset(B0, 0))));
            List<ChangelogRecord> first = fetch(reader, 6);
            assertThat(describe(first))
                    .containsExactly("0 +I[1, a]", "1 +I[2, b]", "2 +I[3, c]", "3 -U[1, a]", "4 +U[1, a2]", "5 -D[2, b]");
            assertThat(first.get(0).commitTimestampMs()).isEqualTo(ACKS.get(0).getCommitMs());
            assertThat(first.get(5).commitTimestampMs()).isEqualTo(ACKS.get(1).getCommitMs());
            assertThat(first.get(0).tableBucket()).isEqualTo(B0);

            // The stream stays open: a new write is pushed to it.
            try (GatewayClient c = GATEWAY.client()) {
                write(c, DB, "t", TYPE, Collections.singletonList(insert(4, "d")));
                assertThat(describe(fetch(reader, 1))).containsExactly("6 +I[4, d]");
                // Clean up for the other tests: they expect offsets 0..5 only at the start.
                write(c, DB, "t", TYPE, Collections.singletonList(row(RowKind.DELETE, 4, null)));
                assertThat(describe(fetch(reader, 1))).containsExactly("7 -D[4, d]");
            }
        }
    }

    /**
     * With binary rows (the source in a job without object reuse) the reader hands out a reused
     * BinaryRowData per batch: the same changelog, and copies of its records own their bytes (the
     * kept copies still read their own strings after the cursor wrote later rows over its buffer).
     */
    @Test
    void binaryRowsReadTheSameChangelogAndTheirCopiesOwnTheirBytes() throws Exception {
        try (SetatsSplitReader reader = new SetatsSplitReader(config("t"), TYPE, 0, true)) {
            reader.handleSplitsChanges(new SplitsAddition<>(Collections.singletonList(SetatsSplit.atOffset(B0, 0))));
            List<ChangelogRecord> first = fetch(reader, 6);
            assertThat(describe(first).subList(0, 6))
                    .containsExactly("0 +I[1, a]", "1 +I[2, b]", "2 +I[3, c]", "3 -U[1, a]", "4 +U[1, a2]", "5 -D[2, b]");
            for (ChangelogRecord r : first) {
                assertThat(r.row()).isInstanceOf(org.apache.flink.table.data.binary.BinaryRowData.class);
            }
        }
    }

    /** Fetches until a fetch with rows arrives; returns it without reading or recycling it. */
    private static RecordsWithSplitIds<ChangelogRecord> fetchRows(SetatsSplitReader reader) throws IOException {
        while (true) {
            RecordsWithSplitIds<ChangelogRecord> f = reader.fetch();
            if (f.nextSplit() != null) {
                return f;
            }
        }
    }

    private static List<String> drain(RecordsWithSplitIds<ChangelogRecord> f) {
        List<ChangelogRecord> rows = new ArrayList<>();
        for (ChangelogRecord r = f.nextRecordFromSplit(); r != null; r = f.nextRecordFromSplit()) {
            rows.add(r.copy());
        }
        return describe(rows);
    }

    /**
     * A fetched batch owns its Arrow memory: its rows stay what they were while the stream loads
     * the next batches (the DoGet's root is reused), until Flink recycles the fetch; fetches the
     * task thread never recycled (cancel, failover) are released when the reader closes, so the
     * client's allocator closes clean (SetatsGatewayProcess fails the test on a leak).
     */
    @Test
    void fetchedRowsLiveUntilRecycledAndUnrecycledBatchesAreReleasedOnClose() throws Exception {
        try (GatewayClient c = GATEWAY.client()) {
            create(c, spec(DB, "kept", TYPE, Collections.singletonList("id"), Collections.emptyList(), 1, Collections.emptyMap()));
            write(c, DB, "kept", TYPE, Collections.singletonList(insert(1, "first \u00e9")));
            SetatsSplitReader reader = new SetatsSplitReader(config("kept"), TYPE, 0);
            RecordsWithSplitIds<ChangelogRecord> first;
            RecordsWithSplitIds<ChangelogRecord> third;
            try {
                reader.handleSplitsChanges(new SplitsAddition<>(Collections.singletonList(SetatsSplit.atOffset(B0, 0))));
                first = fetchRows(reader);
                write(c, DB, "kept", TYPE, Collections.singletonList(insert(2, "")));
                RecordsWithSplitIds<ChangelogRecord> second = fetchRows(reader);
                write(c, DB, "kept", TYPE, Collections.singletonList(insert(3, "third")));
                third = fetchRows(reader);
                // Two more batches went through the DoGet's root; the first still reads its own row.
                assertThat(drain(first)).containsExactly("0 +I[1, first \u00e9]");
                assertThat(drain(second)).containsExactly("1 +I[2, ]");
                first.recycle();
                second.recycle();
            } finally {
                reader.close();
            }
            SetatsGatewayProcess.assertNoArrowLeaks();
            // The batch fetched but never recycled was released by close.
            assertThatThrownBy(third::nextRecordFromSplit)
                    .isInstanceOf(IllegalStateException.class)
                    .hasMessageContaining("released");
        }
    }

    /**
     * The close race: Flink's SplitFetcher closes its split reader on the fetcher thread when it
     * shuts down, also when it went idle (no split left: SourceReaderBase asks for that through
     * SplitFetcherManager#maybeShutdownFinishedFetchers), while the task thread is still emitting
     * a fetch of it, or will emit the fetches still queued (SourceReaderBase#finishedOrAvailableLater
     * returns MORE_AVAILABLE then). The rows of such a fetch stay readable after the close (it used
     * to release them: the task thread failed with "released", or read freed memory), its memory
     * is released when recycled, and the client closes after it without a leak. Latches order the
     * two threads: the task thread reads a row, the fetcher closes, the task thread reads the rest.
     */
    @Test
    void aFetchEmittedWhileTheSplitReaderClosesStaysReadable() throws Exception {
        try (GatewayClient c = GATEWAY.client()) {
            create(c, spec(DB, "idle", TYPE, Collections.singletonList("id"), Collections.emptyList(), 1, Collections.emptyMap()));
            write(c, DB, "idle", TYPE, Arrays.asList(insert(1, "a"), insert(2, "b"), insert(3, "c")));
        }
        FetchedBatches fetched = new FetchedBatches();
        SetatsSplitReader reader = new SetatsSplitReader(config("idle"), TYPE, 0, false, fetched);
        reader.handleSplitsChanges(new SplitsAddition<>(Collections.singletonList(SetatsSplit.atOffset(B0, 0))));
        RecordsWithSplitIds<ChangelogRecord> fetch = fetchRows(reader);
        CountDownLatch firstRowRead = new CountDownLatch(1);
        CountDownLatch closed = new CountDownLatch(1);
        ExecutorService taskThread = Executors.newSingleThreadExecutor();
        try {
            Future<List<String>> emitted =
                    taskThread.submit(
                            () -> {
                                List<ChangelogRecord> rows = new ArrayList<>();
                                rows.add(fetch.nextRecordFromSplit().copy());
                                firstRowRead.countDown();
                                closed.await();
                                for (ChangelogRecord r = fetch.nextRecordFromSplit(); r != null; r = fetch.nextRecordFromSplit()) {
                                    rows.add(r.copy());
                                }
                                fetch.recycle();
                                return describe(rows);
                            });
            firstRowRead.await();
            reader.close(); // the fetcher thread's SplitFetcher shutting down
            closed.countDown();
            assertThat(emitted.get()).containsExactly("0 +I[1, a]", "1 +I[2, b]", "2 +I[3, c]");
            assertThat(fetched.size()).as("released when recycled").isZero();
        } finally {
            taskThread.shutdownNow();
            fetched.releaseAll();
        }
        SetatsGatewayProcess.assertNoArrowLeaks();
    }

    /**
     * Four splits on the one fetcher thread: no thread per split, each split's rows dense and in
     * order, and a row of one bucket arrives while the other three streams are idle (a fetcher
     * blocked on an idle stream would time this test out).
     */
    @Test
    void readsAllSplitsOnTheFetcherThreadWithoutAThreadPerSplit() throws Exception {
        int buckets = 4;
        int rows = 400;
        List<RowData> backlog = new ArrayList<>();
        for (int i = 0; i < rows; i++) {
            backlog.add(insert(i, "v" + i));
        }
        try (GatewayClient c = GATEWAY.client()) {
            create(c, spec(DB, "multi", TYPE, Collections.singletonList("id"), Collections.emptyList(), buckets, Collections.emptyMap()));
            write(c, DB, "multi", TYPE, backlog);
        }
        List<SetatsSplit> splits = new ArrayList<>();
        for (int b = 0; b < buckets; b++) {
            splits.add(SetatsSplit.atOffset(new TableBucket("", b), 0));
        }
        try (SetatsSplitReader reader = new SetatsSplitReader(config("multi"), TYPE, 0)) {
            reader.handleSplitsChanges(new SplitsAddition<>(splits));
            List<ChangelogRecord> got = fetch(reader, rows);
            assertThat(got).hasSize(rows);
            long[] next = new long[buckets];
            for (ChangelogRecord r : got) {
                int b = r.tableBucket().bucket();
                assertThat(r.offset()).as("offset in bucket %d", b).isEqualTo(next[b]);
                next[b]++;
            }
            for (Thread t : Thread.getAllStackTraces().keySet()) {
                assertThat(t.getName()).as("a thread of the split reader").doesNotContain(DB + ".multi");
            }

            try (GatewayClient c = GATEWAY.client()) {
                write(c, DB, "multi", TYPE, Collections.singletonList(insert(rows, "late")));
            }
            List<ChangelogRecord> late = fetch(reader, 1);
            assertThat(late.get(0).row().getString(1).toString()).isEqualTo("late");
        }
    }

    @Test
    void startsExactlyAtTheSplitsOffset() throws Exception {
        try (SetatsSplitReader reader = new SetatsSplitReader(config("t"), TYPE, 0)) {
            reader.handleSplitsChanges(new SplitsAddition<>(Collections.singletonList(SetatsSplit.atOffset(B0, 3))));
            assertThat(describe(fetch(reader, 3))).startsWith("3 -U[1, a]", "4 +U[1, a2]", "5 -D[2, b]");
        }
    }

    @Test
    void timestampSplitStartsAtTheFirstRowCommittedAtOrAfterIt() throws Exception {
        long second = ACKS.get(1).getCommitMs();
        try (SetatsSplitReader reader = new SetatsSplitReader(config("t"), TYPE, 0)) {
            reader.handleSplitsChanges(
                    new SplitsAddition<>(Collections.singletonList(SetatsSplit.atTimestamp(B0, 0, second))));
            List<ChangelogRecord> got = fetch(reader, 1);
            assertThat(got.get(0).offset()).isEqualTo(3);
            assertThat(got.get(0).commitTimestampMs()).isEqualTo(second);
        }
    }

    @Test
    void wakeUpReturnsAnEmptyFetch() throws Exception {
        try (SetatsSplitReader reader = new SetatsSplitReader(config("t"), TYPE, 0)) {
            reader.wakeUp();
            RecordsWithSplitIds<ChangelogRecord> batch = reader.fetch();
            assertThat(batch.nextSplit()).isNull();
            assertThat(batch.finishedSplits()).isEmpty();
        }
    }

    @Test
    void aColumnTheTableLacksFailsTheFetchNamingIt() throws Exception {
        RowType wrong =
                (RowType) DataTypes.ROW(DataTypes.FIELD("id", DataTypes.INT()), DataTypes.FIELD("missing", DataTypes.STRING()))
                        .getLogicalType();
        try (SetatsSplitReader reader = new SetatsSplitReader(config("t"), wrong, 0)) {
            reader.handleSplitsChanges(new SplitsAddition<>(Collections.singletonList(SetatsSplit.atOffset(B0, 0))));
            assertThatThrownBy(() -> fetch(reader, 1))
                    .isInstanceOf(IOException.class)
                    .hasMessageContaining("'missing'")
                    .hasMessageContaining(DB + ".t");
        }
    }

    @Test
    void anOffsetBeyondTheEndFails() throws Exception {
        try (SetatsSplitReader reader = new SetatsSplitReader(config("t"), TYPE, 0)) {
            reader.handleSplitsChanges(new SplitsAddition<>(Collections.singletonList(SetatsSplit.atOffset(B0, 1_000))));
            assertThatThrownBy(() -> fetch(reader, 1))
                    .isInstanceOf(IOException.class)
                    .hasMessageContaining("OUT_OF_RANGE")
                    .hasMessageContaining("1000");
        }
    }

    /**
     * A split carries the table id it was made for: after the table was dropped and re-created, the
     * stream of a (restored) split with the old id fails with the gateway's NotFound naming both ids
     * instead of reading the new table from the old offset; a split with the new id reads it.
     */
    @Test
    void aSplitOfADroppedAndRecreatedTableFailsNamingBothTableIds() throws Exception {
        String oldId;
        String newId;
        try (GatewayClient c = GATEWAY.client()) {
            create(c, spec(DB, "recreated", TYPE, Collections.singletonList("id"), Collections.emptyList(), 1,
                    Collections.emptyMap()));
            write(c, DB, "recreated", TYPE, Arrays.asList(insert(1, "old1"), insert(2, "old2")));
            oldId = c.getTable(DB, "recreated").orElseThrow(AssertionError::new).getTableId();
            c.dropTable(DB, "recreated", false);
            create(c, spec(DB, "recreated", TYPE, Collections.singletonList("id"), Collections.emptyList(), 1,
                    Collections.emptyMap()));
            write(c, DB, "recreated", TYPE, Arrays.asList(insert(7, "new7"), insert(8, "new8"), insert(9, "new9")));
            newId = c.getTable(DB, "recreated").orElseThrow(AssertionError::new).getTableId();
        }
        assertThat(oldId).isNotEmpty();
        assertThat(newId).isNotEmpty().isNotEqualTo(oldId);

        // A split checkpointed while reading the old table, at offset 1.
        try (SetatsSplitReader reader = new SetatsSplitReader(config("recreated"), TYPE, 0)) {
            reader.handleSplitsChanges(
                    new SplitsAddition<>(Collections.singletonList(SetatsSplit.atOffset(B0, 1, oldId))));
            assertThatThrownBy(() -> fetch(reader, 1))
                    .isInstanceOf(IOException.class)
                    .hasMessageContaining("NOT_FOUND")
                    .hasMessageContaining(oldId)
                    .hasMessageContaining(newId)
                    .hasMessageContaining(DB + ".recreated")
                    .hasMessageContaining("offset 1");
        }
        // The same holds for a timestamp position.
        try (SetatsSplitReader reader = new SetatsSplitReader(config("recreated"), TYPE, 0)) {
            reader.handleSplitsChanges(
                    new SplitsAddition<>(Collections.singletonList(SetatsSplit.atTimestamp(B0, 0, 0L, oldId))));
            assertThatThrownBy(() -> fetch(reader, 1))
                    .isInstanceOf(IOException.class)
                    .hasMessageContaining("NOT_FOUND")
                    .hasMessageContaining(oldId)
                    .hasMessageContaining(newId);
        }
        // A split made for the new table reads it from its offset.
        try (SetatsSplitReader reader = new SetatsSplitReader(config("recreated"), TYPE, 0)) {
            reader.handleSplitsChanges(
                    new SplitsAddition<>(Collections.singletonList(SetatsSplit.atOffset(B0, 1, newId))));
            assertThat(describe(fetch(reader, 2))).containsExactly("1 +I[8, new8]", "2 +I[9, new9]");
        }
    }

    /** Read-case R6: an expired position fails loudly, naming the bucket and the removed offsets. */
    @Test
    void anExpiredOffsetFailsNamingTheBucketAndTheRemovedRange() throws Exception {
        try (GatewayClient c = GATEWAY.client()) {
            create(c, spec(DB, "expiring", TYPE, Collections.singletonList("id"), Collections.emptyList(), 1,
                    Collections.singletonMap("changelog.retention.ms", "1000")));
            write(c, DB, "expiring", TYPE, Collections.singletonList(insert(1, null)));
            // Wait (bounded) until retention removed the row: the bucket's start offset moves to 1.
            long deadline = System.currentTimeMillis() + 60_000;
            long start = 0;
            while (start == 0 && System.currentTimeMillis() < deadline) {
                BucketOffsets b = c.listBuckets(DB, "expiring").getBuckets(0);
                start = b.getStartOffset();
                if (start == 0) {
                    Thread.sleep(100);
                }
            }
            assertThat(start).as("retention removed offset 0").isEqualTo(1);
        }
        try (SetatsSplitReader reader = new SetatsSplitReader(config("expiring"), TYPE, 0)) {
            reader.handleSplitsChanges(new SplitsAddition<>(Collections.singletonList(SetatsSplit.atOffset(B0, 0))));
            assertThatThrownBy(() -> fetch(reader, 1))
                    .isInstanceOf(IOException.class)
                    .hasMessageContaining("OUT_OF_RANGE")
                    .hasMessageContaining("bucket 0")
                    .hasMessageContaining(DB + ".expiring")
                    .hasMessageContaining("[0, 1)");
        }
    }
}
