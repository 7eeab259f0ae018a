package io.setats.flink.dts.typeutils;

import io.setats.flink.dts.DtsField;
import io.setats.flink.dts.DtsOperation;
import io.setats.flink.dts.DtsRecord;

import org.apache.flink.api.common.typeutils.TypeSerializerSnapshot;
import org.apache.flink.api.common.typeutils.base.TypeSerializerSingleton;
import org.apache.flink.core.memory.DataInputView;
import org.apache.flink.core.memory.DataOutputView;
import org.apache.flink.types.StringValue;

import java.io.IOException;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;

/**
 * DtsRecordSerializer writes a {@link DtsRecord} field by field, so that records travel between
 * Flink tasks and sit in state in this connector's own format instead of Kryo's (SPEC section 11
 * lists what a record carries).
 *
 * <p>Format version {@value #FORMAT_VERSION}, in order (big-endian, Flink's {@link DataOutputView}):
 *
 * <pre>
 * id                   long
 * operation            byte: the {@link DtsOperation} code of {@link #OPERATIONS} (fixed wire values)
 * object name          string, may be null          (Flink's StringValue encoding, null-aware)
 * source position      string, may be null
 * source timestamp     long, ms since the epoch
 * transaction id       string, may be null
 * fields               int n >= 0, then n x (name string, type string)
 * before image         int n (-1 = no image), then n x value
 * after image          int n (-1 = no image), then n x value
 * value                int length (-1 = SQL NULL), then length bytes
 * </pre>
 *
 * <p>A change of this format bumps {@link #FORMAT_VERSION}; {@link DtsRecordSerializerSnapshot}
 * records it in every checkpoint and savepoint, so a restore with a serializer of another format
 * is detected (incompatible) instead of misreading the bytes.
 *
 * <p>{@link #copy(DtsRecord)} is a deep copy: the record's fields are final and its field list
 * holds immutable {@link DtsField}s, but the image values are byte arrays a function could
 * modify, so a copy gets arrays of its own.
 *
 * <p>Decoding refuses (IOException naming the culprit) an unknown operation code and negative
 * counts or lengths other than -1; it allocates lists no larger than the bytes read so far need.
 */
public final class DtsRecordSerializer extends TypeSerializerSingleton<DtsRecord> {
    private static final long serialVersionUID = 1L;

    /** The serializer's only instance (it has no configuration). */
    public static final DtsRecordSerializer INSTANCE = new DtsRecordSerializer();

    /** The version of the binary format above; bump it on any change. */
    public static final int FORMAT_VERSION = 1;

    /**
     * Wire codes of the operations: the code is the index in this array. Fixed: a new operation
     * is appended, an existing one never moves.
     */
    static final DtsOperation[] OPERATIONS = {
        DtsOperation.INSERT, // 0
        DtsOperation.UPDATE, // 1
        DtsOperation.DELETE, // 2
        DtsOperation.DDL, // 3
        DtsOperation.BEGIN, // 4
        DtsOperation.COMMIT, // 5
        DtsOperation.HEARTBEAT, // 6
    };

    /** Lists are pre-sized to at most this many elements; larger ones grow as elements are read. */
    private static final int MAX_PRESIZE = 256;

    private DtsRecordSerializer() {}

    @Override
    public boolean isImmutableType() {
        return false;
    }

    @Override
    public DtsRecord createInstance() {
        return new DtsRecord(0, DtsOperation.HEARTBEAT, null, null, 0, null, null, null, null);
    }

    @Override
    public DtsRecord copy(DtsRecord from) {
        return new DtsRecord(
                from.getId(),
                from.getOperationType(),
                from.getObjectName(),
                from.getSourcePosition(),
                from.getSourceTimestampMs(),
                from.getTransactionId(),
                new ArrayList<>(from.getFields()),
                copyImage(from.getBeforeImage()),
                copyImage(from.getAfterImage()));
    }

    @Override
    public DtsRecord copy(DtsRecord from, DtsRecord reuse) {
        return copy(from);
    }

    private static List<byte[]> copyImage(List<byte[]> img) {
        if (img == null) {
            return null;
        }
        List<byte[]> out = new ArrayList<>(img.size());
        for (byte[] v : img) {
            out.add(v == null ? null : v.clone());
        }
        return out;
    }

    @Override
    public int getLength() {
        return -1;
    }

    @Override
    public void serialize(DtsRecord r, DataOutputView out) throws IOException {
        out.writeLong(r.getId());
        out.writeByte(code(r.getOperationType()));
        StringValue.writeString(r.getObjectName(), out);
        StringValue.writeString(r.getSourcePosition(), out);
        out.writeLong(r.getSourceTimestampMs());
        StringValue.writeString(r.getTransactionId(), out);
        List<DtsField> fields = r.getFields();
        out.writeInt(fields.size());
        for (DtsField f : fields) {
            StringValue.writeString(f.getName(), out);
            StringValue.writeString(f.getType(), out);
        }
        writeImage(r.getBeforeImage(), out);
        writeImage(r.getAfterImage(), out);
    }

    private static int code(DtsOperation op) {
        for (int i = 0; i < OPERATIONS.length; i++) {
            if (OPERATIONS[i] == op) {
                return i;
            }
        }
        throw new IllegalArgumentException("DtsRecord operation " + op + " has no wire code");
    }

    private static void writeImage(List<byte[]> img, DataOutputView out) throws IOException {
        if (img == null) {
            out.writeInt(-1);
            return;
        }
        out.writeInt(img.size());
        for (byte[] v : img) {
            if (v == null) {
                out.writeInt(-1);
            } else {
                out.writeInt(v.length);
                out.write(v);
            }
        }
    }

    @Override
    public DtsRecord deserialize(DataInputView in) throws IOException {
        long id = in.readLong();
        int code = in.readUnsignedByte();
        if (code >= OPERATIONS.length) {
            throw new IOException("DtsRecord " + id + ": unknown operation code " + code + " (format version " + FORMAT_VERSION + ")");
        }
        DtsOperation op = OPERATIONS[code];
        String objectName = StringValue.readString(in);
        String position = StringValue.readString(in);
        long ts = in.readLong();
        String tx = StringValue.readString(in);
        int n = count(in.readInt(), id, "field count", false);
        List<DtsField> fields;
        if (n == 0) {
            fields = Collections.emptyList();
        } else {
            fields = new ArrayList<>(Math.min(n, MAX_PRESIZE));
            for (int i = 0; i < n; i++) {
                fields.add(new DtsField(StringValue.readString(in), StringValue.readString(in)));
            }
        }
        List<byte[]> before = readImage(in, id);
        List<byte[]> after = readImage(in, id);
        return new DtsRecord(id, op, objectName, position, ts, tx, fields, before, after);
    }

    private static List<byte[]> readImage(DataInputView in, long id) throws IOException {
        int n = count(in.readInt(), id, "image size", true);
        if (n < 0) {
            return null;
        }
        List<byte[]> img = new ArrayList<>(Math.min(n, MAX_PRESIZE));
        for (int i = 0; i < n; i++) {
            int len = count(in.readInt(), id, "value length", true);
            if (len < 0) {
                img.add(null);
            } else {
                byte[] v = new byte[len];
                in.readFully(v);
                img.add(v);
            }
        }
        return img;
    }

    /** Checks a count read from the stream: >= 0, or -1 (null) when nullable. */
    private static int count(int n, long id, String what, boolean nullable) throws IOException {
        if (n < (nullable ? -1 : 0)) {
            throw new IOException("DtsRecord " + id + ": negative " + what + " " + n + " (format version " + FORMAT_VERSION + ")");
        }
        return n;
    }

    @Override
    public DtsRecord deserialize(DtsRecord reuse, DataInputView in) throws IOException {
        return deserialize(in);
    }

    @Override
    public void copy(DataInputView in, DataOutputView out) throws IOException {
        serialize(deserialize(in), out);
    }

    @Override
    public TypeSerializerSnapshot<DtsRecord> snapshotConfiguration() {
        return new DtsRecordSerializerSnapshot();
    }
}
