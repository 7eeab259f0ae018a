package io.setats.flink.dts.source;

import io.setats.flink.dts.DtsRecord;

import org.apache.flink.api.java.typeutils.ResultTypeQueryable;
import org.apache.flink.util.Collector;

import java.io.Serializable;

/**
 * Turns channel records into the source's output: zero or more elements per record (the dts-cdc
 * format emits nothing for HEARTBEAT and two rows for an UPDATE).
 */
public interface DtsDeserializationSchema<T> extends Serializable, ResultTypeQueryable<T> {
    /** Called once on the reader before the first record. */
    default void open() throws Exception {}

    void deserialize(DtsRecord record, Collector<T> out) throws Exception;
}
