package io.setats.flink.catalog;

import io.setats.flink.SetatsConnectorOptions;
import io.setats.flink.SetatsOptionsUtil;

import org.apache.flink.configuration.ConfigOption;
import org.apache.flink.configuration.ConfigOptions;
import org.apache.flink.table.catalog.Catalog;
import org.apache.flink.table.factories.CatalogFactory;
import org.apache.flink.table.factories.FactoryUtil;

import java.util.HashSet;
import java.util.Set;

/**
 * SetatsCatalogFactory creates the Flink catalog {@code 'type' = 'setats'} (SPEC section 12):
 *
 * <pre>{@code
 * CREATE CATALOG setats_catalog WITH (
 *   'type' = 'setats',
 *   'manager-url' = 'grpc://127.0.0.1:8815',
 *   'warehouse' = 'file:///data/wh',
 *   'catalog-type' = 'hive',                      -- or 'hadoop' (default)
 *   'uri' = 'thrift://hms1:9083,thrift://hms2:9083',
 *   'catalog-name' = 'setats',                     -- default: the Flink catalog's name
 *   'default-database' = 'default',
 *   'username' = 'etl', 'password' = '...',        -- a user of the gateway's users file
 *   'tls.ca-cert' = '/etc/setats/ca.pem');         -- with a grpc+tls:// manager-url
 * }</pre>
 *
 * <p>Required: manager-url, warehouse; uri with catalog-type hive. The connection options
 * (manager-url, username, password, tls.ca-cert; SPEC section 14) are those of the {@code setats}
 * and {@code setats-cdc} connectors and are used by the catalog and by every table it reads or
 * writes. Unknown keys fail with a ValidationException naming them.
 */
public final class SetatsCatalogFactory implements CatalogFactory {

    public static final String IDENTIFIER = "setats";

    /** The database a USE CATALOG starts in. */
    public static final ConfigOption<String> DEFAULT_DATABASE =
            ConfigOptions.key("default-database")
                    .stringType()
                    .defaultValue("default")
                    .withDescription("The database the catalog starts in.");

    @Override
    public String factoryIdentifier() {
        return IDENTIFIER;
    }

    @Override
    public Set<ConfigOption<?>> requiredOptions() {
        Set<ConfigOption<?>> set = new HashSet<>();
        set.add(SetatsConnectorOptions.MANAGER_URL);
        set.add(SetatsConnectorOptions.WAREHOUSE);
        return set;
    }

    @Override
    public Set<ConfigOption<?>> optionalOptions() {
        Set<ConfigOption<?>> set = new HashSet<>();
        set.add(SetatsConnectorOptions.CATALOG_TYPE);
        set.add(SetatsConnectorOptions.CATALOG_NAME);
        set.add(SetatsConnectorOptions.URI);
        set.add(DEFAULT_DATABASE);
        set.addAll(SetatsOptionsUtil.connectionOptionalOptions());
        return set;
    }

    @Override
    public Catalog createCatalog(Context context) {
        FactoryUtil.CatalogFactoryHelper helper = FactoryUtil.createCatalogFactoryHelper(this, context);
        helper.validate();
        return new SetatsCatalog(context.getName(), helper.getOptions());
    }
}
