package io.setats.flink.source.reader;

import io.setats.flink.client.GatewayClient;
import io.setats.flink.client.SetatsGatewayException;
import io.setats.flink.source.deserializer.ChangelogRecord;
import io.setats.flink.source.snapshot.BucketSnapshotReader;
import io.setats.flink.source.snapshot.SnapshotRow;
import io.setats.flink.source.split.SetatsSplit;
import io.setats.flink.source.split.SnapshotPosition;
import io.setats.flink.source.split.TableBucket;
import io.setats.flink.utils.ArrowRowDataReader;
import io.setats.proto.v1.ChangelogTicket;

import com.google.protobuf.ByteString;

import org.apache.arrow.flight.FlightRuntimeException;
import org.apache.arrow.flight.FlightStream;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.flink.table.data.RowData;
import org.apache.flink.table.data.binary.BinaryRowData;
import org.apache.flink.table.types.logical.RowType;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.util.ArrayList;
import java.util.List;

/**
 * BucketStream keeps one live DoGet stream of one bucket's changelog ({@code ChangelogTicket}
 * with {@code follow = true}, from the split's position) on its own thread. The gateway pushes
 * rows as soon as they are durable (SPEC section 5); each record batch is converted to {@link
 * ChangelogRecord}s right away (so no Arrow memory outlives the batch) and handed to the split
 * reader through the shared, bounded {@link Handover}, which is the back pressure: a full handover
 * stops this thread, which stops asking gRPC for more.
 *
 * <p>The ticket carries the split's table id ({@code ChangelogTicket.table_id}, when known): if the
 * table was dropped and re-created since the split was made, the gateway fails the DoGet with
 * NotFound naming both table ids instead of reading the new table from an old offset.
 *
 * <p>The thread is never interrupted (see {@link Handover}): {@link #close()} cancels the DoGet,
 * which ends {@code FlightStream.next()}, and releases the waits of this thread.
 *
 * <p>Offsets are checked to be dense: a stream started at an offset must deliver exactly that
 * offset first and then +1 per row; a gap fails the stream, rows are never skipped silently. Any
 * failure (gateway error such as OutOfRange for an expired position, the stream ending, a gap) is
 * handed over as a {@link Failure} naming the table, partition, bucket and position.
 *
 * <p>A split in its snapshot phase ({@code startup.mode = 'initial'}, SPEC section 9) first reads
 * the bucket's merged rows with a {@link BucketSnapshotReader} and hands them over as {@link
 * ChangelogRecord.Kind#SNAPSHOT} records. Resumed after a key (a restore mid-snapshot), it first
 * reads the changelog {@code [view offset, new E)} of the keys already emitted ({@code max_key}, a
 * bounded DoGet) as {@link ChangelogRecord.Kind#CATCH_UP} records, then the rest of the snapshot.
 * A {@link ChangelogRecord.Kind#SNAPSHOT_DONE} marker then moves the split to the changelog at the
 * view's end offset E, which this stream follows next.
 */
final class BucketStream implements Runnable {

    private static final Logger LOG = LoggerFactory.getLogger(BucketStream.class);

    /** Handed-over element: converted rows of one record batch of one split. */
    static final class Batch {
        final String splitId;
        final List<ChangelogRecord> records;

        Batch(String splitId, List<ChangelogRecord> records) {
            this.splitId = splitId;
            this.records = records;
        }
    }

    /** Handed-over element: the stream of a split failed. */
    static final class Failure {
        final String splitId;
        final Throwable cause;

        Failure(String splitId, Throwable cause) {
            this.splitId = splitId;
            this.cause = cause;
        }
    }

    private final GatewayClient client;
    private final Reconnect.Settings retry;
    private final SetatsSplit split;
    private final String database;
    private final String table;
    /** The changelog ticket being read (the follow ticket once the snapshot phase is done). */
    private volatile ChangelogTicket ticket;
    private final RowType readType;
    private final Handover handover;
    private final Thread thread;
    private final Object pauseLock = new Object();

    private volatile boolean closed;
    /** Offset of the next row this stream expects; -1 until known (timestamp start). */
    private volatile long nextOffset;
    private volatile FlightStream stream;
    private volatile BucketSnapshotReader snapshotReader;
    private boolean paused; // guarded by pauseLock

    BucketStream(
            GatewayClient client,
            String database,
            String table,
            SetatsSplit split,
            RowType readType,
            Handover handover,
            String threadNamePrefix,
            Reconnect.Settings retry) {
        this.client = client;
        this.retry = retry;
        this.database = database;
        this.table = table;
        this.split = split;
        this.readType = readType;
        this.handover = handover;
        TableBucket tb = split.tableBucket();
        ChangelogTicket.Builder t =
                ChangelogTicket.newBuilder()
                        .setDatabase(database)
                        .setTable(table)
                        .setPartition(tb.partition())
                        .setBucket(tb.bucket())
                        .setFollow(true)
                        .setTableId(split.tableId());
        if (split.startingTimestampMs() != null) {
            t.setTimestampMs(split.startingTimestampMs());
        } else {
            t.setOffset(split.startingOffset());
        }
        this.ticket = t.build();
        this.nextOffset =
                split.startingTimestampMs() != null || split.snapshot() != null ? -1 : split.startingOffset();
        this.thread = new Thread(this, threadNamePrefix + " " + split.splitId());
        this.thread.setDaemon(true);
    }

    void start() {
        thread.start();
    }

    String splitId() {
        return split.splitId();
    }

    /** Stops handing batches over until {@link #resume()} (watermark alignment). */
    void pause() {
        synchronized (pauseLock) {
            paused = true;
        }
    }

    void resume() {
        synchronized (pauseLock) {
            paused = false;
            pauseLock.notifyAll();
        }
    }

    /**
     * Cancels the DoGet and releases this thread's waits so it ends; does not wait for it (see
     * {@link #join}). Idempotent, any thread.
     */
    void close() {
        closed = true;
        BucketSnapshotReader snap = snapshotReader;
        if (snap != null) {
            snap.cancel();
        }
        FlightStream s = stream;
        if (s != null) {
            try {
                s.cancel("Setats split reader closed", null);
            } catch (RuntimeException e) {
                LOG.debug("Cancelling the stream of {} failed", split, e);
            }
        }
        synchronized (pauseLock) {
            pauseLock.notifyAll();
        }
        handover.releaseProducers();
    }

    private boolean isOpen() {
        return !closed;
    }

    /** Waits up to {@code timeoutMs} for the thread to end; returns whether it ended. */
    boolean join(long timeoutMs) throws InterruptedException {
        thread.join(timeoutMs);
        return !thread.isAlive();
    }

    private String position() {
        if (split.snapshot() != null && nextOffset < 0) {
            return split.snapshot().toString();
        }
        String start =
                split.startingTimestampMs() != null
                        ? "the first row committed at or after " + split.startingTimestampMs() + " ms"
                        : "offset " + split.startingOffset();
        long next = nextOffset;
        boolean moved = next >= 0 && (split.startingTimestampMs() != null || next != split.startingOffset());
        return moved ? start + " (next offset " + next + ")" : start;
    }

    @Override
    public void run() {
        try {
            long expected = split.startingTimestampMs() == null ? split.startingOffset() : -1;
            if (split.snapshot() != null) {
                long e = readSnapshot(split.snapshot());
                if (closed) {
                    return;
                }
                ticket = ticket.toBuilder().setOffset(e).build();
                nextOffset = e;
                expected = e;
            }
            nextOffset = expected;
            follow();
        } catch (InterruptedException e) {
            if (!closed) {
                fail(e);
            }
        } catch (Throwable t) {
            if (!closed) {
                fail(t);
            }
        }
    }

    /**
     * Follows the changelog from {@link #nextOffset}, reconnecting after transient failures (the
     * gateway restarting, a broken stream) from the offset after the last row handed over, so no
     * row is lost or repeated; gives up after {@link Reconnect#timeoutMs()} without progress.
     */
    private void follow() throws Exception {
        Reconnect reconnect = new Reconnect(retry, client.describe(ticket), split.tableBucket());
        while (!closed) {
            long from = nextOffset;
            try {
                followOnce();
                return; // closed
            } catch (Throwable t) {
                if (closed) {
                    return;
                }
                if (!Reconnect.isTransient(t)) {
                    throw t;
                }
                long waitMs = reconnect.failed(t, nextOffset > from);
                if (nextOffset >= 0) {
                    ticket = ticket.toBuilder().clearTimestampMs().setOffset(nextOffset).build();
                }
                LOG.warn(
                        "The changelog stream of {} of table {}.{} broke ({}); reconnecting from {} in {} ms",
                        split.tableBucket(), database, table, t.getMessage(), position(), waitMs);
                client.resetConnectBackoff();
                sleepUnlessClosed(waitMs);
            }
        }
    }

    /** One DoGet of the follow ticket, read until it fails or this stream is closed. */
    private void followOnce() throws Exception {
        FlightStream s = client.readChangelog(ticket);
        stream = s;
        try {
            if (closed) {
                return;
            }
            VectorSchemaRoot root = s.getRoot();
            ArrowRowDataReader reader = ArrowRowDataReader.create(readType, root.getSchema());
            if (!reader.hasChangelogColumns()) {
                throw new IOException(
                        client.describe(ticket) + ": the stream lacks the _offset/_commit_timestamp columns");
            }
            TableBucket tb = split.tableBucket();
            RowData.FieldGetter[] getters = reader.fieldGetters();
            long expected = nextOffset;
            while (!closed && s.next()) {
                int n = root.getRowCount();
                if (n == 0) {
                    continue;
                }
                reader.bind(root);
                BinaryRowData[] converted = reader.readBinaryRows(n);
                List<ChangelogRecord> rows = new ArrayList<>(n);
                for (int i = 0; i < n; i++) {
                    long offset = reader.offset(i);
                    if (expected >= 0 && offset != expected) {
                        throw new IOException(
                                String.format(
                                        "%s: expected offset %d next but the gateway sent offset %d "
                                                + "(rows are never skipped silently)",
                                        client.describe(ticket), expected, offset));
                    }
                    expected = offset + 1;
                    rows.add(new ChangelogRecord(converted[i], offset, reader.commitTimestampMs(i), tb, getters));
                }
                awaitNotPaused();
                if (handover.put(new Batch(split.splitId(), rows), this::isOpen)) {
                    nextOffset = expected;
                }
            }
            if (!closed) {
                throw new Reconnect.StreamEndedException(
                        client.describe(ticket)
                                + ": the gateway ended the stream, which should follow new rows");
            }
        } catch (FlightRuntimeException e) {
            throw SetatsGatewayException.of(client.describe(ticket), e);
        } finally {
            stream = null;
            try {
                s.close();
            } catch (Exception e) {
                LOG.debug("Closing the stream of {} failed", split, e);
            }
        }
    }

    private void sleepUnlessClosed(long ms) throws InterruptedException {
        long deadline = System.currentTimeMillis() + ms;
        synchronized (pauseLock) {
            for (long left = ms; !closed && left > 0; left = deadline - System.currentTimeMillis()) {
                pauseLock.wait(left);
            }
        }
    }

    /**
     * The snapshot phase: hands over the snapshot rows (and, when resumed after a key, the
     * catch-up rows first) and the SNAPSHOT_DONE marker; returns the view's end offset E, where
     * the changelog follows.
     */
    private long readSnapshot(SnapshotPosition pos) throws IOException, InterruptedException {
        TableBucket tb = split.tableBucket();
        byte[] after = pos.hasKey() ? pos.afterKey() : null;
        try (BucketSnapshotReader r =
                BucketSnapshotReader.open(client, database, table, split.tableId(), tb, readType, after, 0)) {
            snapshotReader = r;
            if (closed) {
                return -1;
            }
            long e = r.endOffset();
            if (after != null) {
                if (e < pos.viewOffset()) {
                    throw new IOException(
                            String.format(
                                    "%s: the new snapshot view is at offset %d, before the checkpointed "
                                            + "view offset %d (was the table re-created?)",
                                    client.describe(ticket), e, pos.viewOffset()));
                }
                if (e > pos.viewOffset()) {
                    catchUp(pos.viewOffset(), e, after);
                }
                handOver(java.util.Collections.singletonList(ChangelogRecord.viewMarker(e, tb)));
            }
            for (List<SnapshotRow> batch; !closed && (batch = r.nextBatch()) != null; ) {
                if (batch.isEmpty()) {
                    continue;
                }
                List<ChangelogRecord> rows = new ArrayList<>(batch.size());
                for (SnapshotRow row : batch) {
                    rows.add(ChangelogRecord.snapshotRow(row.row(), row.key(), e, tb));
                }
                handOver(rows);
            }
            if (!closed) {
                handOver(java.util.Collections.singletonList(ChangelogRecord.snapshotDone(e, tb)));
            }
            return e;
        } finally {
            snapshotReader = null;
        }
    }

    /**
     * Reads the changelog {@code [from, to)} of the keys {@code <= afterKey} (a bounded DoGet with
     * {@code max_key}) and hands it over as CATCH_UP rows: the keys emitted before a restore move
     * from the checkpointed view offset to the new view's.
     */
    private void catchUp(long from, long to, byte[] afterKey) throws IOException, InterruptedException {
        ChangelogTicket t =
                ticket.toBuilder()
                        .setOffset(from)
                        .setEndOffset(to)
                        .setFollow(false)
                        .setMaxKey(ByteString.copyFrom(afterKey))
                        .build();
        FlightStream s = client.readChangelog(t);
        stream = s;
        try {
            VectorSchemaRoot root = s.getRoot();
            ArrowRowDataReader reader = ArrowRowDataReader.create(readType, root.getSchema());
            TableBucket tb = split.tableBucket();
            long last = from - 1;
            while (!closed && s.next()) {
                int n = root.getRowCount();
                if (n == 0) {
                    continue;
                }
                reader.bind(root);
                List<ChangelogRecord> rows = new ArrayList<>(n);
                for (int i = 0; i < n; i++) {
                    long offset = reader.offset(i);
                    if (offset <= last || offset >= to) {
                        throw new IOException(
                                String.format(
                                        "%s: catch-up [%d, %d) got offset %d after %d",
                                        client.describe(t), from, to, offset, last));
                    }
                    last = offset;
                    rows.add(ChangelogRecord.catchUpRow(reader.read(i), offset, reader.commitTimestampMs(i), tb));
                }
                handOver(rows);
            }
        } catch (FlightRuntimeException e) {
            throw SetatsGatewayException.of(client.describe(t) + " (catch-up of a resumed snapshot)", e);
        } finally {
            stream = null;
            try {
                s.close();
            } catch (Exception e) {
                LOG.debug("Closing the catch-up stream of {} failed", split, e);
            }
        }
    }

    private void handOver(List<ChangelogRecord> rows) throws InterruptedException {
        awaitNotPaused();
        handover.put(new Batch(split.splitId(), rows), this::isOpen);
    }

    private void fail(Throwable t) {
        Throwable cause =
                t instanceof FlightRuntimeException
                        ? SetatsGatewayException.of(client.describe(ticket), t)
                        : t;
        IOException failure =
                new IOException(
                        String.format(
                                "Reading the changelog of %s of table %s.%s from %s failed: %s",
                                split.tableBucket(),
                                ticket.getDatabase(),
                                ticket.getTable(),
                                position(),
                                cause.getMessage()),
                        cause);
        LOG.warn("{}", failure.getMessage());
        try {
            handover.put(new Failure(split.splitId(), failure), this::isOpen);
        } catch (InterruptedException ignored) {
            Thread.currentThread().interrupt();
        }
    }

    private void awaitNotPaused() throws InterruptedException {
        synchronized (pauseLock) {
            while (paused && !closed) {
                pauseLock.wait();
            }
        }
    }
}
