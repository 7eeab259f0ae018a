package io.setats.flink.dts.source;

import io.setats.flink.dts.DtsConfig;
import io.setats.proto.v1.CommitRequest;

import org.apache.flink.api.connector.source.SourceReaderContext;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.connector.base.source.reader.RecordEmitter;
import org.apache.flink.connector.base.source.reader.SingleThreadMultiplexSourceReaderBase;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * DtsSourceReader reads the channel's split; its state is the next id after the last emitted
 * record. When a checkpoint completes ({@code notifyCheckpointComplete}) the position that
 * checkpoint holds is committed as the consumer group's position (SPEC section 11), on the
 * {@link DtsGroupCommitter}'s thread: the task thread does not wait for the gateway.
 */
public final class DtsSourceReader<T> extends SingleThreadMultiplexSourceReaderBase<DtsFetched, T, DtsSplit, DtsSplitState> {
    private static final Logger LOG = LoggerFactory.getLogger(DtsSourceReader.class);

    private final DtsConfig config;
    private final TreeMap<Long, DtsSplit> pendingCommits = new TreeMap<>();
    private final DtsGroupCommitter committer;

    DtsSourceReader(DtsConfig config, RecordEmitter<DtsFetched, T, DtsSplitState> emitter, Configuration conf, SourceReaderContext context) {
        super(() -> new DtsSplitReader(config, context.getIndexOfSubtask()), emitter, conf, context);
        this.config = config;
        this.committer = new DtsGroupCommitter(config);
    }

    @Override
    protected void onSplitFinished(Map<String, DtsSplitState> finished) {}

    @Override
    protected DtsSplitState initializedState(DtsSplit split) {
        return new DtsSplitState(split);
    }

    @Override
    protected DtsSplit toSplitType(String splitId, DtsSplitState state) {
        return state.toSplit();
    }

    @Override
    public List<DtsSplit> snapshotState(long checkpointId) {
        List<DtsSplit> splits = super.snapshotState(checkpointId);
        for (DtsSplit s : splits) {
            if (s.nextId() >= 0) {
                pendingCommits.put(checkpointId, s);
            }
        }
        return splits;
    }

    @Override
    public void notifyCheckpointComplete(long checkpointId) throws Exception {
        super.notifyCheckpointComplete(checkpointId);
        Map.Entry<Long, DtsSplit> e = pendingCommits.floorEntry(checkpointId);
        if (e == null) {
            return;
        }
        DtsSplit s = e.getValue();
        pendingCommits.headMap(checkpointId, true).clear();
        committer.commit(CommitRequest.newBuilder()
                .setChannel(config.topic()).setCredentials(config.credentials())
                .setNextId(s.nextId()).setCheckpoint(s.lastCheckpoint()).setClusterId(s.clusterId()).build());
        LOG.debug("{}: committing next id {} of checkpoint {}", config, s.nextId(), checkpointId);
    }

    @Override
    public void close() throws Exception {
        super.close();
        committer.close();
    }
}
