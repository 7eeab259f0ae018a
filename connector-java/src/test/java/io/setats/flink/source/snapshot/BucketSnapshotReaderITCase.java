package io.setats.flink.source.snapshot;

import io.setats.flink.client.GatewayClient;
import io.setats.flink.client.SetatsGatewayException;
import io.setats.flink.source.split.TableBucket;
import io.setats.flink.testutils.SetatsGatewayProcess;
import io.setats.proto.v1.BucketOffsets;
import io.setats.proto.v1.TableInfo;

import org.apache.flink.table.api.DataTypes;
import org.apache.flink.table.data.RowData;
import org.apache.flink.table.types.logical.RowType;
import org.apache.flink.types.RowKind;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;

import static io.setats.flink.source.SourceTestTables.create;
import static io.setats.flink.source.SourceTestTables.insert;
import static io.setats.flink.source.SourceTestTables.row;
import static io.setats.flink.source.SourceTestTables.spec;
import static io.setats.flink.source.SourceTestTables.write;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * {@link BucketSnapshotReader} against a real gateway: the merged rows at a view whose end offset
 * is the bucket's, projection by name, resume after a key on a newer view, empty buckets, and the
 * table id check.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class BucketSnapshotReaderITCase {

    @RegisterExtension static final SetatsGatewayProcess GATEWAY = new SetatsGatewayProcess();

    private static final String DB = "snapdb";

    /** id INT, v STRING, n BIGINT; primary key id. */
    private static final RowType T =
            (RowType)
                    DataTypes.ROW(
                                    DataTypes.FIELD("id", DataTypes.INT().notNull()),
                                    DataTypes.FIELD("v", DataTypes.STRING()),
                                    DataTypes.FIELD("n", DataTypes.BIGINT()))
                            .getLogicalType();

    /** n, id: a projection in another order. */
    private static final RowType N_ID =
            (RowType)
                    DataTypes.ROW(
                                    DataTypes.FIELD("n", DataTypes.BIGINT()),
                                    DataTypes.FIELD("id", DataTypes.INT().notNull()))
                            .getLogicalType();

    private static TableInfo createTable(GatewayClient c, String table, int buckets) {
        return create(c, spec(DB, table, T, Collections.singletonList("id"), Collections.emptyList(), buckets,
                Collections.emptyMap()));
    }

    private static String fmt(RowData r) {
        return r.getRowKind().shortString() + "[" + r.getInt(0) + ", "
                + (r.isNullAt(1) ? "null" : r.getString(1)) + ", " + (r.isNullAt(2) ? "null" : r.getLong(2)) + "]";
    }

    /** Every bucket read once: the union is the table, each bucket's E its end offset, keys ascending. */
    @Test
    void readsTheMergedRowsOfEveryBucketAtItsEndOffset() throws Exception {
        try (GatewayClient c = GATEWAY.client()) {
            TableInfo info = createTable(c, "merged", 3);
            List<RowData> rows = new ArrayList<>();
            for (int k = 0; k < 100; k++) {
                rows.add(insert(k, "v" + k, (long) k));
            }
            write(c, DB, "merged", T, rows);
            write(c, DB, "merged", T, Arrays.asList(
                    insert(5, "five", 55L), row(RowKind.DELETE, 6, null, null), insert(7, null, null)));
            Map<Integer, String> expected = new TreeMap<>();
            for (int k = 0; k < 100; k++) {
                expected.put(k, "+I[" + k + ", v" + k + ", " + k + "]");
            }
            expected.put(5, "+I[5, five, 55]");
            expected.remove(6);
            expected.put(7, "+I[7, null, null]");

            Map<Integer, String> got = new TreeMap<>();
            for (BucketOffsets b : c.listBuckets(DB, "merged").getBucketsList()) {
                TableBucket tb = new TableBucket(b.getPartition(), b.getBucket());
                try (BucketSnapshotReader r =
                        BucketSnapshotReader.open(c, DB, "merged", info.getTableId(), tb, T, null, 7)) {
                    assertThat(r.endOffset()).as("E of %s", tb).isEqualTo(b.getEndOffset());
                    byte[] prev = null;
                    for (List<SnapshotRow> batch; (batch = r.nextBatch()) != null; ) {
                        assertThat(batch.size()).isLessThanOrEqualTo(7);
                        for (SnapshotRow s : batch) {
                            assertThat(s.row().getRowKind()).isEqualTo(RowKind.INSERT);
                            if (prev != null) {
                                assertThat(Arrays.compareUnsigned(prev, s.key())).as("key order").isNegative();
                            }
                            prev = s.key();
                            assertThat(got.put(s.row().getInt(0), fmt(s.row()))).as("one row per key").isNull();
                        }
                    }
                    assertThat(r.lastKey()).isEqualTo(prev);
                }
            }
            assertThat(got).isEqualTo(expected);
        }
    }

    /** Columns by name in another order; an unknown column is refused naming it. */
    @Test
    void projectsColumnsByName() throws Exception {
        try (GatewayClient c = GATEWAY.client()) {
            createTable(c, "proj", 1);
            write(c, DB, "proj", T, Arrays.asList(insert(1, "a", 10L), insert(2, "b", 20L)));
            try (BucketSnapshotReader r = BucketSnapshotReader.open(c, DB, "proj", "", new TableBucket("", 0), N_ID, null, 0)) {
                List<String> out = new ArrayList<>();
                for (SnapshotRow s : r.readAll()) {
                    out.add(s.row().getLong(0) + "/" + s.row().getInt(1));
                }
                assertThat(out).containsExactly("10/1", "20/2");
            }
            RowType unknown = (RowType) DataTypes.ROW(DataTypes.FIELD("nope", DataTypes.INT())).getLogicalType();
            assertThatThrownBy(() -> BucketSnapshotReader.open(c, DB, "proj", "", new TableBucket("", 0), unknown, null, 0))
                    .hasMessageContaining("nope");
        }
    }

    /**
     * Resume after a key on a newer view: only the rows after the key, at the new E; together with
     * the changelog [old E, new E) of the keys already read it gives the table (SPEC section 9).
     */
    @Test
    void resumesAfterAKeyOnANewerView() throws Exception {
        try (GatewayClient c = GATEWAY.client()) {
            createTable(c, "resume", 1);
            List<RowData> rows = new ArrayList<>();
            for (int k = 0; k < 20; k++) {
                rows.add(insert(k, "a", (long) k));
            }
            write(c, DB, "resume", T, rows);
            TableBucket b0 = new TableBucket("", 0);
            byte[] after;
            long e1;
            List<Integer> first = new ArrayList<>();
            try (BucketSnapshotReader r = BucketSnapshotReader.open(c, DB, "resume", "", b0, T, null, 5)) {
                e1 = r.endOffset();
                List<SnapshotRow> batch = r.nextBatch();
                assertThat(batch).hasSize(5);
                batch.forEach(s -> first.add(s.row().getInt(0)));
                after = r.lastKey();
            } // closed mid-view: the view is released
            write(c, DB, "resume", T, Arrays.asList(insert(100, "new", 0L), insert(1, "upd", 1L)));
            try (BucketSnapshotReader r = BucketSnapshotReader.open(c, DB, "resume", "", b0, T, after, 0)) {
                assertThat(r.endOffset()).isEqualTo(e1 + 3); // +I(100), -U/+U(1)
                List<Integer> rest = new ArrayList<>();
                for (SnapshotRow s : r.readAll()) {
                    rest.add(s.row().getInt(0));
                    assertThat(first).doesNotContain(s.row().getInt(0));
                }
                List<Integer> all = new ArrayList<>(first);
                all.addAll(rest);
                assertThat(all).hasSize(21).contains(100);
            }
        }
    }

    /** An empty bucket: a view at offset 0 and no rows; a re-created table is NotFound by table id. */
    @Test
    void emptyBucketAndRecreatedTable() throws Exception {
        try (GatewayClient c = GATEWAY.client()) {
            TableInfo old = createTable(c, "empty", 2);
            try (BucketSnapshotReader r = BucketSnapshotReader.open(c, DB, "empty", old.getTableId(), new TableBucket("", 1), T, null, 0)) {
                assertThat(r.endOffset()).isZero();
                assertThat(r.readAll()).isEmpty();
                assertThat(r.nextBatch()).isNull();
            }
            c.dropTable(DB, "empty", false);
            createTable(c, "empty", 2);
            assertThatThrownBy(
                            () -> {
                                try (BucketSnapshotReader r = BucketSnapshotReader.open(c, DB, "empty", old.getTableId(), new TableBucket("", 0), T, null, 0)) {
                                    r.readAll();
                                }
                            })
                    .isInstanceOf(SetatsGatewayException.class)
                    .hasMessageContaining("NOT_FOUND")
                    .hasMessageContaining(old.getTableId());
        }
    }
}
