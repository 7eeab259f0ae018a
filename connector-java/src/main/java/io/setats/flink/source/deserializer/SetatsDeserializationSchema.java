package io.setats.flink.source.deserializer;

import org.apache.flink.api.common.serialization.DeserializationSchema;
import org.apache.flink.api.java.typeutils.ResultTypeQueryable;
import org.apache.flink.util.Collector;

import java.io.Serializable;

/**
 * SetatsDeserializationSchema turns changelog rows of a Setats table into the records a {@link
 * io.setats.flink.source.SetatsCdcSource} emits. It is called in the task's mailbox thread, once
 * per changelog row, in offset order per bucket; it may emit zero, one or more records per row.
 * The record and its row are valid only during {@link #deserialize} (the reader reuses them for
 * the next row of the Arrow batch, see {@link ChangelogRecord}); keep {@link ChangelogRecord#copy()}
 * to hold one longer. Emitted {@code RowData} may be the record's row itself: Flink copies it
 * when it must (object reuse off, network edges).
 *
 * <p>{@link RowDataDeserializationSchema} emits the rows as {@code RowData} (optionally with
 * metadata columns); {@link #of(RowConverter, org.apache.flink.api.common.typeinfo.TypeInformation)}
 * adapts a simple function.
 *
 * @param <T> type of the emitted records
 */
public interface SetatsDeserializationSchema<T> extends Serializable, ResultTypeQueryable<T> {

    /** Called once per reader before the first row; may register metrics. */
    default void open(DeserializationSchema.InitializationContext context) throws Exception {}

    /** Emits the records for one changelog row into {@code out}. */
    void deserialize(ChangelogRecord record, Collector<T> out) throws Exception;

    /** A schema that emits {@code converter.convert(record)} for every row (nothing when null). */
    static <T> SetatsDeserializationSchema<T> of(
            RowConverter<T> converter, org.apache.flink.api.common.typeinfo.TypeInformation<T> type) {
        return new SetatsDeserializationSchema<T>() {
            private static final long serialVersionUID = 1L;

            @Override
            public void deserialize(ChangelogRecord record, Collector<T> out) throws Exception {
                T value = converter.convert(record);
                if (value != null) {
                    out.collect(value);
                }
            }

            @Override
            public org.apache.flink.api.common.typeinfo.TypeInformation<T> getProducedType() {
                return type;
            }
        };
    }

    /** RowConverter maps one changelog row to one record, or null to drop it. */
    @FunctionalInterface
    interface RowConverter<T> extends Serializable {
        T convert(ChangelogRecord record) throws Exception;
    }
}
