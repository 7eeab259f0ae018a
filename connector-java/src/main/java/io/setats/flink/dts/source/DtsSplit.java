package io.setats.flink.dts.source;

import org.apache.flink.api.connector.source.SourceSplit;

import java.io.Serializable;
import java.util.Objects;

/**
 * DtsSplit is the one split of a channel (SPEC section 11): the channel and its position.
 *
 * <p>{@code nextId} is the id of the next record to read, -1 while unresolved (a fresh start: the
 * reader resolves it from the group's committed position, else {@code startTimestampMs}, else the
 * channel's end). {@code clusterId} names the gateway cluster the position belongs to ("" while
 * unknown); {@code lastTimestampMs} is the source time of the last record read, which a restart
 * after a cluster change seeks by.
 */
public final class DtsSplit implements SourceSplit, Serializable {
    private static final long serialVersionUID = 1L;

    private final String channel;
    private final long nextId;
    private final long startTimestampMs;
    private final String clusterId;
    private final long lastTimestampMs;
    private final String lastCheckpoint;

    public DtsSplit(String channel, long nextId, long startTimestampMs, String clusterId, long lastTimestampMs, String lastCheckpoint) {
        this.channel = Objects.requireNonNull(channel);
        this.nextId = nextId;
        this.startTimestampMs = startTimestampMs;
        this.clusterId = clusterId == null ? "" : clusterId;
        this.lastTimestampMs = lastTimestampMs;
        this.lastCheckpoint = lastCheckpoint == null ? "" : lastCheckpoint;
    }

    /** A fresh split of channel starting at startTimestampMs (-1: none). */
    public static DtsSplit fresh(String channel, long startTimestampMs) {
        return new DtsSplit(channel, -1, startTimestampMs, "", -1, "");
    }

    @Override
    public String splitId() {
        return "channel-" + channel;
    }

    public String channel() {
        return channel;
    }

    public long nextId() {
        return nextId;
    }

    public long startTimestampMs() {
        return startTimestampMs;
    }

    public String clusterId() {
        return clusterId;
    }

    public long lastTimestampMs() {
        return lastTimestampMs;
    }

    public String lastCheckpoint() {
        return lastCheckpoint;
    }

    @Override
    public boolean equals(Object o) {
        if (!(o instanceof DtsSplit)) {
            return false;
        }
        DtsSplit s = (DtsSplit) o;
        return s.channel.equals(channel) && s.nextId == nextId && s.startTimestampMs == startTimestampMs
                && s.clusterId.equals(clusterId) && s.lastTimestampMs == lastTimestampMs
                && s.lastCheckpoint.equals(lastCheckpoint);
    }

    @Override
    public int hashCode() {
        return Objects.hash(channel, nextId, startTimestampMs, clusterId, lastTimestampMs, lastCheckpoint);
    }

    @Override
    public String toString() {
        return "DtsSplit{channel=" + channel + ", nextId=" + nextId + ", startTimestampMs=" + startTimestampMs
                + ", clusterId=" + clusterId + ", lastCheckpoint=" + lastCheckpoint + "}";
    }
}
