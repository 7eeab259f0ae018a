package io.setats.flink.source.reader;

import io.setats.flink.source.deserializer.ChangelogRecord;
import io.setats.flink.source.deserializer.SetatsDeserializationSchema;
import io.setats.flink.source.slot.SlotSyncPoints;
import io.setats.flink.source.split.SetatsSplitState;

import org.apache.flink.api.connector.source.SourceOutput;
import org.apache.flink.connector.base.source.reader.RecordEmitter;
import org.apache.flink.util.Collector;

import javax.annotation.Nullable;

/**
 * SetatsRecordEmitter hands one changelog row to the deserialization schema, emits what it
 * produces with the row's commit timestamp as record timestamp, and then advances the split's
 * position to the offset after the row. It runs in the task's mailbox thread, so a checkpoint
 * sees either none or all of a row's effects (SPEC section 5). Snapshot rows, catch-up rows and
 * the position markers of {@code startup.mode = 'initial'} move the split's snapshot position
 * instead (SPEC section 9; markers emit nothing).
 */
public final class SetatsRecordEmitter<T> implements RecordEmitter<ChangelogRecord, T, SetatsSplitState> {

    private final SetatsDeserializationSchema<T> deserializer;
    private final OutputCollector<T> collector = new OutputCollector<>();

    @Nullable private final SlotSyncPoints syncPoints;

    public SetatsRecordEmitter(SetatsDeserializationSchema<T> deserializer) {
        this(deserializer, null);
    }

    /** @param syncPoints counts changelog rows for running sync points; null without a slot */
    public SetatsRecordEmitter(SetatsDeserializationSchema<T> deserializer, @Nullable SlotSyncPoints syncPoints) {
        this.deserializer = deserializer;
        this.syncPoints = syncPoints;
    }

    @Override
    public void emitRecord(ChangelogRecord record, SourceOutput<T> output, SetatsSplitState state)
            throws Exception {
        switch (record.kind()) {
            case VIEW:
                state.viewMovedTo(record.viewOffset());
                return;
            case SNAPSHOT_DONE:
                state.snapshotDone(record.viewOffset());
                return;
            default:
                break;
        }
        collector.output = output;
        collector.timestamp = record.commitTimestampMs();
        deserializer.deserialize(record, collector);
        switch (record.kind()) {
            case SNAPSHOT:
                state.snapshotRowEmitted(record.viewOffset(), record.snapshotKey());
                break;
            case CATCH_UP:
                state.catchUpRowEmitted(record.offset());
                break;
            default:
                state.emitted(record.offset());
                if (syncPoints != null) {
                    syncPoints.rowEmitted(state.tableBucket(), state.nextOffset());
                }
        }
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
