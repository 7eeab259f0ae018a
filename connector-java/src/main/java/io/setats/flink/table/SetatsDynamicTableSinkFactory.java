package io.setats.flink.table;

import io.setats.flink.SetatsConnectorOptions;
import io.setats.flink.SetatsOptionsUtil;
import io.setats.flink.sink.SetatsSink;
import io.setats.flink.sink.SetatsSinkBuilder;

import org.apache.flink.api.common.RuntimeExecutionMode;
import org.apache.flink.configuration.ConfigOption;
import org.apache.flink.configuration.ExecutionOptions;
import org.apache.flink.configuration.ReadableConfig;
import org.apache.flink.table.catalog.Column;
import org.apache.flink.table.catalog.ResolvedCatalogTable;
import org.apache.flink.table.catalog.ResolvedSchema;
import org.apache.flink.table.catalog.UniqueConstraint;
import org.apache.flink.table.connector.sink.DynamicTableSink;
import org.apache.flink.table.connector.source.DynamicTableSource;
import org.apache.flink.table.connector.source.lookup.LookupOptions;
import org.apache.flink.table.connector.source.lookup.cache.DefaultLookupCache;
import org.apache.flink.table.connector.source.lookup.cache.LookupCache;
import org.apache.flink.table.factories.DynamicTableSourceFactory;
import org.apache.flink.table.data.RowData;
import org.apache.flink.table.factories.DynamicTableSinkFactory;
import org.apache.flink.table.factories.FactoryUtil;
import org.apache.flink.table.types.logical.RowType;

import java.util.Collections;
import java.util.HashMap;
import java.util.Map;
import java.util.HashSet;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import java.util.stream.Collectors;

/**
 * SetatsDynamicTableSinkFactory creates {@code 'connector' = 'setats'} sinks (SPEC sections 2-3) and
 * sources ({@link #createDynamicTableSource}: lookups and the changelog scan, SPEC section 13).
 *
 * <p>Required: manager-url, warehouse, catalog-type, catalog-name; 'uri' with catalog-type hive;
 * a PRIMARY KEY. The sink's physical columns are the declared columns it writes (a subset of the
 * table's, including its whole primary key). Unknown keys and bad values fail here with a
 * ValidationException naming the key.
 */
public final class SetatsDynamicTableSinkFactory
        implements DynamicTableSinkFactory, DynamicTableSourceFactory {

    public static final String IDENTIFIER = "setats";

    @Override
    public String factoryIdentifier() {
        return IDENTIFIER;
    }

    @Override
    public Set<ConfigOption<?>> requiredOptions() {
        Set<ConfigOption<?>> set = new HashSet<>();
        set.add(SetatsConnectorOptions.MANAGER_URL);
        set.add(SetatsConnectorOptions.WAREHOUSE);
        set.add(SetatsConnectorOptions.CATALOG_TYPE);
        set.add(SetatsConnectorOptions.CATALOG_NAME);
        return set;
    }

    /**
     * Every optional option of the factory: those of the sink and those of the source together, as
     * FactoryUtil validates them; each use then refuses the options of the other one
     * ({@link #refuseOptionsOfOtherUse}).
     */
    @Override
    public Set<ConfigOption<?>> optionalOptions() {
        Set<ConfigOption<?>> set = new HashSet<>(sinkOptions());
        set.addAll(sourceOptions());
        return set;
    }

    /** The optional options of {@code setats} used as a sink (SPEC section 2, "setats (sink) only"). */
    public static Set<ConfigOption<?>> sinkOptions() {
        Set<ConfigOption<?>> set = new HashSet<>();
        set.add(SetatsConnectorOptions.CATALOG_DATABASE);
        set.add(SetatsConnectorOptions.CATALOG_TABLE);
        set.add(SetatsConnectorOptions.URI);
        set.add(SetatsConnectorOptions.LOCATION);
        set.add(SetatsConnectorOptions.BUCKET);
        set.add(SetatsConnectorOptions.BUCKET_KEY);
        set.add(SetatsConnectorOptions.MERGE_ENGINE);
        set.add(SetatsConnectorOptions.SINK_FLUSH_INTERVAL);
        set.add(SetatsConnectorOptions.SINK_BUFFER_ROWS);
        set.add(SetatsConnectorOptions.SINK_BUFFER_BYTES);
        set.add(SetatsConnectorOptions.SINK_MAX_IN_FLIGHT_BATCHES);
        set.add(SetatsConnectorOptions.SINK_DELIVERY_GUARANTEE);
        set.add(SetatsConnectorOptions.SINK_TRANSACTION_TIMEOUT);
        set.add(SetatsConnectorOptions.SINK_ACK_TIMEOUT);
        set.add(SetatsConnectorOptions.SINK_LINGER);
        set.add(SetatsConnectorOptions.SINK_SHUFFLE_BUFFER_TIMEOUT);
        set.add(SetatsConnectorOptions.IGNORE_DELETE);
        set.add(SetatsConnectorOptions.PARTIAL_UPDATE_REMOVE_RECORD_ON_DELETE);
        set.add(SetatsConnectorOptions.CHANGELOG_RETENTION_MS);
        set.addAll(SetatsOptionsUtil.connectionOptionalOptions());
        set.add(SetatsConnectorOptions.CHANGELOG_ENABLED);
        set.add(SetatsConnectorOptions.CHANGELOG_CLEAN_ON_CONSUME);
        set.add(SetatsConnectorOptions.SLOT_TTL);
        set.add(FactoryUtil.SINK_PARALLELISM);
        return set;
    }

    /**
     * The optional options of {@code setats} used as a source (SPEC section 13): those of {@code
     * setats-cdc} (the streaming scan is its changelog) and Flink's lookup cache options (FLIP-221).
     */
    public static Set<ConfigOption<?>> sourceOptions() {
        Set<ConfigOption<?>> set = new HashSet<>(CDC.optionalOptions());
        set.add(LookupOptions.CACHE_TYPE);
        set.add(LookupOptions.PARTIAL_CACHE_MAX_ROWS);
        set.add(LookupOptions.PARTIAL_CACHE_EXPIRE_AFTER_WRITE);
        set.add(LookupOptions.PARTIAL_CACHE_EXPIRE_AFTER_ACCESS);
        set.add(LookupOptions.PARTIAL_CACHE_CACHE_MISSING_KEY);
        return set;
    }

    /**
     * Refuses, with a ValidationException naming them, the options of {@code tableOptions} that
     * only the other use takes (in {@code other} and not in {@code own}, fallback keys included):
     * {@code startup.mode} or {@code lookup.cache} on a sink, {@code merge-engine} or {@code
     * setats.sink.flush-interval} on a source. A table declared once and both read and written
     * gives such options per query with a hint ({@code /*+ OPTIONS(...) *}{@code /}).
     *
     * @param use {@code "sink"} or {@code "source"}, for the message
     */
    static void refuseOptionsOfOtherUse(
            Map<String, String> tableOptions, Set<ConfigOption<?>> own, Set<ConfigOption<?>> other, String use) {
        Set<String> ownKeys = keys(own);
        Set<String> refused = new java.util.TreeSet<>();
        for (String k : keys(other)) {
            if (!ownKeys.contains(k) && tableOptions.containsKey(k)) {
                refused.add(k);
            }
        }
        if (!refused.isEmpty()) {
            String otherUse = use.equals("sink") ? "source" : "sink";
            String statement = use.equals("sink") ? "SELECT or lookup join" : "INSERT";
            throw new org.apache.flink.table.api.ValidationException(
                    String.format(
                            "Unsupported options for 'connector' = '%s' used as a %s: %s. They are %s options: "
                                    + "remove them, or give them per query with a hint on the %s "
                                    + "(/*+ OPTIONS('%s' = '...') */).",
                            IDENTIFIER, use, refused, otherUse, statement, refused.iterator().next()));
        }
    }

    private static Set<String> keys(Set<ConfigOption<?>> options) {
        Set<String> out = new HashSet<>();
        for (ConfigOption<?> o : options) {
            out.add(o.key());
            o.fallbackKeys().forEach(k -> out.add(k.getKey()));
        }
        return out;
    }

    @Override
    public Set<ConfigOption<?>> forwardOptions() {
        return Collections.emptySet();
    }

    private static final SetatsCdcDynamicTableSourceFactory CDC = new SetatsCdcDynamicTableSourceFactory();

    /**
     * The {@code setats} table as a source (SPEC section 13): a lookup source, and as a scan the
     * changelog exactly as {@code setats-cdc} with the same options (the options of the sink and of
     * the lookup cache are left out of the changelog source's). {@code lookup.cache = 'FULL'} is a
     * ValidationException (use PARTIAL).
     */
    @Override
    public DynamicTableSource createDynamicTableSource(Context context) {
        FactoryUtil.TableFactoryHelper helper = FactoryUtil.createTableFactoryHelper(this, context);
        helper.validate();
        refuseOptionsOfOtherUse(context.getCatalogTable().getOptions(), sourceOptions(), sinkOptions(), "source");
        ReadableConfig options = helper.getOptions();
        Set<String> cdcKeys = new HashSet<>();
        for (Set<ConfigOption<?>> os : java.util.Arrays.asList(CDC.requiredOptions(), CDC.optionalOptions())) {
            for (ConfigOption<?> o : os) {
                cdcKeys.add(o.key());
                o.fallbackKeys().forEach(k -> cdcKeys.add(k.getKey()));
            }
        }
        ResolvedCatalogTable table = context.getCatalogTable();
        Map<String, String> cdcOptions = new HashMap<>();
        table.getOptions().forEach((k, v) -> {
            if (cdcKeys.contains(k)) {
                cdcOptions.put(k, v);
            }
        });
        cdcOptions.put(FactoryUtil.CONNECTOR.key(), SetatsCdcDynamicTableSourceFactory.IDENTIFIER);
        SetatsCdcDynamicTableSource changelog =
                (SetatsCdcDynamicTableSource)
                        CDC.createDynamicTableSource(
                                new FactoryUtil.DefaultDynamicTableContext(
                                        context.getObjectIdentifier(),
                                        table.copy(cdcOptions),
                                        context.getEnrichmentOptions(),
                                        context.getConfiguration(),
                                        context.getClassLoader(),
                                        context.isTemporary()));
        LookupCache cache = null;
        switch (options.get(LookupOptions.CACHE_TYPE)) {
            case PARTIAL:
                cache = DefaultLookupCache.fromConfig(options);
                break;
            case FULL:
                throw new org.apache.flink.table.api.ValidationException(
                        "Option '" + LookupOptions.CACHE_TYPE.key() + "' = 'FULL' is not supported by Setats; use 'PARTIAL'.");
            default:
        }
        List<String> primaryKey =
                table.getResolvedSchema()
                        .getPrimaryKey()
                        .map(UniqueConstraint::getColumns)
                        .orElse(Collections.emptyList());
        if (context.getConfiguration().get(ExecutionOptions.RUNTIME_MODE) == RuntimeExecutionMode.BATCH) {
            return new SetatsBatchTableSource(
                    changelog.config(), changelog.physicalType(), primaryKey, table.getPartitionKeys(), cache);
        }
        return new SetatsDynamicTableSource(changelog, primaryKey, table.getPartitionKeys(), cache);
    }

    @Override
    public DynamicTableSink createDynamicTableSink(Context context) {
        FactoryUtil.TableFactoryHelper helper = FactoryUtil.createTableFactoryHelper(this, context);
        helper.validate();
        refuseOptionsOfOtherUse(context.getCatalogTable().getOptions(), sinkOptions(), sourceOptions(), "sink");
        ReadableConfig options = helper.getOptions();

        ResolvedCatalogTable catalogTable = context.getCatalogTable();
        ResolvedSchema schema = catalogTable.getResolvedSchema();
        List<String> primaryKey =
                schema.getPrimaryKey()
                        .map(UniqueConstraint::getColumns)
                        .orElse(Collections.emptyList());
        List<String> partitionKeys = catalogTable.getPartitionKeys();
        List<Column> physical =
                schema.getColumns().stream()
                        .filter(Column::isPhysical)
                        .collect(Collectors.toList());
        List<String> names = physical.stream().map(Column::getName).collect(Collectors.toList());
        SetatsOptionsUtil.validateSink(options, names, primaryKey, partitionKeys);

        RowType rowType = (RowType) schema.toPhysicalRowDataType().getLogicalType();
        String table =
                SetatsOptionsUtil.table(options, context.getObjectIdentifier().getObjectName());
        SetatsSinkBuilder<RowData> b =
                SetatsSink.builder()
                        .setOptions(options)
                        .setTable(table)
                        .setRowType(rowType)
                        .setPrimaryKey(primaryKey)
                        .setPartitionKeys(partitionKeys);
        for (Column c : physical) {
            c.getComment().ifPresent(comment -> b.setColumnComment(c.getName(), comment));
        }
        Set<String> unique = new LinkedHashSet<>(names);
        if (unique.size() != names.size()) {
            throw new org.apache.flink.table.api.ValidationException(
                    "Duplicate column names in " + names);
        }
        return new SetatsDynamicTableSink(
                b.build(), options.getOptional(FactoryUtil.SINK_PARALLELISM).orElse(null));
    }
}
