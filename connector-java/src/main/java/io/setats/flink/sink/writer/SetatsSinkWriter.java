package io.setats.flink.sink.writer;

import io.setats.flink.client.GatewayClient;
import io.setats.flink.client.PutStream;
import io.setats.flink.client.SetatsGatewayException;
import io.setats.flink.sink.SetatsSink;
import io.setats.flink.sink.SetatsSinkTestHooks;
import io.setats.flink.sink.SetatsTableLayout;
import io.setats.flink.sink.committer.SetatsCommittable;
import io.setats.flink.utils.RowDataArrowWriter;
import io.setats.proto.v1.StagingTarget;
import io.setats.proto.v1.WriteAck;
import io.setats.proto.v1.WriteCommand;

import org.apache.flink.api.common.operators.MailboxExecutor;
import org.apache.flink.api.common.operators.ProcessingTimeService;
import org.apache.flink.api.connector.sink2.CommittingSinkWriter;
import org.apache.flink.api.connector.sink2.StatefulSinkWriter;
import org.apache.flink.api.connector.sink2.WriterInitContext;
import org.apache.flink.connector.base.DeliveryGuarantee;
import org.apache.flink.metrics.Counter;
import org.apache.flink.table.data.RowData;

import org.apache.arrow.vector.VectorLoader;
import org.apache.arrow.vector.VectorUnloader;
import org.apache.arrow.vector.ipc.message.ArrowRecordBatch;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Collections;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * SetatsSinkWriter buffers rows into one Arrow record batch (the sink's declared columns plus
 * {@code _row_kind}) and sends it over a DoPut stream whose WriteCommand carries the
 * CatalogContext, the {@code create_if_absent} table spec (SPEC section 3), a writer id and the
 * batch sequence (SPEC section 10).
 *
 * <p>When a batch is sent (linger-style): while none of the writer's batches awaits a WriteAck
 * (the pipeline is idle), the buffer is sent once its first row has waited {@code
 * setats.sink.linger} (default 0: at once, so a row at a low rate is sent as soon as it arrives);
 * while batches are in flight, rows keep buffering and go out when the last ack comes back, when
 * the buffer holds {@code setats.sink.buffer-rows} rows or {@code setats.sink.buffer-bytes}
 * bytes, or when its first row has waited {@code setats.sink.flush-interval}. So batches grow with
 * the load (about rate x round trip) and latency stays near the gateway's round trip instead of
 * the flush interval.
 *
 * <p>Every sent batch is kept until its WriteAck arrives: when the
 * stream breaks (gateway restarted, connection lost, an ack dropped), the writer opens a new
 * stream with the same writer id and resends the unacknowledged batches under their sequences,
 * so the gateway applies each once and answers the ones it had applied with their original ack.
 * It keeps trying for {@link #RECONNECT_TIMEOUT_MS}; a refusal (InvalidArgument,
 * FailedPrecondition, ...) fails the job with the gateway's message.
 *
 * <p>At-least-once: the gateway merges each batch as it arrives; {@link #flush(boolean)}
 * (checkpoint, end of input) sends the buffer and blocks until every sent batch is
 * acknowledged as durable.
 *
 * <p>Exactly-once: at start the writer calls {@code abort-staged} for its own subtask (and for
 * the subtasks whose state it restored that no longer exist after a rescale), which drops the
 * rows staged for checkpoints after the restored one and fences off writers of the failed
 * attempt. It then stages rows under the checkpoint id after the last snapshot; {@link
 * #prepareCommit()} waits until they are durable and hands a {@link SetatsCommittable} to the
 * committer, which merges them when the checkpoint completes.
 *
 * <p>A refused batch fails the job with the gateway's message; a batch not acknowledged within {@code setats.sink.ack-timeout} (default 60 s) fails
 * it with a message naming the table, the gateway and the batch, even while no row arrives (a
 * timer checks), so the writer can fail but never hang. At start the writer calls {@code
 * gateway-info} and fails when the warehouse differs.
 *
 * <p>All methods, timer callbacks and ack wake-ups included, run on the task's mailbox thread;
 * only {@link #onAck} runs on a gRPC thread and just posts a mail.
 */
public final class SetatsSinkWriter<IN>
        implements StatefulSinkWriter<IN, SetatsWriterState>,
                CommittingSinkWriter<IN, SetatsCommittable> {

    private static final Logger LOG = LoggerFactory.getLogger(SetatsSinkWriter.class);

    /** How long the writer keeps reconnecting to the gateway before it fails the job (ms). */
    public static final long RECONNECT_TIMEOUT_MS = 60_000;

    private final SetatsSink<IN> sink;
    private final SetatsTableLayout layout;
    private final GatewayClient client;
    private final RowDataArrowWriter batch;
    private final ProcessingTimeService timers;
    private final Counter numRecordsSend;
    private final Counter numBytesSend;
    private final long flushIntervalMs;
    private final long lingerMs;
    private final int subtask;
    private final MailboxExecutor mailbox;
    private final boolean exactlyOnce;
    private final String writerId;
    /** An ack wake-up mail is queued (set by gRPC threads, cleared on the mailbox thread). */
    private final AtomicBoolean wakeQueued = new AtomicBoolean();

    /** Sent batches not yet acknowledged, in sequence order (mailbox thread only). */
    private final ArrayDeque<Sent> unacked = new ArrayDeque<>();
    /** Highest acknowledged sequence (set by gRPC threads). */
    private final AtomicLong ackedUpTo = new AtomicLong(-1);

    private long nextSequence;
    private PutStream stream;
    private boolean flushTimerPending;
    private boolean ackTimerPending;
    private long batchStartMs;
    private volatile boolean closed;

    // Exactly-once.
    private String commitUser;
    private long epoch;
    private long stagingCheckpoint;
    private long stagedRows;

    /** A sent batch kept for resending. */
    private static final class Sent {
        final long sequence;
        final ArrowRecordBatch data;

        Sent(long sequence, ArrowRecordBatch data) {
            this.sequence = sequence;
            this.data = data;
        }
    }

    public SetatsSinkWriter(
            SetatsSink<IN> sink,
            SetatsTableLayout layout,
            WriterInitContext ctx,
            Collection<SetatsWriterState> restored) {
        this.sink = sink;
        this.layout = layout;
        this.timers = ctx.getProcessingTimeService();
        this.numRecordsSend = ctx.metricGroup().getNumRecordsSendCounter();
        this.numBytesSend = ctx.metricGroup().getNumBytesSendCounter();
        this.flushIntervalMs = sink.flushInterval().toMillis();
        this.lingerMs = sink.linger() == null ? 0 : Math.min(sink.linger().toMillis(), flushIntervalMs);
        this.subtask = ctx.getTaskInfo().getIndexOfThisSubtask();
        this.mailbox = ctx.getMailboxExecutor();
        this.exactlyOnce = sink.deliveryGuarantee() == DeliveryGuarantee.EXACTLY_ONCE;
        this.writerId = "w-" + UUID.randomUUID() + "-" + subtask;
        this.client = GatewayClient.connect(sink.connection(), sink.catalogContext());
        RowDataArrowWriter w = null;
        try {
            client.checkWarehouse(sink.warehouse());
            w = new RowDataArrowWriter(sink.rowType(), client.allocator(), true);
            if (exactlyOnce) {
                long restoredCheckpoint = ctx.getRestoredCheckpointId().orElse(0L);
                startStaging(
                        restored, restoredCheckpoint, ctx.getTaskInfo().getNumberOfParallelSubtasks());
            }
        } catch (RuntimeException e) {
            if (w != null) {
                w.close();
            }
            client.close();
            throw e;
        }
        this.batch = w;
        LOG.info(
                "Setats sink writer {} for {}.{} on {} ({}, {}, writer id {}; linger {} ms, flush interval {} ms, ack timeout {})",
                subtask,
                sink.database(),
                sink.table(),
                client.url(),
                layout,
                sink.deliveryGuarantee(),
                writerId,
                lingerMs,
                flushIntervalMs,
                sink.ackTimeout());
    }

    /**
     * Exactly-once start: stages under the sink's commit user (the same for every writer subtask
     * of the job, kept across failovers; a job rebuilt for a savepoint restore has a new one) and
     * drops what was staged after the restored checkpoint: for this subtask, and for every
     * restored (commit user, subtask) that no current writer stages for, i.e. of another commit
     * user (a savepoint restore) or of a subtask beyond the parallelism (a rescale).
     *
     * <p>Why not the restored state's commit user: after a rescale a writer may receive another
     * subtask's state or none at all (Flink splits the writers' list states round robin), so
     * writers taking the user from their state would stage under different users, and a writer
     * could not know whether another one stages for a restored (user, subtask): it would either
     * leave its staged rows behind or abort them under a running writer, fencing it off.
     */
    private void startStaging(
            Collection<SetatsWriterState> restored, long restoredCheckpoint, int parallelism) {
        commitUser = stagingCommitUser(restored, sink.commitUser());
        // A table the sink creates must exist before abort-staged names it.
        if (!client.getTable(sink.database(), sink.table()).isPresent()) {
            client.createTable(sink.createIfAbsentSpec(layout), true, true);
        }
        long timeoutMs = sink.transactionTimeout().toMillis();
        epoch =
                client.abortStaged(
                                sink.database(),
                                sink.table(),
                                commitUser,
                                subtask,
                                restoredCheckpoint,
                                timeoutMs)
                        .getEpoch();
        for (SetatsWriterState s : abandonedStagings(restored, commitUser, parallelism)) {
            client.abortStaged(
                    sink.database(),
                    sink.table(),
                    s.commitUser(),
                    s.subtask(),
                    restoredCheckpoint,
                    timeoutMs);
        }
        stagingCheckpoint = restoredCheckpoint + 1;
        LOG.info(
                "Setats exactly-once writer {}: commit user {}, restored checkpoint {}, epoch {}",
                subtask,
                commitUser,
                restoredCheckpoint,
                epoch);
    }

    /**
     * The commit user a writer stages under: the sink's ({@code sinkCommitUser}), whatever it
     * restored (see {@link #startStaging}).
     */
    static String stagingCommitUser(Collection<SetatsWriterState> restored, String sinkCommitUser) {
        return sinkCommitUser;
    }

    /**
     * The restored stagings no writer of the current job stages for, which the writer that
     * received their state must drop: another commit user's (a job rebuilt for a savepoint
     * restore), or a subtask at or beyond {@code parallelism} (a rescale down). Every writer
     * stages under {@code commitUser} for its own subtask, so a restored (commitUser, i) with i
     * below the parallelism is writer i's, which drops its rows of uncompleted checkpoints itself.
     */
    static List<SetatsWriterState> abandonedStagings(
            Collection<SetatsWriterState> restored, String commitUser, int parallelism) {
        List<SetatsWriterState> out = new ArrayList<>();
        for (SetatsWriterState s : restored) {
            if (!s.commitUser().equals(commitUser) || s.subtask() >= parallelism) {
                out.add(s);
            }
        }
        return out;
    }

    @Override
    public void write(IN element, Context context) throws IOException, InterruptedException {
        RowData row = sink.serializer().serialize(element);
        boolean first = batch.rowCount() == 0;
        if (first) {
            batchStartMs = timers.getCurrentProcessingTime();
        }
        batch.write(row);
        numRecordsSend.inc();
        SetatsSinkTestHooks.HopListener hops = SetatsSinkTestHooks.hops;
        if (hops != null) {
            hops.written(subtask, row, System.currentTimeMillis());
        }
        if (batch.rowCount() >= sink.bufferRows() || batch.estimatedBytes() >= sink.bufferBytes()) {
            sendBatch();
        } else if (lingerMs == 0 && pipelineIdle()) {
            sendBatch();
        } else if (first) {
            scheduleFlush(batchStartMs + (lingerMs > 0 ? lingerMs : flushIntervalMs));
        }
    }

    /** No batch of this writer awaits its ack. */
    private boolean pipelineIdle() {
        return stream == null || stream.idle();
    }

    private void scheduleFlush(long at) {
        if (flushTimerPending) {
            return;
        }
        flushTimerPending = true;
        timers.registerTimer(at, this::onFlushTimer);
    }

    private void onFlushTimer(long now) throws IOException, InterruptedException {
        flushTimerPending = false;
        if (closed || batch.rowCount() == 0) {
            return;
        }
        long due = batchStartMs + flushIntervalMs;
        long lingerDue = batchStartMs + lingerMs;
        if (now >= due || (now >= lingerDue && pipelineIdle())) {
            sendBatch();
        } else {
            // Lingered but batches are in flight: the last ack (onAck) or the flush interval sends.
            scheduleFlush(now < lingerDue ? lingerDue : due);
        }
    }

    /** gRPC thread: each WriteAck. When it leaves the pipeline idle, wake the mailbox to send. */
    private void onAck(WriteAck ack) {
        ackedUpTo.accumulateAndGet(ack.getSequence(), Math::max);
        SetatsSinkTestHooks.HopListener hops = SetatsSinkTestHooks.hops;
        if (hops != null) {
            hops.acked(subtask, ack.getSequence(), System.currentTimeMillis());
        }
        PutStream s = stream;
        if (closed || s == null || !s.idle() || wakeQueued.getAndSet(true)) {
            return;
        }
        try {
            mailbox.execute(this::onPipelineIdle, "setats sink: pipeline idle");
        } catch (RuntimeException rejected) {
            // The task is shutting down.
            wakeQueued.set(false);
        }
    }

    private void onPipelineIdle() throws InterruptedException {
        wakeQueued.set(false);
        if (closed || batch.rowCount() == 0 || !pipelineIdle()) {
            return;
        }
        if (timers.getCurrentProcessingTime() >= batchStartMs + lingerMs) {
            sendBatch();
        }
        // else the linger timer sends.
    }

    /** Sends the buffered rows as one record batch (no-op when empty); does not wait for acks. */
    private void sendBatch() throws InterruptedException {
        if (batch.rowCount() == 0) {
            return;
        }
        releaseAcked();
        batch.finish();
        long bytes = batch.estimatedBytes();
        int rows = batch.rowCount();
        Sent s = new Sent(nextSequence++, new VectorUnloader(batch.root()).getRecordBatch());
        unacked.addLast(s);
        if (exactlyOnce) {
            stagedRows += rows;
        }
        numBytesSend.inc(bytes);
        SetatsSinkTestHooks.HopListener hops = SetatsSinkTestHooks.hops;
        if (hops != null) {
            hops.sent(subtask, s.sequence, rows, System.currentTimeMillis());
        }
        if (stream != null && !stream.failed()) {
            // The root holds exactly s's rows: put it as it is (no reload of the kept batch).
            SetatsGatewayException failed = null;
            try {
                stream.putNext(rows);
            } catch (SetatsGatewayException e) {
                failed = e;
            } finally {
                batch.reset();
            }
            if (failed != null) {
                if (!failed.isRetryable()) {
                    throw failed;
                }
                abandonStream();
                ensureStream(); // resends s with the other unacknowledged batches
            }
        } else {
            batch.reset();
            ensureStream(); // a new stream resends every unacknowledged batch, s included
        }
        scheduleAckCheck();
    }

    /** A timer at the oldest unacknowledged batch's ack deadline, so an idle writer fails too. */
    private void scheduleAckCheck() {
        if (ackTimerPending || stream == null) {
            return;
        }
        long in = stream.msUntilAckTimeout();
        if (in < 0) {
            return;
        }
        ackTimerPending = true;
        timers.registerTimer(timers.getCurrentProcessingTime() + in, this::onAckTimer);
    }

    private void onAckTimer(long now) {
        ackTimerPending = false;
        if (closed || stream == null) {
            return;
        }
        stream.checkAckTimeout(); // throws: the task fails with the batch, table and gateway
        scheduleAckCheck();
    }

    /**
     * Loads a kept batch into the root and puts it on the stream. The root is the buffer's, so
     * the buffer must be empty (callers send it first): loading would overwrite buffered rows.
     */
    private void transmit(Sent s) throws InterruptedException {
        if (batch.rowCount() != 0) {
            throw new IllegalStateException(
                    "Setats sink writer " + subtask + ": resend with " + batch.rowCount()
                            + " buffered rows would lose them");
        }
        new VectorLoader(batch.root()).load(s.data);
        try {
            stream.putNext(s.data.getLength());
        } finally {
            batch.reset();
        }
    }

    /** Drops the current stream (its unacknowledged batches are resent on the next one). */
    private void abandonStream() {
        if (stream != null) {
            stream.close();
            stream = null;
        }
    }

    /**
     * Makes sure a healthy stream is open: opens one when there is none and, when the current
     * one failed with a retryable error, reconnects and resends every unacknowledged batch.
     * Returns true when it (re)opened a stream and resent the unacknowledged batches.
     *
     * @throws SetatsGatewayException when the failure is not retryable or reconnecting takes
     *     longer than {@link #RECONNECT_TIMEOUT_MS}
     */
    private boolean ensureStream() throws InterruptedException {
        if (stream != null && !stream.failed()) {
            return false;
        }
        long deadline = System.currentTimeMillis() + RECONNECT_TIMEOUT_MS;
        long backoff = 100;
        SetatsGatewayException last = null;
        if (stream != null) {
            last = failureOf(stream);
            if (!last.isRetryable()) {
                throw last;
            }
            stream.close();
            stream = null;
        }
        while (true) {
            releaseAcked();
            try {
                if (last != null) {
                    LOG.warn(
                            "Setats sink writer {}: reconnecting after {}; resending {} batch(es)",
                            subtask,
                            last.getMessage(),
                            unacked.size());
                }
                openStream();
                for (Sent s : new ArrayList<>(unacked)) {
                    transmit(s);
                }
                return true;
            } catch (SetatsGatewayException e) {
                if (stream != null) {
                    stream.close();
                    stream = null;
                }
                if (!e.isRetryable() || System.currentTimeMillis() + backoff > deadline) {
                    throw e;
                }
                last = e;
                Thread.sleep(backoff);
                backoff = Math.min(backoff * 2, 2_000);
            }
        }
    }

    private static SetatsGatewayException failureOf(PutStream s) {
        try {
            s.check();
        } catch (SetatsGatewayException e) {
            return e;
        } catch (RuntimeException e) {
            return SetatsGatewayException.of("DoPut", e);
        }
        return new SetatsGatewayException("DoPut", "UNKNOWN", "stream failed", null);
    }

    private void openStream() {
        long first = unacked.isEmpty() ? nextSequence : unacked.peekFirst().sequence;
        WriteCommand.Builder cmd =
                WriteCommand.newBuilder()
                        .setCatalog(sink.catalogContext())
                        .setDatabase(sink.database())
                        .setTable(sink.table())
                        .setCreateIfAbsent(sink.createIfAbsentSpec(layout))
                        .setWriterId(writerId)
                        .setFirstSequence(first);
        if (exactlyOnce) {
            cmd.setStaging(
                    StagingTarget.newBuilder()
                            .setCommitUser(commitUser)
                            .setSubtask(subtask)
                            .setCheckpointId(stagingCheckpoint)
                            .setEpoch(epoch));
        }
        PutStream s =
                client.startPut(
                        cmd.build(),
                        batch.root(),
                        sink.maxInFlightBatches(),
                        sink.ackTimeout(),
                        this::onAck);
        SetatsSinkTestHooks.AckFilter drop = SetatsSinkTestHooks.dropAck;
        if (drop != null) {
            s.setAckFilter(a -> drop.drop(subtask, a.getSequence()));
        }
        // A gateway error is noticed at once, even while no row arrives.
        s.setOnFailure(
                e -> {
                    try {
                        mailbox.execute(this::onStreamFailure, "setats gateway error");
                    } catch (RuntimeException rejected) {
                        // The task is shutting down; close() ends the stream.
                    }
                });
        stream = s;
    }

    /**
     * Mailbox action after a stream failure: reconnect now, or fail the task. Buffered rows are
     * sent as a batch first (the resend reuses the buffer's Arrow root), so the reconnect resends
     * them with the unacknowledged batches.
     */
    private void onStreamFailure() throws InterruptedException {
        if (closed) {
            return;
        }
        if (batch.rowCount() > 0) {
            sendBatch();
        } else {
            ensureStream();
        }
    }


    /** Releases the kept batches that were acknowledged (mailbox thread). */
    private void releaseAcked() {
        long upTo = ackedUpTo.get();
        while (!unacked.isEmpty() && unacked.peekFirst().sequence <= upTo) {
            unacked.pollFirst().data.close();
        }
    }

    /** Sends the buffer and waits until every sent batch is acknowledged, reconnecting as needed. */
    private void awaitAllAcked() throws InterruptedException {
        sendBatch();
        long deadline = System.currentTimeMillis() + RECONNECT_TIMEOUT_MS;
        while (true) {
            ensureStream();
            releaseAcked();
            if (unacked.isEmpty()) {
                return;
            }
            try {
                stream.awaitAcks();
            } catch (SetatsGatewayException e) {
                if (!e.isRetryable() || System.currentTimeMillis() > deadline) {
                    throw e;
                }
                LOG.warn("Setats sink writer {}: {}; reconnecting", subtask, e.getMessage());
                abandonStream();
                Thread.sleep(100);
            }
            releaseAcked();
            if (unacked.isEmpty()) {
                return;
            }
        }
    }

    /**
     * At-least-once: sends the buffer and blocks until the gateway acknowledged every sent batch
     * as durable. Exactly-once: the same for the staged rows (the commit comes from the
     * committer).
     *
     * @throws SetatsGatewayException with the gateway's message on error, or when a batch was not
     *     acknowledged within {@code setats.sink.ack-timeout}
     */
    @Override
    public void flush(boolean endOfInput) throws IOException, InterruptedException {
        if (stream == null && batch.rowCount() == 0 && unacked.isEmpty()) {
            return;
        }
        awaitAllAcked();
    }

    /**
     * Exactly-once: every row staged since the last snapshot is durable (flush ran before); ends
     * the staging stream and returns the committable naming them, or nothing when no row was
     * staged. At-least-once: nothing.
     */
    @Override
    public Collection<SetatsCommittable> prepareCommit() throws IOException, InterruptedException {
        if (!exactlyOnce) {
            return Collections.emptyList();
        }
        awaitAllAcked();
        if (stream != null) {
            try {
                stream.complete();
            } catch (SetatsGatewayException e) {
                if (!e.isRetryable()) {
                    throw e;
                }
                stream.close(); // every batch is acknowledged: nothing is lost
            }
            stream = null;
        }
        if (stagedRows == 0) {
            return Collections.emptyList();
        }
        SetatsCommittable c =
                new SetatsCommittable(
                        commitUser,
                        subtask,
                        stagingCheckpoint,
                        sink.database(),
                        sink.table(),
                        stagedRows);
        stagedRows = 0;
        return Collections.singletonList(c);
    }

    /**
     * Exactly-once: the rows from now on are staged for the checkpoint after {@code
     * checkpointId}; the state is (commit user, subtask). At-least-once: no state.
     */
    @Override
    public List<SetatsWriterState> snapshotState(long checkpointId) throws IOException {
        if (!exactlyOnce) {
            return Collections.emptyList();
        }
        SetatsSinkTestHooks.Hook hook = SetatsSinkTestHooks.afterPrepareCommit;
        if (hook != null) {
            try {
                hook.run(subtask, checkpointId);
            } catch (IOException | RuntimeException e) {
                throw e;
            } catch (Exception e) {
                throw new IOException(e);
            }
        }
        stagingCheckpoint = checkpointId + 1;
        return Collections.singletonList(new SetatsWriterState(commitUser, subtask));
    }

    @Override
    public void close() throws Exception {
        if (closed) {
            return;
        }
        closed = true;
        try {
            if (stream != null) {
                releaseAcked();
                if (!stream.failed() && unacked.isEmpty()) {
                    stream.complete();
                } else {
                    stream.close();
                }
            }
        } finally {
            try {
                for (Sent s : unacked) {
                    s.data.close();
                }
                unacked.clear();
                batch.close();
            } finally {
                client.close();
            }
        }
    }
}
