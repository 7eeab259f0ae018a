package io.setats.flink.source;

import io.setats.flink.client.GatewayClient;
import io.setats.flink.testutils.SetatsGatewayProcess;
import io.setats.proto.v1.ProgressResponse;
import io.setats.proto.v1.ProgressRow;
import io.setats.proto.v1.SlotRequest;

import org.apache.flink.api.common.JobStatus;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.RestartStrategyOptions;
import org.apache.flink.core.execution.JobClient;
import org.apache.flink.runtime.jobgraph.SavepointConfigOptions;
import org.apache.flink.runtime.minicluster.MiniCluster;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.util.TestStreamEnvironment;
import org.apache.flink.table.data.RowData;
import org.apache.flink.types.RowKind;
import org.apache.flink.util.CloseableIterator;

import javax.annotation.Nullable;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.function.Predicate;

import static org.assertj.core.api.Assertions.assertThat;

/** Helpers of the binlog ITCases (slots, initial): environments, bounded takes, folding, progress. */
final class BinlogJobs {

    /** Longest wait for rows or a gateway state (a missing row fails the test instead of hanging). */
    static final long DEADLINE_S = 120;

    private BinlogJobs() {}

    static StreamExecutionEnvironment env(MiniCluster cluster, int parallelism, @Nullable String restoreFrom, boolean restart) {
        Configuration conf = new Configuration();
        if (restart) {
            conf.set(RestartStrategyOptions.RESTART_STRATEGY, "fixed-delay");
            conf.set(RestartStrategyOptions.RESTART_STRATEGY_FIXED_DELAY_ATTEMPTS, 1000);
            conf.set(RestartStrategyOptions.RESTART_STRATEGY_FIXED_DELAY_DELAY, Duration.ofMillis(200));
        } else {
            conf.set(RestartStrategyOptions.RESTART_STRATEGY, "none");
        }
        if (restoreFrom != null) {
            conf.set(SavepointConfigOptions.SAVEPOINT_PATH, restoreFrom);
            conf.set(SavepointConfigOptions.SAVEPOINT_IGNORE_UNCLAIMED_STATE, true);
        }
        return new TestStreamEnvironment(cluster, conf, parallelism, Collections.emptyList(), Collections.emptyList());
    }

    /** Takes up to n rows; a watchdog closes the iterator after DEADLINE_S. */
    static <T> List<T> take(CloseableIterator<T> it, int n) {
        List<T> out = new ArrayList<>();
        takeUntil(it, out, l -> l.size() >= n);
        return out;
    }

    /** Adds rows to {@code out} until {@code done} holds for it, or the deadline closes the iterator. */
    static <T> void takeUntil(CloseableIterator<T> it, List<T> out, Predicate<List<T>> done) {
        ScheduledExecutorService watchdog = Executors.newSingleThreadScheduledExecutor();
        watchdog.schedule(
                () -> {
                    try {
                        it.close();
                    } catch (Exception ignored) {
                        // best effort: the caller's assertion reports the missing rows
                    }
                },
                DEADLINE_S,
                TimeUnit.SECONDS);
        try {
            while (!done.test(out) && it.hasNext()) {
                out.add(it.next());
            }
        } finally {
            watchdog.shutdownNow();
        }
    }

    /**
     * Counts the rows that passed it per name (the MiniCluster runs in this JVM): a test waits with
     * {@link #awaitCount} until the source emitted them before it triggers a checkpoint, so that the
     * checkpoint covers them (the exactly-once collect sink shows rows only once checkpointed).
     */
    static final class Count implements org.apache.flink.api.common.functions.MapFunction<String, String> {
        static final Map<String, java.util.concurrent.atomic.AtomicInteger> COUNTS =
                new java.util.concurrent.ConcurrentHashMap<>();
        private final String name;

        Count(String name) {
            this.name = name;
            COUNTS.put(name, new java.util.concurrent.atomic.AtomicInteger());
        }

        @Override
        public String map(String s) {
            COUNTS.get(name).incrementAndGet();
            return s;
        }
    }

    /** Waits until {@code n} rows passed the {@link Count} of {@code name}. */
    static void awaitCount(String name, int n) throws InterruptedException {
        long deadline = System.currentTimeMillis() + DEADLINE_S * 1000;
        while (Count.COUNTS.get(name).get() < n && System.currentTimeMillis() < deadline) {
            Thread.sleep(10);
        }
        assertThat(Count.COUNTS.get(name).get()).as("rows through %s", name).isGreaterThanOrEqualTo(n);
    }

    /** Waits until the job reached a globally terminal state. */
    static JobStatus awaitTerminal(JobClient job) throws Exception {
        long deadline = System.currentTimeMillis() + DEADLINE_S * 1000;
        JobStatus status = job.getJobStatus().get(60, TimeUnit.SECONDS);
        while (!status.isGloballyTerminalState() && System.currentTimeMillis() < deadline) {
            Thread.sleep(50);
            status = job.getJobStatus().get(60, TimeUnit.SECONDS);
        }
        return status;
    }

    /** {@code +I[1, a]} of an (id INT, v STRING) row. */
    static String kv(RowData r) {
        return r.getRowKind().shortString() + "[" + r.getInt(0) + ", " + (r.isNullAt(1) ? "null" : r.getString(1)) + "]";
    }

    /**
     * Folds rows {@code +I[k, v]} into {@code table} checking the RowKind state machine: no +I for
     * a live key, -U and -D equal to the current row.
     */
    static void fold(Map<Integer, String> table, String row) {
        RowKind kind = null;
        for (RowKind rk : RowKind.values()) {
            if (row.startsWith(rk.shortString())) {
                kind = rk;
            }
        }
        assertThat(kind).as("RowKind of %s", row).isNotNull();
        String[] kv = row.substring(3, row.length() - 1).split(", ", 2);
        int k = Integer.parseInt(kv[0]);
        String v = kv[1];
        switch (kind) {
            case INSERT:
                assertThat(table).as("%s: +I of a live key", row).doesNotContainKey(k);
                table.put(k, v);
                break;
            case UPDATE_AFTER:
                table.put(k, v);
                break;
            case UPDATE_BEFORE:
                assertThat(table).as("%s: -U equals the current row", row).containsEntry(k, v);
                break;
            default:
                assertThat(table).as("%s: -D equals the current row", row).containsEntry(k, v);
                table.remove(k);
        }
    }

    /** binlog-progress of one slot; empty while the slot does not exist yet. */
    static List<ProgressRow> progress(SetatsGatewayProcess gateway, String db, String table, String slot) {
        try (GatewayClient c = gateway.client()) {
            return progressOf(c, db, table, slot);
        } catch (io.setats.flink.client.SetatsGatewayException e) {
            if (e.isNotFound()) {
                return Collections.emptyList();
            }
            throw e;
        }
    }

    private static List<ProgressRow> progressOf(GatewayClient c, String db, String table, String slot) {
        {
            return c.action(
                            "binlog-progress",
                            SlotRequest.newBuilder().setDatabase(db).setTable(table).setSlot(slot).build(),
                            ProgressResponse.parser())
                    .getRowsList();
        }
    }

    /** The checkpoint-kind progress rows of a slot. */
    static List<ProgressRow> checkpointProgress(SetatsGatewayProcess gateway, String db, String table, String slot) {
        List<ProgressRow> out = new ArrayList<>();
        for (ProgressRow r : progress(gateway, db, table, slot)) {
            if (r.getCheckpoint()) {
                out.add(r);
            }
        }
        return out;
    }

    /** Waits until {@code ok} holds for the slot's checkpoint progress rows; returns them. */
    static List<ProgressRow> awaitCheckpointProgress(
            SetatsGatewayProcess gateway, String db, String table, String slot, Predicate<List<ProgressRow>> ok)
            throws InterruptedException {
        long deadline = System.currentTimeMillis() + DEADLINE_S * 1000;
        List<ProgressRow> rows = checkpointProgress(gateway, db, table, slot);
        while (!ok.test(rows) && System.currentTimeMillis() < deadline) {
            Thread.sleep(50);
            rows = checkpointProgress(gateway, db, table, slot);
        }
        return rows;
    }
}
