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
 * joins ({@code JOIN ... FOR SYSTEM_TIME AS OF}, SPEC section 13): each key is a full primary key,
 * read through a {@link SetatsLookupClient} (keys of concurrent lookups are sent together, the
 * gateway reads them per bucket). An absent key, or a key with a null field, yields no row: the
 * inner join drops the probe row, a left join pads it with nulls. Flink's lookup cache
 * ({@code lookup.cache = 'PARTIAL'}) wraps this function (PartialCachingAsyncLookupProvider).
 */
public final class SetatsLookupFunction extends AsyncLookupFunction {

    private static final long serialVersionUID = 1L;

    private final SetatsSourceConfig config;
    private final RowType keyType;
    private final RowType rowType;
    private final int maxKeys;

    private transient GatewayClient client;
    private transient SetatsLookupClient lookups;

    public SetatsLookupFunction(SetatsSourceConfig config, RowType keyType, RowType rowType, int maxKeys) {
        this.config = config;
        this.keyType = keyType;
        this.rowType = rowType;
        this.maxKeys = maxKeys;
    }

    @Override
    public void open(FunctionContext context) throws Exception {
        client = config.connect();
        lookups = new SetatsLookupClient(client, config.database(), config.table(), keyType, rowType, maxKeys);
    }

    @Override
    public CompletableFuture<Collection<RowData>> asyncLookup(RowData keyRow) {
        for (int i = 0; i < keyRow.getArity(); i++) {
            if (keyRow.isNullAt(i)) {
                return CompletableFuture.completedFuture(Collections.emptyList());
            }
        }
        return lookups.lookup(keyRow)
                .thenApply(r -> r == null ? Collections.<RowData>emptyList() : Collections.singletonList(r));
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
