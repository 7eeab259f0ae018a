package io.setats.flink.sink.serializer;

import org.apache.flink.table.data.RowData;

import java.io.Serializable;

/**
 * SetatsRecordSerializer turns a sink input element into the {@link RowData} the Setats sink
 * writes: its fields positionally match the sink's row type (the declared columns) and its
 * {@link org.apache.flink.types.RowKind} becomes the {@code _row_kind} column (+I, -U, +U, -D).
 *
 * <p>The returned row is read at once and not kept, so an implementation may reuse one object.
 */
@FunctionalInterface
public interface SetatsRecordSerializer<IN> extends Serializable {

    /** The row to write for {@code element}; never null. */
    RowData serialize(IN element);

    /** The serializer of a sink whose input already is RowData. */
    static SetatsRecordSerializer<RowData> rowData() {
        return RowDataSerializer.INSTANCE;
    }

    /** Identity for RowData input. */
    final class RowDataSerializer implements SetatsRecordSerializer<RowData> {
        private static final long serialVersionUID = 1L;
        static final RowDataSerializer INSTANCE = new RowDataSerializer();

        private RowDataSerializer() {}

        @Override
        public RowData serialize(RowData element) {
            return element;
        }

        private Object readResolve() {
            return INSTANCE;
        }
    }
}
