package io.setats.flink.source.batch;

import io.setats.flink.SetatsOptionsUtil;
import io.setats.flink.client.GatewayClient;
import io.setats.flink.source.SetatsSourceConfig;
import io.setats.flink.source.split.TableBucket;
import io.setats.flink.utils.ArrowRowDataReader;
import io.setats.proto.v1.BucketOffsets;
import io.setats.proto.v1.TableInfo;

import org.apache.arrow.vector.types.pojo.Schema;
import org.apache.flink.api.connector.source.SplitEnumerator;
import org.apache.flink.api.connector.source.SplitEnumeratorContext;
import org.apache.flink.table.types.logical.RowType;
import org.apache.flink.util.FlinkRuntimeException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import javax.annotation.Nullable;

import java.nio.ByteBuffer;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;

/**
 * SnapshotEnumerator plans a batch scan of the merged table (SPEC section 13): once, on start, it
 * checks the table (exists, the declared {@code bucket} / {@code bucket-key} match, the read
 * columns exist) and lists its buckets ({@code list-buckets}: every (partition, bucket) that has
 * received a row), keeps those of the selected partitions (partition pruning) and hands them out
 * one split per request, so faster readers take more buckets. A reader asking when none is left
 * gets no-more-splits. Buckets created after the listing are not read (the scan is bounded).
 */
public final class SnapshotEnumerator implements SplitEnumerator<SnapshotSplit, SnapshotEnumeratorState> {

    private static final Logger LOG = LoggerFactory.getLogger(SnapshotEnumerator.class);

    private final SplitEnumeratorContext<SnapshotSplit> context;
    private final SetatsSourceConfig config;
    private final RowType readType;
    @Nullable private final Set<String> partitions;
    private final Deque<SnapshotSplit> pending;
    private final Set<Integer> waiting = new LinkedHashSet<>();
    private boolean listed;
    @Nullable private GatewayClient client;

    /**
     * @param partitions the partition names to read; null reads every partition
     */
    public SnapshotEnumerator(
            SplitEnumeratorContext<SnapshotSplit> context,
            SetatsSourceConfig config,
            RowType readType,
            @Nullable Set<String> partitions,
            SnapshotEnumeratorState state) {
        this.context = context;
        this.config = config;
        this.readType = readType;
        this.partitions = partitions;
        this.pending = new ArrayDeque<>(state.pending());
        this.listed = state.listed();
    }

    @Override
    public void start() {
        if (!listed) {
            client = config.connect();
            context.callAsync(this::list, this::onListed);
        }
    }

    private List<SnapshotSplit> list() {
        TableInfo info =
                client.getTable(config.database(), config.table())
                        .orElseThrow(
                                () ->
                                        new FlinkRuntimeException(
                                                "Setats table " + config.tablePath() + " does not exist (gateway "
                                                        + config.managerUrl() + ")"));
        SetatsOptionsUtil.checkLayoutMatches(config.layoutOptions(), info.getSpec());
        if (!info.getArrowSchema().isEmpty()) {
            Schema schema = Schema.deserializeMessage(ByteBuffer.wrap(info.getArrowSchema().toByteArray()));
            try {
                ArrowRowDataReader.validate(readType, schema);
            } catch (IllegalArgumentException e) {
                throw new FlinkRuntimeException(
                        "The columns of the setats scan do not match table " + config.tablePath() + ": "
                                + e.getMessage(),
                        e);
            }
        }
        List<SnapshotSplit> splits = new ArrayList<>();
        for (BucketOffsets b : client.listBuckets(config.database(), config.table()).getBucketsList()) {
            if (partitions == null || partitions.contains(b.getPartition())) {
                splits.add(new SnapshotSplit(new TableBucket(b.getPartition(), b.getBucket()), info.getTableId(), null));
            }
        }
        return splits;
    }

    private void onListed(List<SnapshotSplit> splits, Throwable error) {
        if (error != null) {
            throw new FlinkRuntimeException("Listing the buckets of Setats table " + config.tablePath() + " failed", error);
        }
        LOG.info("Batch scan of {}: {} splits{}", config.tablePath(), splits.size(),
                partitions == null ? "" : " in partitions " + partitions);
        pending.addAll(splits);
        listed = true;
        closeClient();
        List<Integer> w = new ArrayList<>(waiting);
        waiting.clear();
        for (int subtask : w) {
            assign(subtask);
        }
    }

    private void assign(int subtask) {
        if (!context.registeredReaders().containsKey(subtask)) {
            return; // the reader failed meanwhile; it asks again when it comes back
        }
        SnapshotSplit next = pending.poll();
        if (next != null) {
            context.assignSplit(next, subtask);
        } else {
            context.signalNoMoreSplits(subtask);
        }
    }

    @Override
    public void handleSplitRequest(int subtaskId, @Nullable String requesterHostname) {
        if (!listed) {
            waiting.add(subtaskId);
            return;
        }
        assign(subtaskId);
    }

    @Override
    public void addSplitsBack(List<SnapshotSplit> splits, int subtaskId) {
        for (int i = splits.size() - 1; i >= 0; i--) {
            pending.addFirst(splits.get(i));
        }
    }

    @Override
    public void addReader(int subtaskId) {
        // Readers ask for splits themselves (SnapshotSourceReader).
    }

    @Override
    public SnapshotEnumeratorState snapshotState(long checkpointId) {
        return new SnapshotEnumeratorState(listed, new ArrayList<>(pending));
    }

    @Override
    public void close() {
        closeClient();
    }

    private void closeClient() {
        if (client != null) {
            client.close();
            client = null;
        }
    }
}
