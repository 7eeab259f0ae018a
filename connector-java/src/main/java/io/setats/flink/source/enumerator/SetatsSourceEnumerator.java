package io.setats.flink.source.enumerator;

import io.setats.flink.SetatsConnectorOptions.StartupMode;
import io.setats.flink.SetatsOptionsUtil;
import io.setats.flink.client.GatewayClient;
import io.setats.flink.client.SetatsGatewayException;
import io.setats.flink.source.SetatsSourceConfig;
import io.setats.flink.source.slot.SlotLease;
import io.setats.flink.source.slot.SlotOwner;
import io.setats.flink.source.split.SetatsSplit;
import io.setats.flink.source.split.SnapshotPosition;
import io.setats.flink.source.split.TableBucket;
import io.setats.flink.source.state.SetatsEnumeratorState;
import io.setats.flink.utils.ArrowRowDataReader;
import io.setats.proto.v1.BucketOffsets;
import io.setats.proto.v1.ListBucketsResponse;
import io.setats.proto.v1.LookupOffsetsRequest;
import io.setats.proto.v1.LookupOffsetsResponse;
import io.setats.proto.v1.Notification;
import io.setats.proto.v1.NotificationKind;
import io.setats.proto.v1.ResolvedOffset;
import io.setats.proto.v1.StartPosition;
import io.setats.proto.v1.TableInfo;

import org.apache.arrow.vector.types.pojo.Schema;
import org.apache.flink.api.connector.source.SplitEnumerator;
import org.apache.flink.api.connector.source.SplitEnumeratorContext;
import org.apache.flink.api.connector.source.SplitsAssignment;
import org.apache.flink.table.types.logical.RowType;
import org.apache.flink.util.FlinkRuntimeException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import javax.annotation.Nullable;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;

/**
 * SetatsSourceEnumerator finds the splits (one per partition and bucket) of the table and assigns
 * each to one reader (SPEC section 5).
 *
 * <ul>
 *   <li>At start it checks the table: it exists, the declared 'bucket'/'bucket-key' match it, the
 *       read columns exist with readable types, and learns the table id ({@code
 *       TableInfo.table_id}) that every split it creates carries, so readers can tell the gateway
 *       which table a position belongs to. It then resolves the startup mode to concrete
 *       offsets with {@code lookup-offsets} ({@code latest}: each bucket's end offset now, {@code
 *       earliest}: its oldest retained offset, {@code from-timestamp}: the first row committed at
 *       or after the timestamp, or a pending timestamp when the gateway cannot resolve it yet;
 *       {@code initial}: every bucket listed now starts with its snapshot phase, SPEC section 9).
 *       A table with {@code changelog.enabled = false} is refused at once, naming the option.
 *   <li>With {@code slot.name} it acquires the slot first ({@link SlotLease}; renewed every 10 s,
 *       released on close) and resolves the start in the order of SPEC section 9: a restored
 *       enumerator keeps its Flink state (the slot is then only re-acquired, starting over if it
 *       expired); otherwise a bucket with a checkpoint sync point in the slot starts there, and
 *       only the others follow the startup mode. An expired or lost slot fails the start naming it
 *       unless the mode is {@code initial}, which starts the slot over; a slot owned by another
 *       running job fails naming that job.
 *   <li>It then looks for new buckets with {@code list-buckets} every {@code
 *       bucket.discovery-interval}, and at once when the gateway's {@code watch} stream announces
 *       NEW_BUCKET (kept open on its own thread and reopened after failures; without it discovery
 *       still runs on the interval). A bucket found after start reads from its earliest retained
 *       offset (from the timestamp in from-timestamp mode), so a new partition's first rows are not
 *       lost (read-case R3); every row of such a bucket is after the start, so under {@code
 *       initial} its changelog from offset 0 is its snapshot plus incremental. Under {@code
 *       initial} a bucket found with rows already removed (start offset &gt; 0: retention or
 *       consume-then-clean ran before it was found) starts with its snapshot phase instead.
 *   <li>Splits go to readers as {@link SplitOwners#ownerOf} says, as soon as that reader is
 *       registered; the state ({@link SetatsEnumeratorState}) is the set of assigned buckets and
 *       the pending splits with their resolved positions.
 * </ul>
 *
 * <p>All fields are touched only in the coordinator thread; gateway calls run in the context's
 * worker thread ({@code callAsync}) and the watch loop on its own thread, which only posts to the
 * coordinator thread.
 */
public final class SetatsSourceEnumerator
        implements SplitEnumerator<SetatsSplit, SetatsEnumeratorState> {

    private static final Logger LOG = LoggerFactory.getLogger(SetatsSourceEnumerator.class);

    /** Table option that turns the changelog off (SPEC section 8). */
    private static final String CHANGELOG_ENABLED = "changelog.enabled";

    private final SplitEnumeratorContext<SetatsSplit> context;
    private final SetatsSourceConfig config;
    @Nullable private final RowType readType;
    private final boolean watchEnabled;

    private final Set<TableBucket> assigned = new TreeSet<>();
    private final Map<TableBucket, SetatsSplit> pending = new TreeMap<>();
    private boolean startupResolved;
    /** TableInfo.table_id learned from get-table at start; null until then. */
    @Nullable private String tableId;

    /** Splits retired since start (metric setatsRetiredSplits). */
    private long retiredSplits;

    private boolean discoveryInFlight;
    private boolean discoveryRequested;

    private GatewayClient client;
    private WatchLoop watchLoop;
    @Nullable private SlotLease lease;

    /**
     * @param readType the columns the readers read, checked against the table at start; null skips
     *     the check
     * @param watchEnabled whether to keep the gateway's watch stream open (tests turn it off to
     *     prove that interval discovery alone works)
     */
    public SetatsSourceEnumerator(
            SplitEnumeratorContext<SetatsSplit> context,
            SetatsSourceConfig config,
            @Nullable RowType readType,
            SetatsEnumeratorState state,
            boolean watchEnabled) {
        this.context = context;
        this.config = config;
        this.readType = readType;
        this.watchEnabled = watchEnabled;
        this.startupResolved = state.startupResolved();
        this.assigned.addAll(state.assignedBuckets());
        for (SetatsSplit split : state.pendingSplits()) {
            pending.put(split.tableBucket(), split);
        }
    }

    @Override
    public void start() {
        context.metricGroup().gauge("setatsAssignedSplits", () -> (long) assigned.size());
        context.metricGroup().gauge("setatsRetiredSplits", () -> retiredSplits);
        client = config.connect();
        if (config.slotName() != null) {
            lease = new SlotLease(config, SlotOwner.of(context.metricGroup(), config.slotName()));
        }
        if (watchEnabled) {
            watchLoop = new WatchLoop();
            watchLoop.start();
        }
        final boolean resolve = !startupResolved;
        context.callAsync(() -> checkTableAndResolve(resolve), this::onStartup);
    }

    // ------------------------------------------------------------------------------------------
    // Startup: check the table, resolve the startup mode (worker thread), then take the result
    // (coordinator thread).

    /** What the startup look at the table found (worker thread to coordinator thread). */
    private static final class Startup {
        final String tableId;
        /** The resolved splits, or null when the startup mode was resolved before (restore). */
        @Nullable final List<SetatsSplit> splits;

        Startup(String tableId, @Nullable List<SetatsSplit> splits) {
            this.tableId = tableId;
            this.splits = splits;
        }
    }

    private Startup checkTableAndResolve(boolean resolve) {
        TableInfo info =
                client.getTable(config.database(), config.table())
                        .orElseThrow(
                                () ->
                                        new FlinkRuntimeException(
                                                "Setats table "
                                                        + config.tablePath()
                                                        + " does not exist (gateway "
                                                        + config.managerUrl()
                                                        + ")"));
        SetatsOptionsUtil.checkLayoutMatches(config.layoutOptions(), info.getSpec());
        if (readType != null && !info.getArrowSchema().isEmpty()) {
            Schema schema = Schema.deserializeMessage(ByteBuffer.wrap(info.getArrowSchema().toByteArray()));
            try {
                ArrowRowDataReader.validate(readType, schema);
            } catch (IllegalArgumentException e) {
                throw new FlinkRuntimeException(
                        "The columns of the setats-cdc source do not match table "
                                + config.tablePath()
                                + ": "
                                + e.getMessage(),
                        e);
            }
        }
        if ("false".equalsIgnoreCase(info.getSpec().getOptionsMap().get(CHANGELOG_ENABLED))) {
            throw new FlinkRuntimeException(
                    "Setats table "
                            + config.tablePath()
                            + " has changelog.enabled = false (DWS enable_binlog off): it keeps no "
                            + "changelog for setats-cdc to read; re-create it with "
                            + "'changelog.enabled' = 'true', or read it as a bounded scan");
        }
        String id = info.getTableId();
        Map<TableBucket, Long> slotPoints = java.util.Collections.emptyMap();
        if (lease != null) {
            // A restore keeps its Flink state: the slot only has to be ours again (SPEC section 9).
            boolean reset = !resolve || config.startupMode() == StartupMode.INITIAL;
            slotPoints = lease.acquire(client, reset);
        }
        if (!resolve) {
            return new Startup(id, null);
        }
        Startup byMode = resolveByMode(id);
        if (slotPoints.isEmpty()) {
            return byMode;
        }
        // The slot's checkpoint sync points win over the startup mode, bucket by bucket.
        List<SetatsSplit> splits = new ArrayList<>();
        for (SetatsSplit split : byMode.splits) {
            Long point = slotPoints.get(split.tableBucket());
            splits.add(point != null ? SetatsSplit.atOffset(split.tableBucket(), point, id) : split);
        }
        LOG.info("Table {} starts from slot '{}' where it has sync points {}", config.tablePath(),
                config.slotName(), slotPoints);
        return new Startup(id, splits);
    }

    private Startup resolveByMode(String id) {
        LookupOffsetsRequest.Builder req =
                LookupOffsetsRequest.newBuilder()
                        .setDatabase(config.database())
                        .setTable(config.table());
        StartupMode mode = config.startupMode();
        if (mode == StartupMode.INITIAL) {
            // Every bucket starts with its snapshot phase (SPEC section 9).
            List<SetatsSplit> splits = new ArrayList<>();
            for (BucketOffsets b : listBuckets().getBucketsList()) {
                splits.add(
                        SetatsSplit.inSnapshot(
                                new TableBucket(b.getPartition(), b.getBucket()), SnapshotPosition.start(), id));
            }
            return new Startup(id, splits);
        }
        switch (mode) {
            case EARLIEST:
                req.setPosition(StartPosition.EARLIEST);
                break;
            case LATEST:
                req.setPosition(StartPosition.LATEST);
                break;
            case FROM_TIMESTAMP:
                req.setTimestampMs(config.startupTimestampMs());
                break;
            default:
                throw new IllegalStateException("Unknown startup mode " + mode);
        }
        LookupOffsetsResponse resp = client.lookupOffsets(req.build());
        List<SetatsSplit> splits = new ArrayList<>();
        for (ResolvedOffset r : resp.getOffsetsList()) {
            TableBucket tb = new TableBucket(r.getPartition(), r.getBucket());
            if (mode == StartupMode.FROM_TIMESTAMP && !r.getResolved()) {
                splits.add(SetatsSplit.atTimestamp(tb, r.getOffset(), config.startupTimestampMs(), id));
            } else {
                splits.add(SetatsSplit.atOffset(tb, r.getOffset(), id));
            }
        }
        return new Startup(id, splits);
    }

    private void onStartup(@Nullable Startup startup, @Nullable Throwable error) {
        if (error != null) {
            throw new FlinkRuntimeException(
                    "The setats-cdc source of table "
                            + config.tablePath()
                            + " could not start: "
                            + error.getMessage(),
                    error);
        }
        tableId = startup.tableId;
        LOG.info("Table {} has table id {}", config.tablePath(), tableId);
        List<SetatsSplit> resolved = startup.splits;
        if (resolved != null) {
            for (SetatsSplit split : resolved) {
                addIfNew(split);
            }
            startupResolved = true;
            LOG.info(
                    "Resolved startup mode {} of table {} to {}",
                    config.startupMode(),
                    config.tablePath(),
                    resolved);
        }
        long interval = config.discoveryInterval().toMillis();
        context.callAsync(this::listBuckets, this::onBucketsListed, interval, interval);
        if (lease != null) {
            context.callAsync(
                    () -> {
                        lease.renew(client);
                        return null;
                    },
                    (ignored, err) -> {
                        if (err != null) {
                            throw new FlinkRuntimeException(err.getMessage(), err);
                        }
                    },
                    SlotLease.HEARTBEAT_MS,
                    SlotLease.HEARTBEAT_MS);
        }
        // Close the gap between the startup lookup and the first interval.
        requestDiscovery();
        assignPending();
    }

    // ------------------------------------------------------------------------------------------
    // Discovery

    private ListBucketsResponse listBuckets() {
        return client.listBuckets(config.database(), config.table());
    }

    /** Runs one discovery soon; coalesces requests while one is running. Coordinator thread. */
    private void requestDiscovery() {
        if (!startupResolved || tableId == null) {
            // The startup lookup sees every bucket, and new splits need the table id it learns:
            // discovery starts after it.
            return;
        }
        if (discoveryInFlight) {
            discoveryRequested = true;
            return;
        }
        discoveryInFlight = true;
        context.callAsync(
                this::listBuckets,
                (resp, err) -> {
                    discoveryInFlight = false;
                    onBucketsListed(resp, err);
                    if (discoveryRequested) {
                        discoveryRequested = false;
                        requestDiscovery();
                    }
                });
    }

    private void onBucketsListed(@Nullable ListBucketsResponse resp, @Nullable Throwable error) {
        if (error != null) {
            LOG.warn(
                    "Looking for new buckets of table {} failed; trying again later",
                    config.tablePath(),
                    error);
            return;
        }
        List<SetatsSplit> found = new ArrayList<>();
        for (BucketOffsets b : resp.getBucketsList()) {
            TableBucket tb = new TableBucket(b.getPartition(), b.getBucket());
            if (assigned.contains(tb) || pending.containsKey(tb)) {
                continue;
            }
            // A bucket that appeared after start: read it from its first retained row. Under
            // 'initial', when rows below its start offset were removed (retention or
            // consume-then-clean) before it was found, its changelog alone misses them: read it
            // through its snapshot, then the changelog from the view's end offset (SPEC section 9).
            SetatsSplit split;
            if (config.startupMode() == StartupMode.INITIAL && b.getStartOffset() > 0) {
                split = SetatsSplit.inSnapshot(tb, SnapshotPosition.start(), tableId);
            } else if (config.startupMode() == StartupMode.FROM_TIMESTAMP) {
                split = SetatsSplit.atTimestamp(tb, b.getStartOffset(), config.startupTimestampMs(), tableId);
            } else {
                split = SetatsSplit.atOffset(tb, b.getStartOffset(), tableId);
            }
            found.add(split);
            pending.put(tb, split);
        }
        if (!found.isEmpty()) {
            LOG.info("Found new buckets of table {}: {}", config.tablePath(), found);
            assignPending();
        }
    }

    private void addIfNew(SetatsSplit split) {
        TableBucket tb = split.tableBucket();
        if (!assigned.contains(tb) && !pending.containsKey(tb)) {
            pending.put(tb, split);
        }
    }

    // ------------------------------------------------------------------------------------------
    // Assignment

    private void assignPending() {
        int parallelism = context.currentParallelism();
        Map<Integer, List<SetatsSplit>> assignment = new HashMap<>();
        Iterator<Map.Entry<TableBucket, SetatsSplit>> it = pending.entrySet().iterator();
        while (it.hasNext()) {
            Map.Entry<TableBucket, SetatsSplit> e = it.next();
            int owner = SplitOwners.ownerOf(e.getKey(), parallelism);
            if (context.registeredReaders().containsKey(owner)) {
                assignment.computeIfAbsent(owner, k -> new ArrayList<>()).add(e.getValue());
                assigned.add(e.getKey());
                it.remove();
            }
        }
        if (!assignment.isEmpty()) {
            LOG.info("Assigning splits of table {}: {}", config.tablePath(), assignment);
            context.assignSplits(new SplitsAssignment<>(assignment));
        }
    }

    @Override
    public void handleSplitRequest(int subtaskId, @Nullable String requesterHostname) {
        // Splits are pushed when found; readers never ask.
    }

    @Override
    public void addSplitsBack(List<SetatsSplit> splits, int subtaskId) {
        LOG.info("Splits {} of table {} come back from reader {}", splits, config.tablePath(), subtaskId);
        for (SetatsSplit split : splits) {
            assigned.remove(split.tableBucket());
            pending.put(split.tableBucket(), split);
        }
        assignPending();
    }

    /**
     * A reader finished splits because their partition was dropped ({@link SplitsRetiredEvent}):
     * they leave the assigned buckets (and the state of the next checkpoint) and are never assigned
     * again. A restore from a checkpoint taken before the drop gives them back to readers, which
     * finish them at once (the gateway ends their DoGets the same way) and report them here again.
     */
    @Override
    public void handleSourceEvent(int subtaskId, org.apache.flink.api.connector.source.SourceEvent event) {
        if (event instanceof SplitsRetiredEvent) {
            List<TableBucket> buckets = ((SplitsRetiredEvent) event).buckets();
            for (TableBucket tb : buckets) {
                assigned.remove(tb);
                pending.remove(tb);
            }
            retiredSplits += buckets.size();
            LOG.info("Splits {} of table {} retired by reader {} (partition dropped)", buckets, config.tablePath(), subtaskId);
        }
    }

    @Override
    public void addReader(int subtaskId) {
        assignPending();
    }

    @Override
    public SetatsEnumeratorState snapshotState(long checkpointId) {
        return new SetatsEnumeratorState(startupResolved, assigned, new ArrayList<>(pending.values()));
    }

    @Override
    public void close() {
        if (watchLoop != null) {
            watchLoop.close();
        }
        if (lease != null && client != null) {
            lease.release(client);
        }
        if (client != null) {
            client.close();
        }
    }

    // ------------------------------------------------------------------------------------------
    // Watch: NEW_BUCKET notifications trigger discovery at once.

    private final class WatchLoop implements Runnable {
        private static final long MIN_BACKOFF_MS = 500;
        private static final long MAX_BACKOFF_MS = 30_000;

        private final Thread thread;
        private volatile boolean running = true;
        private volatile GatewayClient.WatchStream current;

        WatchLoop() {
            thread = new Thread(this, "setats-cdc watch " + config.tablePath());
            thread.setDaemon(true);
        }

        void start() {
            thread.start();
        }

        @Override
        public void run() {
            long backoff = MIN_BACKOFF_MS;
            while (running) {
                try (GatewayClient.WatchStream stream = client.watch(config.database(), config.table())) {
                    current = stream;
                    while (running && stream.hasNext()) {
                        Notification n = stream.next();
                        if (n.getKind() == NotificationKind.READY) {
                            backoff = MIN_BACKOFF_MS;
                            // Anything that happened while not subscribed is found by this look.
                            context.runInCoordinatorThread(SetatsSourceEnumerator.this::requestDiscovery);
                        } else if (n.getKind() == NotificationKind.NEW_BUCKET && isOurTable(n)) {
                            LOG.debug("NEW_BUCKET {} of table {}", n, config.tablePath());
                            context.runInCoordinatorThread(SetatsSourceEnumerator.this::requestDiscovery);
                        }
                    }
                } catch (SetatsGatewayException e) {
                    if (running) {
                        LOG.info(
                                "The watch stream of table {} failed ({}); discovery keeps running "
                                        + "every {}, reconnecting in {} ms",
                                config.tablePath(),
                                e.getMessage(),
                                config.discoveryInterval(),
                                backoff);
                    }
                } catch (RuntimeException e) {
                    if (running) {
                        LOG.warn("The watch loop of table {} failed", config.tablePath(), e);
                    }
                } finally {
                    current = null;
                }
                if (!running) {
                    break;
                }
                try {
                    Thread.sleep(backoff); // reconnect back-off, not on the read path
                } catch (InterruptedException e) {
                    break;
                }
                backoff = Math.min(backoff * 2, MAX_BACKOFF_MS);
            }
        }

        private boolean isOurTable(Notification n) {
            return n.getDatabase().equals(config.database()) && n.getTable().equals(config.table());
        }

        void close() {
            running = false;
            GatewayClient.WatchStream s = current;
            if (s != null) {
                s.close();
            }
            thread.interrupt();
            try {
                thread.join(10_000);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
    }
}
