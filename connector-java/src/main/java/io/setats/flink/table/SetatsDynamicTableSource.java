package io.setats.flink.table;

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

/**
 * SetatsDynamicTableSource is {@code 'connector' = 'setats'} used as a source (SPEC section 13).
 *
 * <ul>
 *   <li><b>Lookup</b> ({@link LookupTableSource}): {@code JOIN ... FOR SYSTEM_TIME AS OF} on the
 *       full primary key, async point reads batched per request and per bucket ({@link
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
    @Nullable private final LookupCache cache;

    public SetatsDynamicTableSource(
            SetatsCdcDynamicTableSource changelog, List<String> primaryKey, @Nullable LookupCache cache) {
        this.changelog = changelog;
        this.primaryKey = primaryKey;
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
     * The lookup function for the join keys: they must be exactly the table's primary key, else a
     * ValidationException naming both.
     */
    @Override
    public LookupRuntimeProvider getLookupRuntimeProvider(LookupContext context) {
        return lookupProvider(changelog.config(), changelog.physicalType(), primaryKey, cache, context);
    }

    /**
     * The lookup function of a {@code setats} table whose produced columns are {@code rowType}
     * (the join keys index them), shared by the streaming and the batch table source.
     *
     * @throws ValidationException when the join keys are not exactly {@code primaryKey} or are
     *     nested fields
     */
    static LookupRuntimeProvider lookupProvider(
            SetatsSourceConfig config,
            RowType rowType,
            List<String> primaryKey,
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
        if (!new HashSet<>(names).equals(new HashSet<>(primaryKey)) || names.size() != primaryKey.size()) {
            throw new ValidationException(
                    String.format(
                            "A lookup join on Setats table %s must join on its full primary key %s; the join keys are %s",
                            config.tablePath(), primaryKey, names));
        }
        RowType keyType = RowType.of(types.toArray(new LogicalType[0]), names.toArray(new String[0]));
        SetatsLookupFunction fn = new SetatsLookupFunction(config, keyType, rowType, SetatsLookupClient.MAX_KEYS);
        return cache == null ? AsyncLookupFunctionProvider.of(fn) : PartialCachingAsyncLookupProvider.of(fn, cache);
    }

    @Override
    public DynamicTableSource copy() {
        return new SetatsDynamicTableSource((SetatsCdcDynamicTableSource) changelog.copy(), primaryKey, cache);
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
        return changelog.equals(s.changelog) && primaryKey.equals(s.primaryKey) && Objects.equals(cache, s.cache);
    }

    @Override
    public int hashCode() {
        return Objects.hash(changelog, primaryKey);
    }
}
