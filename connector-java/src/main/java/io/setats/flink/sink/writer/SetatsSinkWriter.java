package io.setats.flink.sink.writer;

import io.setats.flink.client.GatewayClient;
import io.setats.flink.client.PutStream;
import io.setats.flink.sink.SetatsSink;
import io.setats.flink.sink.SetatsTableLayout;
import io.setats.flink.utils.RowDataArrowWriter;
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

/**
 * SetatsSinkWriter buffers rows into one Arrow record batch (the sink's declared columns plus
 * {@code _row_kind}) and sends it over a long-lived DoPut stream whose WriteCommand carries the
 * CatalogContext and the {@code create_if_absent} table spec (SPEC section 3).
 *
 * <p>A batch is sent when it holds {@code setats.sink.buffer-rows} rows or {@code
 * setats.sink.buffer-bytes} bytes, or when its first row has waited {@code
 * setats.sink.flush-interval}. {@link #flush(boolean)} (checkpoint, end of input) sends the
 * buffer and blocks until every sent batch is acknowledged: at least once. A gateway error fails
 * the job with the gateway's message. At start the writer calls {@code gateway-info} and fails
 * when the warehouse differs.
 *
 * <p>All methods, timer callbacks included, run on the task's mailbox thread.
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
    private final int subtask;
    private final MailboxExecutor mailbox;

    private PutStream stream;
    private boolean timerPending;
    private long batchStartMs;
    private boolean closed;

    public SetatsSinkWriter(SetatsSink<IN> sink, SetatsTableLayout layout, WriterInitContext ctx) {
        this.sink = sink;
        this.layout = layout;
        this.timers = ctx.getProcessingTimeService();
        this.numRecordsSend = ctx.metricGroup().getNumRecordsSendCounter();
        this.numBytesSend = ctx.metricGroup().getNumBytesSendCounter();
        this.flushIntervalMs = sink.flushInterval().toMillis();
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
                "Setats sink writer {} for {}.{} on {} ({})",
                subtask,
                sink.database(),
                sink.table(),
                client.url(),
                layout);
    }

    @Override
    public void write(IN element, Context context) throws IOException, InterruptedException {
        if (stream != null) {
            stream.check();
        }
        RowData row = sink.serializer().serialize(element);
        if (batch.rowCount() == 0) {
            batchStartMs = timers.getCurrentProcessingTime();
            scheduleFlush(batchStartMs + flushIntervalMs);
        }
        batch.write(row);
        numRecordsSend.inc();
        if (batch.rowCount() >= sink.bufferRows() || batch.estimatedBytes() >= sink.bufferBytes()) {
            sendBatch();
        }
    }

    private void scheduleFlush(long at) {
        if (timerPending) {
            return;
        }
        timerPending = true;
        timers.registerTimer(at, this::onTimer);
    }

    private void onTimer(long now) throws IOException, InterruptedException {
        timerPending = false;
        if (closed || batch.rowCount() == 0) {
            return;
        }
        long due = batchStartMs + flushIntervalMs;
        if (now >= due) {
            sendBatch();
        } else {
            scheduleFlush(due);
        }
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
            stream = client.startPut(cmd, batch.root(), sink.maxInFlightBatches(), null);
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
        batch.finish();
        long bytes = batch.estimatedBytes();
        stream.putNext();
        numBytesSend.inc(bytes);
        batch.reset();
    }

    /**
     * Sends the buffer and blocks until the gateway acknowledged every sent batch as durable.
     *
     * @throws io.setats.flink.client.SetatsGatewayException with the gateway's message on error
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
