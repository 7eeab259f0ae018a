package io.setats.flink.dts.source;

import io.setats.flink.client.GatewayClient;
import io.setats.flink.dts.DtsConfig;
import io.setats.flink.source.reader.Handover;

import org.apache.flink.connector.base.source.reader.RecordsBySplits;
import org.apache.flink.connector.base.source.reader.RecordsWithSplitIds;
import org.apache.flink.connector.base.source.reader.splitreader.SplitReader;
import org.apache.flink.connector.base.source.reader.splitreader.SplitsAddition;
import org.apache.flink.connector.base.source.reader.splitreader.SplitsChange;

import java.io.IOException;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * DtsSplitReader reads the splits of one reader, each through a {@link DtsChannelStream}; fetch
 * blocks on the handover until records are pushed (no polling) or {@link #wakeUp()}. Elements are
 * {@link DtsFetched} (a record with the cluster id it came from).
 */
final class DtsSplitReader implements SplitReader<DtsFetched, DtsSplit> {
    private static final Object WAKE_UP = new Object();

    private final DtsConfig config;
    private final GatewayClient client;
    private final Handover handover = new Handover(16);
    private final Map<String, DtsChannelStream> streams = new LinkedHashMap<>();
    private final int subtask;

    DtsSplitReader(DtsConfig config, int subtask) {
        this.config = config;
        this.subtask = subtask;
        this.client = config.connect();
    }

    @Override
    public RecordsWithSplitIds<DtsFetched> fetch() throws IOException {
        Object next;
        try {
            next = handover.take();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return new RecordsBySplits.Builder<DtsFetched>().build();
        }
        if (next instanceof DtsChannelStream.Failure) {
            Throwable c = ((DtsChannelStream.Failure) next).cause;
            throw c instanceof IOException ? (IOException) c : new IOException(c.getMessage(), c);
        }
        RecordsBySplits.Builder<DtsFetched> out = new RecordsBySplits.Builder<>();
        if (next instanceof DtsChannelStream.Batch) {
            DtsChannelStream.Batch b = (DtsChannelStream.Batch) next;
            for (io.setats.flink.dts.DtsRecord r : b.records) {
                out.add(b.splitId, new DtsFetched(r, b.clusterId));
            }
        }
        return out.build();
    }

    @Override
    public void handleSplitsChanges(SplitsChange<DtsSplit> change) {
        if (!(change instanceof SplitsAddition)) {
            throw new UnsupportedOperationException("unsupported split change " + change);
        }
        for (DtsSplit s : change.splits()) {
            if (streams.containsKey(s.splitId())) {
                continue;
            }
            DtsChannelStream st = new DtsChannelStream(client, config, s, handover, "dts " + config.topic() + " reader " + subtask);
            streams.put(s.splitId(), st);
            st.start();
        }
    }

    @Override
    public void wakeUp() {
        handover.add(WAKE_UP);
    }

    @Override
    public void close() throws Exception {
        for (DtsChannelStream s : streams.values()) {
            s.close();
        }
        handover.close();
        for (DtsChannelStream s : streams.values()) {
            s.join(10_000);
        }
        streams.clear();
        client.close();
    }
}
