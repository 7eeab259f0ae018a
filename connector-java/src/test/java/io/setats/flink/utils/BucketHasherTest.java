package io.setats.flink.utils;

import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.databind.JsonNode;
import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.databind.ObjectMapper;
import org.apache.flink.table.data.DecimalData;
import org.apache.flink.table.data.GenericRowData;
import org.apache.flink.table.data.StringData;
import org.apache.flink.table.data.TimestampData;
import org.apache.flink.table.data.binary.BinaryRowData;
import org.apache.flink.table.runtime.typeutils.RowDataSerializer;
import org.apache.flink.table.types.logical.DecimalType;
import org.apache.flink.table.types.logical.LogicalType;
import org.apache.flink.table.types.logical.RowType;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

import java.io.IOException;
import java.math.BigDecimal;
import java.math.BigInteger;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.time.Instant;
import java.time.LocalDate;
import java.time.LocalDateTime;
import java.time.LocalTime;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.stream.IntStream;
import java.util.stream.Stream;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * BucketHasher against the shared vectors proto/testdata/bucket_hash.json, which the Go gateway
 * generates and checks (proto/README.md, "Bucket hash").
 */
class BucketHasherTest {

    static Path vectorsFile() {
        return Paths.get(System.getProperty("setats.proto.testdata", "../proto/testdata"), "bucket_hash.json");
    }

    static Stream<Arguments> vectors() throws IOException {
        JsonNode root = new ObjectMapper().readTree(vectorsFile().toFile());
        List<Arguments> out = new ArrayList<>();
        for (JsonNode v : root.get("vectors")) {
            out.add(Arguments.of(v.get("name").asText(), v));
        }
        assertThat(out).as("vectors in %s", vectorsFile()).hasSizeGreaterThan(20);
        return out.stream();
    }

    /** The internal Flink value of a vector value (value_formats of the JSON file). */
    static Object internal(LogicalType t, JsonNode v) {
        switch (t.getTypeRoot()) {
            case BOOLEAN:
                return v.asBoolean();
            case TINYINT:
                return (byte) v.asInt();
            case SMALLINT:
                return (short) v.asInt();
            case INTEGER:
                return v.asInt();
            case BIGINT:
                return v.asLong();
            case FLOAT:
                return Float.parseFloat(v.asText());
            case DOUBLE:
                return Double.parseDouble(v.asText());
            case DECIMAL:
                {
                    DecimalType d = (DecimalType) t;
                    return DecimalData.fromBigDecimal(new BigDecimal(v.asText()), d.getPrecision(), d.getScale());
                }
            case CHAR:
            case VARCHAR:
                return StringData.fromString(v.asText());
            case BINARY:
            case VARBINARY:
                return hex(v.asText());
            case DATE:
                return (int) LocalDate.parse(v.asText()).toEpochDay();
            case TIME_WITHOUT_TIME_ZONE:
                return (int) (LocalTime.parse(v.asText()).toNanoOfDay() / 1_000_000L);
            case TIMESTAMP_WITHOUT_TIME_ZONE:
                return TimestampData.fromLocalDateTime(LocalDateTime.parse(v.asText()));
            case TIMESTAMP_WITH_LOCAL_TIME_ZONE:
                return TimestampData.fromInstant(Instant.parse(v.asText()));
            default:
                throw new IllegalArgumentException("no vector format for " + t);
        }
    }

    static byte[] hex(String s) {
        byte[] b = new byte[s.length() / 2];
        for (int i = 0; i < b.length; i++) {
            b[i] = (byte) Integer.parseInt(s.substring(2 * i, 2 * i + 2), 16);
        }
        return b;
    }

    static String hex(byte[] b) {
        StringBuilder sb = new StringBuilder();
        for (byte x : b) {
            sb.append(String.format("%02x", x & 0xff));
        }
        return sb.toString();
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("vectors")
    void matchesSharedVector(String name, JsonNode v) {
        List<LogicalType> types = new ArrayList<>();
        List<String> columns = new ArrayList<>();
        Object[] values = new Object[v.get("types").size()];
        for (int i = 0; i < values.length; i++) {
            LogicalType t = SetatsTypes.parse("c" + i, v.get("types").get(i).asText()).copy(false);
            types.add(t);
            columns.add("c" + i);
            values[i] = internal(t, v.get("values").get(i));
        }
        RowType rowType = RowType.of(types.toArray(new LogicalType[0]), columns.toArray(new String[0]));
        BucketHasher hasher = new BucketHasher(rowType, columns);
        GenericRowData row = GenericRowData.of(values);

        assertThat(hex(hasher.keyBytes(row))).isEqualTo(v.get("key_hex").asText());
        assertThat(hasher.hash(row)).isEqualTo(v.get("hash_int").asInt());
        // The sink's rows arrive as BinaryRowData (strings in its memory segment, read in place).
        BinaryRowData binary = new RowDataSerializer(rowType).toBinaryRow(row);
        assertThat(hex(hasher.keyBytes(binary))).isEqualTo(v.get("key_hex").asText());
        assertThat(hasher.hash(binary)).isEqualTo(v.get("hash_int").asInt());
        assertThat(Integer.toUnsignedLong(hasher.hash(row))).isEqualTo(v.get("hash").asLong());
        Iterator<Map.Entry<String, JsonNode>> buckets = v.get("buckets").fields();
        while (buckets.hasNext()) {
            Map.Entry<String, JsonNode> e = buckets.next();
            assertThat(hasher.bucket(row, Integer.parseInt(e.getKey())))
                    .as("bucket of %s among %s", name, e.getKey())
                    .isEqualTo(e.getValue().asInt());
        }
    }

    @Test
    void bucketKeyOrderMattersAndOnlyKeyColumnsCount() {
        LogicalType s = SetatsTypes.parse("x", "STRING");
        RowType rt = RowType.of(new LogicalType[] {s, s, s}, new String[] {"id", "dt", "name"});
        GenericRowData a = GenericRowData.of(StringData.fromString("1"), StringData.fromString("2"), StringData.fromString("x"));
        GenericRowData b = GenericRowData.of(StringData.fromString("1"), StringData.fromString("2"), StringData.fromString("y"));
        BucketHasher idDt = new BucketHasher(rt, Arrays.asList("id", "dt"));
        BucketHasher dtId = new BucketHasher(rt, Arrays.asList("dt", "id"));
        assertThat(idDt.hash(a)).isEqualTo(idDt.hash(b));
        assertThat(hex(idDt.keyBytes(a))).isEqualTo("01000000" + "31" + "01000000" + "32");
        assertThat(hex(dtId.keyBytes(a))).isEqualTo("01000000" + "32" + "01000000" + "31");
    }

    /**
     * One hasher reuses its key-bytes buffer: a short key after a long one hashes as a fresh
     * hasher does (no bytes of the previous key left over), for generic and binary rows.
     */
    @Test
    void reusedBufferKeepsNoBytesOfThePreviousKey() {
        LogicalType s = SetatsTypes.parse("x", "STRING");
        RowType rt = RowType.of(new LogicalType[] {s}, new String[] {"id"});
        RowDataSerializer ser = new RowDataSerializer(rt);
        BucketHasher reused = new BucketHasher(rt, Arrays.asList("id"));
        for (String id : Arrays.asList("x".repeat(300), "a", "", "b".repeat(70), "c")) {
            GenericRowData g = GenericRowData.of(StringData.fromString(id));
            int fresh = new BucketHasher(rt, Arrays.asList("id")).hash(g);
            assertThat(reused.hash(g)).as("generic %s", id.length()).isEqualTo(fresh);
            assertThat(reused.hash(ser.toBinaryRow(g))).as("binary %s", id.length()).isEqualTo(fresh);
            assertThat(hex(reused.keyBytes(g)))
                    .isEqualTo(hex(BucketHasher.keyBytes(new LogicalType[] {s}, Arrays.asList(g.getString(0)))));
        }
    }

    @Test
    void nullKeyNamesTheColumn() {
        LogicalType s = SetatsTypes.parse("x", "STRING");
        RowType rt = RowType.of(new LogicalType[] {s, s}, new String[] {"id", "v"});
        BucketHasher h = new BucketHasher(rt, Arrays.asList("id"));
        assertThatThrownBy(() -> h.keyBytes(GenericRowData.of(null, StringData.fromString("v"))))
                .isInstanceOf(BucketHasher.NullKeyException.class)
                .hasMessage("primary-key column 'id' is null");
    }

    @Test
    void unknownBucketKeyColumn() {
        LogicalType s = SetatsTypes.parse("x", "STRING");
        RowType rt = RowType.of(new LogicalType[] {s}, new String[] {"id"});
        assertThatThrownBy(() -> new BucketHasher(rt, Arrays.asList("nope")))
                .hasMessageContaining("bucket-key column 'nope' is not in [id]");
    }

    @Test
    void int128LittleEndian() {
        assertThat(hex(BucketHasher.int128LittleEndian(BigInteger.ONE))).isEqualTo("01" + "00".repeat(15));
        assertThat(hex(BucketHasher.int128LittleEndian(BigInteger.valueOf(-2)))).isEqualTo("fe" + "ff".repeat(15));
        assertThat(hex(BucketHasher.int128LittleEndian(BigInteger.ONE.shiftLeft(127).subtract(BigInteger.ONE))))
                .isEqualTo("ff".repeat(15) + "7f");
        assertThatThrownBy(() -> BucketHasher.int128LittleEndian(BigInteger.ONE.shiftLeft(127)))
                .hasMessageContaining("exceeds 128 bits");
    }

    @Test
    void bucketsSpreadOverAllBuckets() {
        LogicalType s = SetatsTypes.parse("x", "STRING");
        RowType rt = RowType.of(new LogicalType[] {s}, new String[] {"id"});
        BucketHasher h = new BucketHasher(rt, Arrays.asList("id"));
        long distinct =
                IntStream.range(0, 1000)
                        .map(i -> h.bucket(GenericRowData.of(StringData.fromString("id" + i)), 10))
                        .distinct()
                        .count();
        assertThat(distinct).isEqualTo(10);
    }
}
