package io.setats.flink.sink.writer;

import io.setats.flink.client.GatewayClient;
import io.setats.flink.client.PutStream;
import io.setats.flink.sink.SetatsSink;
import io.setats.flink.sink.SetatsTableLayout;
import io.setats.flink.utils.RowDataArrowWriter;
import io.setats.proto.v1.WriteAck;
import io.setats.proto.v1.WriteCommand;

import org.apache.flink.api.common.operators.MailboxExecutor;
import org.apache.flink.api.common.operators.ProcessingTimeService;
import org.apache.flink.api.connector.sink2.SinkWriter;
import org.apache.flink.api.connector.sink2.WriterInitContext;
import org.apache.flink.metrics.Counter;
import org.apache.flink.table.data.RowData;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * SetatsSinkWriter buffers rows into one Arrow record batch (the sink's declared columns plus
 * {@code _row_kind}) and sends it over a long-lived DoPut stream whose WriteCommand carries the
 * CatalogContext and the {@code create_if_absent} table spec (SPEC section 3).
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
 * <p>{@link #flush(boolean)} (checkpoint, end of input) sends the buffer and blocks until every
 * sent batch is acknowledged: at least once. A gateway error fails the job with the gateway's
 * message; a batch not acknowledged within {@code setats.sink.ack-timeout} (default 60 s) fails
 * it with a message naming the table, the gateway and the batch, even while no row arrives (a
 * timer checks), so the writer can fail but never hang. At start the writer calls {@code
 * gateway-info} and fails when the warehouse differs.
 *
 * <p>All methods, timer callbacks and ack wake-ups included, run on the task's mailbox thread;
 * only {@link #onAck} runs on a gRPC thread and just posts a mail.
 */
public final class SetatsSinkWriter<IN> implements SinkWriter<IN> {

    private static final Logger LOG = LoggerFactory.getLogger(SetatsSinkWriter.class);

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
    /** An ack wake-up mail is queued (set by gRPC threads, cleared on the mailbox thread). */
    private final AtomicBoolean wakeQueued = new AtomicBoolean();

    private PutStream stream;
    private boolean flushTimerPending;
    private boolean ackTimerPending;
    private long batchStartMs;
    private volatile boolean closed;

    public SetatsSinkWriter(SetatsSink<IN> sink, SetatsTableLayout layout, WriterInitContext ctx) {
        this.sink = sink;
        this.layout = layout;
        this.timers = ctx.getProcessingTimeService();
        this.numRecordsSend = ctx.metricGroup().getNumRecordsSendCounter();
        this.numBytesSend = ctx.metricGroup().getNumBytesSendCounter();
        this.flushIntervalMs = sink.flushInterval().toMillis();
        this.lingerMs = sink.linger() == null ? 0 : Math.min(sink.linger().toMillis(), flushIntervalMs);
        this.subtask = ctx.getTaskInfo().getIndexOfThisSubtask();
        this.mailbox = ctx.getMailboxExecutor();
        this.client = GatewayClient.connect(sink.connection(), sink.catalogContext());
        RowDataArrowWriter w = null;
        try {
            client.checkWarehouse(sink.warehouse());
            w = new RowDataArrowWriter(sink.rowType(), client.allocator(), true);
        } catch (RuntimeException e) {
            client.close();
            throw e;
        }
        this.batch = w;
        LOG.info(
                "Setats sink writer {} for {}.{} on {} ({}; linger {} ms, flush interval {} ms, ack timeout {})",
                subtask,
                sink.database(),
                sink.table(),
                client.url(),
                layout,
                lingerMs,
                flushIntervalMs,
                sink.ackTimeout());
    }

    @Override
    public void write(IN element, Context context) throws IOException, InterruptedException {
        if (stream != null) {
            stream.check();
        }
        RowData row = sink.serializer().serialize(element);
        boolean first = batch.rowCount() == 0;
        if (first) {
            batchStartMs = timers.getCurrentProcessingTime();
        }
        batch.write(row);
        numRecordsSend.inc();
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
        if (stream == null) {
            WriteCommand cmd =
                    WriteCommand.newBuilder()
                            .setCatalog(sink.catalogContext())
                            .setDatabase(sink.database())
                            .setTable(sink.table())
                            .setCreateIfAbsent(sink.createIfAbsentSpec(layout))
                            .build();
            stream =
                    client.startPut(
                            cmd,
                            batch.root(),
                            sink.maxInFlightBatches(),
                            sink.ackTimeout(),
                            this::onAck);
            // A gateway error fails the task at once, even while no row arrives.
            PutStream s = stream;
            s.setOnFailure(
                    e -> {
                        try {
                            mailbox.execute(s::check, "setats gateway error");
                        } catch (RuntimeException rejected) {
                            // The task is shutting down; close() ends the stream.
                        }
                    });
        }
        int rows = batch.rowCount();
        batch.finish();
        long bytes = batch.estimatedBytes();
        stream.putNext(rows);
        numBytesSend.inc(bytes);
        batch.reset();
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
     * Sends the buffer and blocks until the gateway acknowledged every sent batch as durable.
     *
     * @throws io.setats.flink.client.SetatsGatewayException with the gateway's message on error,
     *     or when a batch was not acknowledged within {@code setats.sink.ack-timeout}
     */
    @Override
    public void flush(boolean endOfInput) throws IOException, InterruptedException {
        sendBatch();
        if (stream != null) {
            stream.awaitAcks();
        }
    }

    @Override
    public void close() throws Exception {
        if (closed) {
            return;
        }
        closed = true;
        try {
            if (stream != null) {
                if (!stream.failed() && stream.ackedBatches() == stream.sentBatches()) {
                    stream.complete();
                } else {
                    stream.close();
                }
            }
        } finally {
            try {
                batch.close();
            } finally {
                client.close();
            }
        }
    }
}
