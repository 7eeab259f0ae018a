package io.setats.flink.utils;

import org.apache.flink.table.api.DataTypes;
import org.apache.flink.table.api.ValidationException;
import org.apache.flink.table.types.logical.LogicalType;
import org.apache.flink.table.types.logical.RowType;

import org.apache.arrow.vector.types.pojo.Field;
import org.apache.arrow.vector.types.pojo.Schema;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

import java.util.stream.Stream;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** Flink type -> Setats type string -> Arrow type (proto/README.md, "Types"). */
class SetatsTypesTest {

    static Stream<Arguments> types() {
        return Stream.of(
                Arguments.of(DataTypes.BOOLEAN(), "BOOLEAN", "Bool"),
                Arguments.of(DataTypes.TINYINT(), "TINYINT", "Int(8, true)"),
                Arguments.of(DataTypes.SMALLINT(), "SMALLINT", "Int(16, true)"),
                Arguments.of(DataTypes.INT(), "INT", "Int(32, true)"),
                Arguments.of(DataTypes.BIGINT(), "BIGINT", "Int(64, true)"),
                Arguments.of(DataTypes.FLOAT(), "FLOAT", "FloatingPoint(SINGLE)"),
                Arguments.of(DataTypes.DOUBLE(), "DOUBLE", "FloatingPoint(DOUBLE)"),
                Arguments.of(DataTypes.DECIMAL(10, 2), "DECIMAL(10, 2)", "Decimal(10, 2, 128)"),
                Arguments.of(DataTypes.DECIMAL(38, 0), "DECIMAL(38, 0)", "Decimal(38, 0, 128)"),
                Arguments.of(DataTypes.CHAR(3), "CHAR(3)", "Utf8"),
                Arguments.of(DataTypes.VARCHAR(20), "VARCHAR(20)", "Utf8"),
                Arguments.of(DataTypes.STRING(), "STRING", "Utf8"),
                Arguments.of(DataTypes.BINARY(4), "BINARY(4)", "Binary"),
                Arguments.of(DataTypes.VARBINARY(8), "VARBINARY(8)", "Binary"),
                Arguments.of(DataTypes.BYTES(), "BYTES", "Binary"),
                Arguments.of(DataTypes.DATE(), "DATE", "Date(DAY)"),
                Arguments.of(DataTypes.TIME(3), "TIME(3)", "Time(MILLISECOND, 32)"),
                Arguments.of(DataTypes.TIME(0), "TIME(0)", "Time(MILLISECOND, 32)"),
                Arguments.of(DataTypes.TIMESTAMP(0), "TIMESTAMP(0)", "Timestamp(SECOND, null)"),
                Arguments.of(DataTypes.TIMESTAMP(3), "TIMESTAMP(3)", "Timestamp(MILLISECOND, null)"),
                Arguments.of(DataTypes.TIMESTAMP(6), "TIMESTAMP(6)", "Timestamp(MICROSECOND, null)"),
                Arguments.of(DataTypes.TIMESTAMP(9), "TIMESTAMP(9)", "Timestamp(NANOSECOND, null)"),
                Arguments.of(DataTypes.TIMESTAMP_LTZ(3), "TIMESTAMP_LTZ(3)", "Timestamp(MILLISECOND, UTC)"),
                Arguments.of(DataTypes.TIMESTAMP_LTZ(6), "TIMESTAMP_LTZ(6)", "Timestamp(MICROSECOND, UTC)"),
                Arguments.of(DataTypes.TIMESTAMP_LTZ(9), "TIMESTAMP_LTZ(9)", "Timestamp(NANOSECOND, UTC)"));
    }

    @ParameterizedTest(name = "{1}")
    @MethodSource("types")
    void mapsAndRoundTrips(org.apache.flink.table.types.DataType dt, String typeString, String arrow) {
        LogicalType t = dt.getLogicalType();
        assertThat(SetatsTypes.toTypeString("c", t)).isEqualTo(typeString);
        assertThat(SetatsTypes.toTypeString("c", t.copy(false))).isEqualTo(typeString);
        assertThat(SetatsTypes.toArrowType("c", t).toString()).isEqualTo(arrow);
        assertThat(SetatsTypes.parse("c", typeString)).isEqualTo(t.copy(true));
        Field f = SetatsTypes.toArrowField("c", t.copy(false));
        assertThat(f.isNullable()).isFalse();
        assertThat(f.getMetadata()).containsEntry(SetatsTypes.FLINK_TYPE_METADATA, typeString);
    }

    @Test
    void unsupportedTypesNameTheColumn() {
        assertThatThrownBy(() -> SetatsTypes.toTypeString("m", DataTypes.MAP(DataTypes.INT(), DataTypes.INT()).getLogicalType()))
                .isInstanceOf(ValidationException.class)
                .hasMessageStartingWith("Column 'm' has type MAP<INT, INT>, which Setats does not support.");
        assertThatThrownBy(() -> SetatsTypes.toArrowType("z", DataTypes.TIMESTAMP_WITH_TIME_ZONE(3).getLogicalType()))
                .hasMessageStartingWith("Column 'z' has type TIMESTAMP(3) WITH TIME ZONE");
        assertThatThrownBy(() -> SetatsTypes.parse("q", "INTERVAL DAY"))
                .hasMessageStartingWith("Column 'q' has type INTERVAL DAY");
        assertThatThrownBy(() -> SetatsTypes.parse("q", "NOT A TYPE"))
                .hasMessage("Column 'q': cannot parse Setats type 'NOT A TYPE'.");
    }

    @Test
    void doPutSchemaHasRowKindFirst() {
        RowType rt = (RowType) DataTypes.ROW(
                        DataTypes.FIELD("id", DataTypes.STRING().notNull()),
                        DataTypes.FIELD("n", DataTypes.INT()))
                .getLogicalType();
        Schema s = SetatsTypes.toArrowSchema(rt, true);
        assertThat(s.getFields()).extracting(Field::getName).containsExactly("_row_kind", "id", "n");
        assertThat(s.getFields().get(0).isNullable()).isFalse();
        assertThat(s.getFields().get(0).getType().toString()).isEqualTo("Int(8, true)");
        assertThat(SetatsTypes.toArrowSchema(rt, false).getFields()).extracting(Field::getName).containsExactly("id", "n");
    }
}
