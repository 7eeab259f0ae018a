package io.setats.flink.source.batch;

import org.apache.flink.core.io.SimpleVersionedSerializer;
import org.apache.flink.core.memory.DataInputDeserializer;
import org.apache.flink.core.memory.DataOutputSerializer;

import java.io.IOException;
import java.util.ArrayList;
import java.util.List;

/**
 * SnapshotEnumeratorStateSerializer writes {@link SnapshotEnumeratorState}s.
 *
 * <p>Version 1 layout (big-endian): listed boolean, split count int, then each split in {@link
 * SnapshotSplitSerializer} version 1 layout.
 */
public final class SnapshotEnumeratorStateSerializer
        implements SimpleVersionedSerializer<SnapshotEnumeratorState> {

    public static final SnapshotEnumeratorStateSerializer INSTANCE = new SnapshotEnumeratorStateSerializer();

    public static final int VERSION = 1;

    /** Most splits accepted when reading (far more buckets than a table can have). */
    private static final int MAX_SPLITS = 1 << 24;

    @Override
    public int getVersion() {
        return VERSION;
    }

    @Override
    public byte[] serialize(SnapshotEnumeratorState state) throws IOException {
        DataOutputSerializer out = new DataOutputSerializer(64);
        out.writeBoolean(state.listed());
        out.writeInt(state.pending().size());
        for (SnapshotSplit s : state.pending()) {
            SnapshotSplitSerializer.write(s, out);
        }
        return out.getCopyOfBuffer();
    }

    @Override
    public SnapshotEnumeratorState deserialize(int version, byte[] serialized) throws IOException {
        if (version != VERSION) {
            throw new IOException("Unknown Setats snapshot enumerator state version " + version);
        }
        DataInputDeserializer in = new DataInputDeserializer(serialized);
        boolean listed = in.readBoolean();
        int n = in.readInt();
        if (n < 0 || n > MAX_SPLITS) {
            throw new IOException("Corrupt Setats snapshot enumerator state: " + n + " splits");
        }
        List<SnapshotSplit> pending = new ArrayList<>(Math.min(n, 1024));
        for (int i = 0; i < n; i++) {
            pending.add(SnapshotSplitSerializer.read(SnapshotSplitSerializer.VERSION, in));
        }
        if (in.available() != 0) {
            throw new IOException("Corrupt Setats snapshot enumerator state: " + in.available() + " trailing bytes");
        }
        return new SnapshotEnumeratorState(listed, pending);
    }
}
