package io.setats.flink.utils;

import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.RootAllocator;
import org.apache.arrow.vector.BigIntVector;
import org.apache.arrow.vector.BitVector;
import org.apache.arrow.vector.DateDayVector;
import org.apache.arrow.vector.DecimalVector;
import org.apache.arrow.vector.Float4Vector;
import org.apache.arrow.vector.Float8Vector;
import org.apache.arrow.vector.IntVector;
import org.apache.arrow.vector.SmallIntVector;
import org.apache.arrow.vector.TimeMilliVector;
import org.apache.arrow.vector.TimeStampMicroTZVector;
import org.apache.arrow.vector.TimeStampMilliTZVector;
import org.apache.arrow.vector.TimeStampMilliVector;
import org.apache.arrow.vector.TimeStampNanoVector;
import org.apache.arrow.vector.TimeStampSecVector;
import org.apache.arrow.vector.TinyIntVector;
import org.apache.arrow.vector.VarBinaryVector;
import org.apache.arrow.vector.VarCharVector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.types.TimeUnit;
import org.apache.arrow.vector.types.pojo.ArrowType;
import org.apache.arrow.vector.types.pojo.Field;
import org.apache.arrow.vector.types.pojo.FieldType;
import org.apache.arrow.vector.types.pojo.Schema;
import org.apache.flink.table.api.DataTypes;
import org.apache.flink.table.data.DecimalData;
import org.apache.flink.table.data.GenericRowData;
import org.apache.flink.table.data.RowData;
import org.apache.flink.table.data.StringData;
import org.apache.flink.table.data.TimestampData;
import org.apache.flink.table.data.binary.BinaryRowData;
import org.apache.flink.table.types.logical.RowType;
import org.apache.flink.types.RowKind;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import java.math.BigDecimal;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class ArrowRowDataReaderTest {

    private BufferAllocator allocator;

    @BeforeEach
    void setUp() {
        allocator = new RootAllocator(Long.MAX_VALUE);
    }

    @AfterEach
    void tearDown() {
        assertThat(allocator.getAllocatedMemory()).as("Arrow memory leaked").isZero();
        allocator.close();
    }

    private static Field field(String name, ArrowType type, boolean nullable) {
        return new Field(name, new FieldType(nullable, type, null), null);
    }

    /** The DoGet schema of proto/README.md with one column of every supported type. */
    private static Schema changelogSchema() {
        List<Field> f = new ArrayList<>();
        f.add(field("_row_kind", new ArrowType.Int(8, true), false));
        f.add(field("_offset", new ArrowType.Int(64, true), false));
        f.add(field("_commit_timestamp", new ArrowType.Timestamp(TimeUnit.MILLISECOND, "UTC"), false));
        f.add(field("id", new ArrowType.Int(32, true), false));
        f.add(field("flag", ArrowType.Bool.INSTANCE, true));
        f.add(field("tiny", new ArrowType.Int(8, true), true));
        f.add(field("small", new ArrowType.Int(16, true), true));
        f.add(field("big", new ArrowType.Int(64, true), true));
        f.add(field("f", new ArrowType.FloatingPoint(org.apache.arrow.vector.types.FloatingPointPrecision.SINGLE), true));
        f.add(field("d", new ArrowType.FloatingPoint(org.apache.arrow.vector.types.FloatingPointPrecision.DOUBLE), true));
        f.add(field("dec", new ArrowType.Decimal(10, 2, 128), true));
        f.add(field("s", ArrowType.Utf8.INSTANCE, true));
        f.add(field("bin", ArrowType.Binary.INSTANCE, true));
        f.add(field("day", new ArrowType.Date(org.apache.arrow.vector.types.DateUnit.DAY), true));
        f.add(field("tod", new ArrowType.Time(TimeUnit.MILLISECOND, 32), true));
        f.add(field("ts", new ArrowType.Timestamp(TimeUnit.NANOSECOND, null), true));
        f.add(field("ltz", new ArrowType.Timestamp(TimeUnit.MICROSECOND, "UTC"), true));
        return new Schema(f);
    }

    private static RowType allTypes() {
        return (RowType)
                DataTypes.ROW(
                                DataTypes.FIELD("id", DataTypes.INT().notNull()),
                                DataTypes.FIELD("flag", DataTypes.BOOLEAN()),
                                DataTypes.FIELD("tiny", DataTypes.TINYINT()),
                                DataTypes.FIELD("small", DataTypes.SMALLINT()),
                                DataTypes.FIELD("big", DataTypes.BIGINT()),
                                DataTypes.FIELD("f", DataTypes.FLOAT()),
                                DataTypes.FIELD("d", DataTypes.DOUBLE()),
                                DataTypes.FIELD("dec", DataTypes.DECIMAL(10, 2)),
                                DataTypes.FIELD("s", DataTypes.STRING()),
                                DataTypes.FIELD("bin", DataTypes.BYTES()),
                                DataTypes.FIELD("day", DataTypes.DATE()),
                                DataTypes.FIELD("tod", DataTypes.TIME(3)),
                                DataTypes.FIELD("ts", DataTypes.TIMESTAMP(9)),
                                DataTypes.FIELD("ltz", DataTypes.TIMESTAMP_LTZ(6)))
                        .getLogicalType();
    }

    /** Fills two rows: a full one (kind +U, offset 41) and one with every nullable column null (-D, 42). */
    private VectorSchemaRoot fill() {
        return fill(changelogSchema());
    }

    /**
     * Fills two rows of {@code schema} (changelogSchema, or a snapshot stream's schema: {@code _key}
     * and the columns, some extra timestamp units): a full one and one with every nullable column
     * null; columns the schema lacks are skipped.
     */
    private VectorSchemaRoot fill(Schema schema) {
        VectorSchemaRoot root = VectorSchemaRoot.create(schema, allocator);
        root.allocateNew();
        if (root.getVector("_row_kind") != null) {
            ((TinyIntVector) root.getVector("_row_kind")).setSafe(0, 2);
            ((TinyIntVector) root.getVector("_row_kind")).setSafe(1, 3);
            ((BigIntVector) root.getVector("_offset")).setSafe(0, 41);
            ((BigIntVector) root.getVector("_offset")).setSafe(1, 42);
            ((TimeStampMilliTZVector) root.getVector("_commit_timestamp")).setSafe(0, 1_767_196_800_000L);
            ((TimeStampMilliTZVector) root.getVector("_commit_timestamp")).setSafe(1, 1_767_196_800_001L);
        }
        if (root.getVector("_key") != null) {
            ((VarBinaryVector) root.getVector("_key")).setSafe(0, new byte[] {0, 1});
            ((VarBinaryVector) root.getVector("_key")).setSafe(1, new byte[] {0, 2, (byte) 0xff});
        }
        ((IntVector) root.getVector("id")).setSafe(0, 1);
        ((IntVector) root.getVector("id")).setSafe(1, 2);
        ((BitVector) root.getVector("flag")).setSafe(0, 1);
        ((TinyIntVector) root.getVector("tiny")).setSafe(0, -7);
        ((SmallIntVector) root.getVector("small")).setSafe(0, 300);
        ((BigIntVector) root.getVector("big")).setSafe(0, Long.MIN_VALUE);
        ((Float4Vector) root.getVector("f")).setSafe(0, 1.5f);
        ((Float8Vector) root.getVector("d")).setSafe(0, -2.25d);
        ((DecimalVector) root.getVector("dec")).setSafe(0, new BigDecimal("12345678.90"));
        ((VarCharVector) root.getVector("s")).setSafe(0, "h\u00e9llo".getBytes(StandardCharsets.UTF_8));
        ((VarBinaryVector) root.getVector("bin")).setSafe(0, new byte[] {1, 2, 3});
        ((DateDayVector) root.getVector("day")).setSafe(0, 20_000);
        ((TimeMilliVector) root.getVector("tod")).setSafe(0, 3_600_123);
        ((TimeStampNanoVector) root.getVector("ts")).setSafe(0, -1L); // 1 ns before the epoch
        ((TimeStampMicroTZVector) root.getVector("ltz")).setSafe(0, 1_767_196_800_123_456L);
        List<String> nullable =
                new ArrayList<>(Arrays.asList("flag", "tiny", "small", "big", "f", "d", "dec", "s", "bin", "day", "tod", "ts", "ltz"));
        if (root.getVector("ts_s") != null) {
            ((TimeStampSecVector) root.getVector("ts_s")).setSafe(0, -86_401L);
            ((TimeStampMilliVector) root.getVector("ts_ms")).setSafe(0, 1_767_196_800_123L);
            nullable.addAll(Arrays.asList("ts_s", "ts_ms"));
        }
        for (String c : nullable) {
            root.getVector(c).setNull(1);
        }
        root.setRowCount(2);
        return root;
    }

    @Test
    void readsEveryTypeWithRowKindOffsetAndCommitTime() {
        try (VectorSchemaRoot root = fill()) {
            ArrowRowDataReader reader = ArrowRowDataReader.create(allTypes(), root.getSchema());
            assertThat(reader.hasChangelogColumns()).isTrue();
            reader.bind(root);

            GenericRowData r0 = reader.read(0);
            assertThat(r0.getRowKind()).isEqualTo(RowKind.UPDATE_AFTER);
            assertThat(reader.offset(0)).isEqualTo(41);
            assertThat(reader.commitTimestampMs(0)).isEqualTo(1_767_196_800_000L);
            assertThat(r0.getInt(0)).isEqualTo(1);
            assertThat(r0.getBoolean(1)).isTrue();
            assertThat(r0.getByte(2)).isEqualTo((byte) -7);
            assertThat(r0.getShort(3)).isEqualTo((short) 300);
            assertThat(r0.getLong(4)).isEqualTo(Long.MIN_VALUE);
            assertThat(r0.getFloat(5)).isEqualTo(1.5f);
            assertThat(r0.getDouble(6)).isEqualTo(-2.25d);
            assertThat(r0.getDecimal(7, 10, 2))
                    .isEqualTo(DecimalData.fromBigDecimal(new BigDecimal("12345678.90"), 10, 2));
            assertThat(r0.getString(8)).isEqualTo(StringData.fromString("h\u00e9llo"));
            assertThat(r0.getBinary(9)).containsExactly(1, 2, 3);
            assertThat(r0.getInt(10)).isEqualTo(20_000);
            assertThat(r0.getInt(11)).isEqualTo(3_600_123);
            assertThat(r0.getTimestamp(12, 9)).isEqualTo(TimestampData.fromEpochMillis(-1, 999_999));
            assertThat(r0.getTimestamp(13, 6))
                    .isEqualTo(TimestampData.fromEpochMillis(1_767_196_800_123L, 456_000));

            GenericRowData r1 = reader.read(1);
            assertThat(r1.getRowKind()).isEqualTo(RowKind.DELETE);
            assertThat(reader.offset(1)).isEqualTo(42);
            assertThat(r1.getInt(0)).isEqualTo(2);
            for (int i = 1; i < r1.getArity(); i++) {
                assertThat(r1.isNullAt(i)).as("field %d", i).isTrue();
            }
        }
    }

    /**
     * takeBatch (the CDC source's and the snapshot read's batch: ColumnarRowData views over the
     * Arrow vectors) gives, field by field, what read gives, for every type, for NULLs, and for
     * strings empty, short and long; the offsets and commit times are the batch's; the batch owns
     * the buffers (the root's read columns are empty after it) and closing it releases them.
     */
    @Test
    void columnarBatchEqualsGenericRowsForEveryType() {
        RowType type = allTypes();
        for (String value : Arrays.asList("", "seven77", "a string longer than seven bytes \u00e9")) {
            try (VectorSchemaRoot root = fill()) {
                ArrowRowDataReader reader = ArrowRowDataReader.create(type, root.getSchema());
                ((VarCharVector) root.getVector("s")).setSafe(0, value.getBytes(StandardCharsets.UTF_8));
                root.setRowCount(2);
                reader.bind(root);
                List<GenericRowData> expected = Arrays.asList(reader.read(0), reader.read(1));
                try (ArrowColumnarBatch batch = reader.takeBatch(root)) {
                    assertThat(root.getVector("s").getValueCount()).as("moved out of the root").isZero();
                    assertThat(batch.numRows()).isEqualTo(2);
                    assertThat(batch.row(0).getString(8).toString()).isEqualTo(value);
                    assertThat(batch.offset(0)).isEqualTo(41);
                    assertThat(batch.offset(1)).isEqualTo(42);
                    assertThat(batch.commitTimestampMs(1)).isEqualTo(1_767_196_800_001L);
                    assertSameRows(type, reader.fieldGetters(), expected, batch);
                }
            }
        }
    }

    /**
     * emitBinaryRows (jobs without object reuse): every row is the BinaryRowData that Flink's own
     * RowDataSerializer makes of the generic row, byte for byte, for every type, NULLs and strings
     * empty, inline (<= 7 bytes) and longer; the one reused binary row moves to the next row.
     */
    @Test
    void binaryRowsEqualFlinksBinaryRowsForEveryType() {
        RowType type = allTypes();
        org.apache.flink.table.runtime.typeutils.RowDataSerializer serializer =
                new org.apache.flink.table.runtime.typeutils.RowDataSerializer(type);
        for (String value : Arrays.asList("", "seven77", "a string longer than seven bytes \u00e9\u65e5\ud83d\ude00")) {
            try (VectorSchemaRoot root = fill()) {
                ArrowRowDataReader reader = ArrowRowDataReader.create(type, root.getSchema());
                ((VarCharVector) root.getVector("s")).setSafe(0, value.getBytes(StandardCharsets.UTF_8));
                root.setRowCount(2);
                reader.bind(root);
                List<BinaryRowData> expected = new ArrayList<>();
                for (int r = 0; r < 2; r++) {
                    expected.add(serializer.toBinaryRow(reader.read(r)).copy());
                }
                try (ArrowColumnarBatch batch = reader.takeBatch(root)) {
                    batch.emitBinaryRows();
                    RowData first = batch.row(0);
                    assertThat(first).isInstanceOf(BinaryRowData.class);
                    assertThat(first.getString(8).toString()).isEqualTo(value);
                    for (int r = 0; r < 2; r++) {
                        RowData row = batch.row(r);
                        assertThat(row).as("one reused row").isSameAs(first);
                        assertThat(row.getRowKind()).isEqualTo(expected.get(r).getRowKind());
                        assertThat(row).as("row %d", r).isEqualTo(expected.get(r));
                    }
                    assertSameRows(type, reader.fieldGetters(), toGeneric(type, expected), batch);
                }
            }
        }
    }

    private static List<GenericRowData> toGeneric(RowType type, List<BinaryRowData> rows) {
        RowData.FieldGetter[] getters = new RowData.FieldGetter[type.getFieldCount()];
        for (int i = 0; i < getters.length; i++) {
            getters[i] = RowData.createFieldGetter(type.getTypeAt(i), i);
        }
        List<GenericRowData> out = new ArrayList<>();
        for (BinaryRowData b : rows) {
            GenericRowData g = new GenericRowData(b.getRowKind(), b.getArity());
            for (int i = 0; i < getters.length; i++) {
                g.setField(i, getters[i].getFieldOrNull(b));
            }
            out.add(g);
        }
        return out;
    }

    /**
     * TIMESTAMP(p) / TIMESTAMP_LTZ(p) read at the declared precision p: an Arrow value with digits
     * of the second past p (the gateway keeps what DoPut sent in the column's unit, and a Flink
     * table may declare less than the column's precision) gives the same TimestampData, the digits
     * past p dropped towards the past, through read (GenericRowData), the batch's view (object
     * reuse on) and its binary rows (object reuse off; BinaryRowData keeps only the ms for p <= 3
     * and every digit for p > 3), at p = 0, 3, 6, 9 and for the units of proto/README.md "Types".
     */
    @Test
    void timestampsReadAtTheDeclaredPrecisionOnEveryPath() {
        long ns = 1_767_196_800_123_456_789L;
        Object[][] cases = {
            // unit, raw value, p, expected epoch ms, expected ns of the ms
            {TimeUnit.NANOSECOND, ns, 0, 1_767_196_800_000L, 0},
            {TimeUnit.NANOSECOND, ns, 3, 1_767_196_800_123L, 0},
            {TimeUnit.NANOSECOND, ns, 6, 1_767_196_800_123L, 456_000},
            {TimeUnit.NANOSECOND, ns, 9, 1_767_196_800_123L, 456_789},
            {TimeUnit.NANOSECOND, -1L, 0, -1_000L, 0},
            {TimeUnit.NANOSECOND, -1L, 3, -1L, 0},
            {TimeUnit.NANOSECOND, -1L, 6, -1L, 999_000},
            {TimeUnit.NANOSECOND, -1L, 9, -1L, 999_999},
            {TimeUnit.MICROSECOND, 1_234_567L, 0, 1_000L, 0},
            {TimeUnit.MICROSECOND, 1_234_567L, 3, 1_234L, 0},
            {TimeUnit.MICROSECOND, 1_234_567L, 5, 1_234L, 560_000},
            {TimeUnit.MICROSECOND, -1_234_567L, 5, -1_235L, 430_000},
            {TimeUnit.MILLISECOND, 1_239L, 2, 1_230L, 0},
            {TimeUnit.MILLISECOND, -1_239L, 1, -1_300L, 0},
            {TimeUnit.MILLISECOND, 1_239L, 6, 1_239L, 0},
            {TimeUnit.SECOND, -3L, 0, -3_000L, 0},
        };
        for (Object[] c : cases) {
            TimeUnit unit = (TimeUnit) c[0];
            long raw = (Long) c[1];
            int p = (Integer) c[2];
            TimestampData want = TimestampData.fromEpochMillis((Long) c[3], (Integer) c[4]);
            String what = unit + " " + raw + " as precision " + p;
            Schema schema =
                    new Schema(
                            Arrays.asList(
                                    field("_row_kind", new ArrowType.Int(8, true), false),
                                    field("_offset", new ArrowType.Int(64, true), false),
                                    field("_commit_timestamp", new ArrowType.Timestamp(TimeUnit.MILLISECOND, "UTC"), false),
                                    field("ts", new ArrowType.Timestamp(unit, null), true),
                                    field("ltz", new ArrowType.Timestamp(unit, "UTC"), true)));
            RowType type =
                    (RowType)
                            DataTypes.ROW(
                                            DataTypes.FIELD("ts", DataTypes.TIMESTAMP(p)),
                                            DataTypes.FIELD("ltz", DataTypes.TIMESTAMP_LTZ(p)))
                                    .getLogicalType();
            try (VectorSchemaRoot root = VectorSchemaRoot.create(schema, allocator)) {
                root.allocateNew();
                ((TinyIntVector) root.getVector("_row_kind")).setSafe(0, 0);
                ((BigIntVector) root.getVector("_offset")).setSafe(0, 0);
                ((TimeStampMilliTZVector) root.getVector("_commit_timestamp")).setSafe(0, 0);
                ((org.apache.arrow.vector.TimeStampVector) root.getVector("ts")).setSafe(0, raw);
                ((org.apache.arrow.vector.TimeStampVector) root.getVector("ltz")).setSafe(0, raw);
                root.setRowCount(1);
                ArrowRowDataReader reader = ArrowRowDataReader.create(type, root.getSchema());
                reader.bind(root);
                GenericRowData generic = reader.read(0);
                assertThat(generic.getTimestamp(0, p)).as("read: " + what).isEqualTo(want);
                assertThat(generic.getTimestamp(1, p)).as("read LTZ: " + what).isEqualTo(want);
                try (ArrowColumnarBatch batch = reader.takeBatch(root)) {
                    RowData view = batch.row(0);
                    assertThat(view.getTimestamp(0, p)).as("view: " + what).isEqualTo(want);
                    assertThat(view.getTimestamp(1, p)).as("view LTZ: " + what).isEqualTo(want);
                    batch.emitBinaryRows();
                    RowData binary = batch.row(0);
                    assertThat(binary.getTimestamp(0, p)).as("binary row: " + what).isEqualTo(want);
                    assertThat(binary.getTimestamp(1, p)).as("binary row LTZ: " + what).isEqualTo(want);
                }
            }
        }
    }

    /** A way to damage a filled batch the way a hostile or broken stream could. */
    private interface Damage {
        void apply(VectorSchemaRoot root);
    }

    /**
     * takeBatch checks a batch once before its view reads it without per-value bounds checks: a
     * column with fewer values than rows, string offsets that are negative, decrease, or point past
     * the data buffer fail with IllegalArgumentException naming the column, and release what the
     * batch had taken (no Arrow memory left).
     */
    @Test
    void takeBatchRejectsMalformedBatches() {
        Object[][] cases = {
            {"a read column with fewer values than rows", "big",
                (Damage) root -> root.getVector("big").setValueCount(1)},
            {"a reserved column with fewer values than rows", "_offset",
                (Damage) root -> root.getVector("_offset").setValueCount(1)},
            {"a string column with fewer values than rows", "'s'",
                (Damage) root -> root.getVector("s").setValueCount(1)},
            {"decreasing string offsets", "decreasing offsets",
                (Damage) root -> ((VarCharVector) root.getVector("s")).getOffsetBuffer().setInt(4, 7_000)},
            {"a negative first offset", "negative first offset",
                (Damage) root -> ((VarCharVector) root.getVector("s")).getOffsetBuffer().setInt(0, -1)},
            {"offsets past the data buffer", "past its",
                (Damage) root -> {
                    VarCharVector v = (VarCharVector) root.getVector("s");
                    v.getOffsetBuffer().setInt(8, (int) v.getDataBuffer().capacity() + 1);
                    v.getOffsetBuffer().setInt(4, (int) v.getDataBuffer().capacity() + 1);
                }},
            {"bytes offsets past the data buffer", "'bin'",
                (Damage) root -> {
                    VarBinaryVector v = (VarBinaryVector) root.getVector("bin");
                    v.getOffsetBuffer().setInt(8, (int) v.getDataBuffer().capacity() + 1);
                    v.getOffsetBuffer().setInt(4, (int) v.getDataBuffer().capacity() + 1);
                }},
        };
        RowType type = allTypes();
        for (Object[] c : cases) {
            try (VectorSchemaRoot root = fill()) {
                ArrowRowDataReader reader = ArrowRowDataReader.create(type, root.getSchema());
                ((Damage) c[2]).apply(root);
                assertThatThrownBy(() -> reader.takeBatch(root).close())
                        .as((String) c[0])
                        .isInstanceOf(IllegalArgumentException.class)
                        .hasMessageContaining("Malformed Arrow batch")
                        .hasMessageContaining((String) c[1]);
            }
        }
    }

    private static void assertSameRows(
            RowType type, RowData.FieldGetter[] getters, List<GenericRowData> expected, ArrowColumnarBatch batch) {
        assertThat(batch.numRows()).isEqualTo(expected.size());
        for (int r = 0; r < batch.numRows(); r++) {
            RowData row = batch.row(r);
            assertThat(row.getRowKind()).isEqualTo(expected.get(r).getRowKind());
            assertThat(row.getArity()).isEqualTo(type.getFieldCount());
            for (int i = 0; i < type.getFieldCount(); i++) {
                Object want = getters[i].getFieldOrNull(expected.get(r));
                Object got = getters[i].getFieldOrNull(row);
                if (want instanceof byte[]) {
                    assertThat((byte[]) got).as("row %d field %d", r, i).containsExactly((byte[]) want);
                } else {
                    assertThat(got).as("row %d field %d", r, i).isEqualTo(want);
                }
            }
        }
    }

    /**
     * The snapshot read's batch (BucketSnapshotReader: takeBatch over a stream of
     * {@code _key} and the columns, no RowKind column): every type the gateway sends (TIMESTAMP in
     * all four units), nulls, and projections (all columns, a reordered subset, one column, none):
     * every row {@code +I}, the keys as sent, and field by field what read gives.
     */
    @Test
    void snapshotBatchConversionEveryTypeNullsAndProjection() {
        List<Field> f = new ArrayList<>();
        f.add(field("_key", ArrowType.Binary.INSTANCE, false));
        f.addAll(changelogSchema().getFields().subList(3, changelogSchema().getFields().size()));
        f.add(field("ts_s", new ArrowType.Timestamp(TimeUnit.SECOND, null), true));
        f.add(field("ts_ms", new ArrowType.Timestamp(TimeUnit.MILLISECOND, null), true));
        Schema schema = new Schema(f);
        List<DataTypes.Field> all = new ArrayList<>();
        RowType every = allTypes();
        for (int i = 0; i < every.getFieldCount(); i++) {
            all.add(DataTypes.FIELD(every.getFieldNames().get(i), DataTypes.of(every.getTypeAt(i))));
        }
        all.add(DataTypes.FIELD("ts_s", DataTypes.TIMESTAMP(0)));
        all.add(DataTypes.FIELD("ts_ms", DataTypes.TIMESTAMP(3)));
        List<RowType> projections =
                Arrays.asList(
                        (RowType) DataTypes.ROW(all.toArray(new DataTypes.Field[0])).getLogicalType(),
                        (RowType)
                                DataTypes.ROW(all.get(15), all.get(8), all.get(0), all.get(7), all.get(12))
                                        .getLogicalType(),
                        (RowType) DataTypes.ROW(all.get(9)).getLogicalType(),
                        (RowType) DataTypes.ROW().getLogicalType());
        for (RowType type : projections) {
            try (VectorSchemaRoot root = fill(schema)) {
                ArrowRowDataReader reader = ArrowRowDataReader.create(type, schema);
                assertThat(reader.hasKeyColumn()).isTrue();
                assertThat(reader.hasChangelogColumns()).isFalse();
                reader.bind(root);
                List<GenericRowData> expected = Arrays.asList(reader.read(0), reader.read(1));
                assertThat(reader.key(0)).containsExactly(0, 1);
                assertThat(reader.key(1)).containsExactly(0, 2, 0xff);
                try (ArrowColumnarBatch batch = reader.takeBatch(root)) {
                    assertThat(batch.key(0)).containsExactly(0, 1);
                    assertThat(batch.key(1)).containsExactly(0, 2, 0xff);
                    assertThat(batch.hasChangelogColumns()).isFalse();
                    assertThat(batch.row(0).getRowKind()).isEqualTo(RowKind.INSERT);
                    assertThat(batch.row(1).getRowKind()).isEqualTo(RowKind.INSERT);
                    assertSameRows(type, reader.fieldGetters(), expected, batch);
                    if (type.getFieldCount() == all.size()) {
                        RowData r0 = batch.row(0);
                        assertThat(r0.getTimestamp(14, 0)).isEqualTo(TimestampData.fromEpochMillis(-86_401_000L));
                        assertThat(r0.getTimestamp(15, 3)).isEqualTo(TimestampData.fromEpochMillis(1_767_196_800_123L));
                        assertThat(r0.getString(8).toString()).isEqualTo("h\u00e9llo");
                        RowData r1 = batch.row(1);
                        for (int i = 1; i < type.getFieldCount(); i++) {
                            assertThat(r1.isNullAt(i)).as("field %d", i).isTrue();
                        }
                    }
                }
            }
        }
    }

    @Test
    void readsASubsetByNameInAnyOrder() {
        try (VectorSchemaRoot root = fill()) {
            RowType subset =
                    (RowType)
                            DataTypes.ROW(
                                            DataTypes.FIELD("s", DataTypes.VARCHAR(10)),
                                            DataTypes.FIELD("id", DataTypes.INT()))
                                    .getLogicalType();
            ArrowRowDataReader reader = ArrowRowDataReader.create(subset, root.getSchema());
            reader.bind(root);
            RowData r = reader.read(0);
            assertThat(r.getArity()).isEqualTo(2);
            assertThat(r.getString(0).toString()).isEqualTo("h\u00e9llo");
            assertThat(r.getInt(1)).isEqualTo(1);
        }
    }

    @Test
    void withoutRowKindColumnEveryRowIsAnInsert() {
        Schema schema = new Schema(Arrays.asList(field("id", new ArrowType.Int(32, true), false)));
        try (VectorSchemaRoot root = VectorSchemaRoot.create(schema, allocator)) {
            ((IntVector) root.getVector("id")).setSafe(0, 5);
            root.setRowCount(1);
            RowType t = (RowType) DataTypes.ROW(DataTypes.FIELD("id", DataTypes.INT())).getLogicalType();
            ArrowRowDataReader reader = ArrowRowDataReader.create(t, schema);
            assertThat(reader.hasChangelogColumns()).isFalse();
            reader.bind(root);
            assertThat(reader.read(0).getRowKind()).isEqualTo(RowKind.INSERT);
            assertThatThrownBy(() -> reader.offset(0)).isInstanceOf(IllegalStateException.class);
        }
    }

    @Test
    void rejectsARowKindOutsideZeroToThree() {
        try (VectorSchemaRoot root = fill()) {
            ((TinyIntVector) root.getVector("_row_kind")).setSafe(0, 4);
            ArrowRowDataReader reader = ArrowRowDataReader.create(allTypes(), root.getSchema());
            reader.bind(root);
            assertThatThrownBy(() -> reader.read(0))
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("_row_kind")
                    .hasMessageContaining("4");
        }
    }

    @Test
    void namesAMissingColumnAndTheTablesColumns() {
        RowType t =
                (RowType)
                        DataTypes.ROW(DataTypes.FIELD("id", DataTypes.INT()), DataTypes.FIELD("nope", DataTypes.INT()))
                                .getLogicalType();
        assertThatThrownBy(() -> ArrowRowDataReader.create(t, changelogSchema()))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("'nope'")
                .hasMessageContaining("[id, flag,")
                .satisfies(e -> assertThat(e.getMessage()).doesNotContain("_offset"));
    }

    @Test
    void namesColumnAndBothTypesOnAMismatch() {
        RowType cases[] = {
            (RowType) DataTypes.ROW(DataTypes.FIELD("id", DataTypes.BIGINT())).getLogicalType(),
            (RowType) DataTypes.ROW(DataTypes.FIELD("dec", DataTypes.DECIMAL(10, 3))).getLogicalType(),
            (RowType) DataTypes.ROW(DataTypes.FIELD("ts", DataTypes.TIMESTAMP_LTZ(9))).getLogicalType(),
            (RowType) DataTypes.ROW(DataTypes.FIELD("ltz", DataTypes.TIMESTAMP(6))).getLogicalType(),
            (RowType) DataTypes.ROW(DataTypes.FIELD("s", DataTypes.BYTES())).getLogicalType(),
        };
        for (RowType t : cases) {
            String column = t.getFieldNames().get(0);
            assertThatThrownBy(() -> ArrowRowDataReader.create(t, changelogSchema()))
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("'" + column + "'")
                    .hasMessageContaining(t.getTypeAt(0).asSummaryString());
        }
        RowType array =
                (RowType) DataTypes.ROW(DataTypes.FIELD("id", DataTypes.ARRAY(DataTypes.INT()))).getLogicalType();
        assertThatThrownBy(() -> ArrowRowDataReader.create(array, changelogSchema()))
                .hasMessageContaining("does not support");
    }

    @Test
    void readsWhatTheSinkWriterWrites() {
        // Cross-check with H4a's RowData -> Arrow writer (the sink side): same types, same values.
        RowType t = allTypes();
        GenericRowData row =
                GenericRowData.ofKind(
                        RowKind.UPDATE_BEFORE,
                        9,
                        false,
                        (byte) 1,
                        (short) 2,
                        3L,
                        4.5f,
                        5.5d,
                        DecimalData.fromBigDecimal(new BigDecimal("-0.01"), 10, 2),
                        StringData.fromString("x"),
                        new byte[] {9},
                        -1,
                        86_399_999,
                        TimestampData.fromEpochMillis(1234, 567_891),
                        TimestampData.fromEpochMillis(-5000, 1000));
        try (RowDataArrowWriter writer = new RowDataArrowWriter(t, allocator, true)) {
            writer.write(row);
            writer.finish();
            ArrowRowDataReader reader = ArrowRowDataReader.create(t, writer.root().getSchema());
            reader.bind(writer.root());
            assertThat(reader.read(0)).isEqualTo(row);
        }
    }
}
