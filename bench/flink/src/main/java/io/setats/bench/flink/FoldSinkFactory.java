package io.setats.bench.flink;

import org.apache.flink.configuration.ConfigOption;
import org.apache.flink.table.connector.ChangelogMode;
import org.apache.flink.table.connector.sink.DynamicTableSink;
import org.apache.flink.table.connector.sink.SinkFunctionProvider;
import org.apache.flink.table.factories.DynamicTableSinkFactory;
import org.apache.flink.table.factories.FactoryUtil;

import java.util.Collections;
import java.util.Set;

/**
 * {@code 'connector' = 'bench-fold'}: a table sink that folds the changelog it receives into the
 * running read's {@link Collector.State} with {@link RowDataCollector}, taking the planner's
 * {@code RowData} as it is (no {@code toChangelogStream} conversion to {@code Row}). Accepts every
 * RowKind ({@code +I}, {@code -U}, {@code +U}, {@code -D}) and has no primary key, so the planner
 * adds no upsert materializer; option {@code sink.parallelism} (the source's, so the sink chains
 * to it). Only the benchmark's reader jobs use it (docs/bench-flink.md, {@code BENCH_READ_SHAPE=rowdata}).
 */
public final class FoldSinkFactory implements DynamicTableSinkFactory {
    /** The connector's name in {@code WITH}. */
    public static final String IDENTIFIER = "bench-fold";

    @Override
    public String factoryIdentifier() {
        return IDENTIFIER;
    }

    @Override
    public Set<ConfigOption<?>> requiredOptions() {
        return Collections.singleton(FactoryUtil.SINK_PARALLELISM);
    }

    @Override
    public Set<ConfigOption<?>> optionalOptions() {
        return Collections.emptySet();
    }

    @Override
    public DynamicTableSink createDynamicTableSink(Context context) {
        FactoryUtil.TableFactoryHelper helper = FactoryUtil.createTableFactoryHelper(this, context);
        helper.validate();
        return new FoldSink(helper.getOptions().get(FactoryUtil.SINK_PARALLELISM));
    }

    private static final class FoldSink implements DynamicTableSink {
        private final Integer parallelism;

        FoldSink(Integer parallelism) {
            this.parallelism = parallelism;
        }

        @Override
        public ChangelogMode getChangelogMode(ChangelogMode requestedMode) {
            return ChangelogMode.all();
        }

        @Override
        public SinkRuntimeProvider getSinkRuntimeProvider(Context context) {
            return SinkFunctionProvider.of(new RowDataCollector(), parallelism);
        }

        @Override
        public DynamicTableSink copy() {
            return new FoldSink(parallelism);
        }

        @Override
        public String asSummaryString() {
            return IDENTIFIER;
        }
    }
}
