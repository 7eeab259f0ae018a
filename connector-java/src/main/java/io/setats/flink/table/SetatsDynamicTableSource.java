package io.setats.flink.table;

import io.setats.flink.SetatsOptionsUtil;
import io.setats.flink.lookup.SetatsLookupClient;
import io.setats.flink.lookup.SetatsLookupFunction;
import io.setats.flink.source.SetatsSourceConfig;

import org.apache.flink.table.api.ValidationException;
import org.apache.flink.table.connector.ChangelogMode;
import org.apache.flink.table.connector.source.DynamicTableSource;
import org.apache.flink.table.connector.source.LookupTableSource;
import org.apache.flink.table.connector.source.ScanTableSource;
import org.apache.flink.table.connector.source.lookup.AsyncLookupFunctionProvider;
import org.apache.flink.table.connector.source.lookup.PartialCachingAsyncLookupProvider;
import org.apache.flink.table.connector.source.lookup.cache.LookupCache;
import org.apache.flink.table.types.logical.LogicalType;
import org.apache.flink.table.types.logical.RowType;

import javax.annotation.Nullable;

import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Objects;
import java.util.Set;

/**
 * SetatsDynamicTableSource is {@code 'connector' = 'setats'} used as a source (SPEC section 13).
 *
 * <ul>
 *   <li><b>Lookup</b> ({@link LookupTableSource}): {@code JOIN ... FOR SYSTEM_TIME AS OF} on the
 *       full primary key, or on a primary-key prefix that includes the partition and bucket keys
 *       (a prefix read inside one bucket, any number of rows per probe row), async point reads batched per request and per bucket ({@link
 *       SetatsLookupFunction}), with Flink's {@code lookup.cache} options (FLIP-221; {@code
 *       PARTIAL} with {@code lookup.partial-cache.max-rows} and {@code
 *       lookup.partial-cache.expire-after-write} / {@code -access}).
 *   <li><b>Scan</b> ({@link ScanTableSource}): the table's changelog, exactly as {@code
 *       setats-cdc} with the same options, so that a catalog table read as a stream behaves as
 *       users expect.
 * </ul>
 */
public final class SetatsDynamicTableSource implements ScanTableSource, LookupTableSource {

    private final SetatsCdcDynamicTableSource changelog;
    private final List<String> primaryKey;
    private final List<String> partitionKeys;
    @Nullable private final LookupCache cache;

    public SetatsDynamicTableSource(
            SetatsCdcDynamicTableSource changelog,
            List<String> primaryKey,
            List<String> partitionKeys,
            @Nullable LookupCache cache) {
        this.changelog = changelog;
        this.primaryKey = primaryKey;
        this.partitionKeys = partitionKeys;
        this.cache = cache;
    }

    @Override
    public ChangelogMode getChangelogMode() {
        return changelog.getChangelogMode();
    }

    @Override
    public ScanRuntimeProvider getScanRuntimeProvider(ScanContext context) {
        return changelog.getScanRuntimeProvider(context);
    }

    /**
     * The lookup function for the join keys: the table's full primary key, or a primary-key
     * prefix covering the partition and bucket keys ({@link #lookupProvider}).
     */
    @Override
    public LookupRuntimeProvider getLookupRuntimeProvider(LookupContext context) {
        return lookupProvider(changelog.config(), changelog.physicalType(), primaryKey, partitionKeys, cache, context);
    }

    /** Keys per gateway request of a prefix lookup (each key may match many rows). */
    static final int PREFIX_MAX_KEYS = 256;

    /**
     * The lookup function of a {@code setats} table whose produced columns are {@code rowType}
     * (the join keys index them), shared by the streaming and the batch table source (SPEC
     * section 13). The join keys must be either the whole primary key (a point read: one row or
     * none) or its first k columns in DDL order, k smaller than the key, including every
     * partition key and the bucket key ({@code bucket-key}, by default the primary key minus the
     * partition keys): a prefix read within one bucket, any number of rows per probe row.
     *
     * @throws ValidationException naming the join keys, the primary key, the partition keys and
     *     the bucket key when the join keys are neither, or are nested fields
     */
    static LookupRuntimeProvider lookupProvider(
            SetatsSourceConfig config,
            RowType rowType,
            List<String> primaryKey,
            List<String> partitionKeys,
            @Nullable LookupCache cache,
            LookupContext context) {
        List<String> names = new ArrayList<>();
        List<LogicalType> types = new ArrayList<>();
        for (int[] k : context.getKeys()) {
            if (k.length != 1) {
                throw new ValidationException("Setats lookup joins take top-level columns only");
            }
            names.add(rowType.getFieldNames().get(k[0]));
            types.add(rowType.getTypeAt(k[0]));
        }
        Set<String> joined = new HashSet<>(names);
        boolean full = joined.equals(new HashSet<>(primaryKey)) && names.size() == primaryKey.size();
        List<String> bucketKey = bucketKey(config, primaryKey, partitionKeys);
        boolean prefix =
                !full
                        && names.size() == joined.size()
                        && names.size() < primaryKey.size()
                        && joined.equals(new HashSet<>(primaryKey.subList(0, names.size())))
                        && joined.containsAll(partitionKeys)
                        && joined.containsAll(bucketKey);
        if (!full && !prefix) {
            throw new ValidationException(
                    String.format(
                            "A lookup join on Setats table %s must join on its full primary key %s, or on its first "
                                    + "primary-key columns including the partition keys %s and the bucket key %s; "
                                    + "the join keys are %s",
                            config.tablePath(), primaryKey, partitionKeys, bucketKey, names));
        }
        RowType keyType = RowType.of(types.toArray(new LogicalType[0]), names.toArray(new String[0]));
        SetatsLookupFunction fn =
                new SetatsLookupFunction(
                        config, keyType, rowType, prefix ? PREFIX_MAX_KEYS : SetatsLookupClient.MAX_KEYS, prefix);
        return cache == null ? AsyncLookupFunctionProvider.of(fn) : PartialCachingAsyncLookupProvider.of(fn, cache);
    }

    /** The declared bucket key, or its default: the primary key minus the partition keys. */
    private static List<String> bucketKey(SetatsSourceConfig config, List<String> primaryKey, List<String> partitionKeys) {
        if (config.expectedBucketKey() != null) {
            return SetatsOptionsUtil.parseColumnList(config.expectedBucketKey());
        }
        List<String> out = new ArrayList<>(primaryKey);
        out.removeAll(partitionKeys);
        return out;
    }

    @Override
    public DynamicTableSource copy() {
        return new SetatsDynamicTableSource(
                (SetatsCdcDynamicTableSource) changelog.copy(), primaryKey, partitionKeys, cache);
    }

    @Override
    public String asSummaryString() {
        return "Setats";
    }

    @Override
    public boolean equals(Object o) {
        if (!(o instanceof SetatsDynamicTableSource)) {
            return false;
        }
        SetatsDynamicTableSource s = (SetatsDynamicTableSource) o;
        return changelog.equals(s.changelog)
                && primaryKey.equals(s.primaryKey)
                && partitionKeys.equals(s.partitionKeys)
                && Objects.equals(cache, s.cache);
    }

    @Override
    public int hashCode() {
        return Objects.hash(changelog, primaryKey);
    }
}
