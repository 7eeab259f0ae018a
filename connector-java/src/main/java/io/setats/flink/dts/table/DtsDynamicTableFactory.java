package io.setats.flink.dts.table;

import io.setats.flink.SetatsConnectorOptions;
import io.setats.flink.SetatsOptionsUtil;
import io.setats.flink.client.ConnectionOptions;
import io.setats.flink.dts.DtsConfig;
import io.setats.flink.dts.format.DtsTableFilter;

import org.apache.flink.configuration.ConfigOption;
import org.apache.flink.configuration.ReadableConfig;
import org.apache.flink.table.api.ValidationException;
import org.apache.flink.table.connector.source.DynamicTableSource;
import org.apache.flink.table.factories.DynamicTableSourceFactory;
import org.apache.flink.table.factories.FactoryUtil;
import org.apache.flink.table.types.DataType;

import java.util.HashSet;
import java.util.Set;

/**
 * Factory of the {@code dts} SQL source (seed {@code dts-flink-connector.txt}, SPEC section 11).
 * Options: {@code dts.server}, {@code topic}, {@code dts.sid}, {@code dts.user}, {@code
 * dts.password} (required), {@code dts.checkpoint} (unix seconds), {@code format} = {@code
 * dts-cdc} (required) and {@code dts-cdc.table.name}; the gateway connection's {@code username},
 * {@code password} and {@code tls.ca-cert} (SPEC section 14), as on the {@code setats} connector.
 * {@code dts.user}/{@code dts.password} are the consumer group's user; {@code
 * username}/{@code password} the gateway's.
 */
public final class DtsDynamicTableFactory implements DynamicTableSourceFactory {

    @Override
    public String factoryIdentifier() {
        return DtsOptions.IDENTIFIER;
    }

    @Override
    public Set<ConfigOption<?>> requiredOptions() {
        Set<ConfigOption<?>> s = new HashSet<>();
        s.add(DtsOptions.SERVER);
        s.add(DtsOptions.TOPIC);
        s.add(DtsOptions.SID);
        s.add(DtsOptions.USER);
        s.add(DtsOptions.PASSWORD);
        s.add(DtsOptions.FORMAT);
        return s;
    }

    @Override
    public Set<ConfigOption<?>> optionalOptions() {
        Set<ConfigOption<?>> s = new HashSet<>();
        s.add(DtsOptions.CHECKPOINT);
        s.add(DtsOptions.TABLE_NAME);
        s.addAll(SetatsOptionsUtil.connectionOptionalOptions());
        return s;
    }

    @Override
    public DynamicTableSource createDynamicTableSource(Context context) {
        FactoryUtil.TableFactoryHelper helper = FactoryUtil.createTableFactoryHelper(this, context);
        helper.validate();
        ReadableConfig o = helper.getOptions();
        if (!DtsOptions.FORMAT_DTS_CDC.equals(o.get(DtsOptions.FORMAT))) {
            throw new ValidationException("Option 'format' of the dts connector must be 'dts-cdc', got '" + o.get(DtsOptions.FORMAT) + "'");
        }
        Long checkpoint = null;
        String cp = o.get(DtsOptions.CHECKPOINT);
        if (cp != null && !cp.trim().isEmpty()) {
            try {
                checkpoint = Long.parseLong(cp.trim());
            } catch (NumberFormatException e) {
                throw new ValidationException("Option 'dts.checkpoint' must be a unix time in seconds, got '" + cp + "'");
            }
            if (checkpoint < 0) {
                throw new ValidationException("Option 'dts.checkpoint' must not be negative, got " + checkpoint);
            }
        }
        DtsTableFilter filter;
        try {
            filter = DtsTableFilter.parse(o.get(DtsOptions.TABLE_NAME));
        } catch (IllegalArgumentException e) {
            throw new ValidationException("Option 'dts-cdc.table.name': " + e.getMessage(), e);
        }
        DtsConfig config = new DtsConfig(connection(o), o.get(DtsOptions.TOPIC), o.get(DtsOptions.SID),
                o.get(DtsOptions.USER), o.get(DtsOptions.PASSWORD), checkpoint);
        DataType physical = context.getCatalogTable().getResolvedSchema().toPhysicalRowDataType();
        return new DtsDynamicTableSource(config, filter, physical);
    }

    /** The gateway connection of 'dts.server', 'username', 'password' and 'tls.ca-cert'. */
    static ConnectionOptions connection(ReadableConfig o) {
        try {
            return ConnectionOptions.builder()
                    .managerUrl(o.get(DtsOptions.SERVER))
                    .credentials(o.getOptional(SetatsConnectorOptions.USERNAME).orElse(null),
                            o.getOptional(SetatsConnectorOptions.PASSWORD).orElse(null))
                    .tlsCaCert(o.getOptional(SetatsConnectorOptions.TLS_CA_CERT).orElse(null))
                    .build();
        } catch (IllegalArgumentException e) {
            throw new ValidationException("Invalid gateway connection options of the dts connector ('dts.server', 'username', "
                    + "'password', 'tls.ca-cert'; the consumer group's are 'dts.user', 'dts.password'): " + e.getMessage(), e);
        }
    }
}
