package io.setats.flink.client;

import io.setats.proto.v1.WriteAck;
import io.setats.proto.v1.WriteCommand;

import com.google.protobuf.InvalidProtocolBufferException;
import org.apache.arrow.flight.FlightClient;
import org.apache.arrow.flight.FlightDescriptor;
import org.apache.arrow.flight.PutResult;
import org.apache.arrow.memory.ArrowBuf;
import org.apache.arrow.vector.VectorSchemaRoot;

import java.time.Duration;
import java.util.ArrayDeque;
import java.util.function.Consumer;

/**
 * PutStream is one open DoPut (proto/README.md): the caller fills the stream's {@link
 * VectorSchemaRoot} and calls {@link #putNext()} per record batch; the gateway answers each batch
 * with a {@link WriteAck} once it is durable.
 *
 * <p>Threading: putNext/awaitAcks/complete/close are called by one thread (the sink writer);
 * acks and errors arrive on gRPC threads. At most {@code maxInFlight} batches are unacknowledged:
 * putNext blocks beyond that (back pressure). The first gateway error is kept and thrown, as a
 * {@link SetatsGatewayException} with the gateway's message, by every later call.
 *
 * <p>Buffers: after putNext the root's buffers are still referenced by the queued message, so the
 * caller must {@code clear()} the root (new buffers) rather than overwrite them in place.
 *
 * <p>Ack timeout: a batch not acknowledged within {@code ackTimeout} of being sent, or one that
 * could not be handed to gRPC within it (the stream never became ready: a gateway that accepts the
 * connection and answers nothing), fails the stream with a {@code DEADLINE_EXCEEDED} {@link SetatsGatewayException} naming the table, the gateway and
 * the batch (its sequence number and rows), and cancels the DoPut. Every wait in this class is
 * bounded by it, and {@link #checkAckTimeout()} lets an idle caller (a timer) detect it without
 * waiting: a stream can fail but never hang.
 */
public final class PutStream implements AutoCloseable {

    /** Default of {@code setats.sink.ack-timeout}. */
    public static final Duration DEFAULT_ACK_TIMEOUT = Duration.ofSeconds(60);

    private final String call;
    private final int maxInFlight;
    private final long ackTimeoutNanos;
    private final Consumer<WriteAck> onAck;
    private volatile Consumer<RuntimeException> onFailure;
    private volatile java.util.function.Predicate<WriteAck> ackFilter;
    private final Object lock = new Object();
    private FlightClient.ClientStreamListener stream;

    // Written under lock; volatile so that idle() reads them without it.
    private volatile long sent;
    private volatile long acked;
    private long ackedRows;
    private volatile RuntimeException failure;
    private boolean serverDone;
    private boolean completed;
    /** Per unacknowledged batch, in send order: {System.nanoTime() when sent, rows}. */
    private final ArrayDeque<long[]> pending = new ArrayDeque<>();

    private PutStream(String call, int maxInFlight, Duration ackTimeout, Consumer<WriteAck> onAck) {
        this.call = call;
        this.maxInFlight = Math.max(1, maxInFlight);
        long t = ackTimeout == null ? DEFAULT_ACK_TIMEOUT.toNanos() : ackTimeout.toNanos();
        this.ackTimeoutNanos = t <= 0 ? DEFAULT_ACK_TIMEOUT.toNanos() : t;
        this.onAck = onAck;
    }

    static PutStream start(
            FlightClient client,
            WriteCommand command,
            VectorSchemaRoot root,
            int maxInFlight,
            Duration ackTimeout,
            Consumer<WriteAck> onAck,
            String call) {
        PutStream ps = new PutStream(call, maxInFlight, ackTimeout, onAck);
        try {
            ps.stream =
                    client.startPut(
                            FlightDescriptor.command(command.toByteArray()), root, ps.listener());
        } catch (RuntimeException e) {
            throw SetatsGatewayException.of(call, e);
        }
        return ps;
    }

    private FlightClient.PutListener listener() {
        return new FlightClient.PutListener() {
            @Override
            public void onNext(PutResult val) {
                WriteAck ack;
                try {
                    ArrowBuf meta = val.getApplicationMetadata();
                    byte[] bytes = new byte[meta == null ? 0 : (int) meta.readableBytes()];
                    if (bytes.length > 0) {
                        meta.getBytes(meta.readerIndex(), bytes);
                    }
                    ack = WriteAck.parseFrom(bytes);
                } catch (InvalidProtocolBufferException | RuntimeException e) {
                    fail(
                            new SetatsGatewayException(
                                    call,
                                    "INTERNAL",
                                    "unparsable WriteAck: " + e.getMessage(),
                                    e));
                    return;
                }
                java.util.function.Predicate<WriteAck> filter = ackFilter;
                if (filter != null && filter.test(ack)) {
                    fail(
                            new SetatsGatewayException(
                                    call,
                                    "UNAVAILABLE",
                                    "WriteAck of batch " + ack.getBatchSeq() + " dropped (test hook)",
                                    null));
                    cancelQuietly();
                    return;
                }
                synchronized (lock) {
                    if (ack.getBatchSeq() != acked) {
                        failLocked(
                                new SetatsGatewayException(
                                        call,
                                        "INTERNAL",
                                        "WriteAck for batch "
                                                + ack.getBatchSeq()
                                                + " while batch "
                                                + acked
                                                + " was next",
                                        null));
                        return;
                    }
                    acked++;
                    ackedRows += ack.getRows();
                    pending.pollFirst();
                    lock.notifyAll();
                }
                if (onAck != null) {
                    onAck.accept(ack);
                }
            }

            @Override
            public void onError(Throwable t) {
                fail(SetatsGatewayException.of(call, t));
            }

            @Override
            public void onCompleted() {
                synchronized (lock) {
                    serverDone = true;
                    lock.notifyAll();
                }
            }

            @Override
            public void getResult() {
                // Completion is tracked through onCompleted/onError.
            }

            /**
             * Ends Arrow's busy wait in {@code ClientStreamListener.putNext}, which loops until
             * the call is ready or this is true: a failed call (refused, timed out, closed) is
             * never ready again, and a cancelled Flink task (interrupted thread) must not spin
             * there either. The batch then goes to a dead call, which drops and frees it.
             */
            @Override
            public boolean isCancelled() {
                return failure != null || Thread.currentThread().isInterrupted();
            }
        };
    }

    private void fail(RuntimeException e) {
        synchronized (lock) {
            failLocked(e);
        }
    }

    private void failLocked(RuntimeException e) {
        boolean first = failure == null;
        if (first) {
            failure = e;
        }
        lock.notifyAll();
        Consumer<RuntimeException> hook = onFailure;
        if (first && hook != null && !completed) {
            hook.accept(e);
        }
    }

    /**
     * Sets a filter asked for every WriteAck (tests only): true drops the ack and breaks the
     * stream (UNAVAILABLE) as if the connection had been lost before it arrived.
     */
    public void setAckFilter(java.util.function.Predicate<WriteAck> filter) {
        this.ackFilter = filter;
    }

    private void cancelQuietly() {
        try {
            stream.error(new RuntimeException("setats: stream abandoned"));
        } catch (RuntimeException ignored) {
            // The stream may already be gone.
        }
    }

    /**
     * Sets a hook called once, on a gRPC thread, with the stream's first failure (not after
     * {@link #close()}), e.g. to fail a Flink task without waiting for its next write.
     */
    public void setOnFailure(Consumer<RuntimeException> hook) {
        this.onFailure = hook;
    }

    /**
     * Sends the root's current rows as the next record batch. Blocks while {@code maxInFlight}
     * batches are unacknowledged, at most until the oldest one's ack timeout, and while the gRPC
     * stream is not ready, at most one ack timeout.
     *
     * @throws SetatsGatewayException when the stream failed (gateway error, ack timeout, a stream
     *     that never became ready)
     */
    public void putNext() throws InterruptedException {
        putNext(-1);
    }

    /**
     * Like {@link #putNext()}; {@code rows} (the batch's row count, -1 unknown) is named in an ack
     * timeout's message.
     */
    public void putNext(int rows) throws InterruptedException {
        synchronized (lock) {
            while (failure == null && !serverDone && sent - acked >= maxInFlight) {
                waitForAckLocked();
            }
            checkLocked();
            if (serverDone) {
                throw new SetatsGatewayException(
                        call, "INTERNAL", "the gateway ended the DoPut stream early", null);
            }
            // Arrow's putNext waits for the gRPC stream to be ready and never returns when the
            // stream broke meanwhile (gateway killed) or never became ready (a gateway that
            // accepts the connection and answers nothing): wait here, where a failure, the oldest
            // batch's ack timeout or -- with nothing pending -- this batch's own ack timeout ends
            // the wait.
            long waitStart = System.nanoTime();
            while (failure == null && !serverDone && !stream.isReady()) {
                long[] oldest = pending.peekFirst();
                long now = System.nanoTime();
                if (oldest != null && now - oldest[0] >= ackTimeoutNanos) {
                    timeoutLocked(oldest);
                    break;
                }
                if (oldest == null && now - waitStart >= ackTimeoutNanos) {
                    notReadyLocked(rows, now - waitStart);
                    break;
                }
                lock.wait(5);
            }
            checkLocked();
            pending.addLast(new long[] {System.nanoTime(), rows});
            sent++;
        }
        try {
            stream.putNext();
        } catch (RuntimeException e) {
            fail(SetatsGatewayException.of(call, e));
            check();
        }
    }

    /**
     * Blocks until every sent batch is acknowledged (durable), at most until the oldest
     * unacknowledged batch's ack timeout.
     *
     * @throws SetatsGatewayException when the stream failed before that (gateway error, ack
     *     timeout)
     */
    public void awaitAcks() throws InterruptedException {
        synchronized (lock) {
            while (failure == null && acked < sent && !serverDone) {
                waitForAckLocked();
            }
            checkLocked();
            if (acked < sent) {
                throw new SetatsGatewayException(
                        call,
                        "INTERNAL",
                        "the gateway ended the DoPut stream with "
                                + (sent - acked)
                                + " batch(es) unacknowledged",
                        null);
            }
        }
    }

    /** Waits for an ack or a failure, no longer than the oldest pending batch's deadline. */
    private void waitForAckLocked() throws InterruptedException {
        long[] oldest = pending.peekFirst();
        if (oldest == null) {
            lock.wait();
            return;
        }
        long left = oldest[0] + ackTimeoutNanos - System.nanoTime();
        if (left <= 0) {
            timeoutLocked(oldest);
            return;
        }
        lock.wait(Math.max(1, left / 1_000_000), 0);
    }

    /**
     * Fails the stream when its oldest unacknowledged batch has waited longer than the ack
     * timeout (cheap when nothing is pending). For a caller that is not waiting, e.g. an idle
     * sink writer's timer.
     *
     * @throws SetatsGatewayException when the stream failed (then or before)
     */
    public void checkAckTimeout() {
        synchronized (lock) {
            long[] oldest = pending.peekFirst();
            if (failure == null
                    && oldest != null
                    && System.nanoTime() - oldest[0] >= ackTimeoutNanos) {
                timeoutLocked(oldest);
            }
            checkLocked();
        }
    }

    /**
     * Milliseconds until the oldest unacknowledged batch's ack timeout (0 when due), or -1 when
     * every sent batch is acknowledged.
     */
    public long msUntilAckTimeout() {
        synchronized (lock) {
            long[] oldest = pending.peekFirst();
            if (oldest == null) {
                return -1;
            }
            long left = oldest[0] + ackTimeoutNanos - System.nanoTime();
            return left <= 0 ? 0 : Math.max(1, left / 1_000_000);
        }
    }

    private void timeoutLocked(long[] oldest) {
        long seq = acked;
        long waitedMs = (System.nanoTime() - oldest[0]) / 1_000_000;
        String rows = oldest[1] >= 0 ? oldest[1] + " rows" : "rows unknown";
        failLocked(
                new SetatsGatewayException(
                        call,
                        "DEADLINE_EXCEEDED",
                        "batch "
                                + seq
                                + " ("
                                + rows
                                + ") was not acknowledged within "
                                + ackTimeoutNanos / 1_000_000
                                + " ms (waited "
                                + waitedMs
                                + " ms; "
                                + (sent - acked)
                                + " batch(es) unacknowledged; option 'setats.sink.ack-timeout')",
                        null));
        // Tell the gateway too, and let gRPC free the call; the stream is unusable from now on.
        cancelQuietly("setats: batch " + seq + " not acknowledged in time");
    }

    /**
     * Fails the stream when batch {@code sent} could not even be handed to gRPC within the ack
     * timeout: the stream never became ready (no HTTP/2 connection, or no flow-control window),
     * with no earlier batch pending whose timeout would have fired.
     */
    private void notReadyLocked(int rows, long waitedNanos) {
        failLocked(
                new SetatsGatewayException(
                        call,
                        "DEADLINE_EXCEEDED",
                        "batch "
                                + sent
                                + " ("
                                + (rows >= 0 ? rows + " rows" : "rows unknown")
                                + ") could not be sent within "
                                + ackTimeoutNanos / 1_000_000
                                + " ms (waited "
                                + waitedNanos / 1_000_000
                                + " ms): the DoPut stream never became ready, the gateway is not"
                                + " answering (option 'setats.sink.ack-timeout')",
                        null));
        cancelQuietly("setats: batch " + sent + " could not be sent in time");
    }

    private void cancelQuietly(String why) {
        FlightClient.ClientStreamListener s = stream;
        if (s == null) {
            return;
        }
        try {
            s.error(new RuntimeException(why));
        } catch (RuntimeException ignored) {
            // Already gone.
        }
    }

    /** Throws the stream's failure, if any (cheap: one volatile read). */
    public void check() {
        RuntimeException f = failure;
        if (f != null) {
            throw f;
        }
    }

    private void checkLocked() {
        if (failure != null) {
            throw failure;
        }
    }

    /** Whether the stream has failed. */
    public boolean failed() {
        return failure != null;
    }

    /** Batches sent so far. */
    public long sentBatches() {
        synchronized (lock) {
            return sent;
        }
    }

    /**
     * Whether every sent batch is acknowledged (no lock: cheap enough to call per row). A failed
     * stream is not idle.
     */
    public boolean idle() {
        return failure == null && sent == acked;
    }

    /** Batches sent and not yet acknowledged. */
    public long inFlightBatches() {
        synchronized (lock) {
            return sent - acked;
        }
    }

    /** Batches acknowledged so far. */
    public long ackedBatches() {
        synchronized (lock) {
            return acked;
        }
    }

    /** Rows acknowledged so far (sum of WriteAck.rows). */
    public long ackedRows() {
        synchronized (lock) {
            return ackedRows;
        }
    }

    /**
     * Waits for every ack, half-closes the stream and waits for the gateway to end it.
     *
     * @throws SetatsGatewayException on a gateway error
     */
    public void complete() throws InterruptedException {
        awaitAcks();
        synchronized (lock) {
            if (completed) {
                return;
            }
            completed = true;
        }
        stream.completed();
        long deadline = System.nanoTime() + ackTimeoutNanos;
        synchronized (lock) {
            while (failure == null && !serverDone) {
                long left = deadline - System.nanoTime();
                if (left <= 0) {
                    failure =
                            new SetatsGatewayException(
                                    call,
                                    "DEADLINE_EXCEEDED",
                                    "the gateway did not end the completed DoPut stream within "
                                            + ackTimeoutNanos / 1_000_000
                                            + " ms (option 'setats.sink.ack-timeout')",
                                    null);
                    break;
                }
                lock.wait(Math.max(1, left / 1_000_000), 0);
            }
            checkLocked();
        }
    }

    /** Cancels the stream unless it was completed; safe to call twice. */
    @Override
    public void close() {
        boolean cancel;
        synchronized (lock) {
            cancel = !completed && !serverDone;
            completed = true;
            if (failure == null && cancel) {
                failure =
                        new SetatsGatewayException(call, "CANCELLED", "stream closed", null);
            }
            lock.notifyAll();
        }
        if (cancel && stream != null) {
            try {
                stream.error(new RuntimeException("setats sink writer closed"));
            } catch (RuntimeException ignored) {
                // The stream may already be gone.
            }
        }
    }
}
