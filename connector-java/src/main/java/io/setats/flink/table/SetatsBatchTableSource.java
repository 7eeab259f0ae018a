package io.setats.flink.table;

import io.setats.flink.client.GatewayClient;
import io.setats.flink.source.SetatsSourceConfig;
import io.setats.flink.source.batch.SetatsSnapshotSource;
import io.setats.flink.utils.PartitionNames;
import io.setats.proto.v1.BucketOffsets;

import org.apache.flink.table.api.ValidationException;
import org.apache.flink.table.connector.ChangelogMode;
import org.apache.flink.table.connector.source.DynamicTableSource;
import org.apache.flink.table.connector.source.LookupTableSource;
import org.apache.flink.table.connector.source.ScanTableSource;
import org.apache.flink.table.connector.source.SourceProvider;
import org.apache.flink.table.connector.source.abilities.SupportsLimitPushDown;
import org.apache.flink.table.connector.source.abilities.SupportsPartitionPushDown;
import org.apache.flink.table.connector.source.abilities.SupportsProjectionPushDown;
import org.apache.flink.table.connector.source.lookup.cache.LookupCache;
import org.apache.flink.table.types.DataType;
import org.apache.flink.table.types.logical.RowType;
import org.apache.flink.table.types.utils.TypeConversions;

import javax.annotation.Nullable;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;

/**
 * SetatsBatchTableSource is {@code 'connector' = 'setats'} used as a source in batch mode
 * ({@code execution.runtime-mode = batch}; SPEC section 13): a bounded scan of the merged table
 * (insert-only: every row {@code +I}, no RowKind column) through {@link SetatsSnapshotSource},
 * one split per (partition, bucket), and the same lookup source as in streaming mode.
 *
 * <ul>
 *   <li>Projection push-down ({@link SupportsProjectionPushDown}, top-level columns): only the
 *       selected columns are read and sent by the gateway ({@code SnapshotRead.columns}).
 *   <li>Partition pruning ({@link SupportsPartitionPushDown}): {@link #listPartitions()} asks the
 *       gateway ({@code list-buckets}) for the partitions that have rows; only the buckets of the
 *       remaining partitions become splits.
 *   <li>Limit push-down ({@link SupportsLimitPushDown}): each reader stops after that many rows.
 * </ul>
 */
public final class SetatsBatchTableSource
        implements ScanTableSource,
                LookupTableSource,
                SupportsProjectionPushDown,
                SupportsPartitionPushDown,
                SupportsLimitPushDown {

    private final SetatsSourceConfig config;
    private final RowType physicalType;
    private final List<String> primaryKey;
    private final List<String> partitionKeys;
    @Nullable private final LookupCache cache;
    private RowType producedType;
    @Nullable private Set<String> partitions;
    private long limit = -1;

    public SetatsBatchTableSource(
            SetatsSourceConfig config,
            RowType physicalType,
            List<String> primaryKey,
            List<String> partitionKeys,
            @Nullable LookupCache cache) {
        this.config = config;
        this.physicalType = physicalType;
        this.primaryKey = primaryKey;
        this.partitionKeys = partitionKeys;
        this.cache = cache;
        this.producedType = physicalType;
    }

    /** The columns the scan produces (after projection push-down). */
    public RowType producedType() {
        return producedType;
    }

    /** The partition names the scan reads; null: all. */
    @Nullable
    public Set<String> partitions() {
        return partitions;
    }

    /** Rows each reader stops after; -1: no limit. */
    public long limit() {
        return limit;
    }

    @Override
    public ChangelogMode getChangelogMode() {
        return ChangelogMode.insertOnly();
    }

    @Override
    public ScanRuntimeProvider getScanRuntimeProvider(ScanContext context) {
        return SourceProvider.of(
                new SetatsSnapshotSource(
                        config,
                        producedType,
                        partitions,
                        limit,
                        context.createTypeInformation(TypeConversions.fromLogicalToDataType(producedType))));
    }

    @Override
    public LookupRuntimeProvider getLookupRuntimeProvider(LookupContext context) {
        return SetatsDynamicTableSource.lookupProvider(config, producedType, primaryKey, partitionKeys, cache, context);
    }

    @Override
    public boolean supportsNestedProjection() {
        return false;
    }

    @Override
    public void applyProjection(int[][] projectedFields, DataType producedDataType) {
        producedType = (RowType) producedDataType.getLogicalType();
    }

    /**
     * The partitions of the table that have rows, from the gateway: each a map of partition key to
     * value string (proto/README.md "Partition names").
     *
     * @throws ValidationException when the table's partition keys differ from the declared ones
     */
    @Override
    public java.util.Optional<List<Map<String, String>>> listPartitions() {
        Set<String> names = new LinkedHashSet<>();
        try (GatewayClient client = config.connect()) {
            for (BucketOffsets b : client.listBuckets(config.database(), config.table()).getBucketsList()) {
                names.add(b.getPartition());
            }
        }
        List<Map<String, String>> out = new ArrayList<>();
        for (String name : names) {
            LinkedHashMap<String, String> spec = PartitionNames.parse(name);
            if (!new ArrayList<>(spec.keySet()).equals(partitionKeys)) {
                throw new ValidationException(
                        String.format(
                                "Setats table %s has partition '%s', but the DDL declares PARTITIONED BY %s",
                                config.tablePath(), name, partitionKeys));
            }
            out.add(spec);
        }
        return java.util.Optional.of(out);
    }

    @Override
    public void applyPartitions(List<Map<String, String>> remainingPartitions) {
        Set<String> names = new LinkedHashSet<>();
        for (Map<String, String> spec : remainingPartitions) {
            try {
                names.add(PartitionNames.format(partitionKeys, spec));
            } catch (IllegalArgumentException e) {
                throw new ValidationException(e.getMessage(), e);
            }
        }
        partitions = names;
    }

    @Override
    public void applyLimit(long limit) {
        this.limit = limit;
    }

    @Override
    public DynamicTableSource copy() {
        SetatsBatchTableSource c = new SetatsBatchTableSource(config, physicalType, primaryKey, partitionKeys, cache);
        c.producedType = producedType;
        c.partitions = partitions == null ? null : new LinkedHashSet<>(partitions);
        c.limit = limit;
        return c;
    }

    @Override
    public String asSummaryString() {
        return "Setats snapshot " + config.tablePath();
    }

    @Override
    public boolean equals(Object o) {
        if (!(o instanceof SetatsBatchTableSource)) {
            return false;
        }
        SetatsBatchTableSource s = (SetatsBatchTableSource) o;
        return config.equals(s.config)
                && producedType.equals(s.producedType)
                && primaryKey.equals(s.primaryKey)
                && partitionKeys.equals(s.partitionKeys)
                && Objects.equals(partitions, s.partitions)
                && limit == s.limit
                && Objects.equals(cache, s.cache);
    }

    @Override
    public int hashCode() {
        return Objects.hash(config, producedType, partitions, limit);
    }
}
