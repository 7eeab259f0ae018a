package io.setats.flink.source.reader;

import io.setats.flink.client.GatewayClient;
import io.setats.flink.source.SetatsSourceConfig;
import io.setats.flink.source.deserializer.ChangelogRecord;
import io.setats.flink.source.split.SetatsSplit;
import io.setats.flink.utils.ArrowColumnarBatch;

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
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * SetatsSplitReader reads all splits of one source reader on the reader's single fetcher thread
 * ({@code SingleThreadFetcherManager}): no thread per split. Each split keeps its own live DoGet
 * ({@link BucketStream}); gRPC delivers the messages of all of them and queues the split whose
 * DoGet has a message in {@link ReadySplits}. {@link #fetch()} waits on that queue (no polling
 * timer) until a split is ready or {@link #wakeUp()} is called, takes one record batch of the
 * head split and returns it ({@link BatchRecords}: the batch's rows through one reused cursor,
 * the batch's Arrow memory released when Flink recycles the fetch, or when the source reader closes:
 * {@link FetchedBatches}, not when this split reader closes); a split with more batches goes back to the tail of the queue, so
 * splits with a backlog take turns batch by batch. A split's batches come in the order its bucket's
 * stream produced them.
 *
 * <p>Back pressure and memory: the fetcher thread blocks while Flink's element queue is full and
 * then reads nothing, so each DoGet stops at the few record batches Arrow Flight requests ahead
 * (see {@link BucketStream}), and gRPC's flow control stops the gateway.
 *
 * <p>{@link #wakeUp()} and {@link #pauseOrResumeSplits} may be called from other threads. A stream
 * that breaks transiently (the gateway restarting, UNAVAILABLE, the stream ended) reconnects from
 * the offset after its last row with back-off ({@link Reconnect}, {@code scan.reconnect-timeout})
 * while the other splits go on. A stream that fails for good (OutOfRange for an expired position,
 * NotFound, an offset gap, or no progress within the reconnect timeout) makes {@link #fetch()} throw
 * an {@link IOException} carrying the gateway's message, which fails the task: the job restarts
 * from its last checkpoint or fails.
 */
public final class SetatsSplitReader implements SplitReader<ChangelogRecord, SetatsSplit> {

    private static final Logger LOG = LoggerFactory.getLogger(SetatsSplitReader.class);

    private final SetatsSourceConfig config;
    private final RowType readType;
    private final GatewayClient client;
    private final Reconnect.Settings retry;
    private final ReadySplits ready = new ReadySplits();
    private final Map<String, BucketStream> streams = new ConcurrentHashMap<>();
    private final Set<String> finishedSplits = new HashSet<>();
    /**
     * Batches handed to the task thread and not recycled yet: they outlive {@link #close()} (Flink
     * closes an idle split reader while its fetches are still queued), released when recycled or
     * when the source reader closes.
     */
    private final FetchedBatches fetched;
    /** Whether {@link #fetched} is this reader's own (no source reader to release it). */
    private final boolean ownsFetched;
    private final boolean binaryRows;

    /**
     * A split reader on its own (no source reader): {@link #close()} also releases the batches it
     * handed out and that were not recycled.
     *
     * @param subtaskIndex the source subtask (unused since the reader has no threads to name)
     */
    public SetatsSplitReader(SetatsSourceConfig config, RowType readType, int subtaskIndex) {
        this(config, readType, subtaskIndex, false);
    }

    /** As {@link #SetatsSplitReader(SetatsSourceConfig, RowType, int)}, with binary rows or not. */
    public SetatsSplitReader(SetatsSourceConfig config, RowType readType, int subtaskIndex, boolean binaryRows) {
        this(config, readType, subtaskIndex, binaryRows, new FetchedBatches(), true);
    }

    /**
     * @param subtaskIndex the source subtask (unused since the reader has no threads to name)
     * @param binaryRows whether the rows handed to the task thread are written into a reused {@code
     *     BinaryRowData} ({@link ArrowColumnarBatch#emitBinaryRows()}: for jobs without object
     *     reuse, whose chained operators get a copy of every row) instead of the batch's view
     * @param fetched the source reader's batches ({@link SetatsSourceReader} releases those never
     *     recycled when it closes)
     */
    public SetatsSplitReader(
            SetatsSourceConfig config, RowType readType, int subtaskIndex, boolean binaryRows, FetchedBatches fetched) {
        this(config, readType, subtaskIndex, binaryRows, fetched, false);
    }

    private SetatsSplitReader(
            SetatsSourceConfig config,
            RowType readType,
            int subtaskIndex,
            boolean binaryRows,
            FetchedBatches fetched,
            boolean ownsFetched) {
        this.fetched = fetched;
        this.ownsFetched = ownsFetched;
        this.binaryRows = binaryRows;
        this.config = config;
        this.readType = readType;
        this.client = config.connect();
        this.retry = Reconnect.Settings.withTimeout(config.reconnectTimeout());
    }

    @Override
    public RecordsWithSplitIds<ChangelogRecord> fetch() throws IOException {
        while (true) {
            long waitMs = reconnectDueStreams();
            Object next;
            try {
                next = ready.take(waitMs);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return finishedOnly();
            }
            if (next == ReadySplits.WOKEN_UP) {
                return finishedOnly();
            }
            if (next == null) {
                continue; // a back-off is over
            }
            BucketStream s = (BucketStream) next;
            if (streams.get(s.splitId()) != s || s.isPaused()) {
                continue; // removed meanwhile, or paused: resume() queues it again
            }
            BucketStream.Fetched rows = s.poll();
            if (s.isRetired()) {
                // The split's partition was dropped: the split is finished (SourceReaderBase
                // drops it from the reader's state; the enumerator is told, SplitsRetiredEvent).
                streams.remove(s.splitId());
                finishedSplits.add(s.splitId());
                return finishedOnly();
            }
            if (s.hasWork() && !s.isPaused()) {
                ready.signal(s);
            }
            if (rows != null) {
                if (rows.batch == null) {
                    return BatchRecords.ofRecords(s.splitId(), rows.markers, drainFinished());
                }
                if (!fetched.add(this, rows.batch)) {
                    return finishedOnly(); // the source reader is closed: the batch was released
                }
                if (binaryRows) {
                    rows.batch.emitBinaryRows();
                }
                return BatchRecords.ofBatch(s.splitId(), rows.batch, rows.cursor, drainFinished(), fetched::recycled);
            }
        }
    }

    /**
     * Reopens the streams whose reconnect back-off is over.
     *
     * @return ms until the next back-off ends, or -1 when no stream waits
     */
    private long reconnectDueStreams() {
        long now = System.currentTimeMillis();
        long nextAt = Long.MAX_VALUE;
        for (BucketStream s : streams.values()) {
            s.reconnectIfDue(now);
            long at = s.reconnectAtMs();
            if (at >= 0) {
                nextAt = Math.min(nextAt, at);
            }
        }
        return nextAt == Long.MAX_VALUE ? -1 : Math.max(1, nextAt - now);
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
                                client, config.database(), config.table(), split, readType, ready, retry);
                streams.put(split.splitId(), s);
                s.start();
            }
        } else if (splitsChanges instanceof SplitsRemoval) {
            for (SetatsSplit split : splitsChanges.splits()) {
                BucketStream s = streams.remove(split.splitId());
                if (s != null) {
                    s.close();
                    finishedSplits.add(split.splitId());
                }
            }
            wakeUp();
        } else {
            throw new UnsupportedOperationException(
                    "Unsupported split change " + splitsChanges.getClass().getName());
        }
    }

    @Override
    public void wakeUp() {
        ready.wakeUp();
    }

    @Override
    public void pauseOrResumeSplits(
            Collection<SetatsSplit> splitsToPause, Collection<SetatsSplit> splitsToResume) {
        // Called from the task thread while the fetcher may run: the map is concurrent and a
        // BucketStream's pause state is thread-safe.
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

    /** Number of splits being read (for tests and metrics). */
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
        // The batches handed out stay readable (Flink may still emit the fetches it queued):
        // the client, whose allocator owns their memory, closes after the last one is released.
        fetched.closeAfterLast(this, this::closeClient);
        if (ownsFetched) {
            fetched.releaseAll();
        }
    }

    private void closeClient() {
        try {
            client.close();
        } catch (RuntimeException e) {
            LOG.warn("Closing the gateway client of {} failed", config.tablePath(), e);
        }
    }
}
