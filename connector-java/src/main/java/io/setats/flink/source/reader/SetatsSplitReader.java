package io.setats.flink.source.reader;

import io.setats.flink.client.GatewayClient;
import io.setats.flink.source.SetatsSourceConfig;
import io.setats.flink.source.deserializer.ChangelogRecord;
import io.setats.flink.source.split.SetatsSplit;

import org.apache.flink.connector.base.source.reader.RecordsBySplits;
import org.apache.flink.connector.base.source.reader.RecordsWithSplitIds;
import org.apache.flink.connector.base.source.reader.splitreader.SplitReader;
import org.apache.flink.connector.base.source.reader.splitreader.SplitsAddition;
import org.apache.flink.connector.base.source.reader.splitreader.SplitsChange;
import org.apache.flink.connector.base.source.reader.splitreader.SplitsRemoval;
import org.apache.flink.table.types.logical.RowType;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * SetatsSplitReader reads all splits of one source reader, each through its own live DoGet stream
 * ({@link BucketStream}). The streams hand converted record batches over through one bounded
 * {@link Handover}; {@link #fetch()} blocks on it until the gateway pushes rows (no polling timer) or {@link
 * #wakeUp()} is called, and returns one record batch of one split per call, in the order the
 * bucket's stream produced them.
 *
 * <p>Used by one fetcher thread ({@code SingleThreadFetcherManager}); {@link #wakeUp()} may be
 * called from other threads. A stream that breaks transiently (the gateway restarting, UNAVAILABLE,
 * the stream ended) reconnects from the offset after its last row with back-off ({@link
 * Reconnect}, {@code scan.reconnect-timeout}). A stream that fails for good (OutOfRange for an
 * expired position, NotFound, an offset gap, or no progress within the reconnect timeout) makes
 * {@link #fetch()} throw an {@link IOException} carrying the gateway's message, which fails the
 * task: the job restarts from its last checkpoint or fails.
 */
public final class SetatsSplitReader implements SplitReader<ChangelogRecord, SetatsSplit> {

    private static final Logger LOG = LoggerFactory.getLogger(SetatsSplitReader.class);

    /** Record batches waiting for the fetcher, shared by all streams of this reader. */
    static final int HANDOVER_CAPACITY = 16;

    private static final Object WAKE_UP = new Object();
    private static final long CLOSE_WAIT_MS = 10_000;

    private final SetatsSourceConfig config;
    private final RowType readType;
    private final String threadNamePrefix;
    private final GatewayClient client;
    private final Reconnect.Settings retry;
    private final Handover handover = new Handover(HANDOVER_CAPACITY);
    private final Map<String, BucketStream> streams = new LinkedHashMap<>();
    private final Set<String> finishedSplits = new HashSet<>();

    public SetatsSplitReader(SetatsSourceConfig config, RowType readType, int subtaskIndex) {
        this.config = config;
        this.readType = readType;
        this.threadNamePrefix =
                "setats-cdc " + config.tablePath() + " reader " + subtaskIndex;
        this.client = config.connect();
        this.retry = Reconnect.Settings.withTimeout(config.reconnectTimeout());
    }

    @Override
    public RecordsWithSplitIds<ChangelogRecord> fetch() throws IOException {
        Object next;
        try {
            next = handover.take();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return finishedOnly();
        }
        if (next instanceof BucketStream.Failure) {
            BucketStream.Failure f = (BucketStream.Failure) next;
            if (streams.containsKey(f.splitId)) {
                Throwable c = f.cause;
                throw c instanceof IOException ? (IOException) c : new IOException(c.getMessage(), c);
            }
            return finishedOnly();
        }
        if (next instanceof BucketStream.Batch) {
            BucketStream.Batch b = (BucketStream.Batch) next;
            if (streams.containsKey(b.splitId)) {
                RecordsBySplits.Builder<ChangelogRecord> out = new RecordsBySplits.Builder<>();
                out.addAll(b.splitId, b.records);
                out.addFinishedSplits(drainFinished());
                return out.build();
            }
        }
        return finishedOnly(); // WAKE_UP, or a batch of a split removed meanwhile
    }

    private RecordsWithSplitIds<ChangelogRecord> finishedOnly() {
        RecordsBySplits.Builder<ChangelogRecord> out = new RecordsBySplits.Builder<>();
        out.addFinishedSplits(drainFinished());
        return out.build();
    }

    private Set<String> drainFinished() {
        Set<String> done = new HashSet<>(finishedSplits);
        finishedSplits.clear();
        return done;
    }

    @Override
    public void handleSplitsChanges(SplitsChange<SetatsSplit> splitsChanges) {
        if (splitsChanges instanceof SplitsAddition) {
            for (SetatsSplit split : splitsChanges.splits()) {
                if (streams.containsKey(split.splitId())) {
                    LOG.warn("Split {} is already being read; ignoring it again", split);
                    continue;
                }
                LOG.info("Reading {} of table {}", split, config.tablePath());
                BucketStream s =
                        new BucketStream(
                                client,
                                config.database(),
                                config.table(),
                                split,
                                readType,
                                handover,
                                threadNamePrefix,
                                retry);
                streams.put(split.splitId(), s);
                s.start();
            }
        } else if (splitsChanges instanceof SplitsRemoval) {
            List<BucketStream> removed = new ArrayList<>();
            for (SetatsSplit split : splitsChanges.splits()) {
                BucketStream s = streams.remove(split.splitId());
                if (s != null) {
                    s.close();
                    removed.add(s);
                    finishedSplits.add(split.splitId());
                }
            }
            joinAll(removed);
            wakeUp();
        } else {
            throw new UnsupportedOperationException(
                    "Unsupported split change " + splitsChanges.getClass().getName());
        }
    }

    @Override
    public void wakeUp() {
        handover.add(WAKE_UP);
    }

    @Override
    public void pauseOrResumeSplits(
            Collection<SetatsSplit> splitsToPause, Collection<SetatsSplit> splitsToResume) {
        for (SetatsSplit split : splitsToPause) {
            BucketStream s = streams.get(split.splitId());
            if (s != null) {
                s.pause();
            }
        }
        for (SetatsSplit split : splitsToResume) {
            BucketStream s = streams.get(split.splitId());
            if (s != null) {
                s.resume();
            }
        }
    }

    /** Number of live bucket streams (for tests and metrics). */
    int liveStreams() {
        return streams.size();
    }

    @Override
    public void close() throws Exception {
        List<BucketStream> all = new ArrayList<>(streams.values());
        streams.clear();
        for (BucketStream s : all) {
            s.close();
        }
        handover.close(); // releases streams waiting to hand over
        joinAll(all);
        try {
            client.close();
        } catch (RuntimeException e) {
            LOG.warn("Closing the gateway client of {} failed", config.tablePath(), e);
        }
    }

    private void joinAll(List<BucketStream> all) {
        for (BucketStream s : all) {
            try {
                if (!s.join(CLOSE_WAIT_MS)) {
                    LOG.warn("The stream of split {} did not stop within {} ms", s.splitId(), CLOSE_WAIT_MS);
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return;
            }
        }
    }
}
