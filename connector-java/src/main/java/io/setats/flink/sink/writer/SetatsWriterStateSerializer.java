package io.setats.flink.sink.writer;

import org.apache.flink.core.io.SimpleVersionedSerializer;
import org.apache.flink.core.memory.DataInputDeserializer;
import org.apache.flink.core.memory.DataOutputSerializer;

import java.io.IOException;

/** Serializes {@link SetatsWriterState}. Version 1: commit user (UTF), subtask (int). */
public final class SetatsWriterStateSerializer
        implements SimpleVersionedSerializer<SetatsWriterState> {

    public static final int VERSION = 1;

    @Override
    public int getVersion() {
        return VERSION;
    }

    @Override
    public byte[] serialize(SetatsWriterState s) throws IOException {
        DataOutputSerializer out = new DataOutputSerializer(32);
        out.writeUTF(s.commitUser());
        out.writeInt(s.subtask());
        return out.getCopyOfBuffer();
    }

    @Override
    public SetatsWriterState deserialize(int version, byte[] serialized) throws IOException {
        if (version != VERSION) {
            throw new IOException(
                    "Unknown SetatsWriterState serializer version " + version + " (this reads 1)");
        }
        DataInputDeserializer in = new DataInputDeserializer(serialized);
        return new SetatsWriterState(in.readUTF(), in.readInt());
    }
}
