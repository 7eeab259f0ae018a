package io.setats.flink.source.reader;

import io.setats.flink.client.SetatsGatewayException;
import io.setats.flink.source.split.TableBucket;

import org.apache.arrow.flight.FlightRuntimeException;

import java.io.IOException;
import java.io.Serializable;
import java.time.Duration;

/**
 * Reconnect is the retry policy of one bucket stream's changelog DoGet: after a transient failure
 * (the gateway unreachable or restarting, the stream broken or ended by the gateway) the stream
 * reopens from the offset after the last row it handed over, waiting an exponential back-off
 * ({@link Settings#initialBackoffMs()} doubling up to {@link Settings#maxBackoffMs()}) between
 * attempts. The retry window restarts whenever rows arrived since the previous failure; a stream
 * without progress for longer than {@link Settings#timeoutMs()} ({@code scan.reconnect-timeout})
 * fails with an {@link IOException} naming the gateway call, the bucket and the last error. Not
 * thread-safe: one per stream thread.
 */
final class Reconnect {

    /** Back-off and window of the reconnection of changelog streams; immutable, serializable. */
    static final class Settings implements Serializable {
        private static final long serialVersionUID = 1L;

        /** Defaults: 100 ms first back-off, 5 s at most, 5 min without progress. */
        static final Settings DEFAULT = new Settings(100, 5_000, Duration.ofMinutes(5).toMillis());

        private final long initialBackoffMs;
        private final long maxBackoffMs;
        private final long timeoutMs;

        /**
         * @throws IllegalArgumentException when a value is negative or the initial back-off is 0 or
         *     larger than the maximum
         */
        Settings(long initialBackoffMs, long maxBackoffMs, long timeoutMs) {
            if (initialBackoffMs <= 0 || maxBackoffMs < initialBackoffMs || timeoutMs < 0) {
                throw new IllegalArgumentException(
                        String.format(
                                "reconnect back-off %d..%d ms and timeout %d ms: need 0 < initial <= max, timeout >= 0",
                                initialBackoffMs, maxBackoffMs, timeoutMs));
            }
            this.initialBackoffMs = initialBackoffMs;
            this.maxBackoffMs = maxBackoffMs;
            this.timeoutMs = timeoutMs;
        }

        /** Settings with the given window (0: fail at the first transient failure) and default back-off. */
        static Settings withTimeout(Duration timeout) {
            long ms = timeout.toMillis();
            return new Settings(
                    DEFAULT.initialBackoffMs, Math.max(DEFAULT.initialBackoffMs, Math.min(DEFAULT.maxBackoffMs, ms)), ms);
        }

        long initialBackoffMs() {
            return initialBackoffMs;
        }

        long maxBackoffMs() {
            return maxBackoffMs;
        }

        long timeoutMs() {
            return timeoutMs;
        }
    }

    /** The gateway ended a follow stream, which never ends on its own while the gateway runs. */
    static final class StreamEndedException extends IOException {
        private static final long serialVersionUID = 1L;

        StreamEndedException(String message) {
            super(message);
        }
    }

    private final Settings settings;
    private final String call;
    private final TableBucket bucket;
    private long windowStartMs = -1;
    private long backoffMs;
    private int attempts;

    /** @param call names the DoGet and the gateway (GatewayClient#describe), for the failure message */
    Reconnect(Settings settings, String call, TableBucket bucket) {
        this.settings = settings;
        this.call = call;
        this.bucket = bucket;
        this.backoffMs = settings.initialBackoffMs();
    }

    /** Whether {@code t} may go away on a new stream (see the class comment). */
    static boolean isTransient(Throwable t) {
        if (t instanceof StreamEndedException) {
            return true;
        }
        if (t instanceof SetatsGatewayException) {
            return ((SetatsGatewayException) t).isRetryable();
        }
        if (t instanceof FlightRuntimeException) {
            return SetatsGatewayException.of("", t).isRetryable();
        }
        return false;
    }

    /**
     * Records a transient failure at {@code nowMs}.
     *
     * @param progressed whether rows arrived since the previous failure (restarts the window)
     * @return ms to wait before the next attempt
     * @throws IOException naming the call, the bucket and {@code cause} when the window is over
     */
    long failed(Throwable cause, boolean progressed, long nowMs) throws IOException {
        if (progressed || windowStartMs < 0) {
            windowStartMs = nowMs;
            backoffMs = settings.initialBackoffMs();
            attempts = 0;
        }
        attempts++;
        long elapsed = nowMs - windowStartMs;
        if (elapsed >= settings.timeoutMs()) {
            throw new IOException(
                    String.format(
                            "%s: gave up reconnecting the changelog stream of %s after %d attempt(s) over %d ms "
                                    + "without a row (scan.reconnect-timeout = %d ms); last error: %s",
                            call, bucket, attempts, elapsed, settings.timeoutMs(), cause.getMessage()),
                    cause);
        }
        long wait = Math.min(backoffMs, settings.timeoutMs() - elapsed);
        backoffMs = Math.min(backoffMs * 2, settings.maxBackoffMs());
        return wait;
    }

    /** {@link #failed(Throwable, boolean, long)} now. */
    long failed(Throwable cause, boolean progressed) throws IOException {
        return failed(cause, progressed, System.currentTimeMillis());
    }

    /** Attempts since the window started. */
    int attempts() {
        return attempts;
    }

    /** Settings in use. */
    Settings settings() {
        return settings;
    }

    @Override
    public String toString() {
        return "Reconnect{" + call + " " + bucket + " attempts=" + attempts + "}";
    }
}
