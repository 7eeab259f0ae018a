package io.setats.flink.sink;

import org.apache.flink.annotation.VisibleForTesting;

/**
 * SetatsSinkTestHooks are failure-injection points of the sink for tests (SPEC section 10): the
 * exactly-once ITCases fail a writer right after {@code prepareCommit} (so the checkpoint never
 * completes) and a committer before or after its commit (so a restore commits again), and the
 * at-least-once ITCase drops a WriteAck (so the writer reconnects and resends). Every hook is
 * {@code null} (no effect) unless a test sets it; they are static because a MiniCluster runs the
 * tasks in the test's JVM.
 */
@VisibleForTesting
public final class SetatsSinkTestHooks {

    private SetatsSinkTestHooks() {}

    /** A hook point; it may throw to inject a failure. */
    @FunctionalInterface
    public interface Hook {
        /**
         * Called at the hook point.
         *
         * @param subtask the writer or committer subtask
         * @param checkpointId the staging checkpoint id (exactly-once) or the batch sequence
         */
        void run(int subtask, long checkpointId) throws Exception;
    }

    /** Called by an exactly-once writer in snapshotState, after prepareCommit staged its rows. */
    public static volatile Hook afterPrepareCommit;

    /** Called by the committer before it sends commit-staged for a committable. */
    public static volatile Hook beforeCommit;

    /** Called by the committer after commit-staged succeeded, before it returns. */
    public static volatile Hook afterCommit;

    /**
     * Asked for every WriteAck a writer receives (subtask, sequence): true drops it and breaks
     * the stream as if the connection was lost.
     */
    public static volatile AckFilter dropAck;

    /** Decides whether a WriteAck is dropped. */
    @FunctionalInterface
    public interface AckFilter {
        boolean drop(int subtask, long sequence);
    }

    /**
     * Told the times (epoch ms) of each hop of the sink, for per-hop latency benchmarks: null
     * (the default) costs one volatile read per row.
     */
    public static volatile HopListener hops;

    /** Per-hop times of a writer (SetatsSinkBenchmark's latency phase). */
    public interface HopListener {
        /** A row reached the writer's {@code write} (mailbox thread). */
        void written(int subtask, org.apache.flink.table.data.RowData row, long nowMs);

        /** Batch {@code sequence} with {@code rows} rows was put on the DoPut stream (mailbox thread). */
        void sent(int subtask, long sequence, int rows, long nowMs);

        /** The WriteAck of batch {@code sequence} arrived (a gRPC thread). */
        void acked(int subtask, long sequence, long nowMs);
    }

    /** Resets every hook to null. */
    public static void reset() {
        afterPrepareCommit = null;
        beforeCommit = null;
        afterCommit = null;
        dropAck = null;
        hops = null;
    }
}
