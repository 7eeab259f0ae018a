package io.setats.flink.catalog;

import io.setats.flink.SetatsConnectorOptions;
import io.setats.flink.table.SetatsDynamicTableSinkFactory;

import org.apache.flink.configuration.ConfigOption;
import org.apache.flink.table.connector.sink.DynamicTableSink;
import org.apache.flink.table.connector.source.DynamicTableSource;
import org.apache.flink.table.factories.DynamicTableSinkFactory;
import org.apache.flink.table.factories.DynamicTableSourceFactory;
import org.apache.flink.table.factories.FactoryUtil;

import java.util.Collections;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Map;
import java.util.Set;

/**
 * SetatsCatalogTableFactory is the table factory of {@link SetatsCatalog} (Catalog#getFactory):
 * a SELECT from a catalog table is the {@code setats} source (the changelog as {@code setats-cdc}
 * in streaming mode, the merged rows in batch mode, and lookup joins), an INSERT INTO is the
 * {@code setats} sink. Their options are the catalog's connection options, the table's
 * database and name ({@code catalog-database}, {@code catalog-table}), the table options the
 * use accepts (a source is not given the sink's merge-engine), and every hint of
 * the query ({@code /*+ OPTIONS(...) *}{@code /}), validated by the delegate as in a DDL.
 */
final class SetatsCatalogTableFactory implements DynamicTableSourceFactory, DynamicTableSinkFactory {

    private final Map<String, String> connectorOptions;
    private final SetatsDynamicTableSinkFactory setats = new SetatsDynamicTableSinkFactory();

    SetatsCatalogTableFactory(Map<String, String> connectorOptions) {
        this.connectorOptions = connectorOptions;
    }

    @Override
    public String factoryIdentifier() {
        return "setats-catalog-table";
    }

    @Override
    public Set<ConfigOption<?>> requiredOptions() {
        return Collections.emptySet();
    }

    @Override
    public Set<ConfigOption<?>> optionalOptions() {
        return Collections.emptySet();
    }

    @Override
    public DynamicTableSource createDynamicTableSource(Context context) {
        return setats.createDynamicTableSource(delegateContext(context, SetatsDynamicTableSinkFactory.sourceOptions()));
    }

    @Override
    public DynamicTableSink createDynamicTableSink(Context context) {
        return setats.createDynamicTableSink(delegateContext(context, SetatsDynamicTableSinkFactory.sinkOptions()));
    }

    private Context delegateContext(Context context, Set<ConfigOption<?>> useOptions) {
        Set<String> accepted = new HashSet<>();
        for (ConfigOption<?> o : setats.requiredOptions()) {
            accepted.add(o.key());
        }
        for (ConfigOption<?> o : useOptions) {
            accepted.add(o.key());
        }
        Map<String, String> options = new HashMap<>();
        for (Map.Entry<String, String> e : context.getCatalogTable().getOptions().entrySet()) {
            // Table options of the catalog table the delegate has no use for are left out; a hint
            // goes through and is checked by the delegate.
            boolean tableOption = SetatsCatalog.TABLE_OPTION_KEYS.contains(e.getKey()) || e.getKey().startsWith("changelog.");
            if (!tableOption || accepted.contains(e.getKey())) {
                options.put(e.getKey(), e.getValue());
            }
        }
        options.putAll(connectorOptions);
        options.put(SetatsConnectorOptions.CATALOG_DATABASE.key(), context.getObjectIdentifier().getDatabaseName());
        options.put(SetatsConnectorOptions.CATALOG_TABLE.key(), context.getObjectIdentifier().getObjectName());
        options.put(FactoryUtil.CONNECTOR.key(), setats.factoryIdentifier());
        return new FactoryUtil.DefaultDynamicTableContext(
                context.getObjectIdentifier(),
                context.getCatalogTable().copy(options),
                context.getEnrichmentOptions(),
                context.getConfiguration(),
                context.getClassLoader(),
                context.isTemporary());
    }
}
