package io.setats.flink.source.batch;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Objects;

/**
 * SnapshotEnumeratorState is the checkpoint of a {@link SnapshotEnumerator}: whether the buckets
 * were listed already, and the splits not yet assigned (assigned splits are in the readers'
 * state). Immutable.
 */
public final class SnapshotEnumeratorState {

    private final boolean listed;
    private final List<SnapshotSplit> pending;

    public SnapshotEnumeratorState(boolean listed, List<SnapshotSplit> pending) {
        this.listed = listed;
        this.pending = Collections.unmodifiableList(new ArrayList<>(pending));
    }

    /** The state of a scan that has not listed its buckets yet. */
    public static SnapshotEnumeratorState initial() {
        return new SnapshotEnumeratorState(false, Collections.emptyList());
    }

    /** Whether the buckets were listed (then {@link #pending()} is all that is left to assign). */
    public boolean listed() {
        return listed;
    }

    /** Splits not assigned yet, in assignment order. */
    public List<SnapshotSplit> pending() {
        return pending;
    }

    @Override
    public boolean equals(Object o) {
        if (!(o instanceof SnapshotEnumeratorState)) {
            return false;
        }
        SnapshotEnumeratorState s = (SnapshotEnumeratorState) o;
        return listed == s.listed && pending.equals(s.pending);
    }

    @Override
    public int hashCode() {
        return Objects.hash(listed, pending);
    }

    @Override
    public String toString() {
        return "SnapshotEnumeratorState{listed=" + listed + ", pending=" + pending + "}";
    }
}
