package io.setats.flink.source.reader;

import io.setats.flink.client.GatewayClient;
import io.setats.flink.client.SetatsGatewayException;
import io.setats.flink.source.deserializer.ChangelogRecord;
import io.setats.flink.source.snapshot.BucketSnapshotReader;
import io.setats.flink.source.split.SetatsSplit;
import io.setats.flink.source.split.SnapshotPosition;
import io.setats.flink.source.split.TableBucket;
import io.setats.flink.utils.ArrowColumnarBatch;
import io.setats.flink.utils.ArrowRowDataReader;
import io.setats.proto.v1.ChangelogTicket;

import com.google.protobuf.ByteString;

import org.apache.arrow.flight.FlightRuntimeException;
import org.apache.arrow.flight.FlightStream;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.flink.table.data.RowData;
import org.apache.flink.table.types.logical.RowType;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import javax.annotation.Nullable;

import java.io.IOException;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * BucketStream reads one split: one live DoGet of one bucket's changelog ({@code ChangelogTicket}
 * with {@code follow = true}, from the split's position). It has no thread of its own: the split
 * reader's single fetcher thread calls {@link #poll()} whenever the stream is in the reader's
 * {@link ReadySplits} queue, and each call takes at most one record batch ({@link Fetched}: the
 * batch's Arrow buffers moved out of the stream into an {@link ArrowColumnarBatch}, zero copy, read
 * by the task thread through one cursor {@link ChangelogRecord}, released when Flink recycles the
 * fetch). gRPC's threads deliver the DoGet's messages into the call's {@code
 * FlightStream} and queue this stream ({@link StreamEvents}), so the fetcher never blocks on one
 * idle bucket while another has rows.
 *
 * <p>Memory and back pressure: a {@code FlightStream} asks gRPC for a few messages ahead of the
 * ones read (Arrow Flight's client keeps up to 5 record batches per call); a batch is taken
 * only when the fetcher polls it, and the fetcher stops polling while Flink's element queue is
 * full, so a slow job stops the gateway's sends through gRPC's flow control. Per reader, at most
 * about 5 record batches per split (each at most the gateway's batch size) plus the batches in
 * Flink's element queue (its capacity, 2 fetches by default) and the one being emitted are in
 * memory.
 *
 * <p>The ticket carries the split's table id ({@code ChangelogTicket.table_id}, when known): if the
 * table was dropped and re-created since the split was made, the gateway fails the DoGet with
 * NotFound naming both table ids instead of reading the new table from an old offset.
 *
 * <p>Offsets are checked to be dense: a stream started at an offset must deliver exactly that
 * offset first and then +1 per row; a gap fails the split, rows are never skipped silently. A
 * transient failure (the gateway restarting, UNAVAILABLE, the stream ended) closes the DoGet and
 * opens a new one from the offset after the last row returned, after a back-off ({@link
 * Reconnect}, {@code scan.reconnect-timeout}); the fetcher serves the other splits meanwhile. Any
 * other failure makes {@link #poll()} throw an IOException naming the table, partition, bucket and
 * position.
 *
 * <p>A split in its snapshot phase ({@code startup.mode = 'initial'}, SPEC section 9) first reads
 * the bucket's merged rows with a {@link BucketSnapshotReader}, one batch per poll (the snapshot's
 * rows exist already, so the fetcher waits only for the network), as {@link
 * ChangelogRecord.Kind#SNAPSHOT} records. Resumed after a key (a restore mid-snapshot), it first
 * reads the changelog {@code [view offset, new E)} of the keys already emitted ({@code max_key}, a
 * bounded DoGet) as {@link ChangelogRecord.Kind#CATCH_UP} records, then the rest of the snapshot.
 * A {@link ChangelogRecord.Kind#SNAPSHOT_DONE} marker then moves the split to the changelog at the
 * view's end offset E, which this stream follows next.
 *
 * <p>Not thread-safe except {@link #pause()}, {@link #resume()} and the gRPC callbacks: everything
 * else runs on the fetcher thread.
 */
final class BucketStream {

    private static final Logger LOG = LoggerFactory.getLogger(BucketStream.class);

    private enum Phase {
        /** Opening the snapshot view (next poll). */
        SNAPSHOT_OPEN,
        /** Reading the catch-up changelog of a resumed snapshot. */
        CATCH_UP,
        /** Reading the snapshot's rows. */
        SNAPSHOT_ROWS,
        /** Following the changelog through {@link #call}. */
        FOLLOW,
        /** Waiting until {@link #reconnectAtMs} to open a new follow DoGet. */
        BACKOFF,
        CLOSED
    }

    private final GatewayClient client;
    private final Reconnect.Settings retry;
    private final SetatsSplit split;
    private final String database;
    private final String table;
    private final RowType readType;
    private final ReadySplits ready;

    /** Whether this stream is in {@link #ready}'s queue; guarded by that queue's lock. */
    boolean queued;

    private volatile boolean paused;
    /** The split's partition was dropped (fetcher thread). */
    private boolean retired;
    private Phase phase;
    /** The changelog ticket being read (the follow ticket once the snapshot phase is done). */
    private ChangelogTicket ticket;
    /** Offset of the next row this stream expects; -1 until known (timestamp start). */
    private long nextOffset;
    /** {@link #nextOffset} when the current DoGet was opened (progress since the last failure). */
    private long attemptFrom;
    private Reconnect reconnect;
    private long reconnectAtMs;
    private Call call;

    // Snapshot phase.
    /** Position after the last snapshot-phase row returned (what a restore would resume from). */
    private SnapshotPosition snapshotPos;
    /** Whether a snapshot-phase row was returned since the last transient failure. */
    private boolean snapshotProgressed;
    private Reconnect snapshotRetry;
    /** Whether the back-off is for the snapshot phase (else for the follow DoGet). */
    private boolean snapshotBackoff;
    private BucketSnapshotReader snapshotReader;
    private long snapshotEnd;
    private FlightStream catchUp;
    private ArrowRowDataReader catchUpReader;
    private long catchUpFrom;
    private long catchUpLast;

    BucketStream(
            GatewayClient client,
            String database,
            String table,
            SetatsSplit split,
            RowType readType,
            ReadySplits ready,
            Reconnect.Settings retry) {
        this.client = client;
        this.retry = retry;
        this.database = database;
        this.table = table;
        this.split = split;
        this.readType = readType;
        this.ready = ready;
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
        this.snapshotPos = split.snapshot();
    }

    /** Starts reading: opens the follow DoGet, or queues the snapshot phase. Fetcher thread. */
    void start() {
        if (split.snapshot() != null) {
            phase = Phase.SNAPSHOT_OPEN;
            ready.signal(this);
        } else {
            startFollowing();
        }
    }

    String splitId() {
        return split.splitId();
    }

    /** Stops being polled until {@link #resume()} (watermark alignment). Any thread. */
    void pause() {
        paused = true;
    }

    /** Any thread. */
    void resume() {
        paused = false;
        ready.signal(this);
    }

    boolean isPaused() {
        return paused;
    }

    /** Whether a poll would find something now (a message of the DoGet, snapshot rows). */
    boolean hasWork() {
        switch (phase) {
            case SNAPSHOT_OPEN:
            case CATCH_UP:
            case SNAPSHOT_ROWS:
                return true;
            case FOLLOW:
                Call c = call;
                return c != null && c.events.get() > 0;
            default:
                return false;
        }
    }

    /** The time (ms) this stream waits for to reconnect, or -1 when it does not wait. */
    long reconnectAtMs() {
        return phase == Phase.BACKOFF ? reconnectAtMs : -1;
    }

    /** Opens the new follow DoGet when the back-off is over at {@code nowMs}. */
    void reconnectIfDue(long nowMs) {
        if (phase == Phase.BACKOFF && nowMs >= reconnectAtMs) {
            client.resetConnectBackoff();
            if (snapshotBackoff) {
                phase = Phase.SNAPSHOT_OPEN;
                ready.signal(this);
            } else {
                openCall();
            }
        }
    }

    /**
     * What one poll took: the rows of one record batch, read through {@code cursor} ({@link
     * ChangelogRecord#overBatch} over {@code batch}, which the receiver owns and closes), or
     * position markers that own their data.
     */
    static final class Fetched {
        @Nullable final ArrowColumnarBatch batch;
        @Nullable final ChangelogRecord cursor;
        @Nullable final List<ChangelogRecord> markers;

        private Fetched(
                @Nullable ArrowColumnarBatch batch,
                @Nullable ChangelogRecord cursor,
                @Nullable List<ChangelogRecord> markers) {
            this.batch = batch;
            this.cursor = cursor;
            this.markers = markers;
        }

        static Fetched rows(ArrowColumnarBatch batch, ChangelogRecord cursor) {
            return new Fetched(batch, cursor, null);
        }

        static Fetched marker(ChangelogRecord marker) {
            return new Fetched(null, null, Collections.singletonList(marker));
        }
    }

    /**
     * Takes at most one record batch.
     *
     * @return the batch's rows (the caller owns the batch) or a single position marker, or null
     *     when this poll had nothing to hand out (the schema arrived, an empty batch, a failure
     *     being retried)
     * @throws IOException when the split cannot go on (see the class comment)
     */
    @Nullable
    Fetched poll() throws IOException {
        try {
            switch (phase) {
                case SNAPSHOT_OPEN:
                case CATCH_UP:
                case SNAPSHOT_ROWS:
                    return pollSnapshotPhase();
                case FOLLOW:
                    return pollFollow();
                default:
                    return null;
            }
        } catch (IOException | RuntimeException e) {
            if (phase == Phase.CLOSED) {
                return null;
            }
            throw failure(e);
        }
    }

    /** Cancels the DoGets and closes the snapshot reader. Idempotent; fetcher thread. */
    void close() {
        phase = Phase.CLOSED;
        closeCall();
        closeCatchUp();
        if (snapshotReader != null) {
            snapshotReader.cancel();
            snapshotReader.close();
            snapshotReader = null;
        }
    }

    private String position() {
        if (split.snapshot() != null && nextOffset < 0) {
            return String.valueOf(snapshotPos != null ? snapshotPos : split.snapshot());
        }
        String start =
                split.startingTimestampMs() != null
                        ? "the first row committed at or after " + split.startingTimestampMs() + " ms"
                        : "offset " + split.startingOffset();
        long next = nextOffset;
        boolean moved = next >= 0 && (split.startingTimestampMs() != null || next != split.startingOffset());
        return moved ? start + " (next offset " + next + ")" : start;
    }

    // ---- changelog phase

    private void startFollowing() {
        reconnect = new Reconnect(retry, client.describe(ticket), split.tableBucket());
        openCall();
    }

    private void openCall() {
        Call c = new Call();
        call = c;
        phase = Phase.FOLLOW;
        attemptFrom = nextOffset;
        try {
            c.stream = client.readChangelog(ticket, new StreamEvents(c));
        } catch (RuntimeException e) {
            c.openFailure = e; // handled by the next poll, like any failure of the call
            c.events.incrementAndGet();
            ready.signal(this);
        }
    }

    @Nullable
    private Fetched pollFollow() throws IOException {
        Call c = call;
        if (c == null || c.events.get() == 0) {
            return null;
        }
        c.events.decrementAndGet();
        FlightStream s = c.stream;
        try {
            if (c.openFailure != null) {
                throw c.openFailure;
            }
            if (c.reader == null) {
                // The first event: the schema, or the call's end before any message.
                if (c.closedFirst) {
                    s.next(); // returns false or throws the call's error at once
                    throw streamEnded();
                }
                c.root = s.getRoot();
                ArrowRowDataReader reader = ArrowRowDataReader.create(readType, c.root.getSchema());
                if (!reader.hasChangelogColumns()) {
                    throw new IOException(
                            client.describe(ticket) + ": the stream lacks the _offset/_commit_timestamp columns");
                }
                c.getters = reader.fieldGetters();
                c.reader = reader;
                return null;
            }
            if (!s.next()) {
                throw streamEnded();
            }
            VectorSchemaRoot root = c.root;
            int n = root.getRowCount();
            if (n == 0) {
                if (s.getLatestMetadata() != null) {
                    partitionDropped(s.getLatestMetadata());
                }
                return null;
            }
            ArrowColumnarBatch batch = c.reader.takeBatch(root);
            long expected = nextOffset;
            try {
                for (int i = 0; i < n; i++) {
                    long offset = batch.offset(i);
                    if (expected >= 0 && offset != expected) {
                        throw new IOException(
                                String.format(
                                        "%s: expected offset %d next but the gateway sent offset %d "
                                                + "(rows are never skipped silently)",
                                        client.describe(ticket), expected, offset));
                    }
                    expected = offset + 1;
                }
            } catch (IOException | RuntimeException e) {
                batch.close();
                throw e;
            }
            nextOffset = expected;
            return Fetched.rows(
                    batch, ChangelogRecord.overBatch(ChangelogRecord.Kind.CHANGELOG, batch, -1, split.tableBucket(), c.getters));
        } catch (FlightRuntimeException e) {
            followFailed(SetatsGatewayException.of(client.describe(ticket), e));
            return null;
        } catch (Reconnect.StreamEndedException | SetatsGatewayException e) {
            followFailed(e);
            return null;
        }
    }

    /**
     * Whether the app_metadata of an empty batch is the gateway's ChangelogEnd
     * END_PARTITION_DROPPED (proto/README.md "Dropping partitions"): the split's partition was
     * dropped, so the split is finished ({@link #isRetired()}) and its DoGet closed.
     */
    private boolean partitionDropped(org.apache.arrow.memory.ArrowBuf md) throws IOException {
        byte[] bytes = new byte[(int) md.readableBytes()];
        md.getBytes(md.readerIndex(), bytes);
        io.setats.proto.v1.ChangelogEnd end = io.setats.proto.v1.ChangelogEnd.parseFrom(bytes);
        if (end.getReason() != io.setats.proto.v1.ChangelogEndReason.END_PARTITION_DROPPED) {
            return false;
        }
        LOG.info(
                "The partition of {} of table {}.{} was dropped (end offset {}); the split is finished",
                split.tableBucket(), database, table, end.getEndOffset());
        close();
        retired = true;
        return true;
    }

    /** Whether the split's partition was dropped: the split is finished and the stream closed. */
    boolean isRetired() {
        return retired;
    }

    private Reconnect.StreamEndedException streamEnded() {
        return new Reconnect.StreamEndedException(
                client.describe(ticket) + ": the gateway ended the stream, which should follow new rows");
    }

    /**
     * A follow DoGet failed: closes it and, when the failure is transient, waits a back-off (the
     * stream is in BACKOFF; the fetcher reopens it from {@link #nextOffset}); otherwise, or when
     * the reconnect window is over, throws.
     */
    private void followFailed(Exception e) throws IOException {
        closeCall();
        if (!Reconnect.isTransient(e)) {
            throw e instanceof IOException ? (IOException) e : new IOException(e.getMessage(), e);
        }
        long waitMs = reconnect.failed(e, nextOffset > attemptFrom);
        if (nextOffset >= 0) {
            ticket = ticket.toBuilder().clearTimestampMs().setOffset(nextOffset).build();
        }
        LOG.warn(
                "The changelog stream of {} of table {}.{} broke ({}); reconnecting from {} in {} ms",
                split.tableBucket(), database, table, e.getMessage(), position(), waitMs);
        phase = Phase.BACKOFF;
        reconnectAtMs = System.currentTimeMillis() + waitMs;
    }

    private void closeCall() {
        Call c = call;
        call = null;
        if (c == null || c.stream == null) {
            return;
        }
        c.stale = true;
        try {
            c.stream.cancel("Setats split reader closed the stream", null);
        } catch (RuntimeException e) {
            LOG.debug("Cancelling the stream of {} failed", split, e);
        }
        try {
            c.stream.close();
        } catch (Exception e) {
            LOG.debug("Closing the stream of {} failed", split, e);
        }
    }

    /**
     * One follow DoGet: counts the messages gRPC put into its FlightStream that the fetcher has not
     * read yet, and queues the stream when one arrives.
     */
    private final class Call implements StreamEvents.Listener {
        final AtomicInteger events = new AtomicInteger();
        volatile boolean messaged;
        volatile boolean closedFirst;
        volatile boolean stale;
        RuntimeException openFailure;
        FlightStream stream;
        VectorSchemaRoot root;
        ArrowRowDataReader reader;
        RowData.FieldGetter[] getters;

        @Override
        public void onMessage() {
            messaged = true;
            arrived();
        }

        @Override
        public void onClose() {
            if (!messaged) {
                closedFirst = true;
            }
            arrived();
        }

        private void arrived() {
            events.incrementAndGet();
            if (!stale && !paused) {
                ready.signal(BucketStream.this);
            }
        }
    }

    // ---- snapshot phase

    /**
     * One step of the snapshot phase. A transient failure (the gateway restarting, UNAVAILABLE)
     * closes the snapshot's DoGets and, after a back-off, starts the phase again from {@link
     * #snapshotPos} exactly as a restore from a checkpoint would: a new view, the catch-up of the
     * keys already returned, then the keys after the last one returned, so nothing is skipped and
     * nothing returned twice. Gives up after {@code scan.reconnect-timeout} without a row.
     */
    @Nullable
    private Fetched pollSnapshotPhase() throws IOException {
        Fetched rows;
        try {
            switch (phase) {
                case SNAPSHOT_OPEN:
                    rows = openSnapshot();
                    break;
                case CATCH_UP:
                    rows = pollCatchUp();
                    break;
                default:
                    rows = pollSnapshot();
            }
        } catch (IOException | RuntimeException e) {
            if (!Reconnect.isTransient(e)) {
                throw e;
            }
            snapshotFailed(e);
            return null;
        }
        if (rows != null) {
            returned(rows);
        }
        return rows;
    }

    /**
     * Moves {@link #snapshotPos} the way the split state moves when the rows (their last row) or
     * the marker of {@code f} are emitted.
     */
    private void returned(Fetched f) {
        if (snapshotPos == null) {
            return;
        }
        ChangelogRecord r = f.batch != null ? f.cursor : f.markers.get(0);
        int last = f.batch != null ? f.batch.numRows() - 1 : -1;
        switch (r.kind()) {
            case SNAPSHOT:
                snapshotPos = new SnapshotPosition(r.viewOffset(), f.batch.key(last));
                snapshotProgressed = true;
                break;
            case CATCH_UP:
                snapshotPos = new SnapshotPosition(f.batch.offset(last) + 1, snapshotPos.afterKey());
                snapshotProgressed = true;
                break;
            case VIEW:
                if (snapshotPos.hasKey()) {
                    snapshotPos = new SnapshotPosition(r.viewOffset(), snapshotPos.afterKey());
                }
                break;
            case SNAPSHOT_DONE:
                snapshotPos = null;
                break;
            default:
                break;
        }
    }

    private void snapshotFailed(Exception e) throws IOException {
        closeCatchUp();
        if (snapshotReader != null) {
            snapshotReader.cancel();
            snapshotReader.close();
            snapshotReader = null;
        }
        if (snapshotRetry == null) {
            snapshotRetry = new Reconnect(retry, client.describe(ticket) + " (snapshot)", split.tableBucket());
        }
        long waitMs = snapshotRetry.failed(e, snapshotProgressed);
        snapshotProgressed = false;
        LOG.warn(
                "The snapshot read of {} of table {}.{} broke ({}); starting it again from {} in {} ms",
                split.tableBucket(), database, table, e.getMessage(), snapshotPos, waitMs);
        snapshotBackoff = true;
        phase = Phase.BACKOFF;
        reconnectAtMs = System.currentTimeMillis() + waitMs;
    }

    @Nullable
    private Fetched openSnapshot() throws IOException {
        SnapshotPosition pos = snapshotPos;
        TableBucket tb = split.tableBucket();
        byte[] after = pos.hasKey() ? pos.afterKey() : null;
        snapshotReader =
                BucketSnapshotReader.open(client, database, table, split.tableId(), tb, readType, after, 0);
        long e = snapshotReader.endOffset();
        snapshotEnd = e;
        phase = Phase.SNAPSHOT_ROWS;
        if (after == null) {
            return null;
        }
        if (e < pos.viewOffset()) {
            throw new IOException(
                    String.format(
                            "%s: the new snapshot view is at offset %d, before the checkpointed "
                                    + "view offset %d (was the table re-created?)",
                            client.describe(ticket), e, pos.viewOffset()));
        }
        if (e == pos.viewOffset()) {
            return Fetched.marker(ChangelogRecord.viewMarker(e, tb));
        }
        openCatchUp(pos.viewOffset(), e, after);
        return null;
    }

    @Nullable
    private Fetched pollSnapshot() throws IOException {
        ArrowColumnarBatch batch = snapshotReader.nextColumnarBatch();
        TableBucket tb = split.tableBucket();
        if (batch == null) {
            snapshotReader.close();
            snapshotReader = null;
            long e = snapshotEnd;
            ticket = ticket.toBuilder().setOffset(e).build();
            nextOffset = e;
            snapshotBackoff = false;
            startFollowing();
            return Fetched.marker(ChangelogRecord.snapshotDone(e, tb));
        }
        if (batch.numRows() == 0) {
            batch.close();
            return null;
        }
        return Fetched.rows(
                batch,
                ChangelogRecord.overBatch(
                        ChangelogRecord.Kind.SNAPSHOT, batch, snapshotEnd, tb, snapshotReader.fieldGetters()));
    }

    /**
     * Opens the changelog {@code [from, to)} of the keys {@code <= afterKey} (a bounded DoGet with
     * {@code max_key}), read as CATCH_UP rows: the keys emitted before a restore move from the
     * checkpointed view offset to the new view's.
     */
    private void openCatchUp(long from, long to, byte[] afterKey) throws IOException {
        ChangelogTicket t =
                ticket.toBuilder()
                        .setOffset(from)
                        .setEndOffset(to)
                        .setFollow(false)
                        .setMaxKey(ByteString.copyFrom(afterKey))
                        .build();
        try {
            catchUp = client.readChangelog(t);
            catchUpReader = ArrowRowDataReader.create(readType, catchUp.getRoot().getSchema());
        } catch (FlightRuntimeException e) {
            throw SetatsGatewayException.of(client.describe(t) + " (catch-up of a resumed snapshot)", e);
        }
        catchUpFrom = from;
        catchUpLast = from - 1;
        phase = Phase.CATCH_UP;
    }

    @Nullable
    private Fetched pollCatchUp() throws IOException {
        long from = catchUpFrom;
        long to = snapshotEnd;
        String where = client.describe(ticket) + " catch-up [" + from + ", " + to + ")";
        TableBucket tb = split.tableBucket();
        try {
            if (!catchUp.next()) {
                closeCatchUp();
                phase = Phase.SNAPSHOT_ROWS;
                return Fetched.marker(ChangelogRecord.viewMarker(to, tb));
            }
            VectorSchemaRoot root = catchUp.getRoot();
            int n = root.getRowCount();
            if (n == 0) {
                return null;
            }
            ArrowColumnarBatch batch = catchUpReader.takeBatch(root);
            try {
                for (int i = 0; i < n; i++) {
                    long offset = batch.offset(i);
                    if (offset <= catchUpLast || offset >= to) {
                        throw new IOException(
                                String.format("%s: got offset %d after %d", where, offset, catchUpLast));
                    }
                    catchUpLast = offset;
                }
            } catch (IOException | RuntimeException e) {
                batch.close();
                throw e;
            }
            return Fetched.rows(
                    batch,
                    ChangelogRecord.overBatch(
                            ChangelogRecord.Kind.CATCH_UP, batch, -1, tb, catchUpReader.fieldGetters()));
        } catch (FlightRuntimeException e) {
            throw SetatsGatewayException.of(where + " (catch-up of a resumed snapshot)", e);
        }
    }

    private void closeCatchUp() {
        FlightStream s = catchUp;
        catchUp = null;
        catchUpReader = null;
        if (s != null) {
            try {
                s.close();
            } catch (Exception e) {
                LOG.debug("Closing the catch-up stream of {} failed", split, e);
            }
        }
    }

    private IOException failure(Exception e) {
        Throwable cause =
                e instanceof FlightRuntimeException ? SetatsGatewayException.of(client.describe(ticket), e) : e;
        IOException failure =
                new IOException(
                        String.format(
                                "Reading the changelog of %s of table %s.%s from %s failed: %s",
                                split.tableBucket(), database, table, position(), cause.getMessage()),
                        cause);
        LOG.warn("{}", failure.getMessage());
        return failure;
    }
}
