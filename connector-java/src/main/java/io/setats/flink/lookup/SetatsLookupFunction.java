package io.setats.flink.lookup;

import io.setats.flink.client.GatewayClient;
import io.setats.flink.source.SetatsSourceConfig;

import org.apache.flink.table.data.RowData;
import org.apache.flink.table.functions.AsyncLookupFunction;
import org.apache.flink.table.functions.FunctionContext;
import org.apache.flink.table.types.logical.RowType;

import java.util.Collection;
import java.util.Collections;
import java.util.concurrent.CompletableFuture;

/**
 * SetatsLookupFunction is the async lookup function of {@code 'connector' = 'setats'} in lookup
 * joins ({@code JOIN ... FOR SYSTEM_TIME AS OF}, SPEC section 13): each key is a full primary key
 * (one row or none), or with {@code prefix} the first primary-key columns covering the partition
 * and bucket keys (every row that starts with them), read through a {@link SetatsLookupClient}
 * (keys of concurrent lookups are sent together, the gateway reads them per bucket). An absent
 * key, or a key with a null field, yields no row: the
 * inner join drops the probe row, a left join pads it with nulls. Flink's lookup cache
 * ({@code lookup.cache = 'PARTIAL'}) wraps this function (PartialCachingAsyncLookupProvider).
 */
public final class SetatsLookupFunction extends AsyncLookupFunction {

    private static final long serialVersionUID = 1L;

    private final SetatsSourceConfig config;
    private final RowType keyType;
    private final RowType rowType;
    private final int maxKeys;
    private final boolean prefix;

    private transient GatewayClient client;
    private transient SetatsLookupClient lookups;

    /**
     * @param keyType the join key columns (names and types of the table)
     * @param rowType the columns the join reads
     * @param maxKeys keys per gateway request, 1..{@link SetatsLookupClient#MAX_KEYS}
     * @param prefix whether {@code keyType} is a primary-key prefix rather than the whole key
     */
    public SetatsLookupFunction(
            SetatsSourceConfig config, RowType keyType, RowType rowType, int maxKeys, boolean prefix) {
        this.config = config;
        this.keyType = keyType;
        this.rowType = rowType;
        this.maxKeys = maxKeys;
        this.prefix = prefix;
    }

    @Override
    public void open(FunctionContext context) throws Exception {
        client = config.connect();
        lookups = new SetatsLookupClient(client, config.database(), config.table(), keyType, rowType, maxKeys, prefix);
    }

    @Override
    public CompletableFuture<Collection<RowData>> asyncLookup(RowData keyRow) {
        for (int i = 0; i < keyRow.getArity(); i++) {
            if (keyRow.isNullAt(i)) {
                return CompletableFuture.completedFuture(Collections.emptyList());
            }
        }
        return lookups.lookup(keyRow).<Collection<RowData>>thenApply(rows -> rows);
    }

    @Override
    public void close() throws Exception {
        if (lookups != null) {
            lookups.close();
            lookups = null;
        }
        if (client != null) {
            client.close();
            client = null;
        }
    }
}
