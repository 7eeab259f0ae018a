package io.setats.flink.lookup;

import io.setats.flink.client.GatewayClient;
import io.setats.flink.client.SetatsGatewayException;
import io.setats.flink.utils.ArrowRowDataReader;
import io.setats.flink.utils.RowDataArrowWriter;
import io.setats.proto.v1.LookupCommand;

import org.apache.arrow.flight.FlightClient;
import org.apache.arrow.flight.FlightDescriptor;
import org.apache.arrow.flight.FlightStream;
import org.apache.arrow.vector.IntVector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.flink.table.data.RowData;
import org.apache.flink.table.types.logical.RowType;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

/**
 * SetatsLookupClient does point reads by primary key, or prefix reads by a leading part of it,
 * over one DoExchange "lookup" stream (proto/README.md "Lookups", SPEC section 13). {@link
 * #lookup} queues a key and returns a future; one background thread sends the queued keys as one
 * request batch (at most {@code maxKeys}, the gateway's limit being {@link #MAX_KEYS}), reads the
 * gateway's one answer batch and completes every future with its rows: none when the key is
 * absent, one for a full primary key, any number (in primary-key order) for a prefix
 * ({@code LookupCommand.prefix}). The gateway groups a request's keys per bucket and
 * reads each bucket from one snapshot view (durable rows). After an error every queued future
 * fails with the {@link SetatsGatewayException} and the next batch opens a new stream.
 *
 * <p>Thread-safe; {@link #close()} fails the futures still queued.
 */
public final class SetatsLookupClient implements AutoCloseable {

    private static final Logger LOG = LoggerFactory.getLogger(SetatsLookupClient.class);

    /** Most keys per request batch (the gateway's MaxLookupKeys). */
    public static final int MAX_KEYS = 4096;

    private final GatewayClient client;
    private final String database;
    private final String table;
    private final RowType keyType;
    private final RowType rowType;
    private final int maxKeys;
    private final boolean prefix;
    private final BlockingQueue<Pending> queue = new LinkedBlockingQueue<>();
    private final Thread worker;
    private volatile boolean closed;

    // Worker thread only.
    private FlightClient.ExchangeReaderWriter exchange;
    private RowDataArrowWriter keys;
    private ArrowRowDataReader reader;

    private static final class Pending {
        final RowData key;
        final CompletableFuture<List<RowData>> future = new CompletableFuture<>();

        Pending(RowData key) {
            this.key = key;
        }
    }

    /**
     * @param keyType the primary-key columns (names and types of the table), in the order of the
     *     keys passed to {@link #lookup}
     * @param rowType the columns to return, by name
     * @param maxKeys keys per request batch, 1..{@link #MAX_KEYS}
     * @param prefix whether {@code keyType} is the first columns of the primary key (covering the
     *     partition and bucket keys): a prefix lookup, each key giving any number of rows
     */
    public SetatsLookupClient(
            GatewayClient client,
            String database,
            String table,
            RowType keyType,
            RowType rowType,
            int maxKeys,
            boolean prefix) {
        if (maxKeys < 1 || maxKeys > MAX_KEYS) {
            throw new IllegalArgumentException("maxKeys must be in 1.." + MAX_KEYS + ", got " + maxKeys);
        }
        this.client = client;
        this.database = database;
        this.table = table;
        this.keyType = keyType;
        this.rowType = rowType;
        this.maxKeys = maxKeys;
        this.prefix = prefix;
        this.worker = new Thread(this::run, "setats-lookup-" + database + "." + table);
        this.worker.setDaemon(true);
        this.worker.start();
    }

    /**
     * Queues one key (a row of the key type, no null field); the future gets its rows (empty when
     * absent; at most one unless this is a prefix client).
     */
    public CompletableFuture<List<RowData>> lookup(RowData key) {
        Pending p = new Pending(key);
        if (closed) {
            p.future.completeExceptionally(new IllegalStateException("lookup client closed"));
            return p.future;
        }
        queue.add(p);
        return p.future;
    }

    private void run() {
        List<Pending> batch = new ArrayList<>();
        while (!closed) {
            try {
                Pending first = queue.poll(100, TimeUnit.MILLISECONDS);
                if (first == null) {
                    continue;
                }
                batch.clear();
                batch.add(first);
                queue.drainTo(batch, maxKeys - 1);
                send(batch);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                break;
            } catch (Throwable t) {
                RuntimeException err =
                        SetatsGatewayException.of(
                                "DoExchange lookup " + database + "." + table + " on " + client.url(), t);
                for (Pending p : batch) {
                    p.future.completeExceptionally(err);
                }
                LOG.warn("Lookup of {}.{} failed; the next batch opens a new stream", database, table, t);
                closeExchange();
            }
        }
        closeExchange();
        for (Pending p; (p = queue.poll()) != null; ) {
            p.future.completeExceptionally(new IllegalStateException("lookup client closed"));
        }
    }

    private void send(List<Pending> batch) throws Exception {
        if (exchange == null) {
            LookupCommand cmd =
                    LookupCommand.newBuilder()
                            .setCatalog(client.catalog())
                            .setDatabase(database)
                            .setTable(table)
                            .addAllColumns(rowType.getFieldNames())
                            .setPrefix(prefix)
                            .build();
            keys = new RowDataArrowWriter(keyType, client.allocator(), false);
            exchange = client.flightClient().doExchange(FlightDescriptor.command(cmd.toByteArray()));
            exchange.getWriter().start(keys.root());
        }
        keys.reset();
        for (Pending p : batch) {
            keys.write(p.key);
        }
        keys.finish();
        exchange.getWriter().putNext();
        FlightStream in = exchange.getReader();
        if (!in.next()) {
            throw new IllegalStateException("the gateway ended the lookup stream without an answer");
        }
        VectorSchemaRoot root = in.getRoot();
        if (reader == null) {
            reader = ArrowRowDataReader.create(rowType, root.getSchema());
        }
        reader.bind(root);
        IntVector index = (IntVector) root.getVector(0);
        List<List<RowData>> found = new ArrayList<>(batch.size());
        for (int i = 0; i < batch.size(); i++) {
            found.add(new ArrayList<>(1));
        }
        for (int i = 0; i < root.getRowCount(); i++) {
            int k = index.get(i);
            if (k < 0 || k >= batch.size()) {
                throw new IllegalStateException("the gateway answered key index " + k + " for a request of " + batch.size() + " keys");
            }
            found.get(k).add(reader.read(i));
        }
        for (int i = 0; i < batch.size(); i++) {
            batch.get(i).future.complete(found.get(i));
        }
    }

    private void closeExchange() {
        if (exchange != null) {
            try {
                exchange.getWriter().completed();
                exchange.close();
            } catch (Exception e) {
                LOG.debug("Closing the lookup stream of {}.{}", database, table, e);
            }
            exchange = null;
        }
        if (keys != null) {
            keys.close();
            keys = null;
        }
        reader = null;
    }

    @Override
    public void close() throws InterruptedException {
        closed = true;
        worker.join(TimeUnit.SECONDS.toMillis(30));
    }
}
