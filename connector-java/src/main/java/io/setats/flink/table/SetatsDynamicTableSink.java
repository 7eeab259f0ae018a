package io.setats.flink.table;

import io.setats.flink.sink.SetatsSink;

import org.apache.flink.table.connector.ChangelogMode;
import org.apache.flink.table.connector.sink.DynamicTableSink;
import org.apache.flink.table.connector.sink.SinkV2Provider;
import org.apache.flink.table.connector.sink.abilities.SupportsPartitioning;
import org.apache.flink.table.data.RowData;
import org.apache.flink.types.RowKind;

import java.util.Map;

/**
 * SetatsDynamicTableSink is the planner's view of a {@code setats} sink table: an upsert sink
 * (accepts +I, +U, -D; SPEC section 3) backed by {@link SetatsSink}.
 *
 * <p>PARTITIONED BY is supported: the planner fills static partition values into the rows, so the
 * sink writes them like any other column.
 */
public final class SetatsDynamicTableSink implements DynamicTableSink, SupportsPartitioning {

    private final SetatsSink<RowData> sink;
    private final Integer parallelism;
    private final String summary;

    SetatsDynamicTableSink(SetatsSink<RowData> sink, Integer parallelism) {
        this.sink = sink;
        this.parallelism = parallelism;
        this.summary = "Setats(" + sink.database() + "." + sink.table() + ")";
    }

    @Override
    public ChangelogMode getChangelogMode(ChangelogMode requestedMode) {
        return ChangelogMode.newBuilder()
                .addContainedKind(RowKind.INSERT)
                .addContainedKind(RowKind.UPDATE_AFTER)
                .addContainedKind(RowKind.DELETE)
                .build();
    }

    @Override
    public SinkRuntimeProvider getSinkRuntimeProvider(Context context) {
        return SinkV2Provider.of(sink, parallelism);
    }

    @Override
    public void applyStaticPartition(Map<String, String> partition) {
        // Static partition values arrive as column values in the rows.
    }

    @Override
    public DynamicTableSink copy() {
        return new SetatsDynamicTableSink(sink, parallelism);
    }

    @Override
    public String asSummaryString() {
        return summary;
    }

    /** The sink this table writes with. */
    public SetatsSink<RowData> sink() {
        return sink;
    }
}
