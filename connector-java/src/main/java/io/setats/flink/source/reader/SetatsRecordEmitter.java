package io.setats.flink.source.reader;

import io.setats.flink.source.deserializer.ChangelogRecord;
import io.setats.flink.source.deserializer.SetatsDeserializationSchema;
import io.setats.flink.source.split.SetatsSplitState;

import org.apache.flink.api.connector.source.SourceOutput;
import org.apache.flink.connector.base.source.reader.RecordEmitter;
import org.apache.flink.util.Collector;

/**
 * SetatsRecordEmitter hands one changelog row to the deserialization schema, emits what it
 * produces with the row's commit timestamp as record timestamp, and then advances the split's
 * position to the offset after the row. It runs in the task's mailbox thread, so a checkpoint
 * sees either none or all of a row's effects (SPEC section 5).
 */
public final class SetatsRecordEmitter<T> implements RecordEmitter<ChangelogRecord, T, SetatsSplitState> {

    private final SetatsDeserializationSchema<T> deserializer;
    private final OutputCollector<T> collector = new OutputCollector<>();

    public SetatsRecordEmitter(SetatsDeserializationSchema<T> deserializer) {
        this.deserializer = deserializer;
    }

    @Override
    public void emitRecord(ChangelogRecord record, SourceOutput<T> output, SetatsSplitState state)
            throws Exception {
        collector.output = output;
        collector.timestamp = record.commitTimestampMs();
        deserializer.deserialize(record, collector);
        state.emitted(record.offset());
    }

    private static final class OutputCollector<T> implements Collector<T> {
        private SourceOutput<T> output;
        private long timestamp;

        @Override
        public void collect(T record) {
            output.collect(record, timestamp);
        }

        @Override
        public void close() {}
    }
}
