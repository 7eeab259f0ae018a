package io.setats.flink.dts.source;

import io.setats.flink.dts.DtsRecord;

import org.apache.flink.api.connector.source.SourceOutput;
import org.apache.flink.connector.base.source.reader.RecordEmitter;
import org.apache.flink.util.Collector;

/** Emits the deserialized elements of each record (timestamp = source time) and advances the split state. */
final class DtsRecordEmitter<T> implements RecordEmitter<DtsFetched, T, DtsSplitState> {
    private final DtsDeserializationSchema<T> schema;
    private final OutputCollector<T> collector = new OutputCollector<>();

    DtsRecordEmitter(DtsDeserializationSchema<T> schema) {
        this.schema = schema;
    }

    @Override
    public void emitRecord(DtsFetched f, SourceOutput<T> output, DtsSplitState state) throws Exception {
        DtsRecord r = f.record;
        collector.output = output;
        collector.ts = r.getSourceTimestampMs();
        schema.deserialize(r, collector);
        state.emitted(r, f.clusterId);
    }

    private static final class OutputCollector<T> implements Collector<T> {
        SourceOutput<T> output;
        long ts;

        @Override
        public void collect(T record) {
            output.collect(record, ts);
        }

        @Override
        public void close() {}
    }
}
