package io.setats.flink.source.batch;

import javax.annotation.Nullable;

/**
 * SnapshotSplitState is the mutable progress of a {@link SnapshotSplit} in a reader: the resume
 * key of the last row emitted. Reader (task) thread only.
 */
final class SnapshotSplitState {

    private final SnapshotSplit split;
    @Nullable private byte[] lastKey;

    SnapshotSplitState(SnapshotSplit split) {
        this.split = split;
        this.lastKey = split.afterKey();
    }

    void emitted(byte[] key) {
        lastKey = key;
    }

    /** The split resuming after the last row emitted. */
    SnapshotSplit toSplit() {
        return split.withAfterKey(lastKey);
    }
}
