package io.setats.flink.source.snapshot;

import io.setats.flink.client.GatewayClient;
import io.setats.flink.client.SetatsGatewayException;
import io.setats.flink.source.split.TableBucket;
import io.setats.flink.utils.ArrowColumnarBatch;
import io.setats.flink.utils.ArrowRowDataReader;
import io.setats.flink.utils.SetatsTypes;
import io.setats.proto.v1.ChangelogTicket;
import io.setats.proto.v1.SnapshotRead;

import com.google.protobuf.ByteString;
import org.apache.arrow.flight.FlightStream;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.types.pojo.Schema;
import org.apache.flink.table.data.RowData;
import org.apache.flink.table.data.binary.BinaryRowData;
import org.apache.flink.table.runtime.typeutils.RowDataSerializer;
import org.apache.flink.table.types.logical.RowType;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import javax.annotation.Nullable;

import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Objects;

/**
 * BucketSnapshotReader reads the merged rows of one (partition, bucket) of a Setats table at one
 * consistent view (a DoGet with {@code ChangelogTicket.snapshot}; SPEC sections 9 and 13,
 * proto/README.md "Snapshot reads") and yields them as Flink {@link org.apache.flink.table.data.RowData}
 * ({@code +I}, {@link BinaryRowData}) with their resume keys, one Arrow record batch at a time. It is the one snapshot
 * reading of the connector: {@code setats-cdc} {@code startup.mode = 'initial'} uses it for the
 * snapshot phase of its splits, and batch scans of the merged table can use it as well.
 *
 * <ul>
 *   <li><b>View.</b> The gateway pins the bucket's state and its end offset E in one view (written
 *       by one atomic batch, durable before the first row is sent); {@link #endOffset()} is E, read
 *       from the schema metadata {@code setats.snapshot.end_offset} when the reader opens. The rows
 *       are exactly the fold of the changelog rows {@code [0, E)}.
 *   <li><b>Projection.</b> {@code readType} names the columns to return (any subset of the table's
 *       columns, by name, in any order); the others are skipped while converting. Partition
 *       selection is the caller's: one reader per (partition, bucket) it wants.
 *   <li><b>Resume.</b> {@code afterKey} = the {@link SnapshotRow#key()} of the last row received
 *       resumes after it, on a new view whose E may be newer; the caller then reads the changelog
 *       {@code [old E, new E)} with {@code max_key = afterKey} to catch up the rows it had already
 *       received (what {@code setats-cdc} does on restore).
 *   <li><b>Rows.</b> {@link #nextColumnarBatch()} hands out each record batch as an {@link
 *       ArrowColumnarBatch} (the changelog path's: one reused {@code RowData} view over the
 *       Arrow buffers, no per-row objects), which the caller closes. {@link #nextBatch()} copies
 *       those views into {@link BinaryRowData} (Flink's {@code RowDataSerializer}) and closes the
 *       batch, so no Arrow memory outlives it. Read the rows' fields with the typed getters or
 *       {@link #fieldGetters()}.
 * </ul>
 *
 * <p>Errors are {@link SetatsGatewayException}s naming the table, partition and bucket: NotFound
 * (table gone or re-created: {@code tableId} differs), Aborted (the view was not read for 10
 * minutes and was released: resume after the last key), ResourceExhausted (too many views open),
 * InvalidArgument (a bucket the table cannot have). Not thread-safe, except {@link #cancel()}.
 *
 * <pre>{@code
 * try (BucketSnapshotReader r = BucketSnapshotReader.open(client, "shop", "orders", "",
 *         new TableBucket("", 0), readType, null, 0)) {
 *     for (List<SnapshotRow> batch; (batch = r.nextBatch()) != null; ) {
 *         for (SnapshotRow row : batch) { ... row.row() ... }
 *     }
 * }
 * }</pre>
 */
public final class BucketSnapshotReader implements AutoCloseable {

    private static final Logger LOG = LoggerFactory.getLogger(BucketSnapshotReader.class);

    private final GatewayClient client;
    private final ChangelogTicket ticket;
    private final TableBucket bucket;
    private final FlightStream stream;
    private final VectorSchemaRoot root;
    private final ArrowRowDataReader reader;
    private final long endOffset;
    private final RowDataSerializer serializer;
    @Nullable private byte[] lastKey;
    private long rowsRead;
    private boolean done;

    private BucketSnapshotReader(
            GatewayClient client,
            ChangelogTicket ticket,
            TableBucket bucket,
            FlightStream stream,
            RowType readType,
            @Nullable byte[] afterKey)
            throws IOException {
        this.client = client;
        this.ticket = ticket;
        this.bucket = bucket;
        this.stream = stream;
        this.lastKey = afterKey;
        try {
            this.root = stream.getRoot(); // waits for the schema: the view is taken and durable
        } catch (RuntimeException e) {
            throw SetatsGatewayException.of(client.describe(ticket) + " (snapshot)", e);
        }
        Schema schema = root.getSchema();
        try {
            this.reader = ArrowRowDataReader.create(readType, schema);
        } catch (IllegalArgumentException e) {
            throw new IOException(where() + ": " + e.getMessage(), e);
        }
        if (!reader.hasKeyColumn()) {
            throw new IOException(where() + ": the stream lacks the " + SetatsTypes.KEY_COLUMN + " column");
        }
        this.endOffset = endOffsetOf(schema, where());
        this.serializer = new RowDataSerializer(readType);
    }

    /**
     * Opens a snapshot read of one bucket: the gateway takes the view when this returns.
     *
     * @param client open gateway client (not closed by the reader)
     * @param tableId {@code TableInfo.table_id} the caller planned against ({@code ""}: no check);
     *     when set and the table was re-created since, the read fails with NotFound
     * @param readType the columns to return, by name (a subset of the table's columns)
     * @param afterKey resume after this key ({@link SnapshotRow#key()}); null or empty: from the
     *     first row
     * @param maxBatchRows upper bound on rows per record batch; {@code <= 0}: the gateway's default
     *     (4096)
     * @throws SetatsGatewayException when the gateway refuses the read
     * @throws IOException when the stream's schema does not fit {@code readType}
     */
    public static BucketSnapshotReader open(
            GatewayClient client,
            String database,
            String table,
            String tableId,
            TableBucket bucket,
            RowType readType,
            @Nullable byte[] afterKey,
            int maxBatchRows)
            throws IOException {
        return open(client, database, table, tableId, bucket, readType, afterKey, maxBatchRows, false);
    }

    /**
     * As {@link #open(GatewayClient, String, String, String, TableBucket, RowType, byte[], int)};
     * with {@code project} the read type's column names go to the gateway as the projection
     * ({@code SnapshotRead.columns}), so the other columns are neither read nor sent (batch scans
     * with projection push-down, SPEC section 13).
     */
    public static BucketSnapshotReader open(
            GatewayClient client,
            String database,
            String table,
            String tableId,
            TableBucket bucket,
            RowType readType,
            @Nullable byte[] afterKey,
            int maxBatchRows,
            boolean project)
            throws IOException {
        ChangelogTicket ticket = ticket(database, table, tableId, bucket, afterKey, maxBatchRows);
        if (project) {
            ChangelogTicket.Builder b = ticket.toBuilder();
            b.getSnapshotBuilder().addAllColumns(readType.getFieldNames());
            ticket = b.build();
        }
        FlightStream s = client.readChangelog(ticket);
        try {
            return new BucketSnapshotReader(
                    client, ticket, bucket, s, readType, afterKey == null || afterKey.length == 0 ? null : afterKey);
        } catch (IOException | RuntimeException e) {
            closeQuietly(s);
            throw e;
        }
    }

    /** The DoGet ticket of a snapshot read (exposed for tests and for readers of their own). */
    public static ChangelogTicket ticket(
            String database,
            String table,
            String tableId,
            TableBucket bucket,
            @Nullable byte[] afterKey,
            int maxBatchRows) {
        SnapshotRead.Builder snap = SnapshotRead.newBuilder();
        if (afterKey != null && afterKey.length > 0) {
            snap.setAfterKey(ByteString.copyFrom(afterKey));
        }
        return ChangelogTicket.newBuilder()
                .setDatabase(Objects.requireNonNull(database, "database"))
                .setTable(Objects.requireNonNull(table, "table"))
                .setPartition(bucket.partition())
                .setBucket(bucket.bucket())
                .setTableId(tableId == null ? "" : tableId)
                .setMaxBatchRows(Math.max(0, maxBatchRows))
                .setSnapshot(snap)
                .build();
    }

    /** The view's end offset E: the rows are the fold of the bucket's changelog {@code [0, E)}. */
    public long endOffset() {
        return endOffset;
    }

    /** The (partition, bucket) read. */
    public TableBucket bucket() {
        return bucket;
    }

    /** The key of the last row returned (or the {@code afterKey} opened with); null before any. */
    @Nullable
    public byte[] lastKey() {
        return lastKey;
    }

    /** Field getters of the read type, for generic access to the fields of the returned rows. */
    public RowData.FieldGetter[] fieldGetters() {
        return reader.fieldGetters();
    }

    /** Rows returned so far by this reader. */
    public long rowsRead() {
        return rowsRead;
    }

    /**
     * The next record batch's rows, converted, in key order; an empty list is possible (the
     * gateway sends one empty batch for an empty bucket). Blocks until the gateway sends it.
     *
     * @return the rows, or null once the view is read to its end
     * @throws SetatsGatewayException on a gateway error (Aborted, NotFound, ...)
     */
    @Nullable
    public List<SnapshotRow> nextBatch() {
        ArrowColumnarBatch batch = nextColumnarBatch();
        if (batch == null) {
            return null;
        }
        try {
            int n = batch.numRows();
            List<SnapshotRow> out = new ArrayList<>(n);
            for (int i = 0; i < n; i++) {
                BinaryRowData row = serializer.toBinaryRow(batch.row(i)).copy();
                out.add(new SnapshotRow(batch.key(i), row));
            }
            return out;
        } finally {
            batch.close();
        }
    }

    /**
     * The next record batch, in key order, as an {@link ArrowColumnarBatch} the caller owns and
     * closes (its rows are {@code +I} views, its {@link ArrowColumnarBatch#key(int)} the resume
     * keys); an empty batch is possible (the gateway sends one for an empty bucket). Blocks until
     * the gateway sends it.
     *
     * @return the batch, or null once the view is read to its end
     * @throws SetatsGatewayException on a gateway error (Aborted, NotFound, ...)
     */
    @Nullable
    public ArrowColumnarBatch nextColumnarBatch() {
        if (done) {
            return null;
        }
        boolean more;
        try {
            more = stream.next();
        } catch (RuntimeException e) {
            throw SetatsGatewayException.of(where(), e);
        }
        if (!more) {
            done = true;
            return null;
        }
        ArrowColumnarBatch batch = reader.takeBatch(root);
        int n = batch.numRows();
        if (n > 0) {
            lastKey = batch.key(n - 1);
            rowsRead += n;
        }
        return batch;
    }

    /** Every remaining row (tests and small tables; a large bucket should be read batch by batch). */
    public List<SnapshotRow> readAll() {
        List<SnapshotRow> all = new ArrayList<>();
        for (List<SnapshotRow> b; (b = nextBatch()) != null; ) {
            all.addAll(b);
        }
        return all;
    }

    /** Cancels the DoGet (any thread): a blocked {@link #nextBatch()} returns or throws. */
    public void cancel() {
        try {
            stream.cancel("Setats snapshot read cancelled", null);
        } catch (RuntimeException e) {
            LOG.debug("Cancelling the snapshot read of {} failed", where(), e);
        }
    }

    /** Ends the read and releases the view and the Arrow memory. */
    @Override
    public void close() {
        if (!done) {
            cancel();
        }
        closeQuietly(stream);
    }

    private String where() {
        return client.describe(ticket) + " (snapshot)";
    }

    static long endOffsetOf(Schema schema, String where) throws IOException {
        Map<String, String> md = schema.getCustomMetadata();
        String e = md == null ? null : md.get(SetatsTypes.SNAPSHOT_END_OFFSET_METADATA);
        if (e == null) {
            throw new IOException(
                    where + ": the stream's schema lacks " + SetatsTypes.SNAPSHOT_END_OFFSET_METADATA);
        }
        try {
            long v = Long.parseLong(e);
            if (v < 0) {
                throw new NumberFormatException("negative");
            }
            return v;
        } catch (NumberFormatException ex) {
            throw new IOException(where + ": bad " + SetatsTypes.SNAPSHOT_END_OFFSET_METADATA + " '" + e + "'", ex);
        }
    }

    private static void closeQuietly(FlightStream s) {
        try {
            s.close();
        } catch (Exception e) {
            LOG.debug("Closing a snapshot stream failed", e);
        }
    }
}
