package io.setats.flink.utils;

import org.apache.flink.core.memory.MemorySegmentFactory;
import org.apache.flink.table.api.DataTypes;
import org.apache.flink.table.data.DecimalData;
import org.apache.flink.table.data.GenericRowData;
import org.apache.flink.table.data.StringData;
import org.apache.flink.table.data.TimestampData;
import org.apache.flink.table.types.logical.RowType;
import org.apache.flink.types.RowKind;

import org.apache.flink.table.data.RowData;
import org.apache.flink.table.data.binary.BinaryRowData;
import org.apache.flink.table.data.writer.BinaryRowWriter;

import org.apache.arrow.memory.RootAllocator;
import org.apache.arrow.vector.DecimalVector;
import org.apache.arrow.vector.FieldVector;
import org.apache.arrow.vector.VarBinaryVector;
import org.apache.arrow.vector.VarCharVector;
import org.apache.arrow.vector.VectorLoader;
import org.apache.arrow.vector.VectorUnloader;
import org.apache.arrow.vector.ipc.message.ArrowRecordBatch;
import org.apache.arrow.vector.TimeStampVector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.junit.jupiter.api.Test;

import java.math.BigDecimal;
import java.time.Instant;
import java.time.LocalDate;
import java.time.LocalDateTime;
import java.util.ArrayList;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** RowData -> Arrow vectors for every supported type, nulls and the _row_kind column. */
class RowDataArrowWriterTest {

    private static final RowType ALL =
            (RowType)
                    DataTypes.ROW(
                                    DataTypes.FIELD("b", DataTypes.BOOLEAN()),
                                    DataTypes.FIELD("i8", DataTypes.TINYINT()),
                                    DataTypes.FIELD("i16", DataTypes.SMALLINT()),
                                    DataTypes.FIELD("i32", DataTypes.INT()),
                                    DataTypes.FIELD("i64", DataTypes.BIGINT().notNull()),
                                    DataTypes.FIELD("f32", DataTypes.FLOAT()),
                                    DataTypes.FIELD("f64", DataTypes.DOUBLE()),
                                    DataTypes.FIELD("dec", DataTypes.DECIMAL(10, 2)),
                                    DataTypes.FIELD("s", DataTypes.STRING()),
                                    DataTypes.FIELD("c", DataTypes.CHAR(2)),
                                    DataTypes.FIELD("bin", DataTypes.BYTES()),
                                    DataTypes.FIELD("d", DataTypes.DATE()),
                                    DataTypes.FIELD("t", DataTypes.TIME(3)),
                                    DataTypes.FIELD("ts0", DataTypes.TIMESTAMP(0)),
                                    DataTypes.FIELD("ts3", DataTypes.TIMESTAMP(3)),
                                    DataTypes.FIELD("ts6", DataTypes.TIMESTAMP(6)),
                                    DataTypes.FIELD("ts9", DataTypes.TIMESTAMP(9)),
                                    DataTypes.FIELD("ltz3", DataTypes.TIMESTAMP_LTZ(3)))
                            .getLogicalType();

    @Test
    void writesEveryTypeAndNulls() {
        LocalDateTime ldt = LocalDateTime.parse("2026-11-29T10:00:01.123456789");
        GenericRowData full =
                GenericRowData.ofKind(
                        RowKind.UPDATE_AFTER,
                        true,
                        (byte) -3,
                        (short) 300,
                        70000,
                        1L << 40,
                        1.5f,
                        -2.25d,
                        DecimalData.fromBigDecimal(new BigDecimal("12.34"), 10, 2),
                        StringData.fromString("héllo"),
                        StringData.fromString("ab"),
                        new byte[] {1, 2, 3},
                        (int) LocalDate.parse("2026-11-29").toEpochDay(),
                        36_000_123,
                        TimestampData.fromLocalDateTime(ldt),
                        TimestampData.fromLocalDateTime(ldt),
                        TimestampData.fromLocalDateTime(ldt),
                        TimestampData.fromLocalDateTime(ldt),
                        TimestampData.fromInstant(Instant.parse("1969-12-31T23:59:59.999Z")));
        Object[] nulls = new Object[ALL.getFieldCount()];
        nulls[4] = 7L;
        GenericRowData empty = GenericRowData.ofKind(RowKind.DELETE, nulls);

        try (RootAllocator alloc = new RootAllocator();
                RowDataArrowWriter w = new RowDataArrowWriter(ALL, alloc, true)) {
            w.write(full);
            w.write(empty);
            w.finish();
            VectorSchemaRoot root = w.root();
            assertThat(root.getRowCount()).isEqualTo(2);
            assertThat(w.rowCount()).isEqualTo(2);
            assertThat(w.estimatedBytes()).isGreaterThan(0);
            List<Object> row0 = new ArrayList<>();
            for (FieldVector v : root.getFieldVectors()) {
                Object o = v.getObject(0);
                row0.add(o instanceof byte[] ? java.util.Arrays.toString((byte[]) o) : String.valueOf(o));
            }
            assertThat(row0)
                    .containsExactly(
                            "2", // +U
                            "true", "-3", "300", "70000", String.valueOf(1L << 40), "1.5", "-2.25", "12.34",
                            "héllo", "ab", "[1, 2, 3]",
                            String.valueOf(LocalDate.parse("2026-11-29").toEpochDay()),
                            "1970-01-01T10:00:00.123", // TimeMilliVector#getObject: LocalDateTime
                            "2026-11-29T10:00:01",
                            "2026-11-29T10:00:01.123",
                            "2026-11-29T10:00:01.123456",
                            "2026-11-29T10:00:01.123456789",
                            "-1");
            assertThat(root.getVector("_row_kind").getObject(1)).isEqualTo((byte) 3);
            for (FieldVector v : root.getFieldVectors()) {
                if (!v.getName().equals("_row_kind") && !v.getName().equals("i64")) {
                    assertThat(v.isNull(1)).as(v.getName()).isTrue();
                }
            }
            assertThat(((TimeStampVector) root.getVector("ts9")).get(0))
                    .isEqualTo(TimestampData.fromLocalDateTime(ldt).getMillisecond() * 1_000_000L + 123_456_789 % 1_000_000);

            w.reset();
            assertThat(w.rowCount()).isZero();
            w.write(empty);
            w.finish();
            assertThat(root.getRowCount()).isEqualTo(1);
            assertThat(root.getVector("i64").getObject(0)).isEqualTo(7L);
        }
    }

    @Test
    void timestampValuesBeforeEpochFloor() {
        TimestampData ts = TimestampData.fromInstant(Instant.parse("1969-12-31T23:59:59.500Z"));
        assertThat(RowDataArrowWriter.timestampValue(ts, 0)).isEqualTo(-1L);
        assertThat(RowDataArrowWriter.timestampValue(ts, 3)).isEqualTo(-500L);
        assertThat(RowDataArrowWriter.timestampValue(ts, 6)).isEqualTo(-500_000L);
        assertThat(RowDataArrowWriter.timestampValue(ts, 9)).isEqualTo(-500_000_000L);
    }

    @Test
    void withoutRowKind() {
        RowType rt = (RowType) DataTypes.ROW(DataTypes.FIELD("x", DataTypes.INT())).getLogicalType();
        try (RootAllocator alloc = new RootAllocator();
                RowDataArrowWriter w = new RowDataArrowWriter(rt, alloc, false)) {
            w.write(GenericRowData.of(1));
            w.finish();
            assertThat(w.root().getSchema().getFields()).hasSize(1);
            assertThat(w.root().getVector("x").getObject(0)).isEqualTo(1);
        }
    }

    private static final RowType WIDE =
            (RowType)
                    DataTypes.ROW(
                                    DataTypes.FIELD("id", DataTypes.BIGINT()),
                                    DataTypes.FIELD("s", DataTypes.STRING()),
                                    DataTypes.FIELD("bin", DataTypes.BYTES()),
                                    DataTypes.FIELD("dec", DataTypes.DECIMAL(18, 2)),
                                    DataTypes.FIELD("big", DataTypes.DECIMAL(30, 4)))
                            .getLogicalType();

    /** Row r of the WIDE batch: nulls every 7th, multi-byte UTF-8, values from 0 to ~3 KiB. */
    private static String wideString(int r) {
        StringBuilder b = new StringBuilder();
        for (int k = 0; k < (r * 37) % 400; k++) {
            b.append(k % 3 == 0 ? "ü" : k % 3 == 1 ? "\u20ac" : "\ud83d\ude00");
        }
        return b.append(r).toString();
    }

    private static RowData wideRow(int r, boolean binaryRow) {
        boolean nul = r % 7 == 3;
        String str = nul ? null : wideString(r);
        byte[] bin = r % 5 == 1 ? null : new byte[r % 300];
        if (bin != null) {
            for (int k = 0; k < bin.length; k++) {
                bin[k] = (byte) (k + r);
            }
        }
        long unscaled = (r % 2 == 0 ? 1 : -1) * (r * 1_000_003L % 999_999_999_999_999_999L);
        DecimalData dec = r % 11 == 5 ? null : DecimalData.fromUnscaledLong(unscaled, 18, 2);
        DecimalData big =
                DecimalData.fromBigDecimal(
                        new BigDecimal("-123456789012345678901234.5678").add(BigDecimal.valueOf(r)),
                        30,
                        4);
        if (!binaryRow) {
            return GenericRowData.ofKind(
                    RowKind.INSERT,
                    (long) r,
                    str == null ? null : StringData.fromString(str),
                    bin,
                    dec,
                    big);
        }
        BinaryRowData row = new BinaryRowData(5);
        BinaryRowWriter w = new BinaryRowWriter(row);
        w.writeLong(0, r);
        if (str == null) {
            w.setNullAt(1);
        } else {
            w.writeString(1, StringData.fromString(str));
        }
        if (bin == null) {
            w.setNullAt(2);
        } else {
            w.writeBinary(2, bin);
        }
        if (dec == null) {
            w.setNullAt(3);
        } else {
            w.writeDecimal(3, dec, 18);
        }
        w.writeDecimal(4, big, 30);
        w.complete();
        return row;
    }

    /**
     * Batches of growing and shrinking sizes (the vectors grow mid-batch, then reuse the reserved
     * capacity), from GenericRowData and from BinaryRowData (strings in the row's segment at an
     * offset), checked value by value after an IPC unload/load round trip.
     */
    @Test
    void batchesOfManyRowsAcrossGrowthAndReset() {
        int[] sizes = {1, 5000, 20000, 3, 9000, 0, 17};
        try (RootAllocator alloc = new RootAllocator();
                RowDataArrowWriter w = new RowDataArrowWriter(WIDE, alloc, true);
                VectorSchemaRoot copy =
                        VectorSchemaRoot.create(SetatsTypes.toArrowSchema(WIDE, true), alloc)) {
            for (boolean binaryRow : new boolean[] {false, true}) {
                for (int size : sizes) {
                    for (int r = 0; r < size; r++) {
                        w.write(wideRow(r, binaryRow));
                    }
                    w.finish();
                    try (ArrowRecordBatch rb = new VectorUnloader(w.root()).getRecordBatch()) {
                        new VectorLoader(copy).load(rb);
                    }
                    assertThat(copy.getRowCount()).isEqualTo(size);
                    VarCharVector s = (VarCharVector) copy.getVector("s");
                    VarBinaryVector bin = (VarBinaryVector) copy.getVector("bin");
                    DecimalVector dec = (DecimalVector) copy.getVector("dec");
                    DecimalVector big = (DecimalVector) copy.getVector("big");
                    for (int r = 0; r < size; r++) {
                        RowData want = wideRow(r, false);
                        assertThat(copy.getVector("id").getObject(r)).isEqualTo((long) r);
                        assertThat(s.getObject(r) == null ? null : s.getObject(r).toString())
                                .as("s %d of %d", r, size)
                                .isEqualTo(want.isNullAt(1) ? null : want.getString(1).toString());
                        assertThat(bin.getObject(r))
                                .as("bin %d", r)
                                .isEqualTo(want.isNullAt(2) ? null : want.getBinary(2));
                        assertThat(dec.getObject(r))
                                .as("dec %d", r)
                                .isEqualTo(
                                        want.isNullAt(3)
                                                ? null
                                                : want.getDecimal(3, 18, 2).toBigDecimal());
                        assertThat(big.getObject(r))
                                .isEqualTo(want.getDecimal(4, 30, 4).toBigDecimal());
                    }
                    w.reset();
                }
            }
        }
    }

    private static final RowType STRINGS =
            (RowType)
                    DataTypes.ROW(
                                    DataTypes.FIELD("id", DataTypes.STRING()),
                                    DataTypes.FIELD("s", DataTypes.STRING()),
                                    DataTypes.FIELD("c", DataTypes.CHAR(3)),
                                    DataTypes.FIELD("bin", DataTypes.BYTES()))
                            .getLogicalType();

    /**
     * Row r of the STRINGS batch as a BinaryRowData whose bytes start at {@code at} in a larger
     * heap segment (as rows a serializer reads into a shared buffer): ids of 1-6 bytes are inline
     * in the field word, the strings of 0 to ~1.2 KiB (nulls every 5th) and bytes (0-40) either.
     */
    private static BinaryRowData stringsRow(int r, int at) {
        BinaryRowData row = new BinaryRowData(4);
        BinaryRowWriter w = new BinaryRowWriter(row);
        w.writeString(0, StringData.fromString(Integer.toString(r)));
        if (r % 5 == 2) {
            w.setNullAt(1);
        } else {
            w.writeString(1, StringData.fromString(wideString(r % 100)));
        }
        w.writeString(2, StringData.fromString(r % 2 == 0 ? "ab" : "\u20ac"));
        byte[] bin = new byte[r % 41];
        for (int k = 0; k < bin.length; k++) {
            bin[k] = (byte) (r - k);
        }
        w.writeBinary(3, bin);
        w.complete();
        if (at == 0) {
            return row;
        }
        byte[] big = new byte[at + row.getSizeInBytes() + 9];
        row.getSegments()[0].get(row.getOffset(), big, at, row.getSizeInBytes());
        BinaryRowData moved = new BinaryRowData(4);
        moved.pointTo(MemorySegmentFactory.wrap(big), at, row.getSizeInBytes());
        return moved;
    }

    /**
     * BinaryRowData held in one heap segment at any offset (what the sink's shuffle deserializes):
     * inline and out-of-line strings and bytes, nulls, checked value by value after an IPC round
     * trip; and writing them makes no object per value (no BinaryStringData from getString, no
     * byte[] from getBinary: 0.7 MB for these 4,000 rows before, measured as the thread's
     * allocated bytes, which HotSpot counts exactly; no clock involved).
     */
    @Test
    void binaryRowsCopiedFromTheirSegmentWithoutObjectsPerValue() {
        int rows = 4000;
        List<BinaryRowData> input = new ArrayList<>();
        for (int r = 0; r < rows; r++) {
            input.add(stringsRow(r, r % 3 == 0 ? 0 : 13 + r % 8));
        }
        com.sun.management.ThreadMXBean threads =
                (com.sun.management.ThreadMXBean) java.lang.management.ManagementFactory.getThreadMXBean();
        long self = Thread.currentThread().getId();
        try (RootAllocator alloc = new RootAllocator();
                RowDataArrowWriter w = new RowDataArrowWriter(STRINGS, alloc, true);
                VectorSchemaRoot copy =
                        VectorSchemaRoot.create(SetatsTypes.toArrowSchema(STRINGS, true), alloc)) {
            long allocated = 0;
            for (int round = 0; round < 2; round++) {
                // Round 0 grows the vectors; round 1 writes into the room reset() reserved.
                long before = threads.getThreadAllocatedBytes(self);
                for (BinaryRowData row : input) {
                    w.write(row);
                }
                allocated = threads.getThreadAllocatedBytes(self) - before;
                w.finish();
                try (ArrowRecordBatch rb = new VectorUnloader(w.root()).getRecordBatch()) {
                    new VectorLoader(copy).load(rb);
                }
                assertThat(copy.getRowCount()).isEqualTo(rows);
                for (int r = 0; r < rows; r++) {
                    RowData want = stringsRow(r, 0);
                    for (int f = 0; f < 3; f++) {
                        Object got = copy.getVector(f + 1).getObject(r);
                        assertThat(got == null ? null : got.toString())
                                .as("field %d of row %d", f, r)
                                .isEqualTo(want.isNullAt(f) ? null : want.getString(f).toString());
                    }
                    assertThat(copy.getVector(4).getObject(r)).as("bin %d", r).isEqualTo(want.getBinary(3));
                }
                w.reset();
            }
            assertThat(allocated).as("heap bytes allocated writing %d binary rows", rows).isLessThan(16 * 1024);
        }
    }

    /** Decimals: rescaled exactly, negative compact values sign-extended, too many digits refused. */
    @Test
    void decimalsRescaledAndChecked() {
        RowType rt =
                (RowType)
                        DataTypes.ROW(DataTypes.FIELD("d", DataTypes.DECIMAL(5, 2))).getLogicalType();
        try (RootAllocator alloc = new RootAllocator();
                RowDataArrowWriter w = new RowDataArrowWriter(rt, alloc, false)) {
            w.write(GenericRowData.of(DecimalData.fromBigDecimal(new BigDecimal("-1.5"), 5, 1)));
            w.write(GenericRowData.of(DecimalData.fromUnscaledLong(-99999, 5, 2)));
            w.write(GenericRowData.of(DecimalData.fromUnscaledLong(1, 5, 2)));
            w.finish();
            DecimalVector v = (DecimalVector) w.root().getVector("d");
            assertThat(v.getObject(0)).isEqualTo(new BigDecimal("-1.50"));
            assertThat(v.getObject(1)).isEqualTo(new BigDecimal("-999.99"));
            assertThat(v.getObject(2)).isEqualTo(new BigDecimal("0.01"));
            w.reset();
            // 6 digits in a DECIMAL(5, 2) column: Arrow's precision check refuses it.
            assertThatThrownBy(
                            () ->
                                    w.write(
                                            GenericRowData.of(
                                                    DecimalData.fromUnscaledLong(100000, 6, 2))))
                    .isInstanceOf(UnsupportedOperationException.class);
            assertThatThrownBy(
                            () ->
                                    w.write(
                                            GenericRowData.of(
                                                    DecimalData.fromBigDecimal(
                                                            new BigDecimal("1.234"), 6, 3))))
                    .isInstanceOf(ArithmeticException.class);
        }
        assertThat(RowDataArrowWriter.fitsPrecision(99_999, 5)).isTrue();
        assertThat(RowDataArrowWriter.fitsPrecision(-100_000, 5)).isFalse();
        assertThat(RowDataArrowWriter.fitsPrecision(999_999_999_999_999_999L, 18)).isTrue();
    }
}
