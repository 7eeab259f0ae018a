package io.setats.flink.source.deserializer;

import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.table.data.GenericRowData;
import org.apache.flink.table.data.RowData;
import org.apache.flink.table.data.utils.JoinedRowData;
import org.apache.flink.table.runtime.typeutils.InternalTypeInfo;
import org.apache.flink.table.types.logical.LogicalType;
import org.apache.flink.table.types.logical.RowType;
import org.apache.flink.util.Collector;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;

/**
 * RowDataDeserializationSchema emits each changelog row as {@link RowData} with its RowKind: the
 * columns of the source's read type, followed by the requested metadata columns in the given
 * order (the layout Flink's planner expects from {@code SupportsReadingMetadata}).
 */
public final class RowDataDeserializationSchema implements SetatsDeserializationSchema<RowData> {

    private static final long serialVersionUID = 1L;

    private final RowType readType;
    private final List<ChangelogMetadata> metadata;
    private final TypeInformation<RowData> producedType;

    /** Emits rows of {@code readType} only. */
    public RowDataDeserializationSchema(RowType readType) {
        this(readType, Collections.emptyList(), InternalTypeInfo.of(readType));
    }

    /**
     * Emits rows of {@code readType} followed by {@code metadata}; {@code producedType} is the
     * type information of that combined row.
     */
    public RowDataDeserializationSchema(
            RowType readType, List<ChangelogMetadata> metadata, TypeInformation<RowData> producedType) {
        this.readType = readType;
        this.metadata = Collections.unmodifiableList(new ArrayList<>(metadata));
        this.producedType = producedType;
    }

    /** Emits rows of {@code readType} followed by {@code metadata}. */
    public static RowDataDeserializationSchema withMetadata(
            RowType readType, List<ChangelogMetadata> metadata) {
        List<RowType.RowField> fields = new ArrayList<>(readType.getFields());
        for (ChangelogMetadata m : metadata) {
            LogicalType t = m.dataType().getLogicalType();
            fields.add(new RowType.RowField(m.key(), t));
        }
        return new RowDataDeserializationSchema(
                readType, metadata, InternalTypeInfo.of(new RowType(readType.isNullable(), fields)));
    }

    public RowType readType() {
        return readType;
    }

    public List<ChangelogMetadata> metadata() {
        return metadata;
    }

    @Override
    public void deserialize(ChangelogRecord record, Collector<RowData> out) {
        if (metadata.isEmpty()) {
            out.collect(record.row());
            return;
        }
        RowData row = record.row();
        GenericRowData meta = new GenericRowData(metadata.size());
        for (int i = 0; i < metadata.size(); i++) {
            meta.setField(i, metadata.get(i).read(record));
        }
        JoinedRowData joined = new JoinedRowData(row.getRowKind(), row, meta);
        out.collect(joined);
    }

    @Override
    public TypeInformation<RowData> getProducedType() {
        return producedType;
    }
}
