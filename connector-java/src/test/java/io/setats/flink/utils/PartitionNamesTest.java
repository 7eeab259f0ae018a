package io.setats.flink.utils;

import org.apache.flink.table.api.DataTypes;
import org.apache.flink.table.data.GenericRowData;
import org.apache.flink.table.data.StringData;
import org.apache.flink.table.types.logical.RowType;

import org.junit.jupiter.api.Test;

import java.time.LocalDate;
import java.util.Arrays;
import java.util.Collections;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** Partition names as proto/README.md describes them. */
class PartitionNamesTest {

    private static final RowType RT =
            (RowType)
                    DataTypes.ROW(
                                    DataTypes.FIELD("id", DataTypes.STRING()),
                                    DataTypes.FIELD("dt", DataTypes.STRING()),
                                    DataTypes.FIELD("day", DataTypes.DATE()),
                                    DataTypes.FIELD("n", DataTypes.BIGINT()))
                            .getLogicalType();

    private static GenericRowData row(String dt, String day, Long n) {
        return GenericRowData.of(
                StringData.fromString("x"),
                dt == null ? null : StringData.fromString(dt),
                day == null ? null : (int) LocalDate.parse(day).toEpochDay(),
                n);
    }

    @Test
    void unpartitioned() {
        PartitionNames p = new PartitionNames(RT, Collections.emptyList());
        assertThat(p.isPartitioned()).isFalse();
        assertThat(p.of(row("a", "2026-01-01", 1L))).isEmpty();
    }

    @Test
    void keysInOrderWithStringForms() {
        PartitionNames p = new PartitionNames(RT, Arrays.asList("dt", "day", "n"));
        assertThat(p.of(row("20261129", "2026-11-29", -5L))).isEqualTo("dt=20261129/day=2026-11-29/n=-5");
    }

    @Test
    void escapesPercentSlashEqualsAndControls() {
        PartitionNames p = new PartitionNames(RT, Collections.singletonList("dt"));
        assertThat(p.of(row("a/b=c%d\te\u007f", null, null))).isEqualTo("dt=a%2Fb%3Dc%25d%09e%7F");
        assertThat(p.of(row("héllo world", null, null))).isEqualTo("dt=héllo world");
    }

    @Test
    void nullPartitionValueNamesTheColumn() {
        PartitionNames p = new PartitionNames(RT, Collections.singletonList("dt"));
        assertThatThrownBy(() -> p.of(row(null, null, null))).hasMessage("primary-key column 'dt' is null");
    }

    /** parse and format are inverse (listPartitions / applyPartitions of the batch scan). */
    @Test
    void parseAndFormatRoundTrip() {
        for (String name : Arrays.asList("", "dt=2026-12-01", "dt=a%2Fb%3Dc%25/h=7", "k=%0A")) {
            java.util.LinkedHashMap<String, String> spec = PartitionNames.parse(name);
            assertThat(PartitionNames.format(new java.util.ArrayList<>(spec.keySet()), spec)).isEqualTo(name);
        }
        assertThat(PartitionNames.parse("dt=a%2Fb%3Dc%25/h=7")).containsExactly(
                org.assertj.core.api.Assertions.entry("dt", "a/b=c%"), org.assertj.core.api.Assertions.entry("h", "7"));
        for (String bad : Arrays.asList("dt", "=v", "dt=%2", "dt=%zz")) {
            assertThatThrownBy(() -> PartitionNames.parse(bad)).hasMessageContaining("'" + bad + "'");
        }
        assertThatThrownBy(() -> PartitionNames.format(Arrays.asList("dt", "h"), Collections.singletonMap("dt", "x")))
                .hasMessageContaining("'h'");
    }
}
