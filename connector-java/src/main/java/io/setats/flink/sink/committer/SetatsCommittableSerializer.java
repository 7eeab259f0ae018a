package io.setats.flink.sink.committer;

import org.apache.flink.core.io.SimpleVersionedSerializer;
import org.apache.flink.core.memory.DataInputDeserializer;
import org.apache.flink.core.memory.DataOutputSerializer;

import java.io.IOException;

/**
 * SetatsCommittableSerializer writes a {@link SetatsCommittable} into checkpoints. Version 1:
 * commit user (UTF), subtask (int), checkpoint id (long), database (UTF), table (UTF), rows
 * (long).
 */
public final class SetatsCommittableSerializer
        implements SimpleVersionedSerializer<SetatsCommittable> {

    public static final int VERSION = 1;

    @Override
    public int getVersion() {
        return VERSION;
    }

    @Override
    public byte[] serialize(SetatsCommittable c) throws IOException {
        DataOutputSerializer out = new DataOutputSerializer(64);
        out.writeUTF(c.commitUser());
        out.writeInt(c.subtask());
        out.writeLong(c.checkpointId());
        out.writeUTF(c.database());
        out.writeUTF(c.table());
        out.writeLong(c.rows());
        return out.getCopyOfBuffer();
    }

    @Override
    public SetatsCommittable deserialize(int version, byte[] serialized) throws IOException {
        if (version != VERSION) {
            throw new IOException(
                    "Unknown SetatsCommittable serializer version " + version + " (this reads 1)");
        }
        DataInputDeserializer in = new DataInputDeserializer(serialized);
        return new SetatsCommittable(
                in.readUTF(), in.readInt(), in.readLong(), in.readUTF(), in.readUTF(), in.readLong());
    }
}
