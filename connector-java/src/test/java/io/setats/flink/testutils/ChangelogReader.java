package io.setats.flink.testutils;

import io.setats.flink.client.GatewayClient;
import io.setats.flink.client.SetatsGatewayException;
import io.setats.proto.v1.BucketOffsets;
import io.setats.proto.v1.ChangelogTicket;
import io.setats.proto.v1.StartPosition;

import org.apache.flink.types.RowKind;

import org.apache.arrow.flight.FlightStream;
import org.apache.arrow.vector.FieldVector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.types.pojo.Field;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * ChangelogReader reads what the gateway stored, for assertions: every bucket's changelog from
 * its earliest offset (bounded DoGet), as rows like {@code +I[1, 20261129, a]} with values in
 * table column order (the reserved columns left out), and the table state folded from it.
 */
public final class ChangelogReader {

    private ChangelogReader() {}

    /** One changelog row. */
    public static final class ChangelogRow {
        public final String partition;
        public final int bucket;
        public final long offset;
        public final RowKind kind;
        public final List<String> columns;
        public final List<Object> values;

        ChangelogRow(
                String partition,
                int bucket,
                long offset,
                RowKind kind,
                List<String> columns,
                List<Object> values) {
            this.partition = partition;
            this.bucket = bucket;
            this.offset = offset;
            this.kind = kind;
            this.columns = columns;
            this.values = values;
        }

        /** {@code +I[v1, v2, ...]} (nulls as {@code null}). */
        @Override
        public String toString() {
            StringBuilder sb = new StringBuilder(kind.shortString()).append('[');
            for (int i = 0; i < values.size(); i++) {
                if (i > 0) {
                    sb.append(", ");
                }
                sb.append(values.get(i));
            }
            return sb.append(']').toString();
        }

        /** The value of a column, as Arrow's getObject gives it (strings as String). */
        public Object get(String column) {
            return values.get(columns.indexOf(column));
        }
    }

    /** Every changelog row of the table, ordered by partition, bucket and offset. */
    public static List<ChangelogRow> readAll(GatewayClient client, String db, String table) {
        List<ChangelogRow> out = new ArrayList<>();
        for (BucketOffsets b : client.listBuckets(db, table).getBucketsList()) {
            out.addAll(readBucket(client, db, table, b.getPartition(), b.getBucket(), -1));
        }
        return out;
    }

    /**
     * One bucket's changelog, bounded, from {@code fromOffset} (or earliest when negative).
     */
    public static List<ChangelogRow> readBucket(
            GatewayClient client,
            String db,
            String table,
            String partition,
            int bucket,
            long fromOffset) {
        ChangelogTicket.Builder t =
                ChangelogTicket.newBuilder()
                        .setDatabase(db)
                        .setTable(table)
                        .setPartition(partition)
                        .setBucket(bucket)
                        .setFollow(false);
        if (fromOffset >= 0) {
            t.setOffset(fromOffset);
        } else {
            t.setPosition(StartPosition.EARLIEST);
        }
        ChangelogTicket ticket = t.build();
        List<ChangelogRow> out = new ArrayList<>();
        try (FlightStream stream = client.readChangelog(ticket)) {
            while (stream.next()) {
                VectorSchemaRoot root = stream.getRoot();
                List<String> columns = new ArrayList<>();
                List<FieldVector> vectors = new ArrayList<>();
                for (Field f : root.getSchema().getFields()) {
                    if (!f.getName().startsWith("_")) {
                        columns.add(f.getName());
                        vectors.add(root.getVector(f.getName()));
                    }
                }
                FieldVector kinds = root.getVector("_row_kind");
                FieldVector offsets = root.getVector("_offset");
                for (int i = 0; i < root.getRowCount(); i++) {
                    List<Object> values = new ArrayList<>();
                    for (FieldVector v : vectors) {
                        Object o = v.getObject(i);
                        values.add(o instanceof org.apache.arrow.vector.util.Text ? o.toString() : o);
                    }
                    out.add(
                            new ChangelogRow(
                                    partition,
                                    bucket,
                                    ((Number) offsets.getObject(i)).longValue(),
                                    RowKind.fromByteValue(((Number) kinds.getObject(i)).byteValue()),
                                    columns,
                                    values));
                }
            }
        } catch (SetatsGatewayException e) {
            throw e;
        } catch (Exception e) {
            throw SetatsGatewayException.of(client.describe(ticket), e);
        }
        return out;
    }

    /**
     * Folds a changelog into the table state (SPEC section 4): +I/+U put, -U ignored, -D removes.
     * Keyed by the string of the primary-key values; sorted by key.
     */
    public static Map<String, ChangelogRow> fold(List<ChangelogRow> changelog, List<String> pk) {
        Map<String, ChangelogRow> state = new TreeMap<>();
        for (ChangelogRow r : changelog) {
            List<Object> key = new ArrayList<>();
            for (String c : pk) {
                key.add(r.get(c));
            }
            String k = key.toString();
            switch (r.kind) {
                case INSERT:
                case UPDATE_AFTER:
                    state.put(k, r);
                    break;
                case DELETE:
                    state.remove(k);
                    break;
                default:
                    break;
            }
        }
        return state;
    }

    /** The folded state as {@code key -> "+I[...]"}-free value lists, for compact assertions. */
    public static Map<String, List<Object>> foldValues(List<ChangelogRow> changelog, List<String> pk) {
        Map<String, List<Object>> out = new LinkedHashMap<>();
        fold(changelog, pk).forEach((k, r) -> out.put(k, r.values));
        return out;
    }
}
