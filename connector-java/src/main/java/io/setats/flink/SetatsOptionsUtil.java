package io.setats.flink;

import io.setats.flink.SetatsConnectorOptions.CatalogType;
import io.setats.flink.SetatsConnectorOptions.MergeEngine;
import io.setats.flink.SetatsConnectorOptions.StartupMode;
import io.setats.flink.client.ConnectionOptions;
import io.setats.flink.client.ManagerUrl;
import io.setats.proto.v1.CatalogContext;
import io.setats.proto.v1.TableSpec;

import org.apache.flink.configuration.ConfigOption;
import org.apache.flink.configuration.ReadableConfig;
import org.apache.flink.connector.base.DeliveryGuarantee;
import org.apache.flink.table.api.ValidationException;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import java.util.stream.Collectors;

import static io.setats.flink.SetatsConnectorOptions.BUCKET;
import static io.setats.flink.SetatsConnectorOptions.BUCKET_KEY;
import static io.setats.flink.SetatsConnectorOptions.CATALOG_DATABASE;
import static io.setats.flink.SetatsConnectorOptions.CATALOG_NAME;
import static io.setats.flink.SetatsConnectorOptions.CATALOG_TABLE;
import static io.setats.flink.SetatsConnectorOptions.CATALOG_TYPE;
import static io.setats.flink.SetatsConnectorOptions.MANAGER_URL;
import static io.setats.flink.SetatsConnectorOptions.MERGE_ENGINE;
import static io.setats.flink.SetatsConnectorOptions.PASSWORD;
import static io.setats.flink.SetatsConnectorOptions.TLS_CA_CERT;
import static io.setats.flink.SetatsConnectorOptions.USERNAME;
import static io.setats.flink.SetatsConnectorOptions.SINK_ACK_TIMEOUT;
import static io.setats.flink.SetatsConnectorOptions.SINK_BUFFER_BYTES;
import static io.setats.flink.SetatsConnectorOptions.SINK_BUFFER_ROWS;
import static io.setats.flink.SetatsConnectorOptions.SINK_FLUSH_INTERVAL;
import static io.setats.flink.SetatsConnectorOptions.SINK_DELIVERY_GUARANTEE;
import static io.setats.flink.SetatsConnectorOptions.SINK_LINGER;
import static io.setats.flink.SetatsConnectorOptions.SINK_MAX_IN_FLIGHT_BATCHES;
import static io.setats.flink.SetatsConnectorOptions.SINK_TRANSACTION_TIMEOUT;
import static io.setats.flink.SetatsConnectorOptions.STARTUP_MODE;
import static io.setats.flink.SetatsConnectorOptions.URI;
import static io.setats.flink.SetatsConnectorOptions.WAREHOUSE;

/**
 * SetatsOptionsUtil holds the option checks shared by the {@code setats} and {@code setats-cdc}
 * factories (SPEC section 2). Every failure is a {@link ValidationException} naming the option
 * key and, for enums, the allowed values.
 */
public final class SetatsOptionsUtil {

    private SetatsOptionsUtil() {}

    // --------------------------------------------------------------------------------------------
    // Common
    // --------------------------------------------------------------------------------------------

    /**
     * Checks the options common to both factories beyond what FactoryUtil checks: manager-url
     * syntax, and 'uri' required with catalog-type hive.
     */
    public static void validateCommon(ReadableConfig config) {
        connectionOptions(config);
        if (config.get(CATALOG_TYPE) == CatalogType.hive) {
            String uri = config.getOptional(URI).orElse("").trim();
            if (uri.isEmpty()) {
                throw new ValidationException(
                        "Option '"
                                + URI.key()
                                + "' (Hive Metastore thrift URIs) is required when '"
                                + CATALOG_TYPE.key()
                                + "' = 'hive'.");
            }
        }
        if (config.get(CATALOG_DATABASE).trim().isEmpty()) {
            throw new ValidationException(
                    "Option '" + CATALOG_DATABASE.key() + "' must not be empty.");
        }
        if (config.getOptional(CATALOG_TABLE).map(t -> t.trim().isEmpty()).orElse(false)) {
            throw new ValidationException("Option '" + CATALOG_TABLE.key() + "' must not be empty.");
        }
    }

    /** Parses 'manager-url'. */
    public static ManagerUrl managerUrl(ReadableConfig config) {
        try {
            return ManagerUrl.parse(config.get(MANAGER_URL));
        } catch (IllegalArgumentException e) {
            throw new ValidationException(
                    "Invalid value for option '" + MANAGER_URL.key() + "': " + e.getMessage(), e);
        }
    }

    /**
     * The connection options of 'manager-url', 'username', 'password' and 'tls.ca-cert' (SPEC
     * section 14), the one place every factory takes them from.
     *
     * @throws ValidationException naming the options when the combination is wrong
     */
    public static ConnectionOptions connectionOptions(ReadableConfig config) {
        ManagerUrl url = managerUrl(config);
        try {
            return ConnectionOptions.builder()
                    .managerUrl(url)
                    .credentials(
                            config.getOptional(USERNAME).orElse(null),
                            config.getOptional(PASSWORD).orElse(null))
                    .tlsCaCert(config.getOptional(TLS_CA_CERT).orElse(null))
                    .build();
        } catch (IllegalArgumentException e) {
            throw new ValidationException("Invalid connection options: " + e.getMessage(), e);
        }
    }

    /** The optional connection options every factory declares ('username', 'password', 'tls.ca-cert'). */
    public static Set<ConfigOption<?>> connectionOptionalOptions() {
        return new LinkedHashSet<>(Arrays.asList(USERNAME, PASSWORD, TLS_CA_CERT));
    }

    /** The CatalogContext sent with every request (warehouse, catalog-type, catalog-name, uri). */
    public static CatalogContext catalogContext(ReadableConfig config) {
        return CatalogContext.newBuilder()
                .setWarehouse(config.get(WAREHOUSE))
                .setCatalogType(config.get(CATALOG_TYPE).toString())
                .setCatalogName(config.get(CATALOG_NAME))
                .setUri(config.getOptional(URI).orElse(""))
                .build();
    }

    /** 'catalog-database' (default {@code default}). */
    public static String database(ReadableConfig config) {
        return config.get(CATALOG_DATABASE).trim();
    }

    /** 'catalog-table', or the Flink table's name when unset. */
    public static String table(ReadableConfig config, String flinkTableName) {
        return config.getOptional(CATALOG_TABLE).map(String::trim).orElse(flinkTableName);
    }

    /** Parses 'merge-engine' (case-insensitive, 'partial-update' accepted). */
    public static MergeEngine mergeEngine(ReadableConfig config) {
        try {
            return MergeEngine.parse(config.get(MERGE_ENGINE));
        } catch (IllegalArgumentException e) {
            throw new ValidationException(
                    "Invalid value for option '"
                            + MERGE_ENGINE.key()
                            + "': '"
                            + config.get(MERGE_ENGINE)
                            + "'. Allowed: "
                            + MergeEngine.allowedValues()
                            + " (case-insensitive; 'partial-update' accepted).");
        }
    }

    /**
     * Parses 'sink.delivery-guarantee': {@code at-least-once} or {@code exactly-once}
     * (case-insensitive, '_' accepted for '-').
     *
     * @throws ValidationException naming the key and the allowed values
     */
    public static DeliveryGuarantee deliveryGuarantee(ReadableConfig config) {
        String v = config.get(SINK_DELIVERY_GUARANTEE);
        String n = v.trim().toLowerCase(java.util.Locale.ROOT).replace('_', '-');
        if (n.equals(DeliveryGuarantee.AT_LEAST_ONCE.toString())) {
            return DeliveryGuarantee.AT_LEAST_ONCE;
        }
        if (n.equals(DeliveryGuarantee.EXACTLY_ONCE.toString())) {
            return DeliveryGuarantee.EXACTLY_ONCE;
        }
        throw new ValidationException(
                "Invalid value for option '"
                        + SINK_DELIVERY_GUARANTEE.key()
                        + "': '"
                        + v
                        + "'. Allowed: 'at-least-once', 'exactly-once'.");
    }

    /** Parses 'startup.mode' (case-insensitive, 'timestamp' accepted for 'from-timestamp'). */
    public static StartupMode startupMode(ReadableConfig config) {
        try {
            return StartupMode.parse(config.get(STARTUP_MODE));
        } catch (IllegalArgumentException e) {
            throw new ValidationException(
                    "Invalid value for option '"
                            + STARTUP_MODE.key()
                            + "': '"
                            + config.get(STARTUP_MODE)
                            + "'. Allowed: "
                            + StartupMode.allowedValues()
                            + " ('timestamp' accepted for 'from-timestamp').");
        }
    }

    /** Checks that 'bucket' is -1 (gateway default) or positive. */
    public static int bucket(ReadableConfig config) {
        int b = config.get(BUCKET);
        if (b == 0 || b < -1) {
            throw new ValidationException(
                    "Invalid value for option '"
                            + BUCKET.key()
                            + "': "
                            + b
                            + ". Use a positive bucket count, or -1 for the gateway's default.");
        }
        return b;
    }

    /** Splits a comma list of column names (trimmed, empties dropped). */
    public static List<String> parseColumnList(String value) {
        if (value == null) {
            return Collections.emptyList();
        }
        return Arrays.stream(value.split(","))
                .map(String::trim)
                .filter(s -> !s.isEmpty())
                .collect(Collectors.toList());
    }

    /**
     * Resolves the bucket key: 'bucket-key' when set, else primary key minus partition keys.
     *
     * @throws ValidationException when 'bucket-key' is not a subset of primary key minus partition
     *     keys, repeats a column, or the resolved key is empty
     */
    public static List<String> bucketKey(
            ReadableConfig config, List<String> primaryKey, List<String> partitionKeys) {
        List<String> allowed = new ArrayList<>(primaryKey);
        allowed.removeAll(partitionKeys);
        if (!config.getOptional(BUCKET_KEY).isPresent()) {
            if (allowed.isEmpty()) {
                throw new ValidationException(
                        "The primary key "
                                + primaryKey
                                + " has no column outside the partition keys "
                                + partitionKeys
                                + ", so there is no bucket key.");
            }
            return allowed;
        }
        List<String> key = parseColumnList(config.get(BUCKET_KEY));
        if (key.isEmpty()) {
            throw new ValidationException("Option '" + BUCKET_KEY.key() + "' must not be empty.");
        }
        Set<String> seen = new LinkedHashSet<>();
        for (String c : key) {
            if (!seen.add(c)) {
                throw new ValidationException(
                        "Option '" + BUCKET_KEY.key() + "' names column '" + c + "' twice.");
            }
            if (!allowed.contains(c)) {
                throw new ValidationException(
                        "Option '"
                                + BUCKET_KEY.key()
                                + "' = '"
                                + config.get(BUCKET_KEY)
                                + "': column '"
                                + c
                                + "' is not in the primary key minus the partition keys "
                                + allowed
                                + ".");
            }
        }
        return key;
    }

    // --------------------------------------------------------------------------------------------
    // Sink
    // --------------------------------------------------------------------------------------------

    /**
     * Checks the sink's options against its schema (SPEC sections 2 and 3): a primary key is
     * required, partition keys must be in it, bucket and bucket-key valid, merge-engine known,
     * flush interval and buffer sizes positive.
     *
     * @param physicalColumns the sink's physical column names
     * @param primaryKey the declared primary key (empty when none)
     */
    public static void validateSink(
            ReadableConfig config,
            List<String> physicalColumns,
            List<String> primaryKey,
            List<String> partitionKeys) {
        validateCommon(config);
        if (primaryKey.isEmpty()) {
            throw new ValidationException(
                    "The 'setats' sink needs a PRIMARY KEY (...) NOT ENFORCED: Setats tables are "
                            + "primary-key tables.");
        }
        for (String p : partitionKeys) {
            if (!primaryKey.contains(p)) {
                throw new ValidationException(
                        "Partition key '"
                                + p
                                + "' must be part of the primary key "
                                + primaryKey
                                + ".");
            }
        }
        for (String c : physicalColumns) {
            if (c.startsWith("_")) {
                throw new ValidationException(
                        "Column '" + c + "': names starting with '_' are reserved by Setats.");
            }
        }
        bucket(config);
        bucketKey(config, primaryKey, partitionKeys);
        mergeEngine(config);
        Duration flush = config.get(SINK_FLUSH_INTERVAL);
        if (flush.isZero() || flush.isNegative()) {
            throw new ValidationException(
                    "Option '" + SINK_FLUSH_INTERVAL.key() + "' must be positive, got " + flush + ".");
        }
        if (config.get(SINK_BUFFER_ROWS) <= 0) {
            throw new ValidationException(
                    "Option '" + SINK_BUFFER_ROWS.key() + "' must be positive.");
        }
        if (config.get(SINK_BUFFER_BYTES).getBytes() <= 0) {
            throw new ValidationException(
                    "Option '" + SINK_BUFFER_BYTES.key() + "' must be positive.");
        }
        if (config.get(SINK_MAX_IN_FLIGHT_BATCHES) <= 0) {
            throw new ValidationException(
                    "Option '" + SINK_MAX_IN_FLIGHT_BATCHES.key() + "' must be positive.");
        }
        deliveryGuarantee(config);
        Duration timeout = config.get(SINK_TRANSACTION_TIMEOUT);
        if (timeout.isZero() || timeout.isNegative()) {
            throw new ValidationException(
                    "Option '"
                            + SINK_TRANSACTION_TIMEOUT.key()
                            + "' must be positive, got "
                            + timeout
                            + ".");
        }
        Duration ackTimeout = config.get(SINK_ACK_TIMEOUT);
        if (ackTimeout.isZero() || ackTimeout.isNegative()) {
            throw new ValidationException(
                    "Option '" + SINK_ACK_TIMEOUT.key() + "' must be positive, got " + ackTimeout + ".");
        }
        if (config.get(SINK_LINGER).isNegative()) {
            throw new ValidationException(
                    "Option '" + SINK_LINGER.key() + "' must not be negative, got " + config.get(SINK_LINGER) + ".");
        }
        Duration shuffle = config.get(SetatsConnectorOptions.SINK_SHUFFLE_BUFFER_TIMEOUT);
        if (shuffle != null && shuffle.isNegative()) {
            throw new ValidationException(
                    "Option '" + SetatsConnectorOptions.SINK_SHUFFLE_BUFFER_TIMEOUT.key()
                            + "' must not be negative, got " + shuffle + ".");
        }
    }

    /**
     * Checks explicitly set 'bucket' and 'bucket-key' against an existing table (SPEC section 2:
     * for the source they must match; the sink applies the same rule, since routing depends on
     * them). Unset options always match.
     *
     * @throws ValidationException naming the option, the table and both values
     */
    public static void checkLayoutMatches(ReadableConfig config, TableSpec table) {
        String name = table.getDatabase() + "." + table.getTable();
        int b = config.get(BUCKET);
        if (b > 0 && b != table.getBucketCount()) {
            throw new ValidationException(
                    "Option '"
                            + BUCKET.key()
                            + "' = "
                            + b
                            + " does not match table "
                            + name
                            + ", which has "
                            + table.getBucketCount()
                            + " buckets.");
        }
        if (config.getOptional(BUCKET_KEY).isPresent()) {
            List<String> key = parseColumnList(config.get(BUCKET_KEY));
            if (!key.equals(table.getBucketKeyList())) {
                throw new ValidationException(
                        "Option '"
                                + BUCKET_KEY.key()
                                + "' = '"
                                + config.get(BUCKET_KEY)
                                + "' does not match table "
                                + name
                                + ", whose bucket key is "
                                + table.getBucketKeyList()
                                + ".");
            }
        }
    }
}
