package io.setats.flink.source.state;

import io.setats.flink.source.split.SetatsSplit;
import io.setats.flink.source.split.SetatsSplitSerializer;
import io.setats.flink.source.split.TableBucket;

import org.apache.flink.core.io.SimpleVersionedSerializer;
import org.apache.flink.core.memory.DataInputDeserializer;
import org.apache.flink.core.memory.DataOutputSerializer;

import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;

/**
 * SetatsEnumeratorStateSerializer writes {@link SetatsEnumeratorState} into checkpoints.
 *
 * <p>Version 1 layout: startupResolved boolean; int count of assigned buckets, each as {@link
 * SetatsSplitSerializer#writeBucket}; int count of pending splits, each in split layout version 1
 * ({@link SetatsSplitSerializer#write}).
 *
 * <p>Version 2 layout: as version 1, but the pending splits are in split layout version 2 (with
 * the table id). Version 1 state is still read; its pending splits get table id {@code ""}.
 *
 * <p>Version 3 layout: as version 2, the pending splits in split layout version 3 (with the
 * snapshot phase of {@code startup.mode = 'initial'}).
 */
public final class SetatsEnumeratorStateSerializer
        implements SimpleVersionedSerializer<SetatsEnumeratorState> {

    public static final SetatsEnumeratorStateSerializer INSTANCE = new SetatsEnumeratorStateSerializer();

    /** Current layout version. */
    public static final int VERSION = 3;

    /** Split layout version embedded in enumerator state version 1. */
    private static final int SPLIT_VERSION_IN_V1 = 1;

    /** Split layout version embedded in enumerator state version 2. */
    private static final int SPLIT_VERSION_IN_V2 = 2;

    /** Split layout version embedded in enumerator state version 3. */
    private static final int SPLIT_VERSION_IN_V3 = 3;

    @Override
    public int getVersion() {
        return VERSION;
    }

    @Override
    public byte[] serialize(SetatsEnumeratorState state) throws IOException {
        if (SetatsSplitSerializer.VERSION != SPLIT_VERSION_IN_V3) {
            // write() uses the current split layout; a new split layout needs a new state version.
            throw new IllegalStateException(
                    "Split layout version " + SetatsSplitSerializer.VERSION
                            + " has no enumerator state version");
        }
        DataOutputSerializer out = new DataOutputSerializer(256);
        out.writeBoolean(state.startupResolved());
        out.writeInt(state.assignedBuckets().size());
        for (TableBucket bucket : state.assignedBuckets()) {
            SetatsSplitSerializer.writeBucket(bucket, out);
        }
        out.writeInt(state.pendingSplits().size());
        for (SetatsSplit split : state.pendingSplits()) {
            SetatsSplitSerializer.write(split, out);
        }
        return out.getCopyOfBuffer();
    }

    @Override
    public SetatsEnumeratorState deserialize(int version, byte[] serialized) throws IOException {
        if (version < 1 || version > 3) {
            throw new IOException("Unknown Setats enumerator state serializer version " + version);
        }
        int splitVersion =
                version == 1 ? SPLIT_VERSION_IN_V1 : version == 2 ? SPLIT_VERSION_IN_V2 : SPLIT_VERSION_IN_V3;
        DataInputDeserializer in = new DataInputDeserializer(serialized);
        boolean resolved = in.readBoolean();
        int assignedCount = readCount(in);
        Set<TableBucket> assigned = new TreeSet<>();
        for (int i = 0; i < assignedCount; i++) {
            assigned.add(SetatsSplitSerializer.readBucket(in));
        }
        int pendingCount = readCount(in);
        List<SetatsSplit> pending = new ArrayList<>(pendingCount);
        for (int i = 0; i < pendingCount; i++) {
            pending.add(SetatsSplitSerializer.read(splitVersion, in));
        }
        if (in.available() != 0) {
            throw new IOException("Corrupt Setats enumerator state: " + in.available() + " trailing bytes");
        }
        return new SetatsEnumeratorState(resolved, assigned, pending);
    }

    private static int readCount(DataInputDeserializer in) throws IOException {
        int n = in.readInt();
        if (n < 0 || n > in.available()) {
            throw new IOException("Corrupt Setats enumerator state: count " + n);
        }
        return n;
    }
}
