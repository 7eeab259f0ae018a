package io.setats.flink.sink.committer;

import java.util.Objects;

/**
 * SetatsCommittable names the rows an exactly-once writer subtask staged for one checkpoint
 * (SPEC section 10): the commit user (job and sink), the writer subtask, the staging checkpoint
 * id, the table, and how many rows were staged (for logs).
 */
public final class SetatsCommittable {

    private final String commitUser;
    private final int subtask;
    private final long checkpointId;
    private final String database;
    private final String table;
    private final long rows;

    public SetatsCommittable(
            String commitUser,
            int subtask,
            long checkpointId,
            String database,
            String table,
            long rows) {
        this.commitUser = commitUser;
        this.subtask = subtask;
        this.checkpointId = checkpointId;
        this.database = database;
        this.table = table;
        this.rows = rows;
    }

    public String commitUser() {
        return commitUser;
    }

    public int subtask() {
        return subtask;
    }

    /** The checkpoint id the rows were staged for (committed by commit-staged). */
    public long checkpointId() {
        return checkpointId;
    }

    public String database() {
        return database;
    }

    public String table() {
        return table;
    }

    public long rows() {
        return rows;
    }

    @Override
    public boolean equals(Object o) {
        if (!(o instanceof SetatsCommittable)) {
            return false;
        }
        SetatsCommittable c = (SetatsCommittable) o;
        return subtask == c.subtask
                && checkpointId == c.checkpointId
                && rows == c.rows
                && commitUser.equals(c.commitUser)
                && database.equals(c.database)
                && table.equals(c.table);
    }

    @Override
    public int hashCode() {
        return Objects.hash(commitUser, subtask, checkpointId, database, table, rows);
    }

    @Override
    public String toString() {
        return "SetatsCommittable("
                + database
                + "."
                + table
                + ", commit user "
                + commitUser
                + ", subtask "
                + subtask
                + ", checkpoint "
                + checkpointId
                + ", "
                + rows
                + " rows)";
    }
}
