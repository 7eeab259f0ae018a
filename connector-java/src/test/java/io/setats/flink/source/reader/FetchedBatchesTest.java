package io.setats.flink.source.reader;

import io.setats.flink.utils.ArrowColumnarBatch;
import io.setats.flink.utils.ArrowRowDataReader;

import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.RootAllocator;
import org.apache.arrow.vector.IntVector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.types.pojo.ArrowType;
import org.apache.arrow.vector.types.pojo.Field;
import org.apache.arrow.vector.types.pojo.FieldType;
import org.apache.arrow.vector.types.pojo.Schema;
import org.apache.flink.table.api.DataTypes;
import org.apache.flink.table.types.logical.RowType;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * FetchedBatches: a closed split reader's release (its client) runs only once the last batch it
 * handed out is recycled or the source reader closes; the source reader's close releases the
 * batches never recycled, and any batch added after it. No Arrow memory is left.
 */
class FetchedBatchesTest {

    private static final RowType TYPE = (RowType) DataTypes.ROW(DataTypes.FIELD("id", DataTypes.INT())).getLogicalType();
    private static final Schema SCHEMA =
            new Schema(Collections.singletonList(new Field("id", new FieldType(true, new ArrowType.Int(32, true), null), null)));

    private BufferAllocator allocator;

    @BeforeEach
    void setUp() {
        allocator = new RootAllocator(Long.MAX_VALUE);
    }

    @AfterEach
    void tearDown() {
        assertThat(allocator.getAllocatedMemory()).as("Arrow memory leaked").isZero();
        allocator.close();
    }

    private ArrowColumnarBatch batch() {
        try (VectorSchemaRoot root = VectorSchemaRoot.create(SCHEMA, allocator)) {
            root.allocateNew();
            ((IntVector) root.getVector("id")).setSafe(0, 7);
            root.setRowCount(1);
            return ArrowRowDataReader.create(TYPE, SCHEMA).takeBatch(root);
        }
    }

    @Test
    void aClosedSplitReaderIsReleasedAfterItsLastBatch() {
        FetchedBatches fetched = new FetchedBatches();
        Object first = new Object();
        Object second = new Object();
        List<String> released = new ArrayList<>();
        ArrowColumnarBatch a = batch();
        ArrowColumnarBatch b = batch();
        ArrowColumnarBatch c = batch();
        fetched.add(first, a);
        fetched.add(first, b);
        fetched.add(second, c);
        fetched.closeAfterLast(first, () -> released.add("first"));
        assertThat(released).isEmpty();
        fetched.recycled(a);
        assertThat(a.isClosed()).isTrue();
        assertThat(released).as("b of the first reader is still held").isEmpty();
        assertThat(b.row(0).getInt(0)).as("readable after its reader closed").isEqualTo(7);
        fetched.recycled(b);
        assertThat(released).containsExactly("first");
        fetched.closeAfterLast(second, () -> released.add("second"));
        fetched.releaseAll();
        assertThat(c.isClosed()).isTrue();
        assertThat(released).containsExactly("first", "second");
        ArrowColumnarBatch late = batch();
        assertThat(fetched.add(second, late)).as("after the source reader closed").isFalse();
        assertThat(late.isClosed()).isTrue();
        assertThat(fetched.size()).isZero();
    }

    @Test
    void aSplitReaderWithoutBatchesIsReleasedAtOnce() {
        FetchedBatches fetched = new FetchedBatches();
        List<String> released = new ArrayList<>();
        fetched.closeAfterLast(new Object(), () -> released.add("now"));
        assertThat(released).containsExactly("now");
    }
}
