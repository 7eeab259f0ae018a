package io.setats.flink.sink.writer;

import java.util.Objects;

/**
 * SetatsWriterState is what an exactly-once writer subtask puts into a checkpoint: its commit
 * user and subtask index. On restore, the writer that receives it drops the rows that subtask
 * staged for checkpoints after the restored one (abort-staged, SPEC section 10), also when the
 * job was rescaled and that subtask no longer exists. At-least-once writers keep no state.
 */
public final class SetatsWriterState {

    private final String commitUser;
    private final int subtask;

    public SetatsWriterState(String commitUser, int subtask) {
        this.commitUser = commitUser;
        this.subtask = subtask;
    }

    public String commitUser() {
        return commitUser;
    }

    public int subtask() {
        return subtask;
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof SetatsWriterState
                && ((SetatsWriterState) o).subtask == subtask
                && ((SetatsWriterState) o).commitUser.equals(commitUser);
    }

    @Override
    public int hashCode() {
        return Objects.hash(commitUser, subtask);
    }

    @Override
    public String toString() {
        return "SetatsWriterState(" + commitUser + ", subtask " + subtask + ")";
    }
}
