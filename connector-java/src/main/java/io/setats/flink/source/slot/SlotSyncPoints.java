package io.setats.flink.source.slot;

import io.setats.flink.client.GatewayClient;
import io.setats.flink.client.SetatsGatewayException;
import io.setats.flink.source.SetatsSourceConfig;
import io.setats.flink.source.split.SetatsSplit;
import io.setats.flink.source.split.TableBucket;
import io.setats.proto.v1.BucketSyncPoint;
import io.setats.proto.v1.RegisterSyncPointRequest;
import io.setats.proto.v1.SlotInfo;
import io.setats.proto.v1.SlotRequest;
import io.setats.proto.v1.SyncPointPosition;
import io.setats.proto.v1.SyncPointResponse;

import org.apache.flink.util.FlinkRuntimeException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import javax.annotation.Nullable;

import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * SlotSyncPoints registers one source reader's sync points in the source's slot (SPEC section 8,
 * DWS pgxc_register_binlog_sync_point):
 *
 * <ul>
 *   <li><b>Checkpoint points</b> only when a checkpoint completes: {@link #checkpointTaken} (from
 *       {@code snapshotState}) keeps the next offset of every split that checkpoint stored, and
 *       {@link #checkpointCompleted} (from {@code notifyCheckpointComplete}) registers exactly
 *       those, all in one call. A failure between the two registers nothing, so a restart from the
 *       slot never skips rows the failed checkpoint did not cover. Every changelog split is
 *       registered, also one that emitted nothing since the last checkpoint: an idle bucket's
 *       point is its end offset, so its lag reads 0. Splits in their snapshot phase ({@code
 *       initial}) and splits still waiting on a start timestamp have no changelog position yet and
 *       are left out (a restart from the slot gives those buckets the startup mode again).
 *   <li><b>Running points</b> (monitoring) every {@code slot.sync-point-size} rows per bucket, sent
 *       by a background thread without blocking the reader, best effort.
 * </ul>
 *
 * <p>Errors of a checkpoint registration: a slot owned by another job, expired or lost fails the
 * task at once with the gateway's message (naming slot, bucket, offsets); a point below the slot's
 * (a restore from an older checkpoint or savepoint: a sync point never moves backwards) leaves
 * that bucket's point where it is and registers the others; a transient failure (gateway
 * unavailable) is logged, and the next completed checkpoint registers newer points.
 *
 * <p>All methods but the background sender run in the task's mailbox thread.
 */
public final class SlotSyncPoints implements AutoCloseable {

    private static final Logger LOG = LoggerFactory.getLogger(SlotSyncPoints.class);

    private final SetatsSourceConfig config;
    private final String slot;
    private final String owner;
    private final int syncPointSize;

    /** Checkpoint id to the points that checkpoint stored (mailbox thread). */
    private final TreeMap<Long, List<SyncPointPosition>> taken = new TreeMap<>();
    /** Rows emitted per bucket since its last running point (mailbox thread). */
    private final Map<TableBucket, Integer> sinceRunning = new HashMap<>();
    /** Running points waiting for the sender. */
    private final Map<TableBucket, Long> runningDue = new ConcurrentHashMap<>();
    private final AtomicBoolean senderScheduled = new AtomicBoolean();
    private final ExecutorService sender;

    @Nullable private GatewayClient client;
    @Nullable private GatewayClient senderClient;

    public SlotSyncPoints(SetatsSourceConfig config, String owner) {
        this.config = config;
        this.slot = config.slotName();
        if (slot == null) {
            throw new IllegalArgumentException("the source has no slot.name");
        }
        this.owner = owner;
        this.syncPointSize = config.syncPointSize();
        this.sender =
                Executors.newSingleThreadExecutor(
                        r -> {
                            Thread t = new Thread(r, "setats-cdc running sync points " + config.tablePath() + " " + slot);
                            t.setDaemon(true);
                            return t;
                        });
    }

    /** The owner id (job id) the points are registered for. */
    public String owner() {
        return owner;
    }

    /** {@code snapshotState(checkpointId)} stored {@code splits}: keep their changelog positions. */
    public void checkpointTaken(long checkpointId, Collection<SetatsSplit> splits) {
        List<SyncPointPosition> points = new ArrayList<>();
        for (SetatsSplit s : splits) {
            if (s.snapshot() != null || s.startingTimestampMs() != null) {
                continue;
            }
            points.add(
                    SyncPointPosition.newBuilder()
                            .setPartition(s.tableBucket().partition())
                            .setBucket(s.tableBucket().bucket())
                            .setOffset(s.startingOffset())
                            .build());
        }
        taken.put(checkpointId, points);
        LOG.debug("Checkpoint {} of slot '{}' of table {} stores points {}", checkpointId, slot, config.tablePath(), points);
    }

    /** The checkpoint was aborted: its points are never registered. */
    public void checkpointAborted(long checkpointId) {
        taken.remove(checkpointId);
    }

    /**
     * {@code notifyCheckpointComplete(checkpointId)}: registers the points that checkpoint stored
     * (older pending ones are subsumed and dropped).
     *
     * @throws FlinkRuntimeException when the slot can no longer be used (see the class comment)
     */
    public void checkpointCompleted(long checkpointId) {
        List<SyncPointPosition> points = taken.get(checkpointId);
        taken.headMap(checkpointId, true).clear();
        LOG.info("Checkpoint {} completed: registering sync points {} in slot '{}' of table {}",
                checkpointId, points, slot, config.tablePath());
        if (points == null || points.isEmpty()) {
            return;
        }
        try {
            register(client(), points, true);
        } catch (SetatsGatewayException e) {
            if (SlotLease.isTransient(e)) {
                LOG.warn("Registering checkpoint {} sync points in slot '{}' of table {} failed; the next "
                        + "checkpoint registers newer ones: {}", checkpointId, slot, config.tablePath(), e.getMessage());
                return;
            }
            if ("FAILED_PRECONDITION".equals(e.code()) && e.getMessage().contains("never moves backwards")) {
                registerNotBelowSlot(points, checkpointId, e);
                return;
            }
            throw failure(checkpointId, e);
        }
    }

    /** Registers only the points not below the slot's (a restore from an older checkpoint). */
    private void registerNotBelowSlot(List<SyncPointPosition> points, long checkpointId, SetatsGatewayException first) {
        SyncPointResponse current =
                client().action(
                        "binlog-sync-point",
                        SlotRequest.newBuilder()
                                .setDatabase(config.database())
                                .setTable(config.table())
                                .setSlot(slot)
                                .setCheckpoint(true)
                                .build(),
                        SyncPointResponse.parser());
        Map<TableBucket, Long> slotPoints = new HashMap<>();
        for (BucketSyncPoint b : current.getBucketsList()) {
            if (b.getRegistered()) {
                slotPoints.put(new TableBucket(b.getPartition(), b.getBucket()), b.getLastSyncPoint());
            }
        }
        List<SyncPointPosition> ahead = new ArrayList<>();
        for (SyncPointPosition p : points) {
            Long cur = slotPoints.get(new TableBucket(p.getPartition(), p.getBucket()));
            if (cur == null || p.getOffset() >= cur) {
                ahead.add(p);
            }
        }
        LOG.warn("Checkpoint {} of the setats-cdc source of table {} is behind slot '{}' in some buckets (a "
                + "restore from an older checkpoint?): {}; registering the {} of {} points not behind it",
                checkpointId, config.tablePath(), slot, first.gatewayMessage(), ahead.size(), points.size());
        if (!ahead.isEmpty()) {
            try {
                register(client(), ahead, true);
            } catch (SetatsGatewayException e) {
                if (!SlotLease.isTransient(e)) {
                    throw failure(checkpointId, e);
                }
            }
        }
    }

    private FlinkRuntimeException failure(long checkpointId, SetatsGatewayException e) {
        return new FlinkRuntimeException(
                "The setats-cdc source of table " + config.tablePath() + " cannot register the sync points of "
                        + "checkpoint " + checkpointId + " in slot '" + slot + "' (job " + owner + "): "
                        + e.getMessage(),
                e);
    }

    /**
     * A changelog row was emitted; {@code nextOffset} is the split's position after it. Every
     * {@code slot.sync-point-size} rows of a bucket a running point is queued for the sender.
     */
    public void rowEmitted(TableBucket bucket, long nextOffset) {
        int n = sinceRunning.merge(bucket, 1, Integer::sum);
        if (n < syncPointSize) {
            return;
        }
        sinceRunning.put(bucket, 0);
        runningDue.put(bucket, nextOffset);
        if (senderScheduled.compareAndSet(false, true)) {
            sender.execute(this::sendRunning);
        }
    }

    private void sendRunning() {
        senderScheduled.set(false);
        List<SyncPointPosition> points = new ArrayList<>();
        for (Map.Entry<TableBucket, Long> e : runningDue.entrySet()) {
            if (runningDue.remove(e.getKey(), e.getValue())) {
                points.add(
                        SyncPointPosition.newBuilder()
                                .setPartition(e.getKey().partition())
                                .setBucket(e.getKey().bucket())
                                .setOffset(e.getValue())
                                .build());
            }
        }
        if (points.isEmpty()) {
            return;
        }
        try {
            if (senderClient == null) {
                senderClient = config.connect();
            }
            register(senderClient, points, false);
        } catch (RuntimeException e) {
            LOG.debug("Registering running sync points in slot '{}' of table {} failed (monitoring only): {}",
                    slot, config.tablePath(), e.getMessage());
        }
    }

    private SlotInfo register(GatewayClient c, List<SyncPointPosition> points, boolean checkpoint) {
        return c.action(
                "binlog-register-sync-point",
                RegisterSyncPointRequest.newBuilder()
                        .setDatabase(config.database())
                        .setTable(config.table())
                        .setSlot(slot)
                        .setOwner(owner)
                        .setCheckpoint(checkpoint)
                        .addAllPoints(points)
                        .build(),
                SlotInfo.parser());
    }

    private GatewayClient client() {
        if (client == null) {
            client = config.connect();
        }
        return client;
    }

    @Override
    public void close() {
        sender.shutdownNow();
        try {
            sender.awaitTermination(10, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        for (GatewayClient c : new GatewayClient[] {client, senderClient}) {
            if (c != null) {
                try {
                    c.close();
                } catch (RuntimeException e) {
                    LOG.debug("Closing a gateway client of slot '{}' failed", slot, e);
                }
            }
        }
    }
}
