package io.setats.flink.source.split;

import java.util.Arrays;
import java.util.Objects;

/**
 * SnapshotPosition is where the snapshot phase of a {@code startup.mode = 'initial'} split stands
 * (SPEC section 9): the rows of every key {@code <= afterKey} were emitted as they are at the
 * bucket's changelog offset {@code viewOffset}, and no row of a key {@code > afterKey} was emitted.
 * A fresh split has no key yet ({@code afterKey} empty, {@code viewOffset} -1: no view taken).
 *
 * <p>A restore resumes after {@code afterKey} on a new view with end offset E' {@code >=
 * viewOffset}: it first emits the changelog {@code [viewOffset, E')} of the keys {@code <=
 * afterKey} (moving {@code viewOffset} row by row), then the snapshot rows after the key at E',
 * then the changelog from E'. Immutable.
 */
public final class SnapshotPosition {

    private static final byte[] NO_KEY = new byte[0];

    private final long viewOffset;
    private final byte[] afterKey;

    /**
     * @param viewOffset changelog offset the emitted keys are at; -1 when no view was taken yet
     * @param afterKey the last key emitted (the {@code _key} of the snapshot read); empty: none
     */
    public SnapshotPosition(long viewOffset, byte[] afterKey) {
        Objects.requireNonNull(afterKey, "afterKey");
        if (viewOffset < -1) {
            throw new IllegalArgumentException("viewOffset must be >= -1, got " + viewOffset);
        }
        if (afterKey.length > 0 && viewOffset < 0) {
            throw new IllegalArgumentException("a snapshot position with a key needs its view offset");
        }
        this.viewOffset = viewOffset;
        this.afterKey = afterKey.length == 0 ? NO_KEY : afterKey.clone();
    }

    /** The position of a split whose snapshot has not started. */
    public static SnapshotPosition start() {
        return new SnapshotPosition(-1, NO_KEY);
    }

    /** Changelog offset the emitted keys are at; -1 before the first view. */
    public long viewOffset() {
        return viewOffset;
    }

    /** The last key emitted (a copy); empty when none was. */
    public byte[] afterKey() {
        return afterKey.clone();
    }

    /** Whether any snapshot row was emitted (a restore must then catch up). */
    public boolean hasKey() {
        return afterKey.length > 0;
    }

    @Override
    public boolean equals(Object o) {
        if (this == o) {
            return true;
        }
        if (!(o instanceof SnapshotPosition)) {
            return false;
        }
        SnapshotPosition that = (SnapshotPosition) o;
        return viewOffset == that.viewOffset && Arrays.equals(afterKey, that.afterKey);
    }

    @Override
    public int hashCode() {
        return 31 * Long.hashCode(viewOffset) + Arrays.hashCode(afterKey);
    }

    @Override
    public String toString() {
        return afterKey.length == 0
                ? "snapshot not started"
                : "snapshot at offset " + viewOffset + " after a key of " + afterKey.length + " bytes";
    }
}
