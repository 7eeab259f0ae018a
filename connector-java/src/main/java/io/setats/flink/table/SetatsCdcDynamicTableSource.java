package io.setats.flink.table;

import io.setats.flink.source.SetatsCdcSource;
import io.setats.flink.source.SetatsSourceConfig;
import io.setats.flink.source.deserializer.ChangelogMetadata;
import io.setats.flink.source.deserializer.RowDataDeserializationSchema;

import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.table.connector.ChangelogMode;
import org.apache.flink.table.connector.source.DynamicTableSource;
import org.apache.flink.table.connector.source.ScanTableSource;
import org.apache.flink.table.connector.source.SourceProvider;
import org.apache.flink.table.connector.source.abilities.SupportsReadingMetadata;
import org.apache.flink.table.data.RowData;
import org.apache.flink.table.types.DataType;
import org.apache.flink.table.types.logical.RowType;
import org.apache.flink.table.types.utils.TypeConversions;

import javax.annotation.Nullable;

import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;

/**
 * SetatsCdcDynamicTableSource is the planner's view of a {@code setats-cdc} table: an unbounded
 * scan producing every RowKind ({@link ChangelogMode#all()}) from a {@link SetatsCdcSource}, with
 * the metadata columns of {@link ChangelogMetadata} ({@code timestamp}, {@code offset}, {@code
 * bucket}, {@code partition}) appended after the physical columns when the DDL asks for them.
 */
public final class SetatsCdcDynamicTableSource implements ScanTableSource, SupportsReadingMetadata {

    private final SetatsSourceConfig config;
    private final RowType physicalType;
    private List<String> metadataKeys;
    @Nullable private DataType producedDataType;

    public SetatsCdcDynamicTableSource(SetatsSourceConfig config, RowType physicalType) {
        this(config, physicalType, Collections.emptyList(), null);
    }

    private SetatsCdcDynamicTableSource(
            SetatsSourceConfig config,
            RowType physicalType,
            List<String> metadataKeys,
            @Nullable DataType producedDataType) {
        this.config = config;
        this.physicalType = physicalType;
        this.metadataKeys = metadataKeys;
        this.producedDataType = producedDataType;
    }

    public SetatsSourceConfig config() {
        return config;
    }

    public RowType physicalType() {
        return physicalType;
    }

    public List<String> metadataKeys() {
        return metadataKeys;
    }

    @Override
    public ChangelogMode getChangelogMode() {
        return ChangelogMode.all();
    }

    @Override
    public ScanRuntimeProvider getScanRuntimeProvider(ScanContext context) {
        List<ChangelogMetadata> metadata = new ArrayList<>();
        for (String key : metadataKeys) {
            metadata.add(ChangelogMetadata.ofKey(key));
        }
        DataType produced =
                producedDataType != null
                        ? producedDataType
                        : TypeConversions.fromLogicalToDataType(physicalType);
        TypeInformation<RowData> typeInfo = context.createTypeInformation(produced);
        RowDataDeserializationSchema deserializer =
                new RowDataDeserializationSchema(physicalType, metadata, typeInfo);
        return SourceProvider.of(new SetatsCdcSource<>(config, physicalType, deserializer, true));
    }

    @Override
    public Map<String, DataType> listReadableMetadata() {
        Map<String, DataType> out = new LinkedHashMap<>();
        for (ChangelogMetadata m : ChangelogMetadata.values()) {
            out.put(m.key(), m.dataType());
        }
        return out;
    }

    @Override
    public void applyReadableMetadata(List<String> metadataKeys, DataType producedDataType) {
        this.metadataKeys = new ArrayList<>(metadataKeys);
        this.producedDataType = producedDataType;
    }

    @Override
    public DynamicTableSource copy() {
        return new SetatsCdcDynamicTableSource(
                config, physicalType, new ArrayList<>(metadataKeys), producedDataType);
    }

    @Override
    public String asSummaryString() {
        return "Setats CDC " + config.tablePath();
    }

    @Override
    public boolean equals(Object o) {
        if (this == o) {
            return true;
        }
        if (!(o instanceof SetatsCdcDynamicTableSource)) {
            return false;
        }
        SetatsCdcDynamicTableSource that = (SetatsCdcDynamicTableSource) o;
        return config.equals(that.config)
                && physicalType.equals(that.physicalType)
                && metadataKeys.equals(that.metadataKeys)
                && Objects.equals(producedDataType, that.producedDataType);
    }

    @Override
    public int hashCode() {
        return Objects.hash(config, physicalType, metadataKeys, producedDataType);
    }
}
