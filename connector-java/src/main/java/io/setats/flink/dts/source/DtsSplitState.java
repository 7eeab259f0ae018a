package io.setats.flink.dts.source;

import io.setats.flink.dts.DtsRecord;

/** DtsSplitState is the mutable position of the split being read: the next id after the last emitted record. */
public final class DtsSplitState {
    private final DtsSplit split;
    private long nextId;
    private String clusterId;
    private long lastTimestampMs;
    private String lastCheckpoint;

    public DtsSplitState(DtsSplit split) {
        this.split = split;
        this.nextId = split.nextId();
        this.clusterId = split.clusterId();
        this.lastTimestampMs = split.lastTimestampMs();
        this.lastCheckpoint = split.lastCheckpoint();
    }

    /** Records that {@code r} was emitted. */
    public void emitted(DtsRecord r, String clusterId) {
        nextId = r.getId() + 1;
        lastTimestampMs = r.getSourceTimestampMs();
        lastCheckpoint = r.getCheckpoint();
        this.clusterId = clusterId;
    }

    public DtsSplit toSplit() {
        return new DtsSplit(split.channel(), nextId, split.startTimestampMs(), clusterId, lastTimestampMs, lastCheckpoint);
    }
}
