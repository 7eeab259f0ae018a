package io.setats.flink.source.batch;

import io.setats.flink.source.split.TableBucket;

import org.apache.flink.core.io.SimpleVersionedSerializer;
import org.apache.flink.core.memory.DataInputDeserializer;
import org.apache.flink.core.memory.DataInputView;
import org.apache.flink.core.memory.DataOutputSerializer;
import org.apache.flink.core.memory.DataOutputView;

import java.io.IOException;

/**
 * SnapshotSplitSerializer writes {@link SnapshotSplit}s into checkpoints and enumerator state.
 *
 * <p>Version 1 layout (big-endian): partition as modified UTF-8 ({@code writeUTF}), bucket int,
 * table id as modified UTF-8, after-key length int ({@code 0}: none) then its bytes. The layout of
 * a version never changes; a new layout gets a new version.
 */
public final class SnapshotSplitSerializer implements SimpleVersionedSerializer<SnapshotSplit> {

    public static final SnapshotSplitSerializer INSTANCE = new SnapshotSplitSerializer();

    public static final int VERSION = 1;

    /** Largest after-key accepted when reading (a primary key is far smaller). */
    private static final int MAX_KEY_BYTES = 64 << 20;

    @Override
    public int getVersion() {
        return VERSION;
    }

    @Override
    public byte[] serialize(SnapshotSplit split) throws IOException {
        DataOutputSerializer out = new DataOutputSerializer(64);
        write(split, out);
        return out.getCopyOfBuffer();
    }

    @Override
    public SnapshotSplit deserialize(int version, byte[] serialized) throws IOException {
        DataInputDeserializer in = new DataInputDeserializer(serialized);
        SnapshotSplit s = read(version, in);
        if (in.available() != 0) {
            throw new IOException("Corrupt Setats snapshot split: " + in.available() + " trailing bytes");
        }
        return s;
    }

    static void write(SnapshotSplit split, DataOutputView out) throws IOException {
        out.writeUTF(split.bucket().partition());
        out.writeInt(split.bucket().bucket());
        out.writeUTF(split.tableId());
        byte[] k = split.afterKey();
        out.writeInt(k == null ? 0 : k.length);
        if (k != null) {
            out.write(k);
        }
    }

    static SnapshotSplit read(int version, DataInputView in) throws IOException {
        if (version != VERSION) {
            throw new IOException("Unknown Setats snapshot split version " + version);
        }
        String partition = in.readUTF();
        int bucket = in.readInt();
        String tableId = in.readUTF();
        int n = in.readInt();
        if (n < 0 || n > MAX_KEY_BYTES) {
            throw new IOException("Corrupt Setats snapshot split: after-key length " + n);
        }
        byte[] key = null;
        if (n > 0) {
            key = new byte[n];
            in.readFully(key);
        }
        if (bucket < 0) {
            throw new IOException("Corrupt Setats snapshot split: bucket " + bucket);
        }
        return new SnapshotSplit(new TableBucket(partition, bucket), tableId, key);
    }
}
