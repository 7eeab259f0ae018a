package io.setats.flink.sink;

import io.setats.flink.SetatsConnectorOptions.MergeEngine;
import io.setats.flink.client.ConnectionOptions;
import io.setats.flink.client.GatewayClient;
import io.setats.flink.sink.serializer.SetatsRecordSerializer;
import io.setats.flink.sink.writer.SetatsSinkWriter;
import io.setats.flink.utils.SetatsTypes;
import io.setats.proto.v1.CatalogContext;
import io.setats.proto.v1.Column;
import io.setats.proto.v1.GatewayInfo;
import io.setats.proto.v1.TableInfo;
import io.setats.proto.v1.TableSpec;

import io.setats.flink.sink.committer.SetatsCommittable;
import io.setats.flink.sink.committer.SetatsCommittableSerializer;
import io.setats.flink.sink.committer.SetatsCommitter;
import io.setats.flink.sink.writer.SetatsWriterState;
import io.setats.flink.sink.writer.SetatsWriterStateSerializer;

import org.apache.flink.api.common.RuntimeExecutionMode;
import org.apache.flink.api.dag.Transformation;
import org.apache.flink.api.connector.sink2.Committer;
import org.apache.flink.api.connector.sink2.CommitterInitContext;
import org.apache.flink.api.connector.sink2.Sink;
import org.apache.flink.api.connector.sink2.SinkWriter;
import org.apache.flink.api.connector.sink2.StatefulSinkWriter;
import org.apache.flink.api.connector.sink2.SupportsCommitter;
import org.apache.flink.api.connector.sink2.SupportsWriterState;
import org.apache.flink.api.connector.sink2.WriterInitContext;
import org.apache.flink.configuration.ExecutionOptions;
import org.apache.flink.connector.base.DeliveryGuarantee;
import org.apache.flink.core.io.SimpleVersionedSerializer;
import org.apache.flink.streaming.api.connector.sink2.SupportsPreWriteTopology;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.datastream.SingleOutputStreamOperator;
import org.apache.flink.streaming.api.operators.AbstractStreamOperator;
import org.apache.flink.streaming.api.operators.ChainingStrategy;
import org.apache.flink.streaming.api.operators.OneInputStreamOperator;
import org.apache.flink.streaming.api.transformations.PhysicalTransformation;
import org.apache.flink.streaming.runtime.streamrecord.StreamRecord;
import org.apache.flink.table.api.ValidationException;
import org.apache.flink.table.data.RowData;
import org.apache.flink.table.types.logical.RowType;

import java.io.IOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.UUID;

/**
 * SetatsSink writes upserts into a Setats primary-key table through the gateway's DoPut (SPEC
 * section 3), at least once (retried batches applied once) or exactly once (rows staged per
 * checkpoint and committed by {@link SetatsCommitter} when it completes; SPEC section 10).
 *
 * <p>Topology: before the writers, rows are partitioned so that exactly one writer subtask owns
 * each (partition, bucket) ({@link BucketOwnerRouter}); the bucket layout is resolved from the
 * gateway when the job is built ({@link #resolveLayout()}). Each {@link SetatsSinkWriter} buffers
 * rows into Arrow record batches (the declared columns plus {@code _row_kind}), sends them on
 * flush interval or buffer size, and on checkpoint and end of input waits until every sent batch
 * is acknowledged as durable.
 *
 * <p>Build one with {@link #builder()} (RowData input) or {@link SetatsSinkBuilder#setSerializer}
 * (any input type). The SQL factory {@code setats} builds the same sink.
 */
public final class SetatsSink<IN>
        implements Sink<IN>,
                SupportsPreWriteTopology<IN>,
                SupportsCommitter<SetatsCommittable>,
                SupportsWriterState<IN, SetatsWriterState> {

    private static final long serialVersionUID = 1L;

    private final ConnectionOptions connection;
    private final String warehouse;
    private final String catalogType;
    private final String catalogName;
    private final String uri;
    private final String database;
    private final String table;
    private final RowType rowType;
    private final List<String> primaryKey;
    private final List<String> partitionKeys;
    private final int bucket;
    private final List<String> bucketKey;
    private final boolean bucketKeyExplicit;
    private final MergeEngine mergeEngine;
    private final String location;
    private final Map<String, String> tableOptions;
    private final Map<String, String> columnComments;
    private final Duration flushInterval;
    private final int bufferRows;
    private final long bufferBytes;
    private final int maxInFlightBatches;
    private final Duration ackTimeout;
    private final Duration linger;
    private final Duration shuffleBufferTimeout;
    private final SetatsRecordSerializer<IN> serializer;
    private final DeliveryGuarantee deliveryGuarantee;
    private final Duration transactionTimeout;
    /** Names this sink in a job (fixed when the job is built, kept across failovers). */
    private final String sinkId = UUID.randomUUID().toString();

    /** Resolved by {@link #resolveLayout()} (job build) or lazily by the writer. */
    private SetatsTableLayout layout;

    SetatsSink(SetatsSinkBuilder<IN> b) {
        this.connection = b.connection;
        this.warehouse = b.warehouse;
        this.catalogType = b.catalogType;
        this.catalogName = b.catalogName;
        this.uri = b.uri;
        this.database = b.database;
        this.table = b.table;
        this.rowType = b.rowType;
        this.primaryKey = Collections.unmodifiableList(new ArrayList<>(b.primaryKey));
        this.partitionKeys = Collections.unmodifiableList(new ArrayList<>(b.partitionKeys));
        this.bucket = b.bucket;
        this.bucketKey = Collections.unmodifiableList(new ArrayList<>(b.bucketKey));
        this.bucketKeyExplicit = b.bucketKeyExplicit;
        this.mergeEngine = b.mergeEngine;
        this.location = b.location;
        this.tableOptions = Collections.unmodifiableMap(new LinkedHashMap<>(b.tableOptions));
        this.columnComments = Collections.unmodifiableMap(new LinkedHashMap<>(b.columnComments));
        this.flushInterval = b.flushInterval;
        this.bufferRows = b.bufferRows;
        this.bufferBytes = b.bufferBytes;
        this.maxInFlightBatches = b.maxInFlightBatches;
        this.ackTimeout = b.ackTimeout;
        this.linger = b.linger;
        this.shuffleBufferTimeout = b.shuffleBufferTimeout;
        this.serializer = b.serializer;
        this.deliveryGuarantee = b.deliveryGuarantee;
        this.transactionTimeout = b.transactionTimeout;
    }

    /** A builder for a sink whose input is {@link RowData}. */
    public static SetatsSinkBuilder<RowData> builder() {
        return new SetatsSinkBuilder<>(SetatsRecordSerializer.rowData());
    }

    // --------------------------------------------------------------------------------------------
    // Sink
    // --------------------------------------------------------------------------------------------

    /** Not used by Flink 1.20's runtime, which calls {@link #createWriter(WriterInitContext)}. */
    @Override
    @Deprecated
    public SinkWriter<IN> createWriter(InitContext context) throws IOException {
        throw new UnsupportedOperationException(
                "SetatsSink needs a WriterInitContext (Flink 1.19+ runtime)");
    }

    @Override
    public SetatsSinkWriter<IN> createWriter(WriterInitContext context) throws IOException {
        return new SetatsSinkWriter<>(this, layout(), context, Collections.emptyList());
    }

    @Override
    public StatefulSinkWriter<IN, SetatsWriterState> restoreWriter(
            WriterInitContext context, Collection<SetatsWriterState> recoveredState)
            throws IOException {
        return new SetatsSinkWriter<>(this, layout(), context, recoveredState);
    }

    @Override
    public SimpleVersionedSerializer<SetatsWriterState> getWriterStateSerializer() {
        return new SetatsWriterStateSerializer();
    }

    @Override
    public Committer<SetatsCommittable> createCommitter(CommitterInitContext context) {
        return new SetatsCommitter(
                connection, catalogContext(), context.getTaskInfo().getIndexOfThisSubtask());
    }

    @Override
    public SimpleVersionedSerializer<SetatsCommittable> getCommittableSerializer() {
        return new SetatsCommittableSerializer();
    }

    /**
     * Also checks, for {@code exactly-once}, that the job checkpoints (or runs in batch mode,
     * where the commit comes at the end of input): without checkpoints nothing would ever be
     * committed, so the job fails at start saying so.
     *
     * @throws ValidationException exactly-once without checkpointing
     */
    @Override
    public DataStream<IN> addPreWriteTopology(DataStream<IN> input) {
        if (deliveryGuarantee == DeliveryGuarantee.EXACTLY_ONCE) {
            StreamExecutionEnvironment env = input.getExecutionEnvironment();
            boolean batch =
                    env.getConfiguration().get(ExecutionOptions.RUNTIME_MODE)
                            == RuntimeExecutionMode.BATCH;
            if (!batch && !env.getCheckpointConfig().isCheckpointingEnabled()) {
                throw new ValidationException(
                        "Option 'sink.delivery-guarantee' = 'exactly-once' of the setats sink for "
                                + database
                                + "."
                                + table
                                + " needs checkpointing: rows are committed when a checkpoint "
                                + "completes. Enable it (execution.checkpointing.interval) or use "
                                + "'at-least-once'.");
            }
        }
        SetatsTableLayout l = resolveLayout();
        return withShuffleBufferTimeout(
                        input, shuffleBufferTimeout == null ? -1 : shuffleBufferTimeout.toMillis())
                .partitionCustom(
                        new BucketOwnerRouter.OwnerPartitioner(),
                        new BucketOwnerRouter<>(serializer, rowType, l));
    }

    /**
     * {@code input}, or {@code input} through a pass-through operator chained to it whose output
     * flushes every {@code limitMs} ms, so that at low rates a row does not wait up to the job's
     * {@code execution.buffer-timeout} (100 ms by default) in a half-empty network buffer on its
     * way to the writers; under load buffers fill and are sent before either timeout. The timeout
     * cannot be lowered on the operator before the sink itself: Flink expands a sink's pre-write
     * topology after it has translated that operator, and a network edge takes the timeout its
     * upstream operator had then. Left as it is when {@code input} is a partitioning (the
     * operator would sit behind a network edge of its own), when its operator has a buffer
     * timeout of its own, when the job's default is already at most {@code limitMs} or disables
     * periodic flushing (-1), or when {@code limitMs} is negative (see {@link
     * #lowersShuffleBufferTimeout}).
     */
    static <T> DataStream<T> withShuffleBufferTimeout(DataStream<T> input, long limitMs) {
        Transformation<T> t = input.getTransformation();
        long jobDefaultMs = input.getExecutionEnvironment().getBufferTimeout();
        if (!lowersShuffleBufferTimeout(t, jobDefaultMs, limitMs)) {
            return input;
        }
        SingleOutputStreamOperator<T> flush =
                input.transform(
                                "Setats shuffle flush " + limitMs + " ms",
                                input.getType(),
                                new ShuffleFlush<T>())
                        .setParallelism(t.getParallelism())
                        .setBufferTimeout(limitMs);
        if (t.getMaxParallelism() > 0) {
            flush.setMaxParallelism(t.getMaxParallelism());
        }
        return flush;
    }

    /**
     * Whether {@link #withShuffleBufferTimeout} puts the pass-through behind {@code t} (the
     * transformation before the writers' shuffle): {@code t} is an operator (not a partitioning)
     * without a buffer timeout of its own, {@code limitMs >= 0}, and the job's default ({@code
     * jobDefaultMs}, -1: periodic flushing off) is higher than {@code limitMs}.
     */
    static boolean lowersShuffleBufferTimeout(Transformation<?> t, long jobDefaultMs, long limitMs) {
        return limitMs >= 0
                && jobDefaultMs > limitMs // also false when the job's is -1
                && t.getBufferTimeout() < 0
                && t instanceof PhysicalTransformation;
    }

    /**
     * Forwards every element (records, watermarks, watermark statuses, latency markers) as it is;
     * always chained to the operator before it, so it adds no network edge, only the buffer
     * timeout of its output ({@link #withShuffleBufferTimeout}).
     */
    static final class ShuffleFlush<T> extends AbstractStreamOperator<T>
            implements OneInputStreamOperator<T, T> {
        private static final long serialVersionUID = 1L;

        ShuffleFlush() {
            chainingStrategy = ChainingStrategy.ALWAYS;
        }

        @Override
        public void processElement(StreamRecord<T> element) {
            output.collect(element);
        }
    }

    /** The layout, resolving it from the gateway the first time. */
    public synchronized SetatsTableLayout layout() {
        if (layout == null) {
            layout = resolveLayout();
        }
        return layout;
    }

    /**
     * Asks the gateway for the table's layout: the existing table's partition keys, bucket count
     * and bucket key (explicit 'bucket' / 'bucket-key' options must match them), or, when the
     * table does not exist yet, the sink's own with {@code bucket = -1} meaning the gateway's
     * default bucket count. Also checks the warehouse.
     *
     * @throws ValidationException on a layout mismatch or a routing column missing from the sink
     * @throws io.setats.flink.client.SetatsGatewayException on a gateway error
     */
    public synchronized SetatsTableLayout resolveLayout() {
        try (GatewayClient client = GatewayClient.connect(connection, catalogContext())) {
            GatewayInfo info = client.checkWarehouse(warehouse);
            Optional<TableInfo> existing = client.getTable(database, table);
            SetatsTableLayout l;
            if (existing.isPresent()) {
                TableSpec spec = existing.get().getSpec();
                String name = database + "." + table;
                if (bucket > 0 && bucket != spec.getBucketCount()) {
                    throw new ValidationException(
                            "Option 'bucket' = "
                                    + bucket
                                    + " does not match table "
                                    + name
                                    + ", which has "
                                    + spec.getBucketCount()
                                    + " buckets.");
                }
                if (bucketKeyExplicit && !bucketKey.equals(spec.getBucketKeyList())) {
                    throw new ValidationException(
                            "Option 'bucket-key' = '"
                                    + String.join(",", bucketKey)
                                    + "' does not match table "
                                    + name
                                    + ", whose bucket key is "
                                    + spec.getBucketKeyList()
                                    + ".");
                }
                for (String c : spec.getPrimaryKeyList()) {
                    if (rowType.getFieldIndex(c) < 0) {
                        throw new ValidationException(
                                "The sink must declare every primary-key column of table "
                                        + name
                                        + "; '"
                                        + c
                                        + "' is missing (primary key "
                                        + spec.getPrimaryKeyList()
                                        + ").");
                    }
                }
                l =
                        new SetatsTableLayout(
                                spec.getPartitionKeysList(),
                                spec.getBucketCount(),
                                spec.getBucketKeyList());
            } else {
                int count = bucket > 0 ? bucket : info.getDefaultBucketCount();
                if (count <= 0) {
                    throw new ValidationException(
                            "The gateway reports default bucket count "
                                    + info.getDefaultBucketCount()
                                    + "; set option 'bucket'.");
                }
                l = new SetatsTableLayout(partitionKeys, count, bucketKey);
            }
            this.layout = l;
            return l;
        }
    }

    // --------------------------------------------------------------------------------------------
    // What the writer needs
    // --------------------------------------------------------------------------------------------

    /** The CatalogContext of every request. */
    public CatalogContext catalogContext() {
        return CatalogContext.newBuilder()
                .setWarehouse(warehouse)
                .setCatalogType(catalogType)
                .setCatalogName(catalogName)
                .setUri(uri == null ? "" : uri)
                .build();
    }

    /**
     * The TableSpec sent as {@code create_if_absent} (SPEC section 3): the declared columns with
     * their Setats types, primary key, partition keys, bucket count and key of {@code l}, merge
     * engine, table options and location.
     */
    public TableSpec createIfAbsentSpec(SetatsTableLayout l) {
        TableSpec.Builder spec =
                TableSpec.newBuilder()
                        .setDatabase(database)
                        .setTable(table)
                        .addAllPrimaryKey(primaryKey)
                        .addAllPartitionKeys(partitionKeys)
                        .setBucketCount(l.bucketCount())
                        .addAllBucketKey(l.bucketKey())
                        .setMergeEngine(mergeEngine.name())
                        .putAllOptions(tableOptions);
        if (location != null) {
            spec.setLocation(location);
        }
        for (RowType.RowField f : rowType.getFields()) {
            spec.addColumns(
                    Column.newBuilder()
                            .setName(f.getName())
                            .setType(SetatsTypes.toTypeString(f.getName(), f.getType()))
                            .setNotNull(!f.getType().isNullable())
                            .setComment(columnComments.getOrDefault(f.getName(), ""))
                            .build());
        }
        return spec.build();
    }

    /** The manager-url as given. */
    public String managerUrl() {
        return connection.managerUrl().original();
    }

    /** manager-url, credentials and TLS CA of the gateway (SPEC section 14). */
    public ConnectionOptions connection() {
        return connection;
    }

    public String warehouse() {
        return warehouse;
    }

    public String database() {
        return database;
    }

    public String table() {
        return table;
    }

    /** The declared columns, in the order of the rows the serializer produces. */
    public RowType rowType() {
        return rowType;
    }

    public List<String> primaryKey() {
        return primaryKey;
    }

    public List<String> partitionKeys() {
        return partitionKeys;
    }

    public MergeEngine mergeEngine() {
        return mergeEngine;
    }

    public Duration flushInterval() {
        return flushInterval;
    }

    public int bufferRows() {
        return bufferRows;
    }

    public long bufferBytes() {
        return bufferBytes;
    }

    public int maxInFlightBatches() {
        return maxInFlightBatches;
    }

    /** {@code setats.sink.ack-timeout}: longest wait for a sent batch's WriteAck. */
    public Duration ackTimeout() {
        return ackTimeout;
    }

    /** {@code setats.sink.linger}: how long an idle writer waits for more rows (0: none). */
    public Duration linger() {
        return linger;
    }

    public SetatsRecordSerializer<IN> serializer() {
        return serializer;
    }

    /** {@code AT_LEAST_ONCE} or {@code EXACTLY_ONCE} (SPEC section 10). */
    public DeliveryGuarantee deliveryGuarantee() {
        return deliveryGuarantee;
    }

    /** How long the gateway keeps rows staged by a job that does not come back. */
    public Duration transactionTimeout() {
        return transactionTimeout;
    }

    /** The commit user of a fresh exactly-once start: this sink's id and table. */
    public String commitUser() {
        return "setats-sink-" + sinkId + "-" + database + "." + table;
    }

    @Override
    public String toString() {
        return "SetatsSink(" + connection + ", " + database + "." + table + ")";
    }
}
