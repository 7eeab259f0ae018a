package io.setats.flink.dts.source;

import io.setats.flink.client.GatewayClient;
import io.setats.flink.dts.DtsConfig;
import io.setats.proto.v1.CommitRequest;
import io.setats.proto.v1.Empty;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * DtsGroupCommitter sends a reader's consumer group position ({@code subscription-commit}, SPEC
 * section 11) on its own thread, so that the task thread never waits for the gateway (a commit is
 * a round trip plus the gateway's password check) and keeps emitting records meanwhile. Only the
 * newest position matters: a position handed over while an older one is still being sent replaces
 * any not yet sent. A failed commit is logged; the next completed checkpoint commits again.
 */
final class DtsGroupCommitter implements Runnable {
    private static final Logger LOG = LoggerFactory.getLogger(DtsGroupCommitter.class);

    /** How long {@link #close()} waits for a commit in flight, ms. */
    static final long CLOSE_WAIT_MS = 5_000;

    private final DtsConfig config;
    private final Object lock = new Object();
    private CommitRequest pending;
    private boolean closed;
    private Thread thread;
    private GatewayClient client;

    DtsGroupCommitter(DtsConfig config) {
        this.config = config;
    }

    /** Hands over the position to commit; returns at once. */
    void commit(CommitRequest req) {
        synchronized (lock) {
            if (closed) {
                return;
            }
            pending = req;
            if (thread == null) {
                thread = new Thread(this, "dts " + config.topic() + " group committer");
                thread.setDaemon(true);
                thread.start();
            }
            lock.notifyAll();
        }
    }

    @Override
    public void run() {
        while (true) {
            CommitRequest req;
            synchronized (lock) {
                while (pending == null && !closed) {
                    try {
                        lock.wait();
                    } catch (InterruptedException e) {
                        return;
                    }
                }
                if (pending == null) {
                    return; // closed with nothing left to send
                }
                req = pending;
                pending = null;
            }
            try {
                if (client == null) {
                    client = config.connect();
                }
                client.action("subscription-commit", req, Empty.parser());
                LOG.debug("{}: committed next id {}", config, req.getNextId());
            } catch (RuntimeException ex) {
                LOG.warn("{}: committing the group position {} failed: {}", config, req.getNextId(), ex.getMessage());
            }
        }
    }

    /** Sends what is still pending (waiting up to {@link #CLOSE_WAIT_MS}), then stops. */
    void close() throws InterruptedException {
        Thread t;
        synchronized (lock) {
            closed = true;
            t = thread;
            lock.notifyAll();
        }
        if (t != null) {
            t.join(CLOSE_WAIT_MS);
            if (t.isAlive()) {
                LOG.warn("{}: the last group commit did not finish within {} ms", config, CLOSE_WAIT_MS);
                t.interrupt();
            }
        }
        if (client != null && (t == null || !t.isAlive())) {
            client.close();
        }
    }
}
