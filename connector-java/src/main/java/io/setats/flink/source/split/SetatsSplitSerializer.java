package io.setats.flink.source.split;

import org.apache.flink.core.io.SimpleVersionedSerializer;
import org.apache.flink.core.memory.DataInputDeserializer;
import org.apache.flink.core.memory.DataInputView;
import org.apache.flink.core.memory.DataOutputSerializer;
import org.apache.flink.core.memory.DataOutputView;

import java.io.IOException;
import java.nio.charset.StandardCharsets;

/**
 * SetatsSplitSerializer writes {@link SetatsSplit}s into checkpoints.
 *
 * <p>Version 1 layout (big-endian, as Flink's data views): partition as int length + UTF-8 bytes,
 * bucket int, starting offset long, a boolean telling whether a starting timestamp follows, then
 * that timestamp (ms) as long.
 *
 * <p>Version 2 layout: version 1, then the table id ({@code TableInfo.table_id}) as int length +
 * UTF-8 bytes. A version 1 split is read with table id {@code ""} (no check at the gateway).
 *
 * <p>Version 3 layout: version 2, then a boolean telling whether the split is in its snapshot
 * phase ({@code startup.mode = 'initial'}), then its view offset as long and its last key as int
 * length + bytes ({@link SnapshotPosition}).
 *
 * <p>The layout of a version never changes; a new layout gets a new version and this class keeps
 * reading the old ones.
 */
public final class SetatsSplitSerializer implements SimpleVersionedSerializer<SetatsSplit> {

    public static final SetatsSplitSerializer INSTANCE = new SetatsSplitSerializer();

    /** Largest snapshot key accepted when reading a split (a primary key is far smaller). */
    private static final int MAX_KEY_BYTES = 64 << 20;

    /** Current layout version. */
    public static final int VERSION = 3;

    @Override
    public int getVersion() {
        return VERSION;
    }

    @Override
    public byte[] serialize(SetatsSplit split) throws IOException {
        DataOutputSerializer out = new DataOutputSerializer(64);
        write(split, out);
        return out.getCopyOfBuffer();
    }

    @Override
    public SetatsSplit deserialize(int version, byte[] serialized) throws IOException {
        DataInputDeserializer in = new DataInputDeserializer(serialized);
        SetatsSplit split = read(version, in);
        if (in.available() != 0) {
            throw new IOException(
                    "Corrupt Setats split (version " + version + "): " + in.available() + " trailing bytes");
        }
        return split;
    }

    /** Writes {@code split} in the current layout; used by the enumerator state serializer too. */
    public static void write(SetatsSplit split, DataOutputView out) throws IOException {
        writeBucket(split.tableBucket(), out);
        out.writeLong(split.startingOffset());
        Long ts = split.startingTimestampMs();
        out.writeBoolean(ts != null);
        if (ts != null) {
            out.writeLong(ts);
        }
        writeString(split.tableId(), out);
        SnapshotPosition snap = split.snapshot();
        out.writeBoolean(snap != null);
        if (snap != null) {
            out.writeLong(snap.viewOffset());
            byte[] key = snap.afterKey();
            out.writeInt(key.length);
            out.write(key);
        }
    }

    /** Reads a split written by {@link #write} in layout {@code version}. */
    public static SetatsSplit read(int version, DataInputView in) throws IOException {
        if (version < 1 || version > 3) {
            throw new IOException("Unknown Setats split serializer version " + version);
        }
        TableBucket bucket = readBucket(in);
        long offset = in.readLong();
        Long ts = in.readBoolean() ? in.readLong() : null;
        String tableId = version >= 2 ? readString("table id", in) : "";
        SnapshotPosition snap = null;
        if (version >= 3 && in.readBoolean()) {
            long viewOffset = in.readLong();
            int len = in.readInt();
            if (len < 0 || len > MAX_KEY_BYTES) {
                throw new IOException("Corrupt Setats split: snapshot key length " + len);
            }
            byte[] key = new byte[len];
            in.readFully(key);
            snap = new SnapshotPosition(viewOffset, key);
        }
        return new SetatsSplit(bucket, offset, ts, tableId, snap);
    }

    /** Writes a bucket: partition (int length + UTF-8) and bucket number. */
    public static void writeBucket(TableBucket bucket, DataOutputView out) throws IOException {
        writeString(bucket.partition(), out);
        out.writeInt(bucket.bucket());
    }

    /** Reads a bucket written by {@link #writeBucket}. */
    public static TableBucket readBucket(DataInputView in) throws IOException {
        String partition = readString("partition", in);
        return new TableBucket(partition, in.readInt());
    }

    private static void writeString(String s, DataOutputView out) throws IOException {
        byte[] bytes = s.getBytes(StandardCharsets.UTF_8);
        out.writeInt(bytes.length);
        out.write(bytes);
    }

    private static String readString(String what, DataInputView in) throws IOException {
        int len = in.readInt();
        if (len < 0) {
            throw new IOException("Corrupt Setats split: " + what + " length " + len);
        }
        byte[] bytes = new byte[len];
        in.readFully(bytes);
        return new String(bytes, StandardCharsets.UTF_8);
    }
}
