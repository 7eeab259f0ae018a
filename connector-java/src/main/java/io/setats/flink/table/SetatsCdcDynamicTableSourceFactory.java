package io.setats.flink.table;

import io.setats.flink.SetatsConnectorOptions;
import io.setats.flink.SetatsConnectorOptions.StartupMode;
import io.setats.flink.SetatsOptionsUtil;
import io.setats.flink.source.SetatsSourceConfig;
import io.setats.flink.utils.SetatsTypes;

import org.apache.flink.configuration.ConfigOption;
import org.apache.flink.configuration.ReadableConfig;
import org.apache.flink.table.api.ValidationException;
import org.apache.flink.table.connector.source.DynamicTableSource;
import org.apache.flink.table.factories.DynamicTableSourceFactory;
import org.apache.flink.table.factories.FactoryUtil;
import org.apache.flink.table.types.logical.RowType;

import java.time.Duration;
import java.util.HashSet;
import java.util.Set;

import static io.setats.flink.SetatsConnectorOptions.BUCKET;
import static io.setats.flink.SetatsConnectorOptions.BUCKET_DISCOVERY_INTERVAL;
import static io.setats.flink.SetatsConnectorOptions.BUCKET_KEY;
import static io.setats.flink.SetatsConnectorOptions.CATALOG_DATABASE;
import static io.setats.flink.SetatsConnectorOptions.CATALOG_NAME;
import static io.setats.flink.SetatsConnectorOptions.CATALOG_TABLE;
import static io.setats.flink.SetatsConnectorOptions.CATALOG_TYPE;
import static io.setats.flink.SetatsConnectorOptions.MANAGER_URL;
import static io.setats.flink.SetatsConnectorOptions.SCAN_TIMESTAMP_MILLIS;
import static io.setats.flink.SetatsConnectorOptions.STARTUP_MODE;
import static io.setats.flink.SetatsConnectorOptions.URI;
import static io.setats.flink.SetatsConnectorOptions.WAREHOUSE;

/**
 * SetatsCdcDynamicTableSourceFactory creates {@code 'connector' = 'setats-cdc'} tables: an
 * unbounded changelog read of a Setats table (SPEC sections 2 and 5).
 *
 * <p>Checks at planning time, each a {@link ValidationException} naming the option: required and
 * unknown keys (FactoryUtil), manager-url syntax, {@code uri} with catalog-type {@code hive},
 * {@code startup.mode} one of latest / earliest / from-timestamp ({@code timestamp} accepted),
 * {@code scan.timestamp-millis} required by from-timestamp and refused with any other mode
 * (read-case R2), a positive {@code bucket.discovery-interval}, a positive {@code bucket}, a
 * non-empty {@code bucket-key}, and column types Setats supports. Whether {@code bucket} and
 * {@code bucket-key} match the table, and whether the columns exist in it, is checked when the
 * job starts (the enumerator asks the gateway), failing the job with both values named.
 */
public final class SetatsCdcDynamicTableSourceFactory implements DynamicTableSourceFactory {

    /** The connector identifier. */
    public static final String IDENTIFIER = "setats-cdc";

    @Override
    public String factoryIdentifier() {
        return IDENTIFIER;
    }

    @Override
    public Set<ConfigOption<?>> requiredOptions() {
        Set<ConfigOption<?>> options = new HashSet<>();
        options.add(MANAGER_URL);
        options.add(WAREHOUSE);
        options.add(CATALOG_TYPE);
        options.add(CATALOG_NAME);
        return options;
    }

    @Override
    public Set<ConfigOption<?>> optionalOptions() {
        Set<ConfigOption<?>> options = new HashSet<>();
        options.add(CATALOG_DATABASE);
        options.add(CATALOG_TABLE);
        options.add(URI);
        options.add(STARTUP_MODE);
        options.add(SCAN_TIMESTAMP_MILLIS);
        options.add(BUCKET_DISCOVERY_INTERVAL);
        options.add(SetatsConnectorOptions.SCAN_RECONNECT_TIMEOUT);
        options.add(BUCKET);
        options.add(BUCKET_KEY);
        options.add(SetatsConnectorOptions.SLOT_NAME);
        options.add(SetatsConnectorOptions.SLOT_SYNC_POINT_SIZE);
        options.addAll(SetatsOptionsUtil.connectionOptionalOptions());
        return options;
    }

    @Override
    public DynamicTableSource createDynamicTableSource(Context context) {
        FactoryUtil.TableFactoryHelper helper = FactoryUtil.createTableFactoryHelper(this, context);
        helper.validate();
        ReadableConfig options = helper.getOptions();
        SetatsOptionsUtil.validateCommon(options);

        StartupMode mode = SetatsOptionsUtil.startupMode(options);
        Long timestamp = startupTimestamp(options, mode);
        Duration interval = options.get(BUCKET_DISCOVERY_INTERVAL);
        if (interval.isZero() || interval.isNegative()) {
            throw new ValidationException(
                    "Option '" + BUCKET_DISCOVERY_INTERVAL.key() + "' must be positive, got '"
                            + interval + "'.");
        }
        int bucket = SetatsOptionsUtil.bucket(options);
        String bucketKey = options.getOptional(BUCKET_KEY).orElse(null);
        if (bucketKey != null && SetatsOptionsUtil.parseColumnList(bucketKey).isEmpty()) {
            throw new ValidationException("Option '" + BUCKET_KEY.key() + "' must not be empty.");
        }

        RowType physical =
                (RowType)
                        context.getCatalogTable()
                                .getResolvedSchema()
                                .toPhysicalRowDataType()
                                .getLogicalType();
        for (RowType.RowField f : physical.getFields()) {
            SetatsTypes.toTypeString(f.getName(), f.getType()); // unsupported type: ValidationException
        }

        SetatsSourceConfig config =
                new SetatsSourceConfig(
                        SetatsOptionsUtil.connectionOptions(options),
                        options.get(WAREHOUSE),
                        options.get(CATALOG_TYPE).toString(),
                        options.get(CATALOG_NAME),
                        options.getOptional(URI).orElse(""),
                        SetatsOptionsUtil.database(options),
                        SetatsOptionsUtil.table(options, context.getObjectIdentifier().getObjectName()),
                        mode,
                        timestamp,
                        interval,
                        bucket,
                        bucketKey);
        String slot = options.getOptional(SetatsConnectorOptions.SLOT_NAME).orElse(null);
        int syncPointSize = options.get(SetatsConnectorOptions.SLOT_SYNC_POINT_SIZE);
        if (slot != null && slot.trim().isEmpty()) {
            throw new ValidationException("Option '" + SetatsConnectorOptions.SLOT_NAME.key() + "' must not be blank.");
        }
        if (syncPointSize <= 0) {
            throw new ValidationException(
                    "Option '" + SetatsConnectorOptions.SLOT_SYNC_POINT_SIZE.key() + "' must be positive, got "
                            + syncPointSize + ".");
        }
        config = config.withSlot(slot, syncPointSize);
        try {
            config = config.withReconnectTimeout(options.get(SetatsConnectorOptions.SCAN_RECONNECT_TIMEOUT));
        } catch (IllegalArgumentException e) {
            throw new ValidationException(e.getMessage(), e);
        }
        return new SetatsCdcDynamicTableSource(config, physical);
    }

    /**
     * The from-timestamp start: required with that mode, refused with any other (read-case R2),
     * never negative.
     */
    static Long startupTimestamp(ReadableConfig options, StartupMode mode) {
        Long ts = options.getOptional(SCAN_TIMESTAMP_MILLIS).orElse(null);
        if (mode == StartupMode.FROM_TIMESTAMP) {
            if (ts == null) {
                throw new ValidationException(
                        "Option '" + SCAN_TIMESTAMP_MILLIS.key() + "' is required when '"
                                + STARTUP_MODE.key() + "' = '" + StartupMode.FROM_TIMESTAMP + "'.");
            }
            if (ts < 0) {
                throw new ValidationException(
                        "Option '" + SCAN_TIMESTAMP_MILLIS.key()
                                + "' must be a non-negative epoch millisecond, got " + ts + ".");
            }
            return ts;
        }
        if (ts != null) {
            throw new ValidationException(
                    "Option '" + SCAN_TIMESTAMP_MILLIS.key() + "' = " + ts + " is only used with '"
                            + STARTUP_MODE.key() + "' = '" + StartupMode.FROM_TIMESTAMP
                            + "', but '" + STARTUP_MODE.key() + "' is '" + mode
                            + "'. Remove it or set '" + STARTUP_MODE.key() + "' = '"
                            + StartupMode.FROM_TIMESTAMP + "'.");
        }
        return null;
    }
}
