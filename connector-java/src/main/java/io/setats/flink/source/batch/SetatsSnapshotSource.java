package io.setats.flink.source.batch;

import io.setats.flink.source.SetatsSourceConfig;

import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.api.connector.source.Boundedness;
import org.apache.flink.api.connector.source.Source;
import org.apache.flink.api.connector.source.SourceReader;
import org.apache.flink.api.connector.source.SourceReaderContext;
import org.apache.flink.api.connector.source.SplitEnumerator;
import org.apache.flink.api.connector.source.SplitEnumeratorContext;
import org.apache.flink.api.java.typeutils.ResultTypeQueryable;
import org.apache.flink.core.io.SimpleVersionedSerializer;
import org.apache.flink.table.data.RowData;
import org.apache.flink.table.types.logical.RowType;

import javax.annotation.Nullable;

import java.util.Collections;
import java.util.LinkedHashSet;
import java.util.Set;

/**
 * SetatsSnapshotSource is the bounded FLIP-27 source of batch scans of a Setats table (SPEC
 * section 13; {@code 'connector' = 'setats'} in {@code execution.runtime-mode = batch}): the
 * merged rows of the table, all {@code +I}, no RowKind column, one split per (partition, bucket)
 * read in parallel, each bucket at one consistent view (its rows are the fold of its changelog up
 * to the view's end offset; different buckets may be read at different moments).
 *
 * <ul>
 *   <li>{@code readType}: the columns to read, by name (projection: sent to the gateway).
 *   <li>{@code partitions}: the partition names to read (partition pruning); null: all.
 *   <li>{@code limit}: each reader stops after that many rows ({@code -1}: no limit).
 * </ul>
 */
public final class SetatsSnapshotSource
        implements Source<RowData, SnapshotSplit, SnapshotEnumeratorState>, ResultTypeQueryable<RowData> {

    private static final long serialVersionUID = 1L;

    private final SetatsSourceConfig config;
    private final RowType readType;
    @Nullable private final Set<String> partitions;
    private final long limit;
    private final TypeInformation<RowData> producedType;

    public SetatsSnapshotSource(
            SetatsSourceConfig config,
            RowType readType,
            @Nullable Set<String> partitions,
            long limit,
            TypeInformation<RowData> producedType) {
        this.config = config;
        this.readType = readType;
        this.partitions = partitions == null ? null : Collections.unmodifiableSet(new LinkedHashSet<>(partitions));
        this.limit = limit;
        this.producedType = producedType;
    }

    @Override
    public Boundedness getBoundedness() {
        return Boundedness.BOUNDED;
    }

    @Override
    public SourceReader<RowData, SnapshotSplit> createReader(SourceReaderContext context) {
        return new SnapshotSourceReader(
                () -> new SnapshotSplitReader(config, readType, limit), context.getConfiguration(), context);
    }

    @Override
    public SplitEnumerator<SnapshotSplit, SnapshotEnumeratorState> createEnumerator(
            SplitEnumeratorContext<SnapshotSplit> context) {
        return new SnapshotEnumerator(context, config, readType, partitions, SnapshotEnumeratorState.initial());
    }

    @Override
    public SplitEnumerator<SnapshotSplit, SnapshotEnumeratorState> restoreEnumerator(
            SplitEnumeratorContext<SnapshotSplit> context, SnapshotEnumeratorState checkpoint) {
        return new SnapshotEnumerator(context, config, readType, partitions, checkpoint);
    }

    @Override
    public SimpleVersionedSerializer<SnapshotSplit> getSplitSerializer() {
        return SnapshotSplitSerializer.INSTANCE;
    }

    @Override
    public SimpleVersionedSerializer<SnapshotEnumeratorState> getEnumeratorCheckpointSerializer() {
        return SnapshotEnumeratorStateSerializer.INSTANCE;
    }

    @Override
    public TypeInformation<RowData> getProducedType() {
        return producedType;
    }
}
