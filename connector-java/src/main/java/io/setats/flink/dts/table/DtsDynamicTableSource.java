package io.setats.flink.dts.table;

import io.setats.flink.dts.DtsConfig;
import io.setats.flink.dts.format.DtsCdcDeserializationSchema;
import io.setats.flink.dts.format.DtsTableFilter;
import io.setats.flink.dts.source.DtsSource;

import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.table.api.DataTypes;
import org.apache.flink.table.connector.ChangelogMode;
import org.apache.flink.table.connector.source.DynamicTableSource;
import org.apache.flink.table.connector.source.ScanTableSource;
import org.apache.flink.table.connector.source.SourceProvider;
import org.apache.flink.table.connector.source.abilities.SupportsReadingMetadata;
import org.apache.flink.table.data.RowData;
import org.apache.flink.table.types.DataType;
import org.apache.flink.table.types.logical.RowType;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/** The {@code dts} scan source: a changelog (+I, -U, +U, -D) of the selected tables with metadata columns. */
public final class DtsDynamicTableSource implements ScanTableSource, SupportsReadingMetadata {
    private final DtsConfig config;
    private final DtsTableFilter filter;
    private final DataType physical;
    private List<String> metadataKeys = new ArrayList<>();
    private DataType produced;

    DtsDynamicTableSource(DtsConfig config, DtsTableFilter filter, DataType physical) {
        this.config = config;
        this.filter = filter;
        this.physical = physical;
        this.produced = physical;
    }

    /** The channel, consumer group and gateway connection this source reads with. */
    public DtsConfig config() {
        return config;
    }

    @Override
    public ChangelogMode getChangelogMode() {
        return ChangelogMode.all();
    }

    @Override
    public ScanRuntimeProvider getScanRuntimeProvider(ScanContext context) {
        TypeInformation<RowData> info = context.createTypeInformation(produced);
        DtsCdcDeserializationSchema schema = new DtsCdcDeserializationSchema(
                (RowType) physical.getLogicalType(), metadataKeys, filter, config.topic(), info);
        return SourceProvider.of(new DtsSource<>(config, schema));
    }

    /** Readable metadata: timestamp (TIMESTAMP_LTZ(3)), offset, topic, partition, table. */
    @Override
    public Map<String, DataType> listReadableMetadata() {
        Map<String, DataType> m = new LinkedHashMap<>();
        m.put("timestamp", DataTypes.TIMESTAMP_LTZ(3).notNull());
        m.put("offset", DataTypes.BIGINT().notNull());
        m.put("topic", DataTypes.STRING().notNull());
        m.put("partition", DataTypes.INT().notNull());
        m.put("table", DataTypes.STRING());
        return m;
    }

    @Override
    public void applyReadableMetadata(List<String> keys, DataType producedDataType) {
        this.metadataKeys = new ArrayList<>(keys);
        this.produced = producedDataType;
    }

    @Override
    public DynamicTableSource copy() {
        DtsDynamicTableSource c = new DtsDynamicTableSource(config, filter, physical);
        c.metadataKeys = new ArrayList<>(metadataKeys);
        c.produced = produced;
        return c;
    }

    @Override
    public String asSummaryString() {
        return "dts(" + config.topic() + ")";
    }
}
