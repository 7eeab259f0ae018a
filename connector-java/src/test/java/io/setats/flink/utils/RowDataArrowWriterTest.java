package io.setats.flink.utils;

import org.apache.flink.table.api.DataTypes;
import org.apache.flink.table.data.DecimalData;
import org.apache.flink.table.data.GenericRowData;
import org.apache.flink.table.data.StringData;
import org.apache.flink.table.data.TimestampData;
import org.apache.flink.table.types.logical.RowType;
import org.apache.flink.types.RowKind;

import org.apache.arrow.memory.RootAllocator;
import org.apache.arrow.vector.FieldVector;
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
}
