package io.setats.flink.dts.source;

import org.apache.flink.api.connector.source.SplitEnumerator;
import org.apache.flink.api.connector.source.SplitEnumeratorContext;

import javax.annotation.Nullable;

import java.util.ArrayList;
import java.util.List;

/**
 * DtsEnumerator hands the channel's one split to the first registered reader (subtask order);
 * a split given back after a failure goes to the next reader that registers or asks.
 */
public final class DtsEnumerator implements SplitEnumerator<DtsSplit, DtsEnumeratorState> {
    private final SplitEnumeratorContext<DtsSplit> context;
    private final List<DtsSplit> pending = new ArrayList<>();
    private boolean created;

    public DtsEnumerator(SplitEnumeratorContext<DtsSplit> context, String channel, long startTimestampMs, @Nullable DtsEnumeratorState restored) {
        this.context = context;
        if (restored != null) {
            created = restored.created();
            pending.addAll(restored.pending());
        }
        if (!created) {
            pending.add(DtsSplit.fresh(channel, startTimestampMs));
            created = true;
        }
    }

    @Override
    public void start() {}

    @Override
    public void handleSplitRequest(int subtaskId, @Nullable String requesterHostname) {
        assign();
    }

    @Override
    public void addSplitsBack(List<DtsSplit> splits, int subtaskId) {
        pending.addAll(splits);
        assign();
    }

    @Override
    public void addReader(int subtaskId) {
        assign();
    }

    private void assign() {
        if (pending.isEmpty() || context.registeredReaders().isEmpty()) {
            return;
        }
        int target = context.registeredReaders().keySet().stream().min(Integer::compare).get();
        for (DtsSplit s : pending) {
            context.assignSplit(s, target);
        }
        pending.clear();
    }

    @Override
    public DtsEnumeratorState snapshotState(long checkpointId) {
        return new DtsEnumeratorState(created, pending);
    }

    @Override
    public void close() {}
}
