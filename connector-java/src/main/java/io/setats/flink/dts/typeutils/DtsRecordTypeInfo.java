package io.setats.flink.dts.typeutils;

import io.setats.flink.dts.DtsRecord;

import org.apache.flink.api.common.ExecutionConfig;
import org.apache.flink.api.common.serialization.SerializerConfig;
import org.apache.flink.api.common.typeinfo.TypeInfoFactory;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.api.common.typeutils.TypeSerializer;

import java.lang.reflect.Type;
import java.util.Map;

/**
 * DtsRecordTypeInfo is the Flink type of {@link DtsRecord}: an atomic, non-key type serialized by
 * {@link DtsRecordSerializer} (no Kryo). {@link DtsRecord} names its {@link Factory} in a {@code
 * @TypeInfo} annotation, so {@code TypeInformation.of(DtsRecord.class)} and the types Flink
 * extracts from functions over records (a {@code MapFunction<DtsRecord, DtsRecord>}) are this one.
 */
public final class DtsRecordTypeInfo extends TypeInformation<DtsRecord> {
    private static final long serialVersionUID = 1L;

    /** The type's only instance. */
    public static final DtsRecordTypeInfo INSTANCE = new DtsRecordTypeInfo();

    private DtsRecordTypeInfo() {}

    @Override
    public boolean isBasicType() {
        return false;
    }

    @Override
    public boolean isTupleType() {
        return false;
    }

    @Override
    public int getArity() {
        return 1;
    }

    @Override
    public int getTotalFields() {
        return 1;
    }

    @Override
    public Class<DtsRecord> getTypeClass() {
        return DtsRecord.class;
    }

    @Override
    public boolean isKeyType() {
        return false;
    }

    @Override
    public TypeSerializer<DtsRecord> createSerializer(SerializerConfig config) {
        return DtsRecordSerializer.INSTANCE;
    }

    @Override
    @SuppressWarnings("deprecation")
    public TypeSerializer<DtsRecord> createSerializer(ExecutionConfig config) {
        return DtsRecordSerializer.INSTANCE;
    }

    @Override
    public String toString() {
        return "DtsRecord";
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof DtsRecordTypeInfo;
    }

    @Override
    public int hashCode() {
        return DtsRecordTypeInfo.class.hashCode();
    }

    @Override
    public boolean canEqual(Object o) {
        return o instanceof DtsRecordTypeInfo;
    }

    /** Serialization keeps the singleton. */
    private Object readResolve() {
        return INSTANCE;
    }

    /** The {@code @TypeInfo} factory of {@link DtsRecord}. */
    public static final class Factory extends TypeInfoFactory<DtsRecord> {
        @Override
        public TypeInformation<DtsRecord> createTypeInfo(Type t, Map<String, TypeInformation<?>> genericParameters) {
            return INSTANCE;
        }
    }
}
