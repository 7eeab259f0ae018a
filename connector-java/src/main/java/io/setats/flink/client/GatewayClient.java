package io.setats.flink.client;

import io.setats.proto.v1.CatalogContext;
import io.setats.proto.v1.ChangelogTicket;
import io.setats.proto.v1.CreateTableRequest;
import io.setats.proto.v1.DatabaseRequest;
import io.setats.proto.v1.Empty;
import io.setats.proto.v1.GatewayInfo;
import io.setats.proto.v1.ListBucketsResponse;
import io.setats.proto.v1.ListDatabasesRequest;
import io.setats.proto.v1.ListDatabasesResponse;
import io.setats.proto.v1.ListTablesRequest;
import io.setats.proto.v1.ListTablesResponse;
import io.setats.proto.v1.LookupOffsetsRequest;
import io.setats.proto.v1.LookupOffsetsResponse;
import io.setats.proto.v1.Notification;
import io.setats.proto.v1.ReadCommand;
import io.setats.proto.v1.TableInfo;
import io.setats.proto.v1.TableRequest;
import io.setats.proto.v1.TableSpec;
import io.setats.proto.v1.WatchRequest;
import io.setats.proto.v1.WriteCommand;

import com.google.protobuf.InvalidProtocolBufferException;
import com.google.protobuf.Message;
import com.google.protobuf.Parser;
import io.grpc.ClientCall;
import io.grpc.Context;
import io.grpc.ManagedChannel;
import io.grpc.ForwardingClientCallListener;
import io.grpc.Metadata;
import io.grpc.Status;
import io.grpc.netty.GrpcSslContexts;
import io.grpc.netty.NettyChannelBuilder;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.nio.NioEventLoopGroup;
import io.netty.channel.socket.nio.NioSocketChannel;
import org.apache.arrow.flight.Action;
import org.apache.arrow.flight.CallOption;
import org.apache.arrow.flight.FlightClient;
import org.apache.arrow.flight.FlightDescriptor;
import org.apache.arrow.flight.FlightInfo;
import org.apache.arrow.flight.FlightStream;
import org.apache.arrow.flight.FlightGrpcUtils;
import org.apache.arrow.flight.Result;
import org.apache.arrow.flight.Ticket;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.RootAllocator;
import org.apache.arrow.vector.VectorSchemaRoot;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import javax.net.ssl.SSLException;

import java.io.File;
import java.net.URI;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Locale;
import java.util.NoSuchElementException;
import java.util.Optional;
import java.util.Queue;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Consumer;

/**
 * GatewayClient is the connector's Arrow Flight client of one Setats gateway (proto/README.md).
 *
 * <p>Every payload is binary protobuf. Every request that names a table carries this client's
 * {@link CatalogContext} so the gateway checks warehouse and catalog type first. Errors become
 * {@link SetatsGatewayException}s that keep the gateway's message.
 *
 * <p>A GatewayClient owns its Flight channel and, when built with {@link #connect}, its Arrow
 * allocator; {@link #close()} releases both. It is thread-safe as Flight clients are; a {@link
 * PutStream} or {@link FlightStream} it hands out is for one thread.
 */
public final class GatewayClient implements AutoCloseable {

    private static final Logger LOG = LoggerFactory.getLogger(GatewayClient.class);

    /** Action names (proto/README.md, "Actions"). */
    public static final String ACTION_GATEWAY_INFO = "gateway-info";

    public static final String ACTION_CREATE_DATABASE = "create-database";
    public static final String ACTION_DROP_DATABASE = "drop-database";
    public static final String ACTION_LIST_DATABASES = "list-databases";
    public static final String ACTION_CREATE_TABLE = "create-table";
    public static final String ACTION_DROP_TABLE = "drop-table";
    public static final String ACTION_DROP_PARTITION = "drop-partition";
    public static final String ACTION_GET_TABLE = "get-table";
    public static final String ACTION_LIST_TABLES = "list-tables";
    public static final String ACTION_LIST_BUCKETS = "list-buckets";
    public static final String ACTION_LOOKUP_OFFSETS = "lookup-offsets";
    public static final String ACTION_WATCH = "watch";
    /** Exactly-once staging: drop staged rows after a restored checkpoint, get the epoch. */
    public static final String ACTION_ABORT_STAGED = "abort-staged";
    /** Exactly-once staging: merge the staged rows of a checkpoint. */
    public static final String ACTION_COMMIT_STAGED = "commit-staged";

    /** Deadline of unary actions (ms). DoPut, DoGet and watch have none. */
    public static final long ACTION_TIMEOUT_MS = 60_000;

    private final ManagerUrl url;
    private final ConnectionOptions connection;
    private final CatalogContext catalog;
    private final BufferAllocator allocator;
    private final boolean ownsAllocator;
    private final FlightClient flight;
    private final ExecutorService executor;
    private final ManagedChannel channel;
    private final EventLoopGroup eventLoop;

    private GatewayClient(
            ConnectionOptions connection,
            CatalogContext catalog,
            BufferAllocator allocator,
            boolean owns) {
        this.connection = connection;
        ManagerUrl url = connection.managerUrl();
        this.url = url;
        this.catalog = catalog == null ? CatalogContext.getDefaultInstance() : catalog;
        this.allocator = allocator;
        this.ownsAllocator = owns;
        // Our own channel, so that an interceptor can keep the gRPC status code: Arrow Flight folds
        // FAILED_PRECONDITION and OUT_OF_RANGE into INVALID_ARGUMENT (SetatsGatewayException#code).
        // Own threads too: gRPC's shared static executor and event loop keep the context class
        // loader of whichever Flink task first created a thread, which may be a closed user-code
        // class loader by the time Arrow's ServiceLoader-based static initialisers run there.
        ThreadFactory threads = new ClientThreadFactory(url);
        this.executor = Executors.newCachedThreadPool(threads);
        this.eventLoop = new NioEventLoopGroup(1, threads);
        NettyChannelBuilder channel =
                NettyChannelBuilder.forAddress(url.host(), url.port())
                        .maxInboundMessageSize(Integer.MAX_VALUE)
                        .executor(executor)
                        .eventLoopGroup(eventLoop)
                        .channelType(NioSocketChannel.class)
                        .intercept(new GrpcCodeInterceptor());
        if (connection.hasCredentials()) {
            // HTTP Basic credentials on every call (SPEC section 14); interceptors run in reverse
            // order of registration, so this one adds the header before the code interceptor.
            channel.intercept(new BasicAuthInterceptor(connection.basicAuthorization()));
        }
        if (url.tls()) {
            channel.useTransportSecurity();
            if (connection.tlsCaCert() != null) {
                try {
                    channel.sslContext(
                            GrpcSslContexts.forClient()
                                    .trustManager(new File(connection.tlsCaCert()))
                                    .build());
                } catch (SSLException | IllegalArgumentException e) {
                    executor.shutdown();
                    eventLoop.shutdownGracefully(0, 1, TimeUnit.SECONDS);
                    throw new IllegalArgumentException(
                            "option 'tls.ca-cert' = '"
                                    + connection.tlsCaCert()
                                    + "': not a readable PEM file of CA certificates: "
                                    + e.getMessage(),
                            e);
                }
            }
        } else {
            channel.usePlaintext();
        }
        this.channel = channel.build();
        this.flight = FlightGrpcUtils.createFlightClient(allocator, this.channel);
    }

    /**
     * Connects to the gateway at {@code managerUrl} with a new root allocator owned by the client.
     * No call is made yet: the first action reveals an unreachable gateway (UNAVAILABLE).
     *
     * @throws IllegalArgumentException when managerUrl is malformed
     */
    public static GatewayClient connect(String managerUrl, CatalogContext catalog) {
        return connect(ConnectionOptions.of(managerUrl), catalog);
    }

    /**
     * Connects with the given connection options (manager-url, credentials, TLS CA) and a new
     * root allocator owned by the client. No call is made yet: the first call reveals an
     * unreachable gateway (UNAVAILABLE) or refused credentials (UNAUTHENTICATED).
     *
     * @throws IllegalArgumentException when tls.ca-cert is not a readable PEM file
     */
    public static GatewayClient connect(ConnectionOptions connection, CatalogContext catalog) {
        return new GatewayClient(connection, catalog, new RootAllocator(Long.MAX_VALUE), true);
    }

    /** Connects with a caller-owned allocator (not closed by {@link #close()}). */
    public static GatewayClient connect(
            ManagerUrl managerUrl, CatalogContext catalog, BufferAllocator allocator) {
        return connect(
                ConnectionOptions.builder().managerUrl(managerUrl).build(), catalog, allocator);
    }

    /** Connects with connection options and a caller-owned allocator. */
    public static GatewayClient connect(
            ConnectionOptions connection, CatalogContext catalog, BufferAllocator allocator) {
        return new GatewayClient(connection, catalog, allocator, false);
    }

    public ManagerUrl url() {
        return url;
    }

    /** The connection options this client was built with. */
    public ConnectionOptions connection() {
        return connection;
    }

    public CatalogContext catalog() {
        return catalog;
    }

    public BufferAllocator allocator() {
        return allocator;
    }

    /** The underlying Arrow Flight client, for calls this class does not wrap. */
    public FlightClient flightClient() {
        return flight;
    }

    // --------------------------------------------------------------------------------------------
    // Actions
    // --------------------------------------------------------------------------------------------

    /**
     * Runs a unary action: sends {@code body} (binary protobuf), reads every result and parses
     * the first with {@code parser}.
     *
     * @throws SetatsGatewayException on a gateway error or an unparsable/missing result
     */
    public <T extends Message> T action(String type, Message body, Parser<T> parser) {
        String call = "action '" + type + "' on " + url;
        List<T> all = actionAll(type, body, parser);
        if (all.isEmpty()) {
            throw new SetatsGatewayException(call, "INTERNAL", "the gateway sent no result", null);
        }
        return all.get(0);
    }

    /** Runs an action and parses every result. */
    public <T extends Message> List<T> actionAll(String type, Message body, Parser<T> parser) {
        String call = "action '" + type + "' on " + url;
        List<T> out = new ArrayList<>();
        try {
            Iterator<Result> it =
                    flight.doAction(
                            new Action(type, body.toByteArray()),
                            org.apache.arrow.flight.CallOptions.timeout(ACTION_TIMEOUT_MS, TimeUnit.MILLISECONDS));
            while (it.hasNext()) {
                out.add(parser.parseFrom(it.next().getBody()));
            }
        } catch (InvalidProtocolBufferException e) {
            throw new SetatsGatewayException(
                    call, "INTERNAL", "unparsable result: " + e.getMessage(), e);
        } catch (RuntimeException e) {
            throw SetatsGatewayException.of(call, e);
        }
        return out;
    }

    /** {@code gateway-info}: version, normalised warehouse, default bucket count, retention. */
    public GatewayInfo gatewayInfo() {
        return action(ACTION_GATEWAY_INFO, Empty.getDefaultInstance(), GatewayInfo.parser());
    }

    /**
     * Calls gateway-info and checks that {@code warehouse} names the gateway's warehouse
     * (normalised as {@link #normalizeWarehouse}); returns the info.
     *
     * @throws SetatsGatewayException FAILED_PRECONDITION naming both warehouses when they differ
     */
    public GatewayInfo checkWarehouse(String warehouse) {
        GatewayInfo info = gatewayInfo();
        if (warehouse != null && !warehouse.isEmpty()) {
            String mine = normalizeWarehouse(warehouse);
            String theirs = normalizeWarehouse(info.getWarehouse());
            if (!mine.equals(theirs)) {
                throw new SetatsGatewayException(
                        "gateway-info on " + url,
                        "FAILED_PRECONDITION",
                        "option 'warehouse' = '"
                                + warehouse
                                + "' ("
                                + mine
                                + ") differs from the gateway's warehouse '"
                                + info.getWarehouse()
                                + "'",
                        null);
            }
        }
        return info;
    }

    /**
     * Normalises a warehouse URI for comparison: a plain or {@code file:} path becomes {@code
     * file:///abs/path} (relative paths resolved against the working directory, no trailing
     * slash); other URIs only lose a trailing slash.
     */
    public static String normalizeWarehouse(String warehouse) {
        String w = warehouse.trim();
        String lower = w.toLowerCase(Locale.ROOT);
        if (lower.startsWith("file:") || !lower.matches("^[a-z][a-z0-9+.-]*://.*")) {
            String path = w;
            if (lower.startsWith("file:")) {
                try {
                    path = Paths.get(URI.create(w.replace("file:///", "file:/"))).toString();
                } catch (RuntimeException e) {
                    path = w.substring("file:".length()).replaceFirst("^//", "");
                }
            }
            String abs = Paths.get(path).toAbsolutePath().normalize().toString();
            return "file://" + (abs.startsWith("/") ? "" : "/") + abs;
        }
        while (w.endsWith("/")) {
            w = w.substring(0, w.length() - 1);
        }
        return w;
    }

    /** {@code create-database}. */
    public void createDatabase(String database, boolean ignoreIfExists) {
        action(
                ACTION_CREATE_DATABASE,
                DatabaseRequest.newBuilder()
                        .setCatalog(catalog)
                        .setDatabase(database)
                        .setIgnoreExistence(ignoreIfExists)
                        .build(),
                Empty.parser());
    }

    /** {@code drop-database}. */
    public void dropDatabase(String database, boolean ignoreIfNotExists, boolean cascade) {
        action(
                ACTION_DROP_DATABASE,
                DatabaseRequest.newBuilder()
                        .setCatalog(catalog)
                        .setDatabase(database)
                        .setIgnoreExistence(ignoreIfNotExists)
                        .setCascade(cascade)
                        .build(),
                Empty.parser());
    }

    /** {@code list-databases}. */
    public List<String> listDatabases() {
        return action(
                        ACTION_LIST_DATABASES,
                        ListDatabasesRequest.newBuilder().setCatalog(catalog).build(),
                        ListDatabasesResponse.parser())
                .getDatabasesList();
    }

    /** {@code create-table}; returns the table as stored (resolved spec). */
    public TableInfo createTable(TableSpec spec, boolean ignoreIfExists, boolean createDatabase) {
        return action(
                ACTION_CREATE_TABLE,
                CreateTableRequest.newBuilder()
                        .setCatalog(catalog)
                        .setSpec(spec)
                        .setIgnoreIfExists(ignoreIfExists)
                        .setCreateDatabase(createDatabase)
                        .build(),
                TableInfo.parser());
    }

    /** {@code get-table}; empty when the gateway answers NOT_FOUND. */
    public Optional<TableInfo> getTable(String database, String table) {
        try {
            return Optional.of(
                    action(ACTION_GET_TABLE, tableRequest(database, table), TableInfo.parser()));
        } catch (SetatsGatewayException e) {
            if (e.isNotFound()) {
                return Optional.empty();
            }
            throw e;
        }
    }

    /** {@code drop-table}. */
    public void dropTable(String database, String table, boolean ignoreIfNotExists) {
        action(
                ACTION_DROP_TABLE,
                tableRequest(database, table).toBuilder()
                        .setIgnoreIfNotExists(ignoreIfNotExists)
                        .build(),
                Empty.parser());
    }

    /**
     * {@code drop-partition}: drops the partition of {@code spec} (partition key column to the
     * value's string form) with its rows, changelog and slot positions (proto/README.md "Dropping
     * partitions"); NOT_FOUND when the table has no such partition (unless ignoreIfNotExists).
     */
    public io.setats.proto.v1.DropPartitionResponse dropPartition(
            String database, String table, java.util.Map<String, String> spec, boolean ignoreIfNotExists) {
        return action(
                ACTION_DROP_PARTITION,
                io.setats.proto.v1.DropPartitionRequest.newBuilder()
                        .setCatalog(catalog)
                        .setDatabase(database)
                        .setTable(table)
                        .putAllPartitionSpec(spec)
                        .setIgnoreIfNotExists(ignoreIfNotExists)
                        .build(),
                io.setats.proto.v1.DropPartitionResponse.parser());
    }

    /** {@code list-tables}. */
    public List<String> listTables(String database) {
        return action(
                        ACTION_LIST_TABLES,
                        ListTablesRequest.newBuilder()
                                .setCatalog(catalog)
                                .setDatabase(database)
                                .build(),
                        ListTablesResponse.parser())
                .getTablesList();
    }

    /** {@code list-buckets}: every (partition, bucket) that has received a row, with offsets. */
    public ListBucketsResponse listBuckets(String database, String table) {
        return action(
                ACTION_LIST_BUCKETS, tableRequest(database, table), ListBucketsResponse.parser());
    }

    /** {@code lookup-offsets}; the request's catalog is filled in when unset. */
    public LookupOffsetsResponse lookupOffsets(LookupOffsetsRequest request) {
        LookupOffsetsRequest r =
                request.hasCatalog() ? request : request.toBuilder().setCatalog(catalog).build();
        return action(ACTION_LOOKUP_OFFSETS, r, LookupOffsetsResponse.parser());
    }

    /**
     * Opens the {@code watch} action: a stream of notifications, the first of kind READY. Close
     * the returned stream (from any thread) to cancel it; a blocked {@code hasNext()} then throws
     * a CANCELLED SetatsGatewayException.
     */
    public WatchStream watch(String database, String table) {
        WatchRequest req =
                WatchRequest.newBuilder()
                        .setCatalog(catalog)
                        .setDatabase(database)
                        .setTable(table == null ? "" : table)
                        .build();
        Context.CancellableContext ctx = Context.current().withCancellation();
        String call = "action 'watch' on " + url;
        try {
            Iterator<Result> it =
                    ctx.call(() -> flight.doAction(new Action(ACTION_WATCH, req.toByteArray())));
            return new WatchStream(call, ctx, it);
        } catch (Exception e) {
            ctx.cancel(e);
            throw SetatsGatewayException.of(call, e);
        }
    }

    /**
     * abort-staged (SPEC section 10): drops the rows (commitUser, subtask) staged for checkpoints
     * after {@code restoredCheckpointId} (0: all), fences earlier writers and returns the epoch
     * staging DoPuts must carry.
     */
    public io.setats.proto.v1.AbortStagedResponse abortStaged(
            String database,
            String table,
            String commitUser,
            int subtask,
            long restoredCheckpointId,
            long transactionTimeoutMs) {
        return action(
                ACTION_ABORT_STAGED,
                io.setats.proto.v1.AbortStagedRequest.newBuilder()
                        .setCatalog(catalog)
                        .setDatabase(database)
                        .setTable(table)
                        .setCommitUser(commitUser)
                        .setSubtask(subtask)
                        .setRestoredCheckpointId(restoredCheckpointId)
                        .setTransactionTimeoutMs(transactionTimeoutMs)
                        .build(),
                io.setats.proto.v1.AbortStagedResponse.parser());
    }

    /**
     * commit-staged (SPEC section 10): merges the rows (commitUser, subtask) staged for
     * checkpoints up to {@code checkpointId}; a second commit answers already_committed.
     */
    public io.setats.proto.v1.CommitStagedResponse commitStaged(
            String database, String table, String commitUser, int subtask, long checkpointId) {
        return action(
                ACTION_COMMIT_STAGED,
                io.setats.proto.v1.CommitStagedRequest.newBuilder()
                        .setCatalog(catalog)
                        .setDatabase(database)
                        .setTable(table)
                        .setCommitUser(commitUser)
                        .setSubtask(subtask)
                        .setCheckpointId(checkpointId)
                        .build(),
                io.setats.proto.v1.CommitStagedResponse.parser());
    }

    private TableRequest tableRequest(String database, String table) {
        return TableRequest.newBuilder()
                .setCatalog(catalog)
                .setDatabase(database)
                .setTable(table)
                .build();
    }

    // --------------------------------------------------------------------------------------------
    // DoPut / DoGet / GetFlightInfo
    // --------------------------------------------------------------------------------------------

    /**
     * Starts a DoPut with {@code command} as descriptor; {@code root}'s schema is the stream's
     * schema. The command's catalog is filled in when unset. See {@link PutStream} for sending.
     *
     * @param maxInFlight record batches that may be sent before a WriteAck; more blocks
     * @param onAck called (on a gRPC thread) with each WriteAck, in order
     */
    public PutStream startPut(
            WriteCommand command,
            VectorSchemaRoot root,
            int maxInFlight,
            Consumer<io.setats.proto.v1.WriteAck> onAck) {
        return startPut(command, root, maxInFlight, PutStream.DEFAULT_ACK_TIMEOUT, onAck);
    }

    /**
     * Like {@link #startPut(WriteCommand, VectorSchemaRoot, int, Consumer)}, with the time a sent
     * batch may wait for its WriteAck before the stream fails ({@code setats.sink.ack-timeout}).
     */
    public PutStream startPut(
            WriteCommand command,
            VectorSchemaRoot root,
            int maxInFlight,
            java.time.Duration ackTimeout,
            Consumer<io.setats.proto.v1.WriteAck> onAck) {
        WriteCommand cmd =
                command.hasCatalog() ? command : command.toBuilder().setCatalog(catalog).build();
        String call = "DoPut " + cmd.getDatabase() + "." + cmd.getTable() + " on " + url;
        return PutStream.start(flight, cmd, root, maxInFlight, ackTimeout, onAck, call);
    }

    /**
     * DoGet of one bucket's changelog. The ticket's catalog is filled in when unset. The caller
     * iterates ({@code next()}, {@code getRoot()}) and closes the stream; Flight errors surface
     * from {@code next()} as FlightRuntimeException: wrap them with {@link
     * SetatsGatewayException#of}.
     *
     * @param options per-call options, e.g. a {@code CallOptions.GrpcCallOption} that observes the
     *     call's messages (the CDC source's single fetcher thread waits on those instead of blocking
     *     in {@code next()})
     */
    public FlightStream readChangelog(ChangelogTicket ticket, CallOption... options) {
        ChangelogTicket t =
                ticket.hasCatalog() ? ticket : ticket.toBuilder().setCatalog(catalog).build();
        try {
            return flight.getStream(new Ticket(t.toByteArray()), options);
        } catch (RuntimeException e) {
            throw SetatsGatewayException.of(describe(t), e);
        }
    }

    /**
     * Makes the channel try to connect at once instead of after gRPC's own reconnect back-off
     * (up to 2 min after a gateway outage): callers that run their own back-off (the CDC source's
     * reconnection) call it before each new attempt. Cheap when connected.
     */
    public void resetConnectBackoff() {
        channel.resetConnectBackoff();
    }

    /** Names a ticket in error messages: {@code DoGet db.table partition=... bucket=N on url}. */
    public String describe(ChangelogTicket t) {
        return "DoGet "
                + t.getDatabase()
                + "."
                + t.getTable()
                + " partition='"
                + t.getPartition()
                + "' bucket="
                + t.getBucket()
                + " on "
                + url;
    }

    /**
     * GetFlightInfo with a ReadCommand: the changelog schema and one endpoint per (partition,
     * bucket), each ticket a ChangelogTicket. The command's catalog is filled in when unset.
     */
    public FlightInfo flightInfo(ReadCommand command) {
        ReadCommand c =
                command.hasCatalog() ? command : command.toBuilder().setCatalog(catalog).build();
        try {
            return flight.getInfo(
                    FlightDescriptor.command(c.toByteArray()),
                    org.apache.arrow.flight.CallOptions.timeout(ACTION_TIMEOUT_MS, TimeUnit.MILLISECONDS));
        } catch (RuntimeException e) {
            throw SetatsGatewayException.of(
                    "GetFlightInfo " + c.getDatabase() + "." + c.getTable() + " on " + url, e);
        }
    }

    /**
     * Closes the client: cancels every call still open on it (a following DoGet blocked in {@code
     * next()} then fails with CANCELLED, a DoPut not completed is cancelled), closes the channel,
     * and closes the allocator when the client owns it. Close FlightStreams before this, or their
     * buffers show up as an allocator leak: logged (so that the error that led to closing is not
     * masked) and recorded for {@link #drainLeaks()}, which the tests assert empty.
     */
    @Override
    public void close() {
        try {
            channel.shutdownNow();
            flight.close();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } catch (RuntimeException e) {
            // FlightClient closes its own child allocator: streams not closed show up here.
            LOG.warn("Closing the Flight client of {}: {}", url, e.getMessage());
            recordLeak("Flight client of " + url + ": " + e.getMessage());
        } finally {
            executor.shutdown();
            eventLoop.shutdownGracefully(0, 5, TimeUnit.SECONDS);
            if (ownsAllocator) {
                long left = allocator.getAllocatedMemory();
                try {
                    allocator.close();
                } catch (RuntimeException e) {
                    // Buffers of a cancelled stream may still be referenced; do not mask the
                    // error that led to closing.
                    LOG.warn("Closing the Arrow allocator of {}: {}", url, e.getMessage());
                    recordLeak("Arrow allocator of " + url + " (" + left + " bytes): " + e.getMessage());
                }
            }
        }
    }

    private static final Queue<String> LEAKS = new ConcurrentLinkedQueue<>();

    private static void recordLeak(String what) {
        LEAKS.add(what);
    }

    /**
     * The Arrow memory leaks {@link #close()} found in this JVM since the last call, oldest first,
     * and forgets them: each names the gateway URL and the bytes left. Tests assert that it is
     * empty when a gateway they used stops (SetatsGatewayProcess), so a leak fails them instead of
     * being only logged.
     */
    public static List<String> drainLeaks() {
        List<String> out = new ArrayList<>();
        for (String l; (l = LEAKS.poll()) != null; ) {
            out.add(l);
        }
        return out;
    }

    /** Options for extra CallOptions callers may want (e.g. a deadline on DoGet). */
    public static CallOption timeoutMs(long ms) {
        return org.apache.arrow.flight.CallOptions.timeout(ms, TimeUnit.MILLISECONDS);
    }

    /**
     * Daemon threads named after the gateway whose context class loader is the connector's own
     * (never a Flink task's user-code class loader that may be closed later).
     */
    private static final class ClientThreadFactory implements ThreadFactory {
        private static final AtomicInteger CLIENTS = new AtomicInteger();
        private final String prefix;
        private final AtomicInteger count = new AtomicInteger();

        ClientThreadFactory(ManagerUrl url) {
            this.prefix = "setats-client-" + CLIENTS.incrementAndGet() + "-" + url.port() + "-";
        }

        @Override
        public Thread newThread(Runnable r) {
            Thread t = new Thread(r, prefix + count.incrementAndGet());
            t.setDaemon(true);
            t.setContextClassLoader(GatewayClient.class.getClassLoader());
            return t;
        }
    }

    /** Trailer key carrying the call's gRPC status code name for {@link SetatsGatewayException}. */
    static final Metadata.Key<String> GRPC_CODE_KEY =
            Metadata.Key.of("x-setats-grpc-code", Metadata.ASCII_STRING_MARSHALLER);

    /** The {@code authorization} header of every call. */
    static final Metadata.Key<String> AUTHORIZATION_KEY =
            Metadata.Key.of("authorization", Metadata.ASCII_STRING_MARSHALLER);

    /** Adds HTTP Basic credentials to every call. */
    private static final class BasicAuthInterceptor extends CallInterceptor {
        private final String header;

        BasicAuthInterceptor(String header) {
            this.header = header;
        }

        @Override
        protected void onStart(Metadata headers) {
            headers.put(AUTHORIZATION_KEY, header);
        }
    }

    /** Copies each failed call's gRPC status code into its trailers ({@link #GRPC_CODE_KEY}). */
    private static final class GrpcCodeInterceptor extends CallInterceptor {
        @Override
        protected <RespT> ClientCall.Listener<RespT> wrap(ClientCall.Listener<RespT> listener) {
            return new ForwardingClientCallListener.SimpleForwardingClientCallListener<RespT>(listener) {
                @Override
                public void onClose(Status status, Metadata trailers) {
                    if (!status.isOk() && trailers != null) {
                        trailers.put(GRPC_CODE_KEY, status.getCode().name());
                    }
                    super.onClose(status, trailers);
                }
            };
        }
    }

    /**
     * WatchStream iterates the notifications of a {@code watch} action until closed. hasNext()
     * blocks for the next notification.
     */
    public static final class WatchStream implements Iterator<Notification>, AutoCloseable {
        private final String call;
        private final Context.CancellableContext ctx;
        private final Iterator<Result> results;

        private WatchStream(String call, Context.CancellableContext ctx, Iterator<Result> results) {
            this.call = call;
            this.ctx = ctx;
            this.results = results;
        }

        @Override
        public boolean hasNext() {
            try {
                return results.hasNext();
            } catch (RuntimeException e) {
                throw SetatsGatewayException.of(call, e);
            }
        }

        @Override
        public Notification next() {
            if (!hasNext()) {
                throw new NoSuchElementException();
            }
            try {
                return Notification.parseFrom(results.next().getBody());
            } catch (InvalidProtocolBufferException e) {
                throw new SetatsGatewayException(
                        call, "INTERNAL", "unparsable notification: " + e.getMessage(), e);
            } catch (RuntimeException e) {
                throw SetatsGatewayException.of(call, e);
            }
        }

        /** Cancels the watch; safe to call twice and from another thread. */
        @Override
        public void close() {
            ctx.cancel(null);
        }
    }
}
