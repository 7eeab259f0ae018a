package io.setats.flink.source;

import io.setats.flink.SetatsConnectorOptions;
import io.setats.flink.SetatsConnectorOptions.StartupMode;
import io.setats.flink.client.ConnectionOptions;
import io.setats.flink.client.GatewayClient;
import io.setats.proto.v1.CatalogContext;

import org.apache.flink.configuration.Configuration;

import javax.annotation.Nullable;

import java.io.Serializable;
import java.time.Duration;
import java.util.Objects;

/**
 * SetatsSourceConfig is everything a {@link SetatsCdcSource} needs at runtime, on the JobManager
 * (enumerator) and the TaskManagers (readers): where the gateway is, which table, where reading
 * starts and how often new buckets are looked for (SPEC sections 2 and 5). Immutable and
 * serializable; built by {@link SetatsCdcSourceBuilder} or the {@code setats-cdc} table factory.
 */
public final class SetatsSourceConfig implements Serializable {

    private static final long serialVersionUID = 1L;

    private final ConnectionOptions connection;
    private final String warehouse;
    private final String catalogType;
    private final String catalogName;
    private final String uri;
    private final String database;
    private final String table;
    private final StartupMode startupMode;
    @Nullable private final Long startupTimestampMs;
    private final Duration discoveryInterval;
    private final int expectedBucketCount;
    @Nullable private final String expectedBucketKey;
    /** slot.name (SPEC section 9); null: no slot. Set by {@link #withSlot}. */
    @Nullable private String slotName;
    /** slot.sync-point-size: rows per bucket between running sync points. */
    private int syncPointSize = SetatsConnectorOptions.SLOT_SYNC_POINT_SIZE.defaultValue();
    /** scan.reconnect-timeout: how long a bucket stream retries without progress. */
    private Duration reconnectTimeout = SetatsConnectorOptions.SCAN_RECONNECT_TIMEOUT.defaultValue();

    /** A config for an anonymous connection to managerUrl (no credentials, JVM trust store). */
    public SetatsSourceConfig(
            String managerUrl,
            String warehouse,
            String catalogType,
            String catalogName,
            String uri,
            String database,
            String table,
            StartupMode startupMode,
            @Nullable Long startupTimestampMs,
            Duration discoveryInterval,
            int expectedBucketCount,
            @Nullable String expectedBucketKey) {
        this(
                ConnectionOptions.of(Objects.requireNonNull(managerUrl, "managerUrl")),
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
                expectedBucketKey);
    }

    public SetatsSourceConfig(
            ConnectionOptions connection,
            String warehouse,
            String catalogType,
            String catalogName,
            String uri,
            String database,
            String table,
            StartupMode startupMode,
            @Nullable Long startupTimestampMs,
            Duration discoveryInterval,
            int expectedBucketCount,
            @Nullable String expectedBucketKey) {
        this.connection = Objects.requireNonNull(connection, "connection");
        this.warehouse = nullToEmpty(warehouse);
        this.catalogType = nullToEmpty(catalogType);
        this.catalogName = nullToEmpty(catalogName);
        this.uri = nullToEmpty(uri);
        this.database = Objects.requireNonNull(database, "database");
        this.table = Objects.requireNonNull(table, "table");
        this.startupMode = Objects.requireNonNull(startupMode, "startupMode");
        if (startupMode == StartupMode.FROM_TIMESTAMP && startupTimestampMs == null) {
            throw new IllegalArgumentException(
                    "startup mode from-timestamp needs a start timestamp ('"
                            + SetatsConnectorOptions.SCAN_TIMESTAMP_MILLIS.key() + "')");
        }
        if (startupMode != StartupMode.FROM_TIMESTAMP && startupTimestampMs != null) {
            throw new IllegalArgumentException(
                    "a start timestamp ('" + SetatsConnectorOptions.SCAN_TIMESTAMP_MILLIS.key()
                            + "') is only used with startup mode from-timestamp, not " + startupMode);
        }
        this.startupTimestampMs = startupTimestampMs;
        this.discoveryInterval = Objects.requireNonNull(discoveryInterval, "discoveryInterval");
        if (discoveryInterval.isZero() || discoveryInterval.isNegative()) {
            throw new IllegalArgumentException(
                    "'" + SetatsConnectorOptions.BUCKET_DISCOVERY_INTERVAL.key()
                            + "' must be positive, got " + discoveryInterval);
        }
        this.expectedBucketCount = expectedBucketCount;
        this.expectedBucketKey = expectedBucketKey;
    }

    private static String nullToEmpty(String s) {
        return s == null ? "" : s;
    }

    /** The manager-url as given. */
    public String managerUrl() {
        return connection.managerUrl().original();
    }

    /** manager-url, credentials and TLS CA of the gateway. */
    public ConnectionOptions connection() {
        return connection;
    }

    public String database() {
        return database;
    }

    public String table() {
        return table;
    }

    /** {@code database.table}, for messages. */
    public String tablePath() {
        return database + "." + table;
    }

    public StartupMode startupMode() {
        return startupMode;
    }

    /** The from-timestamp start (ms since epoch); null for other modes. */
    @Nullable
    public Long startupTimestampMs() {
        return startupTimestampMs;
    }

    public Duration discoveryInterval() {
        return discoveryInterval;
    }

    /** The bucket count the user declared ('bucket'), or -1 when it is not checked. */
    public int expectedBucketCount() {
        return expectedBucketCount;
    }

    /** The bucket key the user declared ('bucket-key', comma list), or null when not checked. */
    @Nullable
    public String expectedBucketKey() {
        return expectedBucketKey;
    }

    /**
     * This config with slot {@code slotName} (SPEC sections 8-9, DWS binlogSlotName): the source
     * owns the slot, starts at its checkpoint sync points when it has no Flink state, registers
     * checkpoint sync points when a checkpoint completes and running ones every {@code
     * syncPointSize} rows per bucket.
     *
     * @param slotName the slot, or null for none
     * @throws IllegalArgumentException when {@code syncPointSize} is not positive or the name is blank
     */
    public SetatsSourceConfig withSlot(@Nullable String slotName, int syncPointSize) {
        if (slotName != null && slotName.trim().isEmpty()) {
            throw new IllegalArgumentException("'" + SetatsConnectorOptions.SLOT_NAME.key() + "' must not be blank");
        }
        if (syncPointSize <= 0) {
            throw new IllegalArgumentException(
                    "'" + SetatsConnectorOptions.SLOT_SYNC_POINT_SIZE.key() + "' must be positive, got " + syncPointSize);
        }
        SetatsSourceConfig c =
                new SetatsSourceConfig(
                        connection, warehouse, catalogType, catalogName, uri, database, table, startupMode,
                        startupTimestampMs, discoveryInterval, expectedBucketCount, expectedBucketKey);
        c.slotName = slotName;
        c.syncPointSize = syncPointSize;
        c.reconnectTimeout = reconnectTimeout;
        return c;
    }

    /**
     * This config with {@code scan.reconnect-timeout}: how long a bucket's changelog stream keeps
     * reconnecting (exponential back-off from 100 ms up to 5 s) without receiving a row before the
     * task fails naming the gateway and the bucket; 0 fails at the first broken stream.
     *
     * @throws IllegalArgumentException when negative
     */
    public SetatsSourceConfig withReconnectTimeout(Duration timeout) {
        if (timeout.isNegative()) {
            throw new IllegalArgumentException(
                    "'" + SetatsConnectorOptions.SCAN_RECONNECT_TIMEOUT.key() + "' must not be negative, got " + timeout);
        }
        SetatsSourceConfig c = withSlot(slotName, syncPointSize);
        c.reconnectTimeout = timeout;
        return c;
    }

    /** scan.reconnect-timeout (see {@link #withReconnectTimeout}). */
    public Duration reconnectTimeout() {
        return reconnectTimeout;
    }

    /** The slot (slot.name) the source keeps its position in; null when none. */
    @Nullable
    public String slotName() {
        return slotName;
    }

    /** Rows per bucket between running sync points (slot.sync-point-size). */
    public int syncPointSize() {
        return syncPointSize;
    }

    /** The catalog context sent with every request. */
    public CatalogContext catalogContext() {
        return CatalogContext.newBuilder()
                .setWarehouse(warehouse)
                .setCatalogType(catalogType)
                .setCatalogName(catalogName)
                .setUri(uri)
                .build();
    }

    /** Opens a client of the configured gateway; the caller closes it. */
    public GatewayClient connect() {
        return GatewayClient.connect(connection, catalogContext());
    }

    /**
     * The declared 'bucket' and 'bucket-key' as options, for {@link
     * io.setats.flink.SetatsOptionsUtil#checkLayoutMatches}.
     */
    public Configuration layoutOptions() {
        Configuration c = new Configuration();
        c.set(SetatsConnectorOptions.BUCKET, expectedBucketCount);
        if (expectedBucketKey != null) {
            c.set(SetatsConnectorOptions.BUCKET_KEY, expectedBucketKey);
        }
        return c;
    }

    @Override
    public boolean equals(Object o) {
        if (this == o) {
            return true;
        }
        if (!(o instanceof SetatsSourceConfig)) {
            return false;
        }
        SetatsSourceConfig that = (SetatsSourceConfig) o;
        return expectedBucketCount == that.expectedBucketCount
                && connection.equals(that.connection)
                && warehouse.equals(that.warehouse)
                && catalogType.equals(that.catalogType)
                && catalogName.equals(that.catalogName)
                && uri.equals(that.uri)
                && database.equals(that.database)
                && table.equals(that.table)
                && startupMode == that.startupMode
                && Objects.equals(startupTimestampMs, that.startupTimestampMs)
                && discoveryInterval.equals(that.discoveryInterval)
                && Objects.equals(expectedBucketKey, that.expectedBucketKey)
                && Objects.equals(slotName, that.slotName)
                && syncPointSize == that.syncPointSize
                && reconnectTimeout.equals(that.reconnectTimeout);
    }

    @Override
    public int hashCode() {
        return Objects.hash(connection, warehouse, database, table, startupMode, startupTimestampMs);
    }

    @Override
    public String toString() {
        return "SetatsSourceConfig{" + connection + " " + tablePath() + " startup=" + startupMode
                + (startupTimestampMs != null ? "@" + startupTimestampMs : "")
                + " discovery=" + discoveryInterval
                + (slotName != null ? " slot=" + slotName : "") + "}";
    }
}
