package io.setats.flink.source.state;

import io.setats.flink.source.split.SetatsSplit;
import io.setats.flink.source.split.TableBucket;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Objects;
import java.util.Set;
import java.util.TreeSet;

/**
 * SetatsEnumeratorState is the checkpointed state of the split enumerator:
 *
 * <ul>
 *   <li>{@code startupResolved}: whether the startup mode was already resolved to offsets. Until
 *       then, a restored enumerator resolves it again; afterwards every newly found bucket reads
 *       from its earliest offset (SPEC section 5, read-case R3).
 *   <li>{@code assignedBuckets}: buckets handed to a reader; their positions live in the readers'
 *       state.
 *   <li>{@code pendingSplits}: splits found but not assigned yet, with their resolved positions
 *       (never a startup mode: restoring must not resolve "latest" again).
 * </ul>
 */
public final class SetatsEnumeratorState {

    private final boolean startupResolved;
    private final Set<TableBucket> assignedBuckets;
    private final List<SetatsSplit> pendingSplits;

    public SetatsEnumeratorState(
            boolean startupResolved, Set<TableBucket> assignedBuckets, List<SetatsSplit> pendingSplits) {
        this.startupResolved = startupResolved;
        this.assignedBuckets = Collections.unmodifiableSet(new TreeSet<>(assignedBuckets));
        this.pendingSplits = Collections.unmodifiableList(new ArrayList<>(pendingSplits));
    }

    /** The state of a fresh enumerator: nothing resolved, nothing assigned. */
    public static SetatsEnumeratorState initial() {
        return new SetatsEnumeratorState(false, Collections.emptySet(), Collections.emptyList());
    }

    public boolean startupResolved() {
        return startupResolved;
    }

    /** Buckets assigned to readers, ordered by partition then bucket. */
    public Set<TableBucket> assignedBuckets() {
        return assignedBuckets;
    }

    /** Splits not yet assigned, in discovery order. */
    public List<SetatsSplit> pendingSplits() {
        return pendingSplits;
    }

    @Override
    public boolean equals(Object o) {
        if (this == o) {
            return true;
        }
        if (!(o instanceof SetatsEnumeratorState)) {
            return false;
        }
        SetatsEnumeratorState that = (SetatsEnumeratorState) o;
        return startupResolved == that.startupResolved
                && assignedBuckets.equals(that.assignedBuckets)
                && pendingSplits.equals(that.pendingSplits);
    }

    @Override
    public int hashCode() {
        return Objects.hash(startupResolved, assignedBuckets, pendingSplits);
    }

    @Override
    public String toString() {
        return "SetatsEnumeratorState{startupResolved=" + startupResolved
                + ", assigned=" + assignedBuckets + ", pending=" + pendingSplits + "}";
    }
}
