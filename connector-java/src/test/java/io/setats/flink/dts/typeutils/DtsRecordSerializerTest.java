package io.setats.flink.dts.typeutils;

import io.setats.flink.dts.DtsField;
import io.setats.flink.dts.DtsOperation;
import io.setats.flink.dts.DtsRecord;
import io.setats.flink.dts.DtsSource;

import org.apache.flink.api.common.functions.MapFunction;
import org.apache.flink.api.common.serialization.SerializerConfigImpl;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.api.common.typeutils.SerializerTestBase;
import org.apache.flink.api.common.typeutils.TypeSerializer;
import org.apache.flink.api.common.typeutils.TypeSerializerSnapshot;
import org.apache.flink.api.java.typeutils.GenericTypeInfo;
import org.apache.flink.api.java.typeutils.TypeExtractor;
import org.apache.flink.core.memory.DataInputDeserializer;
import org.apache.flink.core.memory.DataOutputSerializer;
import org.apache.flink.types.StringValue;
import org.apache.flink.util.StringUtils;
import org.junit.jupiter.api.Test;

import java.io.EOFException;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * DtsRecordSerializer under Flink's SerializerTestBase (round trips alone and in sequence, copies,
 * snapshot and restore, duplicate, serializability), plus the format's fixed bytes, hostile input,
 * the snapshot's version check and the connector's produced type.
 */
class DtsRecordSerializerTest extends SerializerTestBase<DtsRecord> {

    private static byte[] b(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }

    /** One field of each type of the source's type table. */
    private static final List<DtsField> FIELDS = Arrays.asList(
            new DtsField("id", "BIGINT"), new DtsField("flag", "BOOLEAN"), new DtsField("amount", "DECIMAL(10,2)"),
            new DtsField("name", "STRING"), new DtsField("born", "DATE"), new DtsField("at", "TIMESTAMP(6)"),
            new DtsField("raw", "BYTES"), new DtsField("ratio", "DOUBLE"));

    private static List<byte[]> image(byte[]... values) {
        return new ArrayList<>(Arrays.asList(values));
    }

    static DtsRecord[] records() {
        byte[] large = new byte[1 << 20];
        for (int i = 0; i < large.length; i++) {
            large[i] = (byte) (i * 31);
        }
        byte[] allBytes = new byte[256];
        for (int i = 0; i < 256; i++) {
            allBytes[i] = (byte) i;
        }
        List<byte[]> full = image(b("1"), b("true"), b("12.50"), b("Zürich ✓ 日本"), b("2024-02-29"), b("2024-02-29 23:59:59.999999"), allBytes, b("-0.5"));
        List<byte[]> nulls = image(b("1"), null, null, null, null, null, null, null);
        return new DtsRecord[] {
            new DtsRecord(0, DtsOperation.HEARTBEAT, null, "0/19B1E88", 1764585120012L, null, null, null, null),
            new DtsRecord(1, DtsOperation.BEGIN, null, "0-1-42", 1764585120456L, "7", null, null, null),
            new DtsRecord(2, DtsOperation.INSERT, "shop.orders", "0/19B1F30", 1764585120456L, "7", FIELDS, null, full),
            new DtsRecord(3, DtsOperation.UPDATE, "shop.orders", "0/19B1F30", 1764585120456L, "7", FIELDS, full, nulls),
            new DtsRecord(4, DtsOperation.DELETE, "shop.orders", "0/19B1F30", 1764585120456L, "7", FIELDS, nulls, null),
            new DtsRecord(5, DtsOperation.INSERT, "shop.blobs", "p@with@ats", -1L, "", Arrays.asList(new DtsField("v", "BYTES")), null, image(large)),
            new DtsRecord(6, DtsOperation.UPDATE, "shop.empty", "", 0, null, Arrays.asList(new DtsField("s", "STRING")), image(new byte[0]), image((byte[]) null)),
            new DtsRecord(7, DtsOperation.DDL, "shop.orders", "p", Long.MAX_VALUE, null, Collections.emptyList(), image(), image()),
            new DtsRecord(Long.MAX_VALUE, DtsOperation.COMMIT, null, "p", Long.MIN_VALUE, "tx-" + "x".repeat(70_000), null, null, null),
        };
    }

    @Override
    protected TypeSerializer<DtsRecord> createSerializer() {
        return DtsRecordSerializer.INSTANCE;
    }

    @Override
    protected int getLength() {
        return -1;
    }

    @Override
    protected Class<DtsRecord> getTypeClass() {
        return DtsRecord.class;
    }

    @Override
    protected DtsRecord[] getTestData() {
        return records();
    }

    private static byte[] serialize(DtsRecord r) throws IOException {
        DataOutputSerializer out = new DataOutputSerializer(64);
        DtsRecordSerializer.INSTANCE.serialize(r, out);
        return out.getCopyOfBuffer();
    }

    /**
     * Format version 1 byte for byte: a change of these bytes is a format change and must bump
     * FORMAT_VERSION (and this expectation).
     */
    @Test
    void formatVersion1Bytes() throws IOException {
        DtsRecord r = new DtsRecord(2, DtsOperation.UPDATE, "s.t", "p", 1000, null, Arrays.asList(new DtsField("id", "INT")),
                image(b("1"), null), null);
        assertThat(DtsRecordSerializer.FORMAT_VERSION).isEqualTo(1);
        assertThat(StringUtils.byteToHexString(serialize(r))).isEqualTo(
                "0000000000000002" // id
                        + "01" // operation UPDATE
                        + "04732e74" // "s.t" (StringValue: length + 1, then chars)
                        + "0270" // "p"
                        + "00000000000003e8" // source timestamp
                        + "00" // null transaction id
                        + "00000001" + "036964" + "04494e54" // 1 field: id INT
                        + "00000002" + "0000000131" + "ffffffff" // before: "1", NULL
                        + "ffffffff"); // no after image
    }

    @Test
    void everyOperationHasAWireCode() throws IOException {
        assertThat(DtsRecordSerializer.OPERATIONS).containsExactlyInAnyOrder(DtsOperation.values());
        for (DtsOperation op : DtsOperation.values()) {
            DtsRecord r = new DtsRecord(1, op, null, "p", 1, null, null, null, null);
            assertThat(DtsRecordSerializer.INSTANCE.deserialize(new DataInputDeserializer(serialize(r))).getOperationType()).isEqualTo(op);
        }
    }

    @Test
    void copyIsDeep() {
        DtsRecord r = records()[3];
        DtsRecord c = DtsRecordSerializer.INSTANCE.copy(r);
        assertThat(c).isEqualTo(r).isNotSameAs(r);
        c.getAfterImage().get(0)[0] = 'x';
        c.getBeforeImage().set(1, null);
        assertThat(r.getAfterValue("id")).isEqualTo("1");
        assertThat(r.getBeforeValue("flag")).isEqualTo("true");
        assertThat(c).isNotEqualTo(r);
    }

    /** The bytes of a record up to its field count: id 9, operation code op, no strings, timestamp 0. */
    private static DataOutputSerializer header(int op) throws IOException {
        DataOutputSerializer out = new DataOutputSerializer(64);
        out.writeLong(9);
        out.writeByte(op);
        StringValue.writeString(null, out); // object name
        StringValue.writeString(null, out); // source position
        out.writeLong(0);
        StringValue.writeString(null, out); // transaction id
        return out;
    }

    private static DtsRecord read(DataOutputSerializer out) throws IOException {
        return DtsRecordSerializer.INSTANCE.deserialize(new DataInputDeserializer(out.getCopyOfBuffer()));
    }

    @Test
    void hostileInputIsRefused() throws IOException {
        DataOutputSerializer ok = header(0);
        ok.writeInt(0);
        ok.writeInt(-1);
        ok.writeInt(-1);
        assertThat(read(ok)).isEqualTo(new DtsRecord(9, DtsOperation.INSERT, null, null, 0, null, null, null, null));

        DataOutputSerializer op = header(DtsRecordSerializer.OPERATIONS.length);
        assertThatThrownBy(() -> read(op)).isInstanceOf(IOException.class).hasMessageContaining("DtsRecord 9: unknown operation code 7");

        DataOutputSerializer fields = header(0);
        fields.writeInt(-5);
        assertThatThrownBy(() -> read(fields)).isInstanceOf(IOException.class).hasMessageContaining("negative field count -5");

        DataOutputSerializer image = header(0);
        image.writeInt(0);
        image.writeInt(-2);
        assertThatThrownBy(() -> read(image)).isInstanceOf(IOException.class).hasMessageContaining("negative image size -2");

        DataOutputSerializer value = header(0);
        value.writeInt(0);
        value.writeInt(1);
        value.writeInt(-7);
        assertThatThrownBy(() -> read(value)).isInstanceOf(IOException.class).hasMessageContaining("negative value length -7");

        // A billion values claimed, three bytes of the first one missing: EOF, no list of a billion slots.
        DataOutputSerializer big = header(0);
        big.writeInt(0);
        big.writeInt(-1);
        big.writeInt(1_000_000_000);
        big.writeInt(3);
        assertThatThrownBy(() -> read(big)).isInstanceOf(EOFException.class);
    }

    @Test
    void snapshotDetectsAnotherFormatVersion() throws IOException {
        TypeSerializerSnapshot<DtsRecord> current = DtsRecordSerializer.INSTANCE.snapshotConfiguration();
        DtsRecordSerializerSnapshot restored = new DtsRecordSerializerSnapshot();
        restored.readSnapshot(current.getCurrentVersion(), new DataInputDeserializer(new byte[0]), getClass().getClassLoader());
        assertThat(current.resolveSchemaCompatibility(restored).isCompatibleAsIs()).isTrue();
        assertThat(restored.restoreSerializer()).isSameAs(DtsRecordSerializer.INSTANCE);

        DtsRecordSerializerSnapshot future = new DtsRecordSerializerSnapshot();
        future.readSnapshot(DtsRecordSerializer.FORMAT_VERSION + 1, new DataInputDeserializer(new byte[0]), getClass().getClassLoader());
        assertThat(future.formatVersion()).isEqualTo(DtsRecordSerializer.FORMAT_VERSION + 1);
        assertThat(current.resolveSchemaCompatibility(future).isIncompatible()).isTrue();
        assertThatThrownBy(future::restoreSerializer).hasMessageContaining("format version 2");
        assertThatThrownBy(() -> new DtsRecordSerializerSnapshot().readSnapshot(0, new DataInputDeserializer(new byte[0]), null))
                .isInstanceOf(IOException.class);
    }

    private static final class Identity implements MapFunction<DtsRecord, DtsRecord> {
        @Override
        public DtsRecord map(DtsRecord r) {
            return r;
        }
    }

    @Test
    void producedTypeIsNotGeneric() {
        TypeInformation<DtsRecord> produced = DtsSource.builder().setBrokerUrl("127.0.0.1:1").setTopic("t").setSid("g")
                .setUser("u").setPassword("p").build().getProducedType();
        assertThat(produced).isNotInstanceOf(GenericTypeInfo.class).isSameAs(DtsRecordTypeInfo.INSTANCE);
        assertThat(TypeInformation.of(DtsRecord.class)).isEqualTo(DtsRecordTypeInfo.INSTANCE);
        assertThat(TypeExtractor.getMapReturnTypes(new Identity(), DtsRecordTypeInfo.INSTANCE)).isEqualTo(DtsRecordTypeInfo.INSTANCE);
        // What pipeline.generic-types: false does to a job: a GenericTypeInfo (Kryo) throws here.
        SerializerConfigImpl noGeneric = new SerializerConfigImpl();
        noGeneric.setGenericTypes(false);
        assertThat(produced.createSerializer(noGeneric)).isSameAs(DtsRecordSerializer.INSTANCE);
        assertThatThrownBy(() -> new GenericTypeInfo<>(DtsRecord.class).createSerializer(noGeneric))
                .isInstanceOf(UnsupportedOperationException.class);
    }
}
