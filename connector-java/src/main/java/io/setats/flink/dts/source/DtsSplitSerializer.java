package io.setats.flink.dts.source;

import org.apache.flink.core.io.SimpleVersionedSerializer;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;

/** Serializer of {@link DtsSplit} (version 1: channel, next id, start ms, cluster id, last ms, last checkpoint). */
public final class DtsSplitSerializer implements SimpleVersionedSerializer<DtsSplit> {
    public static final DtsSplitSerializer INSTANCE = new DtsSplitSerializer();
    private static final int VERSION = 1;

    @Override
    public int getVersion() {
        return VERSION;
    }

    @Override
    public byte[] serialize(DtsSplit s) throws IOException {
        ByteArrayOutputStream bo = new ByteArrayOutputStream();
        DataOutputStream out = new DataOutputStream(bo);
        write(out, s);
        out.flush();
        return bo.toByteArray();
    }

    static void write(DataOutputStream out, DtsSplit s) throws IOException {
        out.writeUTF(s.channel());
        out.writeLong(s.nextId());
        out.writeLong(s.startTimestampMs());
        out.writeUTF(s.clusterId());
        out.writeLong(s.lastTimestampMs());
        out.writeUTF(s.lastCheckpoint());
    }

    static DtsSplit read(DataInputStream in) throws IOException {
        return new DtsSplit(in.readUTF(), in.readLong(), in.readLong(), in.readUTF(), in.readLong(), in.readUTF());
    }

    @Override
    public DtsSplit deserialize(int version, byte[] serialized) throws IOException {
        if (version != VERSION) {
            throw new IOException("unknown dts split serializer version " + version + " (this connector writes " + VERSION + ")");
        }
        return read(new DataInputStream(new ByteArrayInputStream(serialized)));
    }
}
