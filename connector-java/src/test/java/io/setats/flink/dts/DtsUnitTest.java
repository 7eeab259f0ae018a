package io.setats.flink.dts;

import io.setats.flink.dts.format.DtsCdcDeserializationSchema;
import io.setats.flink.dts.format.DtsTableFilter;
import io.setats.flink.dts.source.DtsEnumeratorState;
import io.setats.flink.dts.source.DtsSplit;
import io.setats.flink.dts.source.DtsSplitSerializer;

import org.apache.flink.table.api.DataTypes;
import org.apache.flink.table.data.RowData;
import org.apache.flink.table.types.logical.RowType;
import org.apache.flink.util.Collector;
import org.junit.jupiter.api.Test;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** Unit tests of the dts connector: checkpoint strings, records, the table filter, serializers, dts-cdc rows. */
class DtsUnitTest {

    @Test
    void checkpointStrings() { // T3
        assertThat(DtsCheckpoint.format(12006303, "289540@2688", 1625045211000L)).isEqualTo("0@12006303@289540@2688@1625045211000");
        DtsCheckpoint c = DtsCheckpoint.parse("0@12006303@289540@2688@1625045211000");
        assertThat(c.getId()).isEqualTo(12006303);
        assertThat(c.getPosition()).isEqualTo("289540@2688");
        assertThat(c.getTimestampMs()).isEqualTo(1625045211000L);
        assertThat(DtsCheckpoint.parse("0@5@@7").getPosition()).isEmpty();
        for (String bad : new String[] {"", "1@2@3@4", "0@x@p@1", "0@1", "0@1@p@t"}) {
            assertThatThrownBy(() -> DtsCheckpoint.parse(bad)).isInstanceOf(IllegalArgumentException.class);
        }
    }

    @Test
    void recordPrintsLikeTheSeed() {
        DtsRecord r = new DtsRecord(12006303, DtsOperation.HEARTBEAT, null, "289540@2688", 1625045211000L, null, null, null, null);
        assertThat(r.toString()).isEqualTo("DtsRecord {operationType [HEARTBEAT], checkpoint [0@12006303@289540@2688@1625045211000]}");
        assertThat(r.getSourceTimestamp()).isEqualTo(1625045211L);
    }

    @Test
    void tableFilter() {
        DtsTableFilter one = DtsTableFilter.parse("dtstestdata.order");
        assertThat(one.matches("dtstestdata.order")).isTrue();
        assertThat(one.matches("dtstestdataXorder")).isFalse(); // '.' alone is literal
        DtsTableFilter many = DtsTableFilter.parse("shop.orders, shop\\.u.*");
        assertThat(many.matches("shop.orders")).isTrue();
        assertThat(many.matches("shop.users")).isTrue();
        assertThat(many.matches("shop.items")).isFalse();
        assertThat(DtsTableFilter.parse("").matches("any.thing")).isTrue();
        assertThatThrownBy(() -> DtsTableFilter.parse("a.(b")).hasMessageContaining("a.(b");
    }

    @Test
    void splitAndStateRoundTrip() throws Exception {
        DtsSplit s = new DtsSplit("ch@1", 42, 1000, "cluster-a", 2000, "0@41@p@2000");
        assertThat(DtsSplitSerializer.INSTANCE.deserialize(1, DtsSplitSerializer.INSTANCE.serialize(s))).isEqualTo(s);
        DtsEnumeratorState st = new DtsEnumeratorState(true, Arrays.asList(s, DtsSplit.fresh("x", -1)));
        DtsEnumeratorState back = DtsEnumeratorState.Serializer.INSTANCE.deserialize(1, DtsEnumeratorState.Serializer.INSTANCE.serialize(st));
        assertThat(back.created()).isTrue();
        assertThat(back.pending()).containsExactlyElementsOf(st.pending());
        assertThatThrownBy(() -> DtsSplitSerializer.INSTANCE.deserialize(9, new byte[0])).hasMessageContaining("version 9");
    }

    private static byte[] b(String s) {
        return s == null ? null : s.getBytes(StandardCharsets.UTF_8);
    }

    /** T1: one transaction, three kinds; T5: other tables filtered; HEARTBEAT etc. emit nothing. */
    @Test
    void dtsCdcRows() {
        RowType type = (RowType) DataTypes.ROW(DataTypes.FIELD("id", DataTypes.INT()), DataTypes.FIELD("amount", DataTypes.BIGINT()),
                DataTypes.FIELD("ts", DataTypes.TIMESTAMP_LTZ(3)), DataTypes.FIELD("d", DataTypes.DECIMAL(10, 2))).getLogicalType();
        DtsCdcDeserializationSchema schema = new DtsCdcDeserializationSchema(type, Arrays.asList("offset", "table"),
                DtsTableFilter.parse("shop.orders"), "ch", null);
        List<DtsField> f = Arrays.asList(new DtsField("id", "INT"), new DtsField("amount", "INT"),
                new DtsField("ts", "TIMESTAMP_LTZ(6)"), new DtsField("d", "DECIMAL(10,2)"));
        List<DtsRecord> in = Arrays.asList(
                new DtsRecord(0, DtsOperation.BEGIN, null, "p", 1, "7", null, null, null),
                new DtsRecord(1, DtsOperation.INSERT, "shop.orders", "p", 1, "7", f, null,
                        Arrays.asList(b("1"), b("10"), b("2021-06-23 18:32:17.391+00"), b("1.5"))),
                new DtsRecord(2, DtsOperation.UPDATE, "shop.orders", "p", 1, "7", f,
                        Arrays.asList(b("1"), b("10"), null, null), Arrays.asList(b("1"), b("11"), null, null)),
                new DtsRecord(3, DtsOperation.DELETE, "shop.orders", "p", 1, "7", f, Arrays.asList(b("1"), b("11"), null, null), null),
                new DtsRecord(4, DtsOperation.INSERT, "shop.users", "p", 1, "7", f, null, Arrays.asList(b("5"), null, null, null)),
                new DtsRecord(5, DtsOperation.COMMIT, null, "p", 1, "7", null, null, null),
                new DtsRecord(6, DtsOperation.HEARTBEAT, null, "p", 2, null, null, null, null));
        List<String> out = new ArrayList<>();
        Collector<RowData> c = new Collector<RowData>() {
            @Override
            public void collect(RowData r) {
                out.add(r.getRowKind().shortString() + "(" + r.getInt(0) + "," + r.getLong(1) + ","
                        + (r.isNullAt(2) ? "null" : r.getTimestamp(2, 3).toInstant()) + ","
                        + (r.isNullAt(3) ? "null" : r.getDecimal(3, 10, 2)) + ") offset=" + r.getLong(4) + " table=" + r.getString(5));
            }

            @Override
            public void close() {}
        };
        for (DtsRecord r : in) {
            schema.deserialize(r, c);
        }
        assertThat(out).containsExactly(
                "+I(1,10,2021-06-23T18:32:17.391Z,1.50) offset=1 table=shop.orders",
                "-U(1,10,null,null) offset=2 table=shop.orders",
                "+U(1,11,null,null) offset=2 table=shop.orders",
                "-D(1,11,null,null) offset=3 table=shop.orders");
        // A value that does not parse names the table, column and value.
        DtsRecord bad = new DtsRecord(9, DtsOperation.INSERT, "shop.orders", "p", 1, "7", f, null, Arrays.asList(b("x"), null, null, null));
        assertThatThrownBy(() -> schema.deserialize(bad, c)).hasMessageContaining("shop.orders").hasMessageContaining("id").hasMessageContaining("'x'");
        assertThat(Collections.emptyList()).isEmpty();
    }
}
