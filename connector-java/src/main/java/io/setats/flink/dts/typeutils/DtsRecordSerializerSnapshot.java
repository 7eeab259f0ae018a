package io.setats.flink.dts.typeutils;

import io.setats.flink.dts.DtsRecord;

import org.apache.flink.api.common.typeutils.TypeSerializer;
import org.apache.flink.api.common.typeutils.TypeSerializerSchemaCompatibility;
import org.apache.flink.api.common.typeutils.TypeSerializerSnapshot;
import org.apache.flink.core.memory.DataInputView;
import org.apache.flink.core.memory.DataOutputView;

import java.io.IOException;

/**
 * DtsRecordSerializerSnapshot is what a checkpoint or savepoint keeps of {@link
 * DtsRecordSerializer}: the record format version ({@link DtsRecordSerializer#FORMAT_VERSION}) as
 * the snapshot version, and no other configuration.
 *
 * <p>On restore, {@link #resolveSchemaCompatibility} answers compatible-as-is for state written in
 * the current format and incompatible for any other version (a future format adds its migration
 * here: read with the old format's reader, write the new one), and for a snapshot of another
 * serializer.
 */
public final class DtsRecordSerializerSnapshot implements TypeSerializerSnapshot<DtsRecord> {
    /** The format version of the serializer this snapshot describes; the current one until read. */
    private int formatVersion = DtsRecordSerializer.FORMAT_VERSION;

    /** For Flink, which instantiates snapshots by reflection before {@link #readSnapshot}. */
    public DtsRecordSerializerSnapshot() {}

    @Override
    public int getCurrentVersion() {
        return DtsRecordSerializer.FORMAT_VERSION;
    }

    /** The format version the snapshotted serializer wrote. */
    public int formatVersion() {
        return formatVersion;
    }

    @Override
    public void writeSnapshot(DataOutputView out) {}

    @Override
    public void readSnapshot(int readVersion, DataInputView in, ClassLoader userCodeClassLoader) throws IOException {
        if (readVersion < 1) {
            throw new IOException("DtsRecord serializer snapshot: invalid format version " + readVersion);
        }
        formatVersion = readVersion;
    }

    /**
     * @throws IllegalStateException when the snapshot is of a format this build cannot read
     */
    @Override
    public TypeSerializer<DtsRecord> restoreSerializer() {
        if (formatVersion != DtsRecordSerializer.FORMAT_VERSION) {
            throw new IllegalStateException("DtsRecord state was written in format version " + formatVersion
                    + "; this connector reads format version " + DtsRecordSerializer.FORMAT_VERSION);
        }
        return DtsRecordSerializer.INSTANCE;
    }

    @Override
    public TypeSerializerSchemaCompatibility<DtsRecord> resolveSchemaCompatibility(TypeSerializerSnapshot<DtsRecord> oldSnapshot) {
        if (oldSnapshot instanceof DtsRecordSerializerSnapshot
                && ((DtsRecordSerializerSnapshot) oldSnapshot).formatVersion == DtsRecordSerializer.FORMAT_VERSION) {
            return TypeSerializerSchemaCompatibility.compatibleAsIs();
        }
        return TypeSerializerSchemaCompatibility.incompatible();
    }
}
