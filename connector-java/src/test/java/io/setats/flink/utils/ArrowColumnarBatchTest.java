package io.setats.flink.utils;

import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.RootAllocator;
import org.apache.arrow.vector.BigIntVector;
import org.apache.arrow.vector.DecimalVector;
import org.apache.arrow.vector.FieldVector;
import org.apache.arrow.vector.TimeMicroVector;
import org.apache.arrow.vector.TimeNanoVector;
import org.apache.arrow.vector.TimeSecVector;
import org.apache.arrow.vector.TimeStampMilliTZVector;
import org.apache.arrow.vector.TinyIntVector;
import org.apache.arrow.vector.VarCharVector;
import org.apache.arrow.vector.VectorLoader;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.VectorUnloader;
import org.apache.arrow.vector.ipc.message.ArrowRecordBatch;
import org.apache.arrow.vector.types.TimeUnit;
import org.apache.arrow.vector.types.pojo.ArrowType;
import org.apache.arrow.vector.types.pojo.Field;
import org.apache.arrow.vector.types.pojo.FieldType;
import org.apache.arrow.vector.types.pojo.Schema;
import org.apache.flink.table.api.DataTypes;
import org.apache.flink.table.data.DecimalData;
import org.apache.flink.table.data.RowData;
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

/**
 * The column vectors of {@link ArrowColumnarBatch} per type (what ArrowRowDataReaderTest does not
 * cover: decimals compact and wide, negative, TIME in every Arrow unit, multi-byte UTF-8 and empty
 * strings between others), and the batch's lifetime: its rows stay what they were while the stream
 * root loads the next batch, and read nothing once it is closed. Every test ends with no Arrow
 * memory left.
 */
class ArrowColumnarBatchTest {

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

    private static Field field(String name, ArrowType type) {
        return new Field(name, new FieldType(true, type, null), null);
    }

    private static final Schema SCHEMA =
            new Schema(
                    Arrays.asList(
                            field("_row_kind", new ArrowType.Int(8, true)),
                            field("_offset", new ArrowType.Int(64, true)),
                            field("_commit_timestamp", new ArrowType.Timestamp(TimeUnit.MILLISECOND, "UTC")),
                            field("s", ArrowType.Utf8.INSTANCE),
                            field("small_dec", new ArrowType.Decimal(18, 4, 128)),
                            field("wide_dec", new ArrowType.Decimal(38, 10, 128)),
                            field("t_s", new ArrowType.Time(TimeUnit.SECOND, 32)),
                            field("t_us", new ArrowType.Time(TimeUnit.MICROSECOND, 64)),
                            field("t_ns", new ArrowType.Time(TimeUnit.NANOSECOND, 64))));

    private static final RowType TYPE =
            (RowType)
                    DataTypes.ROW(
                                    DataTypes.FIELD("s", DataTypes.STRING()),
                                    DataTypes.FIELD("small_dec", DataTypes.DECIMAL(18, 4)),
                                    DataTypes.FIELD("wide_dec", DataTypes.DECIMAL(38, 10)),
                                    DataTypes.FIELD("t_s", DataTypes.TIME(0)),
                                    DataTypes.FIELD("t_us", DataTypes.TIME(3)),
                                    DataTypes.FIELD("t_ns", DataTypes.TIME(3)))
                            .getLogicalType();

    private static final String[] STRINGS = {"", "\u00e9t\u00e9", "", "\u65e5\u672c\u8a9e \ud83d\ude00", null, "ascii"};
    private static final String[] SMALL = {"0.0001", "-99999999999999.9999", "99999999999999.9999", "-1.5000", null, "0.0000"};
    private static final String[] WIDE = {
        "1.0000000001", "-9999999999999999999999999999.9999999999", "9999999999999999999999999999.9999999999",
        "-0.0000000001", null, "123456789012345678.0123456789"
    };

    /** Fills {@code root} with the rows above, strings and offsets shifted by {@code base}. */
    private static void fill(VectorSchemaRoot root, long base) {
        root.allocateNew();
        int n = STRINGS.length;
        for (int i = 0; i < n; i++) {
            ((TinyIntVector) root.getVector("_row_kind")).setSafe(i, i % 4);
            ((BigIntVector) root.getVector("_offset")).setSafe(i, base + i);
            ((TimeStampMilliTZVector) root.getVector("_commit_timestamp")).setSafe(i, 1000 * base + i);
            VarCharVector s = (VarCharVector) root.getVector("s");
            if (STRINGS[i] == null) {
                s.setNull(i);
                for (String c : Arrays.asList("small_dec", "wide_dec", "t_s", "t_us", "t_ns")) {
                    root.getVector(c).setNull(i);
                }
                continue;
            }
            s.setSafe(i, (base + STRINGS[i]).getBytes(StandardCharsets.UTF_8));
            ((DecimalVector) root.getVector("small_dec")).setSafe(i, new BigDecimal(SMALL[i]));
            ((DecimalVector) root.getVector("wide_dec")).setSafe(i, new BigDecimal(WIDE[i]));
            ((TimeSecVector) root.getVector("t_s")).setSafe(i, 86_399 - i);
            ((TimeMicroVector) root.getVector("t_us")).setSafe(i, 3_600_123_456L + i);
            ((TimeNanoVector) root.getVector("t_ns")).setSafe(i, 7_200_456_789_123L + i);
        }
        root.setRowCount(n);
    }

    private static void assertRows(ArrowColumnarBatch batch, long base) {
        assertThat(batch.numRows()).isEqualTo(STRINGS.length);
        for (int i = 0; i < STRINGS.length; i++) {
            RowData r = batch.row(i);
            assertThat(r.getRowKind()).isEqualTo(RowKind.fromByteValue((byte) (i % 4)));
            assertThat(batch.offset(i)).isEqualTo(base + i);
            assertThat(batch.commitTimestampMs(i)).isEqualTo(1000 * base + i);
            if (STRINGS[i] == null) {
                for (int c = 0; c < TYPE.getFieldCount(); c++) {
                    assertThat(r.isNullAt(c)).as("row %d field %d", i, c).isTrue();
                }
                continue;
            }
            assertThat(r.isNullAt(0)).isFalse();
            assertThat(r.getString(0).toString()).isEqualTo(base + STRINGS[i]);
            assertThat(r.getString(0).toBytes()).isEqualTo((base + STRINGS[i]).getBytes(StandardCharsets.UTF_8));
            assertThat(r.getDecimal(1, 18, 4)).isEqualTo(DecimalData.fromBigDecimal(new BigDecimal(SMALL[i]), 18, 4));
            assertThat(r.getDecimal(1, 18, 4).toBigDecimal()).isEqualByComparingTo(SMALL[i]);
            assertThat(r.getDecimal(2, 38, 10).toBigDecimal()).isEqualByComparingTo(WIDE[i]);
            assertThat(r.getInt(3)).isEqualTo((86_399 - i) * 1000);
            assertThat(r.getInt(4)).isEqualTo((int) ((3_600_123_456L + i) / 1000));
            assertThat(r.getInt(5)).isEqualTo((int) ((7_200_456_789_123L + i) / 1_000_000));
        }
    }

    @Test
    void decimalsTimesAndStringsOfEveryWidthWithNulls() {
        try (VectorSchemaRoot root = VectorSchemaRoot.create(SCHEMA, allocator)) {
            fill(root, 0);
            ArrowRowDataReader reader = ArrowRowDataReader.create(TYPE, root.getSchema());
            try (ArrowColumnarBatch batch = reader.takeBatch(root)) {
                assertRows(batch, 0);
                assertRows(batch, 0); // the reused view reads the same again
            }
        }
    }

    /**
     * A stream reuses its root: the next batch is loaded into the same vectors (as FlightStream
     * does with VectorLoader) while the task thread still emits the batch taken before; that batch
     * reads its own rows until it is closed, and nothing after.
     */
    @Test
    void aRowIsValidUntilItsBatchIsClosedWhileTheStreamLoadsTheNext() {
        try (VectorSchemaRoot source = VectorSchemaRoot.create(SCHEMA, allocator);
                VectorSchemaRoot stream = VectorSchemaRoot.create(SCHEMA, allocator)) {
            ArrowRowDataReader reader = ArrowRowDataReader.create(TYPE, SCHEMA);
            VectorLoader loader = new VectorLoader(stream);
            List<ArrowColumnarBatch> taken = new ArrayList<>();
            for (long base = 0; base < 3; base++) {
                fill(source, base * 100);
                try (ArrowRecordBatch message = new VectorUnloader(source).getRecordBatch()) {
                    loader.load(message);
                }
                taken.add(reader.takeBatch(stream));
            }
            // Every batch still reads what it was loaded with; the stream root holds none of it.
            for (int b = 0; b < 3; b++) {
                assertRows(taken.get(b), b * 100L);
            }
            RowData kept = taken.get(0).row(1);
            taken.get(0).close();
            assertThat(taken.get(0).isClosed()).isTrue();
            assertThatThrownBy(() -> taken.get(0).row(0))
                    .isInstanceOf(IllegalStateException.class)
                    .hasMessageContaining("released");
            assertThatThrownBy(() -> taken.get(0).offset(0)).isInstanceOf(IllegalStateException.class);
            // Reads of a kept view after close fail instead of reading released memory.
            assertThatThrownBy(() -> kept.getString(0)).isInstanceOf(IllegalStateException.class);
            assertThatThrownBy(() -> kept.getInt(3)).isInstanceOf(IllegalStateException.class);
            assertThatThrownBy(() -> kept.getDecimal(1, 18, 4)).isInstanceOf(IllegalStateException.class);
            assertThatThrownBy(() -> kept.getDecimal(2, 38, 10)).isInstanceOf(IllegalStateException.class);
            assertThatThrownBy(() -> kept.isNullAt(0)).isInstanceOf(IllegalStateException.class);
            taken.get(0).close(); // idempotent
            assertRows(taken.get(1), 100);
            for (ArrowColumnarBatch b : taken) {
                b.close();
            }
            for (FieldVector v : stream.getFieldVectors()) {
                assertThat(v.getValueCount()).isZero();
            }
        }
    }

    @Test
    void anEmptyBatchHasNoRows() {
        try (VectorSchemaRoot root = VectorSchemaRoot.create(SCHEMA, allocator)) {
            root.allocateNew();
            root.setRowCount(0);
            try (ArrowColumnarBatch batch = ArrowRowDataReader.create(TYPE, SCHEMA).takeBatch(root)) {
                assertThat(batch.numRows()).isZero();
            }
        }
    }

    @Test
    void aRowKindOutsideZeroToThreeFails() {
        try (VectorSchemaRoot root = VectorSchemaRoot.create(SCHEMA, allocator)) {
            fill(root, 0);
            ((TinyIntVector) root.getVector("_row_kind")).set(2, 9);
            try (ArrowColumnarBatch batch = ArrowRowDataReader.create(TYPE, SCHEMA).takeBatch(root)) {
                assertThat(batch.row(1).getRowKind()).isEqualTo(RowKind.UPDATE_BEFORE);
                assertThatThrownBy(() -> batch.row(2))
                        .isInstanceOf(IllegalArgumentException.class)
                        .hasMessageContaining("holds 9");
            }
        }
    }
}
