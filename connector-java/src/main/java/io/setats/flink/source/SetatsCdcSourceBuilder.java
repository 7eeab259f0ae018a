package io.setats.flink.source;

import io.setats.flink.SetatsConnectorOptions;
import io.setats.flink.SetatsConnectorOptions.StartupMode;
import io.setats.flink.client.GatewayClient;
import io.setats.flink.client.ConnectionOptions;
import io.setats.flink.client.ManagerUrl;
import io.setats.flink.source.deserializer.RowDataDeserializationSchema;
import io.setats.flink.source.deserializer.SetatsDeserializationSchema;
import io.setats.flink.utils.SetatsTypes;
import io.setats.proto.v1.Column;
import io.setats.proto.v1.TableInfo;

import org.apache.flink.table.data.RowData;
import org.apache.flink.table.types.logical.LogicalType;
import org.apache.flink.table.types.logical.RowType;

import javax.annotation.Nullable;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;

/**
 * SetatsCdcSourceBuilder builds a {@link SetatsCdcSource} for the DataStream API. Required: the
 * manager URL and the table. Defaults follow SPEC section 2: startup mode {@code latest},
 * discovery every 300 s, catalog type {@code hadoop}, database {@code default}.
 *
 * <p>The read columns default to all columns of the table, looked up from the gateway in {@link
 * #build()} ({@code get-table}); {@link #setReadType(RowType)} names them instead (a subset, by
 * name) and needs no gateway at build time. Without a deserializer the source emits {@link
 * RowData} of the read columns with the changelog RowKind.
 *
 * @param <T> type of the emitted records
 */
public final class SetatsCdcSourceBuilder<T> {

    private String managerUrl;
    @Nullable private String username;
    @Nullable private String password;
    @Nullable private String tlsCaCert;
    private String warehouse = "";
    private String catalogType = SetatsConnectorOptions.CatalogType.hadoop.toString();
    private String catalogName = "";
    private String uri = "";
    private String database = SetatsConnectorOptions.CATALOG_DATABASE.defaultValue();
    private String table;
    private StartupMode startupMode = StartupMode.LATEST;
    @Nullable private Long startupTimestampMs;
    private Duration discoveryInterval = SetatsConnectorOptions.BUCKET_DISCOVERY_INTERVAL.defaultValue();
    private Duration reconnectTimeout = SetatsConnectorOptions.SCAN_RECONNECT_TIMEOUT.defaultValue();
    private int expectedBucketCount = -1;
    @Nullable private String expectedBucketKey;
    @Nullable private RowType readType;
    @Nullable private SetatsDeserializationSchema<?> deserializer;
    private boolean watchEnabled = true;
    @Nullable private String slotName;
    private int syncPointSize = SetatsConnectorOptions.SLOT_SYNC_POINT_SIZE.defaultValue();

    SetatsCdcSourceBuilder() {}

    /** Gateway address: {@code grpc://host:port}, {@code grpc+tls://host:port} or {@code host:port}. */
    public SetatsCdcSourceBuilder<T> setManagerUrl(String managerUrl) {
        ManagerUrl.parse(managerUrl); // fail early on a malformed address
        this.managerUrl = managerUrl;
        return this;
    }

    /**
     * User and password of the gateway's users file (SPEC section 14; options 'username',
     * 'password'), sent as HTTP Basic credentials on every call. Null: anonymous.
     */
    public SetatsCdcSourceBuilder<T> setCredentials(@Nullable String username, @Nullable String password) {
        this.username = username;
        this.password = password;
        return this;
    }

    /** PEM file of CA certificates for grpc+tls:// (option 'tls.ca-cert'); null: JVM trust store. */
    public SetatsCdcSourceBuilder<T> setTlsCaCert(@Nullable String path) {
        this.tlsCaCert = path;
        return this;
    }

    /** Warehouse the gateway must serve (checked by the gateway); empty skips the check. */
    public SetatsCdcSourceBuilder<T> setWarehouse(String warehouse) {
        this.warehouse = Objects.requireNonNull(warehouse);
        return this;
    }

    /** Catalog type {@code hadoop} (default) or {@code hive}, name and Hive Metastore URIs. */
    public SetatsCdcSourceBuilder<T> setCatalog(String catalogType, String catalogName, @Nullable String uri) {
        this.catalogType = Objects.requireNonNull(catalogType);
        this.catalogName = Objects.requireNonNull(catalogName);
        this.uri = uri == null ? "" : uri;
        return this;
    }

    /** The table to read, in database {@code default}. */
    public SetatsCdcSourceBuilder<T> setTable(String table) {
        this.table = Objects.requireNonNull(table);
        return this;
    }

    /** The table to read. */
    public SetatsCdcSourceBuilder<T> setTable(String database, String table) {
        this.database = Objects.requireNonNull(database);
        this.table = Objects.requireNonNull(table);
        return this;
    }

    /** {@code latest} (default) or {@code earliest}; see {@link #setStartFromTimestamp} too. */
    public SetatsCdcSourceBuilder<T> setStartupMode(StartupMode startupMode) {
        this.startupMode = Objects.requireNonNull(startupMode);
        if (startupMode != StartupMode.FROM_TIMESTAMP) {
            this.startupTimestampMs = null;
        }
        return this;
    }

    /** Mode {@code from-timestamp}: from the first row committed at or after {@code timestampMs}. */
    public SetatsCdcSourceBuilder<T> setStartFromTimestamp(long timestampMs) {
        this.startupMode = StartupMode.FROM_TIMESTAMP;
        this.startupTimestampMs = timestampMs;
        return this;
    }

    /** How often new buckets and partitions are looked for (default 300 s). */
    public SetatsCdcSourceBuilder<T> setDiscoveryInterval(Duration interval) {
        this.discoveryInterval = Objects.requireNonNull(interval);
        return this;
    }

    /** Fails the job at start unless the table has this many buckets per partition. */
    public SetatsCdcSourceBuilder<T> setExpectedBucketCount(int bucketCount) {
        this.expectedBucketCount = bucketCount;
        return this;
    }

    /** Fails the job at start unless the table's bucket key is this comma list. */
    public SetatsCdcSourceBuilder<T> setExpectedBucketKey(@Nullable String bucketKey) {
        this.expectedBucketKey = bucketKey;
        return this;
    }

    /** The columns to read, by name (a subset of the table's, any order). */
    public SetatsCdcSourceBuilder<T> setReadType(RowType readType) {
        this.readType = Objects.requireNonNull(readType);
        return this;
    }

    /** Emits what {@code deserializer} makes of each changelog row instead of RowData. */
    @SuppressWarnings("unchecked")
    public <OUT> SetatsCdcSourceBuilder<OUT> setDeserializer(SetatsDeserializationSchema<OUT> deserializer) {
        this.deserializer = Objects.requireNonNull(deserializer);
        return (SetatsCdcSourceBuilder<OUT>) this;
    }

    /**
     * Whether the enumerator keeps the gateway's watch stream open to find new buckets at once
     * (default true). Without it new buckets are found every discovery interval.
     */
    public SetatsCdcSourceBuilder<T> setWatchEnabled(boolean watchEnabled) {
        this.watchEnabled = watchEnabled;
        return this;
    }

    /**
     * Keeps the position in slot {@code slotName} on the gateway (SPEC section 9, DWS
     * binlogSlotName; null: none): one running job per slot; a job without Flink state starts at
     * the slot's checkpoint sync points.
     */
    public SetatsCdcSourceBuilder<T> setSlotName(@Nullable String slotName) {
        this.slotName = slotName;
        return this;
    }

    /** Rows per bucket between running sync points (default 5000, DWS binlogSyncPointSize). */
    public SetatsCdcSourceBuilder<T> setSyncPointSize(int rows) {
        this.syncPointSize = rows;
        return this;
    }

    /**
     * How long a bucket's changelog stream keeps reconnecting without a row after it broke
     * ({@code scan.reconnect-timeout}, default 5 min; 0 fails at the first broken stream).
     */
    public SetatsCdcSourceBuilder<T> setReconnectTimeout(Duration timeout) {
        this.reconnectTimeout = java.util.Objects.requireNonNull(timeout, "timeout");
        return this;
    }

    /**
     * Builds the source.
     *
     * @throws IllegalArgumentException when a required setting is missing or settings contradict
     * @throws io.setats.flink.client.SetatsGatewayException when no read type was set and the
     *     table's columns cannot be looked up
     */
    @SuppressWarnings("unchecked")
    public SetatsCdcSource<T> build() {
        if (managerUrl == null) {
            throw new IllegalArgumentException("The manager URL is required (setManagerUrl)");
        }
        if (table == null) {
            throw new IllegalArgumentException("The table is required (setTable)");
        }
        ConnectionOptions connection =
                ConnectionOptions.builder()
                        .managerUrl(managerUrl)
                        .credentials(username, password)
                        .tlsCaCert(tlsCaCert)
                        .build();
        SetatsSourceConfig config =
                new SetatsSourceConfig(
                        connection,
                        warehouse,
                        catalogType,
                        catalogName,
                        uri,
                        database,
                        table,
                        startupMode,
                        startupTimestampMs,
                        discoveryInterval,
                        expectedBucketCount,
                        expectedBucketKey)
                        .withSlot(slotName, syncPointSize)
                        .withReconnectTimeout(reconnectTimeout);
        RowType rt = readType != null ? readType : tableRowType(config);
        SetatsDeserializationSchema<T> d =
                deserializer != null
                        ? (SetatsDeserializationSchema<T>) deserializer
                        : (SetatsDeserializationSchema<T>) new RowDataDeserializationSchema(rt);
        return new SetatsCdcSource<>(config, rt, d, watchEnabled);
    }

    /** All columns of the table, as the gateway describes them. */
    static RowType tableRowType(SetatsSourceConfig config) {
        try (GatewayClient client = config.connect()) {
            TableInfo info =
                    client.getTable(config.database(), config.table())
                            .orElseThrow(
                                    () ->
                                            new IllegalArgumentException(
                                                    "Setats table " + config.tablePath() + " does not exist"));
            List<RowType.RowField> fields = new ArrayList<>();
            for (Column c : info.getSpec().getColumnsList()) {
                LogicalType t = SetatsTypes.parse(c.getName(), c.getType());
                boolean notNull = c.getNotNull() || info.getSpec().getPrimaryKeyList().contains(c.getName());
                fields.add(new RowType.RowField(c.getName(), t.copy(!notNull)));
            }
            return new RowType(fields);
        }
    }
}
