package io.setats.flink.sink;

import io.setats.flink.SetatsConnectorOptions;
import io.setats.flink.SetatsConnectorOptions.MergeEngine;
import io.setats.flink.SetatsOptionsUtil;
import io.setats.flink.client.ConnectionOptions;
import io.setats.flink.sink.serializer.SetatsRecordSerializer;
import io.setats.flink.utils.SetatsTypes;

import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.ReadableConfig;
import org.apache.flink.connector.base.DeliveryGuarantee;
import org.apache.flink.table.api.ValidationException;
import org.apache.flink.table.types.logical.RowType;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import static io.setats.flink.SetatsConnectorOptions.BUCKET;
import static io.setats.flink.SetatsConnectorOptions.BUCKET_KEY;
import static io.setats.flink.SetatsConnectorOptions.CATALOG_NAME;
import static io.setats.flink.SetatsConnectorOptions.CATALOG_TABLE;
import static io.setats.flink.SetatsConnectorOptions.CATALOG_TYPE;
import static io.setats.flink.SetatsConnectorOptions.CHANGELOG_RETENTION_MS;
import static io.setats.flink.SetatsConnectorOptions.IGNORE_DELETE;
import static io.setats.flink.SetatsConnectorOptions.LOCATION;
import static io.setats.flink.SetatsConnectorOptions.MANAGER_URL;
import static io.setats.flink.SetatsConnectorOptions.PARTIAL_UPDATE_REMOVE_RECORD_ON_DELETE;
import static io.setats.flink.SetatsConnectorOptions.SINK_BUFFER_BYTES;
import static io.setats.flink.SetatsConnectorOptions.SINK_BUFFER_ROWS;
import static io.setats.flink.SetatsConnectorOptions.SINK_DELIVERY_GUARANTEE;
import static io.setats.flink.SetatsConnectorOptions.SINK_FLUSH_INTERVAL;
import static io.setats.flink.SetatsConnectorOptions.SINK_MAX_IN_FLIGHT_BATCHES;
import static io.setats.flink.SetatsConnectorOptions.SINK_TRANSACTION_TIMEOUT;
import static io.setats.flink.SetatsConnectorOptions.WAREHOUSE;

/**
 * SetatsSinkBuilder builds a {@link SetatsSink} for the DataStream API (no SQL needed): the row
 * type of the declared columns, the primary key and partition keys, and the same options as the
 * {@code setats} DDL (SPEC section 2), either one by one or all at once with {@link #setOptions}.
 *
 * <pre>{@code
 * SetatsSink<RowData> sink = SetatsSink.builder()
 *     .setManagerUrl("grpc://127.0.0.1:8815").setWarehouse("file:///data/wh")
 *     .setCatalogType("hadoop").setCatalogName("setats")
 *     .setDatabase("testdb").setTable("t")
 *     .setRowType(rowType).setPrimaryKey("id", "dt").setPartitionKeys("dt")
 *     .build();
 * stream.sinkTo(sink);
 * }</pre>
 *
 * {@link #build()} runs the checks of the SQL factory and throws {@link ValidationException}.
 */
public final class SetatsSinkBuilder<IN> {

    private final Configuration options = new Configuration();
    SetatsRecordSerializer<IN> serializer;
    RowType rowType;
    List<String> primaryKey = new ArrayList<>();
    List<String> partitionKeys = new ArrayList<>();
    Map<String, String> columnComments = new LinkedHashMap<>();

    // Filled by build().
    ConnectionOptions connection;
    String warehouse;
    String catalogType;
    String catalogName;
    String uri;
    String database;
    String table;
    int bucket;
    List<String> bucketKey;
    boolean bucketKeyExplicit;
    MergeEngine mergeEngine;
    String location;
    Map<String, String> tableOptions = new LinkedHashMap<>();
    Duration flushInterval;
    int bufferRows;
    long bufferBytes;
    int maxInFlightBatches;
    DeliveryGuarantee deliveryGuarantee;
    Duration transactionTimeout;
    Duration ackTimeout;
    Duration linger;
    Duration shuffleBufferTimeout;

    SetatsSinkBuilder(SetatsRecordSerializer<IN> serializer) {
        this.serializer = serializer;
    }

    /** Sets the serializer and so the input type. */
    @SuppressWarnings("unchecked")
    public <T> SetatsSinkBuilder<T> setSerializer(SetatsRecordSerializer<T> serializer) {
        SetatsSinkBuilder<T> self = (SetatsSinkBuilder<T>) this;
        self.serializer = serializer;
        return self;
    }

    /** Copies every Setats option set in {@code config} (DDL keys, SPEC section 2). */
    public SetatsSinkBuilder<IN> setOptions(ReadableConfig config) {
        for (org.apache.flink.configuration.ConfigOption<?> o : SINK_OPTIONS) {
            copy(config, o);
        }
        return this;
    }

    /** Copies DDL-style options, e.g. {@code "manager-url" -> "grpc://host:8815"}. */
    public SetatsSinkBuilder<IN> setOptions(Map<String, String> ddlOptions) {
        return setOptions(Configuration.fromMap(ddlOptions));
    }

    @SuppressWarnings("unchecked")
    private <T> void copy(ReadableConfig from, org.apache.flink.configuration.ConfigOption<T> o) {
        from.getOptional(o).ifPresent(v -> options.set(o, v));
    }

    public SetatsSinkBuilder<IN> setManagerUrl(String v) {
        options.set(MANAGER_URL, v);
        return this;
    }

    /**
     * User and password of the gateway's users file (SPEC section 14; options 'username',
     * 'password'), sent as HTTP Basic credentials on every call. Null: anonymous.
     */
    public SetatsSinkBuilder<IN> setCredentials(String username, String password) {
        setOrRemove(SetatsConnectorOptions.USERNAME, username);
        setOrRemove(SetatsConnectorOptions.PASSWORD, password);
        return this;
    }

    /** PEM file of CA certificates for grpc+tls:// (option 'tls.ca-cert'); null: JVM trust store. */
    public SetatsSinkBuilder<IN> setTlsCaCert(String path) {
        setOrRemove(SetatsConnectorOptions.TLS_CA_CERT, path);
        return this;
    }

    private void setOrRemove(org.apache.flink.configuration.ConfigOption<String> o, String v) {
        if (v == null) {
            options.removeConfig(o);
        } else {
            options.set(o, v);
        }
    }

    public SetatsSinkBuilder<IN> setWarehouse(String v) {
        options.set(WAREHOUSE, v);
        return this;
    }

    /** {@code hadoop} or {@code hive}. */
    public SetatsSinkBuilder<IN> setCatalogType(String v) {
        options.setString(CATALOG_TYPE.key(), v);
        return this;
    }

    public SetatsSinkBuilder<IN> setCatalogName(String v) {
        options.set(CATALOG_NAME, v);
        return this;
    }

    /** Hive Metastore URIs (catalog type hive). */
    public SetatsSinkBuilder<IN> setUri(String v) {
        options.set(SetatsConnectorOptions.URI, v);
        return this;
    }

    public SetatsSinkBuilder<IN> setDatabase(String v) {
        options.set(SetatsConnectorOptions.CATALOG_DATABASE, v);
        return this;
    }

    public SetatsSinkBuilder<IN> setTable(String v) {
        options.set(CATALOG_TABLE, v);
        return this;
    }

    /** The declared columns, in the order of the serializer's rows. */
    public SetatsSinkBuilder<IN> setRowType(RowType v) {
        this.rowType = v;
        return this;
    }

    public SetatsSinkBuilder<IN> setPrimaryKey(String... columns) {
        return setPrimaryKey(Arrays.asList(columns));
    }

    public SetatsSinkBuilder<IN> setPrimaryKey(List<String> columns) {
        this.primaryKey = new ArrayList<>(columns);
        return this;
    }

    public SetatsSinkBuilder<IN> setPartitionKeys(String... columns) {
        return setPartitionKeys(Arrays.asList(columns));
    }

    public SetatsSinkBuilder<IN> setPartitionKeys(List<String> columns) {
        this.partitionKeys = new ArrayList<>(columns);
        return this;
    }

    /** Column comments used when the sink creates the table. */
    public SetatsSinkBuilder<IN> setColumnComment(String column, String comment) {
        this.columnComments.put(column, comment);
        return this;
    }

    /** Bucket count, -1 for the gateway's default. */
    public SetatsSinkBuilder<IN> setBucket(int v) {
        options.set(BUCKET, v);
        return this;
    }

    public SetatsSinkBuilder<IN> setBucketKey(String... columns) {
        options.set(BUCKET_KEY, String.join(",", columns));
        return this;
    }

    /** DEDUPLICATE or PARTIAL_UPDATE. */
    public SetatsSinkBuilder<IN> setMergeEngine(MergeEngine v) {
        options.set(SetatsConnectorOptions.MERGE_ENGINE, v.name());
        return this;
    }

    public SetatsSinkBuilder<IN> setLocation(String v) {
        options.set(LOCATION, v);
        return this;
    }

    public SetatsSinkBuilder<IN> setFlushInterval(Duration v) {
        options.set(SINK_FLUSH_INTERVAL, v);
        return this;
    }

    public SetatsSinkBuilder<IN> setBufferRows(int v) {
        options.set(SINK_BUFFER_ROWS, v);
        return this;
    }

    public SetatsSinkBuilder<IN> setBufferBytes(long v) {
        options.set(SINK_BUFFER_BYTES, new org.apache.flink.configuration.MemorySize(v));
        return this;
    }

    public SetatsSinkBuilder<IN> setMaxInFlightBatches(int v) {
        options.set(SINK_MAX_IN_FLIGHT_BATCHES, v);
        return this;
    }

    /** {@code setats.sink.ack-timeout}: a batch not acknowledged this long after it was sent fails the job. */
    public SetatsSinkBuilder<IN> setAckTimeout(Duration v) {
        options.set(SetatsConnectorOptions.SINK_ACK_TIMEOUT, v);
        return this;
    }

    /**
     * {@code setats.sink.shuffle-buffer-timeout}: the longest a row waits in a network buffer of
     * the shuffle before the writers (unset by default: the job's {@code execution.buffer-timeout};
     * 0: flush after every row; see {@link SetatsConnectorOptions#SINK_SHUFFLE_BUFFER_TIMEOUT}).
     */
    public SetatsSinkBuilder<IN> setShuffleBufferTimeout(Duration v) {
        options.set(SetatsConnectorOptions.SINK_SHUFFLE_BUFFER_TIMEOUT, v);
        return this;
    }

    /** {@code setats.sink.linger}: how long an idle writer waits for more rows before sending (0: at once). */
    public SetatsSinkBuilder<IN> setLinger(Duration v) {
        options.set(SetatsConnectorOptions.SINK_LINGER, v);
        return this;
    }

    /**
     * {@code AT_LEAST_ONCE} (default) or {@code EXACTLY_ONCE} (needs checkpointing), as option
     * 'sink.delivery-guarantee' (SPEC section 10). {@code NONE} is refused by {@link #build()}.
     */
    public SetatsSinkBuilder<IN> setDeliveryGuarantee(DeliveryGuarantee v) {
        options.set(SINK_DELIVERY_GUARANTEE, v.toString());
        return this;
    }

    /** exactly-once: how long staged rows of a job that never comes back are kept. */
    public SetatsSinkBuilder<IN> setTransactionTimeout(Duration v) {
        options.set(SINK_TRANSACTION_TIMEOUT, v);
        return this;
    }

    /**
     * Checks everything the SQL factory checks and builds the sink.
     *
     * @throws ValidationException naming the option or column at fault
     */
    public SetatsSink<IN> build() {
        for (org.apache.flink.configuration.ConfigOption<?> o :
                Arrays.asList(MANAGER_URL, WAREHOUSE, CATALOG_TYPE, CATALOG_NAME)) {
            if (!options.contains(o)) {
                throw new ValidationException("Missing required option '" + o.key() + "'.");
            }
        }
        if (!options.getOptional(CATALOG_TABLE).isPresent()) {
            throw new ValidationException(
                    "Option '" + CATALOG_TABLE.key() + "' (the table name) is required here.");
        }
        if (rowType == null) {
            throw new ValidationException("The sink's row type is required (setRowType).");
        }
        if (serializer == null) {
            throw new ValidationException("The sink's serializer is required (setSerializer).");
        }
        for (String c : primaryKey) {
            if (rowType.getFieldIndex(c) < 0) {
                throw new ValidationException(
                        "Primary-key column '" + c + "' is not in " + rowType.getFieldNames());
            }
        }
        for (RowType.RowField f : rowType.getFields()) {
            SetatsTypes.toTypeString(f.getName(), f.getType());
        }
        SetatsOptionsUtil.validateSink(options, rowType.getFieldNames(), primaryKey, partitionKeys);

        connection = SetatsOptionsUtil.connectionOptions(options);
        warehouse = options.get(WAREHOUSE);
        catalogType = options.get(CATALOG_TYPE).toString();
        catalogName = options.get(CATALOG_NAME);
        uri = options.getOptional(SetatsConnectorOptions.URI).orElse("");
        database = SetatsOptionsUtil.database(options);
        table = SetatsOptionsUtil.table(options, null);
        bucket = SetatsOptionsUtil.bucket(options);
        bucketKey = SetatsOptionsUtil.bucketKey(options, primaryKey, partitionKeys);
        bucketKeyExplicit = options.getOptional(BUCKET_KEY).isPresent();
        mergeEngine = SetatsOptionsUtil.mergeEngine(options);
        location = options.getOptional(LOCATION).orElse(null);
        tableOptions = new LinkedHashMap<>();
        options.getOptional(IGNORE_DELETE)
                .ifPresent(v -> tableOptions.put(IGNORE_DELETE.key(), v.toString()));
        options.getOptional(PARTIAL_UPDATE_REMOVE_RECORD_ON_DELETE)
                .ifPresent(
                        v ->
                                tableOptions.put(
                                        PARTIAL_UPDATE_REMOVE_RECORD_ON_DELETE.key(),
                                        v.toString()));
        options.getOptional(CHANGELOG_RETENTION_MS)
                .ifPresent(v -> tableOptions.put(CHANGELOG_RETENTION_MS.key(), v.toString()));
        options.getOptional(SetatsConnectorOptions.CHANGELOG_ENABLED)
                .ifPresent(v -> tableOptions.put("changelog.enabled", v.toString()));
        options.getOptional(SetatsConnectorOptions.CHANGELOG_CLEAN_ON_CONSUME)
                .ifPresent(v -> tableOptions.put("changelog.clean-on-consume", v.toString()));
        options.getOptional(SetatsConnectorOptions.SLOT_TTL)
                .ifPresent(v -> tableOptions.put("slot.ttl", v.toMillis() + " ms"));
        flushInterval = options.get(SINK_FLUSH_INTERVAL);
        bufferRows = options.get(SINK_BUFFER_ROWS);
        bufferBytes = options.get(SINK_BUFFER_BYTES).getBytes();
        maxInFlightBatches = options.get(SINK_MAX_IN_FLIGHT_BATCHES);
        deliveryGuarantee = SetatsOptionsUtil.deliveryGuarantee(options);
        transactionTimeout = options.get(SINK_TRANSACTION_TIMEOUT);
        ackTimeout = options.get(SetatsConnectorOptions.SINK_ACK_TIMEOUT);
        linger = options.get(SetatsConnectorOptions.SINK_LINGER);
        shuffleBufferTimeout = options.get(SetatsConnectorOptions.SINK_SHUFFLE_BUFFER_TIMEOUT);
        return new SetatsSink<>(this);
    }

    /** The options {@link #setOptions} copies. */
    static final List<org.apache.flink.configuration.ConfigOption<?>> SINK_OPTIONS =
            Arrays.asList(
                    MANAGER_URL,
                    SetatsConnectorOptions.USERNAME,
                    SetatsConnectorOptions.PASSWORD,
                    SetatsConnectorOptions.TLS_CA_CERT,
                    WAREHOUSE,
                    CATALOG_TYPE,
                    CATALOG_NAME,
                    SetatsConnectorOptions.CATALOG_DATABASE,
                    CATALOG_TABLE,
                    SetatsConnectorOptions.URI,
                    LOCATION,
                    BUCKET,
                    BUCKET_KEY,
                    SetatsConnectorOptions.MERGE_ENGINE,
                    SINK_FLUSH_INTERVAL,
                    SINK_BUFFER_ROWS,
                    SINK_BUFFER_BYTES,
                    SINK_MAX_IN_FLIGHT_BATCHES,
                    SINK_DELIVERY_GUARANTEE,
                    SINK_TRANSACTION_TIMEOUT,
                    SetatsConnectorOptions.SINK_ACK_TIMEOUT,
                    SetatsConnectorOptions.SINK_LINGER,
                    SetatsConnectorOptions.SINK_SHUFFLE_BUFFER_TIMEOUT,
                    IGNORE_DELETE,
                    PARTIAL_UPDATE_REMOVE_RECORD_ON_DELETE,
                    CHANGELOG_RETENTION_MS,
                    SetatsConnectorOptions.CHANGELOG_ENABLED,
                    SetatsConnectorOptions.CHANGELOG_CLEAN_ON_CONSUME,
                    SetatsConnectorOptions.SLOT_TTL);
}
