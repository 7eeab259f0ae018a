package io.setats.flink.dts.source;

import io.setats.flink.client.GatewayClient;
import io.setats.flink.client.SetatsGatewayException;
import io.setats.flink.dts.DtsConfig;
import io.setats.flink.dts.DtsField;
import io.setats.flink.dts.DtsOperation;
import io.setats.flink.dts.DtsRecord;
import io.setats.flink.source.reader.Handover;
import io.setats.proto.v1.ChangelogTicket;
import io.setats.proto.v1.ChannelTicket;
import io.setats.proto.v1.SeekRequest;
import io.setats.proto.v1.SeekResponse;
import io.setats.proto.v1.StartPosition;

import org.apache.arrow.flight.FlightRuntimeException;
import org.apache.arrow.flight.FlightStream;
import org.apache.arrow.flight.Ticket;
import org.apache.arrow.vector.BigIntVector;
import org.apache.arrow.vector.TimeStampVector;
import org.apache.arrow.vector.VarBinaryVector;
import org.apache.arrow.vector.VarCharVector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.complex.ListVector;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;

/**
 * DtsChannelStream reads the channel of one split on its own thread through a following DoGet
 * (records are pushed as soon as they are durable) and hands converted batches to the fetcher
 * through a {@link Handover}.
 *
 * <p>A fresh split (next id -1) is resolved first: the consumer group's committed position, else
 * the first record at or after {@code dts.checkpoint}, else the channel's end. A restored split
 * reads from its next id and names its cluster id; a gateway whose cluster id differs fails the
 * read with {@code Cluster changed from <old> to <new>, consumer require restart} and, on the next
 * attempt, seeks by the split's last source time instead (the gateway remembers that the group was
 * told). Ids are checked to be dense: a gap fails the stream.
 */
final class DtsChannelStream implements Runnable {
    private static final Logger LOG = LoggerFactory.getLogger(DtsChannelStream.class);

    /** Handed-over element: records of one batch. */
    static final class Batch {
        final String splitId;
        final String clusterId;
        final List<DtsRecord> records;

        Batch(String splitId, String clusterId, List<DtsRecord> records) {
            this.splitId = splitId;
            this.clusterId = clusterId;
            this.records = records;
        }
    }

    /** Handed-over element: the stream failed. */
    static final class Failure {
        final String splitId;
        final Throwable cause;

        Failure(String splitId, Throwable cause) {
            this.splitId = splitId;
            this.cause = cause;
        }
    }

    private final GatewayClient client;
    private final DtsConfig config;
    private final DtsSplit split;
    private final Handover handover;
    private final Thread thread;
    private volatile boolean closed;
    private volatile FlightStream stream;

    DtsChannelStream(GatewayClient client, DtsConfig config, DtsSplit split, Handover handover, String threadName) {
        this.client = client;
        this.config = config;
        this.split = split;
        this.handover = handover;
        this.thread = new Thread(this, threadName);
        this.thread.setDaemon(true);
    }

    void start() {
        thread.start();
    }

    void close() {
        closed = true;
        FlightStream s = stream;
        if (s != null) {
            try {
                s.cancel("dts split reader closed", null);
            } catch (RuntimeException e) {
                LOG.debug("cancel of {} failed", split, e);
            }
        }
        handover.releaseProducers();
    }

    boolean join(long ms) throws InterruptedException {
        thread.join(ms);
        return !thread.isAlive();
    }

    private boolean isOpen() {
        return !closed;
    }

    /** Resolves the start id of a fresh split. */
    private long resolveStart() {
        SeekRequest.Builder req = SeekRequest.newBuilder().setChannel(config.topic()).setCredentials(config.credentials());
        SeekResponse committed = client.action("subscription-seek", req.setCommitted(true).build(), SeekResponse.parser());
        if (committed.getFound()) {
            LOG.info("{}: starting at the group's committed id {}", config, committed.getId());
            return committed.getId();
        }
        SeekResponse r;
        if (split.startTimestampMs() >= 0) {
            r = client.action("subscription-seek", req.setTimestampMs(split.startTimestampMs()).build(), SeekResponse.parser());
            LOG.info("{}: starting at id {}, the first record at or after {} ms", config, r.getId(), split.startTimestampMs());
        } else {
            r = client.action("subscription-seek", req.setPosition(StartPosition.LATEST).build(), SeekResponse.parser());
            LOG.info("{}: no committed position and no dts.checkpoint: starting at the end, id {}", config, r.getId());
        }
        return r.getId();
    }

    @Override
    public void run() {
        FlightStream s = null;
        String call = "DoGet channel " + config.topic() + " on " + client.url();
        try {
            long from = split.nextId() >= 0 ? split.nextId() : resolveStart();
            ChannelTicket.Builder t = ChannelTicket.newBuilder()
                    .setChannel(config.topic())
                    .setCredentials(config.credentials())
                    .setFollow(true)
                    .setFromId(from)
                    .setClusterId(split.clusterId());
            long reseek = split.lastTimestampMs() >= 0 ? split.lastTimestampMs() : split.startTimestampMs();
            t.setReseekTimestampMs(Math.max(reseek, 0));
            s = client.flightClient().getStream(new Ticket(ChangelogTicket.newBuilder().setChannel(t).build().toByteArray()));
            stream = s;
            if (closed) {
                return;
            }
            VectorSchemaRoot root = s.getRoot();
            String cluster = root.getSchema().getCustomMetadata().getOrDefault("setats.cluster_id", "");
            boolean reseeked = !split.clusterId().isEmpty() && !split.clusterId().equals(cluster);
            if (reseeked) {
                LOG.warn("{}: cluster changed from {} to {}; re-seeking by time {} ms", config, split.clusterId(), cluster, reseek);
            }
            long expected = reseeked ? -1 : from;
            while (!closed && s.next()) {
                int n = root.getRowCount();
                if (n == 0) {
                    continue;
                }
                List<DtsRecord> out = convert(root);
                for (DtsRecord r : out) {
                    if (expected >= 0 && r.getId() != expected) {
                        throw new IOException(call + ": expected record id " + expected + " but got " + r.getId() + " (records are never skipped silently)");
                    }
                    expected = r.getId() + 1;
                }
                handover.put(new Batch(split.splitId(), cluster, out), this::isOpen);
            }
            if (!closed) {
                throw new IOException(call + ": the gateway ended the stream, which should follow new records");
            }
        } catch (Throwable e) {
            if (!closed) {
                Throwable cause = e instanceof FlightRuntimeException || e instanceof SetatsGatewayException
                        ? SetatsGatewayException.of(call, e) : e;
                String gw = cause instanceof SetatsGatewayException ? ((SetatsGatewayException) cause).gatewayMessage() : cause.getMessage();
                IOException f = new IOException(gw, cause);
                LOG.warn("Reading {} failed: {}", config, gw);
                try {
                    handover.put(new Failure(split.splitId(), f), this::isOpen);
                } catch (InterruptedException ie) {
                    Thread.currentThread().interrupt();
                }
            }
        } finally {
            if (s != null) {
                try {
                    s.close();
                } catch (Exception e) {
                    LOG.debug("closing the stream of {} failed", split, e);
                }
            }
        }
    }

    /** Converts one record batch of the channel schema (proto ChannelTicket). */
    static List<DtsRecord> convert(VectorSchemaRoot root) {
        int n = root.getRowCount();
        BigIntVector ids = (BigIntVector) root.getVector("id");
        VarCharVector ops = (VarCharVector) root.getVector("operation");
        VarCharVector objs = (VarCharVector) root.getVector("object_name");
        VarCharVector pos = (VarCharVector) root.getVector("source_position");
        TimeStampVector ts = (TimeStampVector) root.getVector("source_timestamp");
        VarCharVector tx = (VarCharVector) root.getVector("transaction_id");
        ListVector names = (ListVector) root.getVector("field_names");
        ListVector types = (ListVector) root.getVector("field_types");
        ListVector before = (ListVector) root.getVector("before");
        ListVector after = (ListVector) root.getVector("after");
        VarCharVector nameV = (VarCharVector) names.getDataVector();
        VarCharVector typeV = (VarCharVector) types.getDataVector();
        List<DtsRecord> out = new ArrayList<>(n);
        for (int i = 0; i < n; i++) {
            List<DtsField> fields;
            int fs = names.getElementStartIndex(i), fe = names.getElementEndIndex(i);
            if (fe == fs) {
                fields = Collections.emptyList();
            } else {
                fields = new ArrayList<>(fe - fs);
                int ts0 = types.getElementStartIndex(i);
                for (int j = fs; j < fe; j++) {
                    fields.add(new DtsField(str(nameV, j), str(typeV, ts0 + (j - fs))));
                }
            }
            out.add(new DtsRecord(
                    ids.get(i),
                    DtsOperation.parse(str(ops, i)),
                    objs.isNull(i) ? null : str(objs, i),
                    str(pos, i),
                    ts.get(i),
                    tx.isNull(i) ? null : str(tx, i),
                    fields,
                    image(before, i),
                    image(after, i)));
        }
        return out;
    }

    private static String str(VarCharVector v, int i) {
        return new String(v.get(i), StandardCharsets.UTF_8);
    }

    private static List<byte[]> image(ListVector l, int i) {
        if (l.isNull(i)) {
            return null;
        }
        VarBinaryVector v = (VarBinaryVector) l.getDataVector();
        int s = l.getElementStartIndex(i), e = l.getElementEndIndex(i);
        List<byte[]> img = new ArrayList<>(e - s);
        for (int j = s; j < e; j++) {
            img.add(v.isNull(j) ? null : v.get(j));
        }
        return img;
    }
}
