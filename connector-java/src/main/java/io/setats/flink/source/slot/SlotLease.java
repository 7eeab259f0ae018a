package io.setats.flink.source.slot;

import io.setats.flink.client.GatewayClient;
import io.setats.flink.client.SetatsGatewayException;
import io.setats.flink.source.SetatsSourceConfig;
import io.setats.flink.source.split.TableBucket;
import io.setats.proto.v1.AcquireSlotRequest;
import io.setats.proto.v1.SlotBucket;
import io.setats.proto.v1.SlotInfo;
import io.setats.proto.v1.SlotRequest;

import org.apache.flink.util.FlinkRuntimeException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.Map;
import java.util.TreeMap;

/**
 * SlotLease is the enumerator's hold on the source's slot ({@code slot.name}; SPEC sections 8-9,
 * proto/README.md "Binlog actions"): {@link #acquire} takes the slot for the job at start
 * ({@code binlog-acquire-slot}, creating it when absent) and returns its checkpoint sync points,
 * {@link #renew} is the heartbeat (every {@link #HEARTBEAT_MS}, lease {@link #LEASE_MS}) and
 * {@link #release} gives it up when the enumerator closes. Gateway errors become {@link
 * FlinkRuntimeException}s that keep the gateway's message, which names the slot and says what to
 * do: owned by another running job (its id), expired ({@code slot.ttl}; {@code startup.mode =
 * 'initial'} starts it over), lost (retention removed rows it needed: bucket and offsets), {@code
 * changelog.enabled = false}.
 */
public final class SlotLease {

    private static final Logger LOG = LoggerFactory.getLogger(SlotLease.class);

    /** Ownership lease asked for (ms). */
    public static final long LEASE_MS = 60_000;

    /** How often the enumerator renews the lease (ms). */
    public static final long HEARTBEAT_MS = 10_000;

    private final SetatsSourceConfig config;
    private final String slot;
    private final String owner;
    private volatile boolean acquired;

    public SlotLease(SetatsSourceConfig config, String owner) {
        this.config = config;
        this.slot = config.slotName();
        if (slot == null) {
            throw new IllegalArgumentException("the source has no slot.name");
        }
        this.owner = owner;
    }

    /** The slot's name. */
    public String slot() {
        return slot;
    }

    /** The owner id (job id) this lease uses. */
    public String owner() {
        return owner;
    }

    /**
     * Acquires the slot for this job.
     *
     * @param reset an expired or lost slot starts over instead of failing ({@code initial}, or a
     *     restore from Flink state, which is the position then)
     * @return the checkpoint sync point of every bucket the slot registered, by bucket
     * @throws FlinkRuntimeException naming the slot, table and the gateway's reason
     */
    public Map<TableBucket, Long> acquire(GatewayClient client, boolean reset) {
        SlotInfo info = call(client, reset, "start");
        acquired = true;
        if (info.getCreated()) {
            LOG.info("Created slot '{}' of table {} for job {}", slot, config.tablePath(), owner);
        }
        Map<TableBucket, Long> points = new TreeMap<>();
        for (SlotBucket b : info.getBucketsList()) {
            points.put(new TableBucket(b.getPartition(), b.getBucket()), b.getCheckpointOffset());
        }
        LOG.info("Acquired slot '{}' of table {} for job {}: checkpoint sync points {}",
                slot, config.tablePath(), owner, points);
        return points;
    }

    /**
     * Renews the lease (heartbeat). A slot taken over by another job meanwhile, or expired or lost,
     * throws; a transient failure (gateway unavailable) is logged and tried again next time.
     */
    public void renew(GatewayClient client) {
        try {
            call(client, false, "heartbeat");
        } catch (FlinkRuntimeException e) {
            if (e.getCause() instanceof SetatsGatewayException && isTransient((SetatsGatewayException) e.getCause())) {
                LOG.warn("Renewing slot '{}' of table {} failed; trying again in {} ms: {}",
                        slot, config.tablePath(), HEARTBEAT_MS, e.getMessage());
                return;
            }
            throw e;
        }
    }

    /**
     * Gives the slot up (the job stops); its sync points stay. Nothing when it was never acquired;
     * failures are only logged.
     */
    public void release(GatewayClient client) {
        if (!acquired) {
            return;
        }
        try {
            client.action(
                    "binlog-release-slot",
                    SlotRequest.newBuilder()
                            .setDatabase(config.database())
                            .setTable(config.table())
                            .setSlot(slot)
                            .setOwner(owner)
                            .build(),
                    io.setats.proto.v1.Empty.parser());
        } catch (RuntimeException e) {
            LOG.warn("Releasing slot '{}' of table {} failed (its lease ends by itself): {}",
                    slot, config.tablePath(), e.getMessage());
        }
    }

    private SlotInfo call(GatewayClient client, boolean reset, String why) {
        try {
            return client.action(
                    "binlog-acquire-slot",
                    AcquireSlotRequest.newBuilder()
                            .setDatabase(config.database())
                            .setTable(config.table())
                            .setSlot(slot)
                            .setOwner(owner)
                            .setReset(reset)
                            .setLeaseMs(LEASE_MS)
                            .build(),
                    SlotInfo.parser());
        } catch (SetatsGatewayException e) {
            throw new FlinkRuntimeException(
                    "The setats-cdc source of table " + config.tablePath() + " cannot use slot '" + slot
                            + "' (" + why + ", job " + owner + "): " + e.getMessage(),
                    e);
        }
    }

    /** Whether a gateway error may go away by itself (the call is worth repeating later). */
    static boolean isTransient(SetatsGatewayException e) {
        switch (e.code()) {
            case "UNAVAILABLE":
            case "DEADLINE_EXCEEDED":
            case "CANCELLED":
            case "TIMED_OUT":
            case "UNKNOWN":
            case "INTERNAL":
            case "RESOURCE_EXHAUSTED":
                return true;
            default:
                return false;
        }
    }
}
