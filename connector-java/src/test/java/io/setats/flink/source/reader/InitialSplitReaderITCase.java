package io.setats.flink.source.reader;

import io.setats.flink.SetatsConnectorOptions.StartupMode;
import io.setats.flink.client.GatewayClient;
import io.setats.flink.source.SetatsSourceConfig;
import io.setats.flink.source.deserializer.ChangelogRecord;
import io.setats.flink.source.deserializer.ChangelogRecord.Kind;
import io.setats.flink.source.snapshot.BucketSnapshotReader;
import io.setats.flink.source.snapshot.SnapshotRow;
import io.setats.flink.source.split.SetatsSplit;
import io.setats.flink.source.split.SetatsSplitSerializer;
import io.setats.flink.source.split.SetatsSplitState;
import io.setats.flink.source.split.SnapshotPosition;
import io.setats.flink.source.split.TableBucket;
import io.setats.flink.testutils.SetatsGatewayProcess;

import org.apache.flink.connector.base.source.reader.RecordsWithSplitIds;
import org.apache.flink.connector.base.source.reader.splitreader.SplitsAddition;
import org.apache.flink.table.api.DataTypes;
import org.apache.flink.table.data.RowData;
import org.apache.flink.table.types.logical.RowType;
import org.apache.flink.types.RowKind;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

import java.io.IOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.TimeUnit;

import static io.setats.flink.source.SourceTestTables.create;
import static io.setats.flink.source.SourceTestTables.insert;
import static io.setats.flink.source.SourceTestTables.row;
import static io.setats.flink.source.SourceTestTables.spec;
import static io.setats.flink.source.SourceTestTables.write;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * The snapshot phase of {@code startup.mode = 'initial'} splits (SPEC section 9) in the split reader
 * against a real gateway, with the split state moved exactly as the record emitter moves it: a
 * fresh snapshot then the changelog from E; a restore mid-snapshot (after a key, on a newer view)
 * that first catches up the keys already emitted; a restore in the middle of that catch-up; an
 * empty bucket. Each case folds what was emitted before and after and compares it to the table.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class InitialSplitReaderITCase {

    @RegisterExtension static final SetatsGatewayProcess GATEWAY = new SetatsGatewayProcess();

    private static final String DB = "initialdb";
    private static final RowType TYPE =
            (RowType)
                    DataTypes.ROW(
                                    DataTypes.FIELD("id", DataTypes.INT().notNull()),
                                    DataTypes.FIELD("v", DataTypes.STRING()))
                            .getLogicalType();
    private static final TableBucket B0 = new TableBucket("", 0);

    private static SetatsSourceConfig config(String table) {
        return new SetatsSourceConfig(
                GATEWAY.managerUrl(), GATEWAY.warehouse().toString(), "hadoop", "setats", "",
                DB, table, StartupMode.INITIAL, null, Duration.ofSeconds(300), -1, null);
    }

    private static void createTable(String table, int buckets) {
        try (GatewayClient c = GATEWAY.client()) {
            create(c, spec(DB, table, TYPE, Collections.singletonList("id"), Collections.emptyList(), buckets,
                    Collections.emptyMap()));
        }
    }

    private static void put(String table, RowData... rows) throws InterruptedException {
        try (GatewayClient c = GATEWAY.client()) {
            write(c, DB, table, TYPE, Arrays.asList(rows));
        }
    }

    /** A split reader driven like the source reader: every record moves the split state. */
    private static final class Driver implements AutoCloseable {
        final SetatsSplitReader reader;
        final SetatsSplitState state;
        final List<ChangelogRecord> emitted = new ArrayList<>();

        Driver(String table, SetatsSplit split) {
            reader = new SetatsSplitReader(config(table), TYPE, 0);
            state = new SetatsSplitState(split);
            reader.handleSplitsChanges(new SplitsAddition<>(Collections.singletonList(split)));
        }

        /** Fetches until {@code until} holds for an emitted record (markers included). */
        void fetchUntil(java.util.function.Predicate<ChangelogRecord> until) throws IOException {
            while (true) {
                if (Thread.currentThread().isInterrupted()) {
                    throw new IOException("interrupted (test timeout) while waiting for rows; got " + emitted);
                }
                RecordsWithSplitIds<ChangelogRecord> batch = reader.fetch();
                for (String s = batch.nextSplit(); s != null; s = batch.nextSplit()) {
                    for (ChangelogRecord r = batch.nextRecordFromSplit(); r != null; r = batch.nextRecordFromSplit()) {
                        apply(r);
                        if (until.test(r)) {
                            return;
                        }
                    }
                }
            }
        }

        /** Fetches and applies whole batches until one held a snapshot row (as a source reader does). */
        void fetchSnapshotBatch() throws IOException {
            while (!emitted.stream().anyMatch(r -> r.kind() == Kind.SNAPSHOT)) {
                RecordsWithSplitIds<ChangelogRecord> batch = reader.fetch();
                for (String s = batch.nextSplit(); s != null; s = batch.nextSplit()) {
                    for (ChangelogRecord r = batch.nextRecordFromSplit(); r != null; r = batch.nextRecordFromSplit()) {
                        apply(r);
                    }
                }
                batch.recycle();
            }
        }

        /** As SetatsRecordEmitter: markers move the position only; rows are emitted, then move it. */
        void apply(ChangelogRecord r) {
            switch (r.kind()) {
                case VIEW:
                    state.viewMovedTo(r.viewOffset());
                    break;
                case SNAPSHOT_DONE:
                    state.snapshotDone(r.viewOffset());
                    break;
                case SNAPSHOT:
                    emitted.add(r.copy());
                    state.snapshotRowEmitted(r.viewOffset(), r.snapshotKey());
                    break;
                case CATCH_UP:
                    emitted.add(r.copy());
                    state.catchUpRowEmitted(r.offset());
                    break;
                default:
                    emitted.add(r.copy());
                    state.emitted(r.offset());
            }
        }

        /** The split a checkpoint would store now, through the serializer as in a real checkpoint. */
        SetatsSplit checkpoint() throws IOException {
            SetatsSplitSerializer ser = SetatsSplitSerializer.INSTANCE;
            return ser.deserialize(ser.getVersion(), ser.serialize(state.toSplit()));
        }

        @Override
        public void close() throws Exception {
            reader.close();
        }
    }

    private static final java.util.function.Predicate<ChangelogRecord> DONE = r -> r.kind() == Kind.SNAPSHOT_DONE;

    /**
     * Folds rows into a table, checking the RowKind state machine: no +I/+U... for a key that is
     * there unless it is an update after, -U/-D equal to the current row.
     */
    private static void fold(Map<Integer, String> table, List<ChangelogRecord> records) {
        for (ChangelogRecord r : records) {
            RowData row = r.row();
            int k = row.getInt(0);
            String v = row.isNullAt(1) ? null : row.getString(1).toString();
            switch (row.getRowKind()) {
                case INSERT:
                    assertThat(table).as("+I of live key %d (%s)", k, r).doesNotContainKey(k);
                    table.put(k, v);
                    break;
                case UPDATE_AFTER:
                    table.put(k, v);
                    break;
                case UPDATE_BEFORE:
                    assertThat(table).as("-U of %s", r).containsEntry(k, v);
                    break;
                default:
                    assertThat(table).as("-D of %s", r).containsEntry(k, v);
                    table.remove(k);
            }
        }
    }

    private static Map<Integer, String> tableNow(String table) throws IOException {
        Map<Integer, String> out = new HashMap<>();
        try (GatewayClient c = GATEWAY.client();
                BucketSnapshotReader r = BucketSnapshotReader.open(c, DB, table, "", B0, TYPE, null, 0)) {
            for (SnapshotRow s : r.readAll()) {
                out.put(s.row().getInt(0), s.row().isNullAt(1) ? null : s.row().getString(1).toString());
            }
        }
        return out;
    }

    /** S7 at the split reader: the snapshot at E as +I, then the changelog from E exactly. */
    @Test
    void snapshotThenTheChangelogFromItsEndOffset() throws Exception {
        createTable("s7", 1);
        put("s7", insert(1, "a"), insert(2, "b"));
        put("s7", row(RowKind.UPDATE_AFTER, 1, "a2")); // the case's kinds
        try (Driver d = new Driver("s7", SetatsSplit.inSnapshot(B0, SnapshotPosition.start(), ""))) {
            d.fetchUntil(DONE);
            assertThat(d.state.inSnapshot()).isFalse();
            assertThat(d.state.nextOffset()).isEqualTo(4); // +I +I -U +U
            put("s7", row(RowKind.UPDATE_AFTER, 2, "b2"), row(RowKind.DELETE, 1, "a2"), insert(3, "c"));
            d.fetchUntil(r -> r.kind() == Kind.CHANGELOG && r.offset() == 7);
            List<String> out = new ArrayList<>();
            for (ChangelogRecord r : d.emitted) {
                out.add(r.kind() + " " + r.offset() + " " + r.row().getRowKind().shortString() + "[" + r.row().getInt(0)
                        + ", " + r.row().getString(1) + "]");
            }
            assertThat(out).containsExactly(
                    "SNAPSHOT -1 +I[1, a2]", "SNAPSHOT -1 +I[2, b]",
                    "CHANGELOG 4 -U[2, b]", "CHANGELOG 5 +U[2, b2]", "CHANGELOG 6 -D[1, a2]", "CHANGELOG 7 +I[3, c]");
            Map<Integer, String> folded = new HashMap<>();
            fold(folded, d.emitted);
            assertThat(folded).isEqualTo(tableNow("s7"));
        }
    }

    /**
     * A restore mid-snapshot on a newer view: the keys emitted before the checkpoint catch up with
     * the changelog [E, E') (only their rows), the others come from the new view, then the changelog
     * from E'. A second restore in the middle of the catch-up re-emits nothing.
     */
    @Test
    void restoreMidSnapshotCatchesUpTheKeysAlreadyEmitted() throws Exception {
        createTable("mid", 1);
        List<RowData> rows = new ArrayList<>();
        for (int k = 0; k < 20; k++) {
            rows.add(insert(k, "a" + k));
        }
        put("mid", rows.toArray(new RowData[0]));

        // The first run emits 5 snapshot rows, then its checkpoint is taken.
        Map<Integer, String> folded = new HashMap<>();
        SetatsSplit checkpointed;
        List<Integer> before = new ArrayList<>();
        try (GatewayClient c = GATEWAY.client();
                BucketSnapshotReader r = BucketSnapshotReader.open(c, DB, "mid", "", B0, TYPE, null, 5)) {
            SetatsSplitState st = new SetatsSplitState(SetatsSplit.inSnapshot(B0, SnapshotPosition.start(), ""));
            List<ChangelogRecord> first = new ArrayList<>();
            for (SnapshotRow s : r.nextBatch()) {
                first.add(ChangelogRecord.snapshotRow(s.row(), s.key(), r.endOffset(), B0));
                st.snapshotRowEmitted(r.endOffset(), s.key());
                before.add(s.row().getInt(0));
            }
            fold(folded, first);
            checkpointed = st.toSplit();
            assertThat(checkpointed.snapshot().viewOffset()).isEqualTo(20);
        }
        assertThat(before).hasSize(5);
        Set<Integer> after = new HashSet<>();
        for (int k = 0; k < 20; k++) {
            if (!before.contains(k)) {
                after.add(k);
            }
        }
        int afterKey = after.iterator().next();

        // Writes while no job runs: updates and deletes of keys emitted and not emitted, a new key.
        put("mid", insert(before.get(0), "u1"), insert(afterKey, "u2"));
        put("mid", row(RowKind.DELETE, before.get(1), null), insert(100, "new"), insert(before.get(2), "u3"));
        put("mid", insert(before.get(0), "u4"));

        // The restore catches up: only keys emitted before, from offset 20.
        SetatsSplit midCatchUp;
        try (Driver d = new Driver("mid", checkpointed)) {
            d.fetchUntil(r -> r.kind() == Kind.CATCH_UP);
            ChangelogRecord firstCatchUp = d.emitted.get(0);
            assertThat(firstCatchUp.offset()).isEqualTo(20);
            assertThat(before).contains(firstCatchUp.row().getInt(0));
            midCatchUp = d.checkpoint();
            assertThat(midCatchUp.snapshot().viewOffset()).isEqualTo(21);
            fold(folded, d.emitted);
        }

        // Restored again in the middle of the catch-up: nothing of it is repeated.
        try (Driver d = new Driver("mid", midCatchUp)) {
            d.fetchUntil(DONE);
            for (ChangelogRecord r : d.emitted) {
                if (r.kind() == Kind.CATCH_UP) {
                    assertThat(before).as("catch-up rows are of keys emitted before: %s", r).contains(r.row().getInt(0));
                    assertThat(r.offset()).isGreaterThan(20);
                } else {
                    assertThat(r.kind()).isEqualTo(Kind.SNAPSHOT);
                    assertThat(before).as("snapshot rows are of keys not emitted before: %s", r)
                            .doesNotContain(r.row().getInt(0));
                }
            }
            long end;
            try (GatewayClient c = GATEWAY.client()) {
                end = c.listBuckets(DB, "mid").getBuckets(0).getEndOffset();
            }
            assertThat(d.state.inSnapshot()).isFalse();
            assertThat(d.state.nextOffset()).isEqualTo(end);
            fold(folded, d.emitted);
            assertThat(folded).isEqualTo(tableNow("mid"));

            // Then the changelog from E'.
            int n = d.emitted.size();
            put("mid", insert(afterKey, "later"));
            d.fetchUntil(r -> r.kind() == Kind.CHANGELOG && r.row().getRowKind() == RowKind.UPDATE_AFTER);
            List<ChangelogRecord> tail = d.emitted.subList(n, d.emitted.size());
            assertThat(tail).hasSize(2);
            assertThat(tail.get(0).offset()).isEqualTo(end);
            fold(folded, tail);
            assertThat(folded).isEqualTo(tableNow("mid"));
        }
    }

    /**
     * The gateway killed (SIGKILL) and restarted in the middle of a split's snapshot (issue 12 item
     * 2): the split reader starts the snapshot phase again from the last key it returned, as a
     * restore would, with no task failure: the keys returned before the kill catch up with the
     * changelog written meanwhile (CATCH_UP rows), every key comes as a snapshot row exactly once,
     * and the fold equals the table. The reader reconnects only inside fetch(), so the writes made
     * right after the restart are deterministically after the old view and before the new one.
     */
    @Test
    void gatewayKilledMidSnapshotResumesAfterTheLastKeyReturned() throws Exception {
        createTable("kill", 1);
        int keys = 60_000; // rows of ~200 bytes: about 14 record batches, more than gRPC buffers
        String pad = String.join("", Collections.nCopies(20, "0123456789"));
        for (int from = 0; from < keys; from += 10_000) {
            List<RowData> rows = new ArrayList<>();
            for (int k = from; k < from + 10_000; k++) {
                rows.add(insert(k, pad + k));
            }
            put("kill", rows.toArray(new RowData[0]));
        }
        try (Driver d = new Driver("kill", SetatsSplit.inSnapshot(B0, SnapshotPosition.start(), ""))) {
            d.fetchSnapshotBatch();
            int early = d.emitted.get(0).row().getInt(0);
            GATEWAY.killAndRestart();
            put("kill", insert(early, "after-restart"));

            d.fetchUntil(DONE);
            Set<Integer> seen = new HashSet<>();
            boolean caughtUp = false;
            for (ChangelogRecord r : d.emitted) {
                if (r.kind() == Kind.SNAPSHOT) {
                    assertThat(seen.add(r.row().getInt(0))).as("key %d returned once", r.row().getInt(0)).isTrue();
                } else {
                    assertThat(r.kind()).isEqualTo(Kind.CATCH_UP);
                    assertThat(r.row().getInt(0)).isEqualTo(early);
                    caughtUp = true;
                }
            }
            assertThat(caughtUp).as("the key returned before the kill caught up with its update").isTrue();
            assertThat(seen).hasSize(keys);
            Map<Integer, String> folded = new HashMap<>();
            fold(folded, d.emitted);
            assertThat(folded).isEqualTo(tableNow("kill"));
            assertThat(d.state.inSnapshot()).isFalse();
        }
    }

    /** An empty bucket: no rows, the changelog from 0; its first row comes as a changelog row. */
    @Test
    void anEmptyBucketGoesStraightToTheChangelog() throws Exception {
        createTable("empty", 1);
        try (Driver d = new Driver("empty", SetatsSplit.inSnapshot(B0, SnapshotPosition.start(), ""))) {
            d.fetchUntil(DONE);
            assertThat(d.emitted).isEmpty();
            assertThat(d.state.nextOffset()).isZero();
            put("empty", insert(1, "x"));
            d.fetchUntil(r -> r.kind() == Kind.CHANGELOG);
            assertThat(d.emitted).hasSize(1);
            assertThat(d.emitted.get(0).offset()).isZero();
            assertThat(d.emitted.get(0).row().getRowKind()).isEqualTo(RowKind.INSERT);
        }
    }
}
