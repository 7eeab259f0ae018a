package io.setats.flink.dts.source;

import org.apache.flink.core.io.SimpleVersionedSerializer;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;

/**
 * DtsEnumeratorState: whether the channel's split was handed out, and the splits waiting for a
 * reader (the fresh split, or splits given back after a failure).
 */
public final class DtsEnumeratorState {
    private final boolean created;
    private final List<DtsSplit> pending;

    public DtsEnumeratorState(boolean created, List<DtsSplit> pending) {
        this.created = created;
        this.pending = Collections.unmodifiableList(new ArrayList<>(pending));
    }

    public boolean created() {
        return created;
    }

    public List<DtsSplit> pending() {
        return pending;
    }

    /** Serializer (version 1). */
    public static final class Serializer implements SimpleVersionedSerializer<DtsEnumeratorState> {
        public static final Serializer INSTANCE = new Serializer();

        @Override
        public int getVersion() {
            return 1;
        }

        @Override
        public byte[] serialize(DtsEnumeratorState s) throws IOException {
            ByteArrayOutputStream bo = new ByteArrayOutputStream();
            DataOutputStream out = new DataOutputStream(bo);
            out.writeBoolean(s.created);
            out.writeInt(s.pending.size());
            for (DtsSplit p : s.pending) {
                DtsSplitSerializer.write(out, p);
            }
            out.flush();
            return bo.toByteArray();
        }

        @Override
        public DtsEnumeratorState deserialize(int version, byte[] b) throws IOException {
            if (version != 1) {
                throw new IOException("unknown dts enumerator state version " + version);
            }
            DataInputStream in = new DataInputStream(new ByteArrayInputStream(b));
            boolean created = in.readBoolean();
            int n = in.readInt();
            if (n < 0 || n > 1024) {
                throw new IOException("dts enumerator state: " + n + " pending splits");
            }
            List<DtsSplit> pending = new ArrayList<>(n);
            for (int i = 0; i < n; i++) {
                pending.add(DtsSplitSerializer.read(in));
            }
            return new DtsEnumeratorState(created, pending);
        }
    }
}
