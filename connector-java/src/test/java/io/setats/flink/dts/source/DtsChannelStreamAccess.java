package io.setats.flink.dts.source;

import io.setats.flink.dts.DtsRecord;

import org.apache.arrow.vector.VectorSchemaRoot;

import java.util.List;

/** Test access to the channel batch conversion of {@link DtsChannelStream} (benchmarks). */
public final class DtsChannelStreamAccess {
    private DtsChannelStreamAccess() {}

    /** {@link DtsChannelStream#convert}: one record batch of the channel schema to records. */
    public static List<DtsRecord> convert(VectorSchemaRoot root) {
        return DtsChannelStream.convert(root);
    }
}
