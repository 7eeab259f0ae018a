package io.setats.flink.sink.committer;

import io.setats.flink.client.ConnectionOptions;
import io.setats.flink.client.GatewayClient;
import io.setats.flink.client.SetatsGatewayException;
import io.setats.flink.sink.SetatsSinkTestHooks;
import io.setats.proto.v1.CatalogContext;
import io.setats.proto.v1.CommitStagedResponse;

import org.apache.flink.api.connector.sink2.Committer;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.util.Collection;

/**
 * SetatsCommitter commits the rows exactly-once writers staged for a checkpoint once it has
 * completed (SPEC section 10): one {@code commit-staged} per committable, which the gateway
 * applies in one atomic batch per call and answers {@code already_committed} for a checkpoint
 * it committed before (a restore re-commits the committables of the restored checkpoint, so a
 * commit whose answer was lost is not applied twice).
 *
 * <p>While the gateway is unreachable (restarting), a commit is retried for {@link
 * #RETRY_TIMEOUT_MS}; after that, and on a refusal (the staged rows expired after {@code
 * sink.transaction-timeout}, or were dropped), the commit throws, which fails the job: its
 * restore commits again.
 */
public final class SetatsCommitter implements Committer<SetatsCommittable> {

    private static final Logger LOG = LoggerFactory.getLogger(SetatsCommitter.class);

    /** How long a commit is retried while the gateway is unreachable (ms). */
    public static final long RETRY_TIMEOUT_MS = 60_000;

    private final ConnectionOptions connection;
    private final CatalogContext catalog;
    private final int subtask;
    private GatewayClient client;

    public SetatsCommitter(ConnectionOptions connection, CatalogContext catalog, int subtask) {
        this.connection = connection;
        this.catalog = catalog;
        this.subtask = subtask;
    }

    @Override
    public void commit(Collection<CommitRequest<SetatsCommittable>> requests)
            throws IOException, InterruptedException {
        for (CommitRequest<SetatsCommittable> r : requests) {
            commitOne(r.getCommittable());
        }
    }

    private void commitOne(SetatsCommittable c) throws IOException, InterruptedException {
        runHook(SetatsSinkTestHooks.beforeCommit, c);
        long deadline = System.currentTimeMillis() + RETRY_TIMEOUT_MS;
        long backoff = 100;
        while (true) {
            try {
                if (client == null) {
                    client = GatewayClient.connect(connection, catalog);
                }
                CommitStagedResponse res =
                        client.commitStaged(
                                c.database(),
                                c.table(),
                                c.commitUser(),
                                c.subtask(),
                                c.checkpointId());
                if (res.getAlreadyCommitted()) {
                    LOG.info("Setats committer {}: {} was committed before", subtask, c);
                } else {
                    LOG.debug(
                            "Setats committer {}: committed {}: {} changelog rows",
                            subtask,
                            c,
                            res.getChangelogRows());
                }
                break;
            } catch (SetatsGatewayException e) {
                if (!e.isRetryable() || System.currentTimeMillis() + backoff > deadline) {
                    throw new IOException("commit of " + c + " failed: " + e.getMessage(), e);
                }
                LOG.warn("Setats committer {}: {}; retrying {}", subtask, e.getMessage(), c);
                if (client != null) {
                    client.close();
                    client = null;
                }
                Thread.sleep(backoff);
                backoff = Math.min(backoff * 2, 2_000);
            }
        }
        runHook(SetatsSinkTestHooks.afterCommit, c);
    }

    private void runHook(SetatsSinkTestHooks.Hook hook, SetatsCommittable c) throws IOException {
        if (hook == null) {
            return;
        }
        try {
            hook.run(subtask, c.checkpointId());
        } catch (IOException | RuntimeException e) {
            throw e;
        } catch (Exception e) {
            throw new IOException(e);
        }
    }

    @Override
    public void close() {
        if (client != null) {
            client.close();
            client = null;
        }
    }
}
