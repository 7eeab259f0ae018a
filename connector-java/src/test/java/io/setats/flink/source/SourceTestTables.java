package io.setats.flink.source;

import io.setats.flink.client.GatewayClient;
import io.setats.flink.client.PutStream;
import io.setats.flink.testutils.SetatsGatewayProcess;
import io.setats.flink.utils.BucketHasher;
import io.setats.flink.utils.RowDataArrowWriter;
import io.setats.flink.utils.SetatsTypes;
import io.setats.proto.v1.Column;
import io.setats.proto.v1.LookupOffsetsRequest;
import io.setats.proto.v1.StartPosition;
import io.setats.proto.v1.TableInfo;
import io.setats.proto.v1.TableSpec;
import io.setats.proto.v1.WriteAck;
import io.setats.proto.v1.WriteCommand;

import org.apache.flink.table.api.DataTypes;
import org.apache.flink.table.data.GenericRowData;
import org.apache.flink.table.data.RowData;
import org.apache.flink.table.data.StringData;
import org.apache.flink.table.types.logical.RowType;
import org.apache.flink.types.RowKind;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.net.HttpURLConnection;
import java.net.URL;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;

/**
 * SourceTestTables creates Setats tables and writes rows into them through the gateway (DoPut with
 * the sink's Arrow writer), returning the gateway's WriteAcks so tests can use the gateway's own
 * commit timestamps and offsets.
 */
public final class SourceTestTables {

    private SourceTestTables() {}

    /** id INT, v STRING; primary key id: the key-value table of the source and binlog ITCases. */
    public static final RowType KV =
            (RowType)
                    DataTypes.ROW(
                                    DataTypes.FIELD("id", DataTypes.INT().notNull()),
                                    DataTypes.FIELD("v", DataTypes.STRING()))
                            .getLogicalType();

    /** A table spec whose columns are {@code type}'s (NOT NULL as declared). */
    public static TableSpec spec(
            String database,
            String table,
            RowType type,
            List<String> primaryKey,
            List<String> partitionKeys,
            int buckets,
            Map<String, String> options) {
        TableSpec.Builder b =
                TableSpec.newBuilder()
                        .setDatabase(database)
                        .setTable(table)
                        .addAllPrimaryKey(primaryKey)
                        .addAllPartitionKeys(partitionKeys)
                        .setBucketCount(buckets)
                        .putAllOptions(options);
        for (RowType.RowField f : type.getFields()) {
            b.addColumns(
                    Column.newBuilder()
                            .setName(f.getName())
                            .setType(SetatsTypes.toTypeString(f.getName(), f.getType()))
                            .setNotNull(!f.getType().isNullable()));
        }
        return b.build();
    }

    /** Creates the table (and its database). */
    public static TableInfo create(GatewayClient client, TableSpec spec) {
        return client.createTable(spec, false, true);
    }

    /**
     * Writes {@code rows} (all columns of {@code type}, RowKind from each row) as ONE record batch
     * and waits until it is durable.
     *
     * @return the batch's WriteAck (commit time, changelog rows, end offsets of touched buckets)
     */
    public static WriteAck write(
            GatewayClient client, String database, String table, RowType type, List<RowData> rows)
            throws InterruptedException {
        List<WriteAck> acks = Collections.synchronizedList(new ArrayList<>());
        try (RowDataArrowWriter w = new RowDataArrowWriter(type, client.allocator(), true)) {
            WriteCommand cmd = WriteCommand.newBuilder().setDatabase(database).setTable(table).build();
            PutStream ps = client.startPut(cmd, w.root(), 1, acks::add);
            try {
                rows.forEach(w::write);
                w.finish();
                ps.putNext();
                ps.awaitAcks();
                ps.complete();
            } finally {
                ps.close();
            }
        }
        if (acks.size() != 1) {
            throw new IllegalStateException("expected one WriteAck, got " + acks);
        }
        return acks.get(0);
    }

    /** A row of {@code kind}; String values become StringData. */
    public static RowData row(RowKind kind, Object... values) {
        Object[] v = new Object[values.length];
        for (int i = 0; i < values.length; i++) {
            v[i] = values[i] instanceof String ? StringData.fromString((String) values[i]) : values[i];
        }
        GenericRowData r = GenericRowData.of(v);
        r.setRowKind(kind);
        return r;
    }

    /** An upsert (+I) row. */
    public static RowData insert(Object... values) {
        return row(RowKind.INSERT, values);
    }

    /** The first {@code count} int keys from {@code from} on whose rows land in {@code bucket}. */
    public static List<Integer> intKeysInBucket(
            RowType type, String keyColumn, int buckets, int bucket, int from, int count) {
        BucketHasher hasher = new BucketHasher(type, Collections.singletonList(keyColumn));
        int keyIndex = type.getFieldIndex(keyColumn);
        List<Integer> out = new ArrayList<>();
        for (int k = from; out.size() < count; k++) {
            Object[] values = new Object[type.getFieldCount()];
            values[keyIndex] = k;
            if (hasher.bucket(GenericRowData.of(values), buckets) == bucket) {
                out.add(k);
            }
        }
        return out;
    }

    /**
     * The gateway's {@code setats_changelog_streams_open} gauge (admin HTTP {@code /metrics}): how
     * many DoGet changelog streams are open. A source reader opens one per split once the
     * enumerator resolved its position, so tests wait on it before writing rows that a {@code
     * latest} start must see.
     */
    public static int openChangelogStreams(SetatsGatewayProcess gateway) throws IOException {
        HttpURLConnection conn =
                (HttpURLConnection) new URL("http://" + gateway.adminAddr() + "/metrics").openConnection();
        try (InputStream in = conn.getInputStream()) {
            ByteArrayOutputStream buf = new ByteArrayOutputStream();
            in.transferTo(buf);
            for (String line : buf.toString(StandardCharsets.UTF_8).split("\n")) {
                if (line.startsWith("setats_changelog_streams_open ")) {
                    return (int) Double.parseDouble(line.substring(line.indexOf(' ') + 1).trim());
                }
            }
            return 0;
        } finally {
            conn.disconnect();
        }
    }

    /** Waits (at most 60 s) until exactly {@code n} changelog streams are open on the gateway. */
    public static void awaitOpenChangelogStreams(SetatsGatewayProcess gateway, int n)
            throws IOException, InterruptedException {
        long deadline = System.currentTimeMillis() + 60_000;
        int open = openChangelogStreams(gateway);
        while (open != n) {
            if (System.currentTimeMillis() > deadline) {
                throw new IllegalStateException(
                        "expected " + n + " open changelog streams on the gateway, found " + open);
            }
            Thread.sleep(20);
            open = openChangelogStreams(gateway);
        }
    }

    /** How many splits a source starting now would get: the buckets lookup-offsets reports. */
    public static int splitsAtStart(GatewayClient client, String database, String table) {
        return client.lookupOffsets(
                        LookupOffsetsRequest.newBuilder()
                                .setDatabase(database)
                                .setTable(table)
                                .setPosition(StartPosition.LATEST)
                                .build())
                .getOffsetsCount();
    }
}
