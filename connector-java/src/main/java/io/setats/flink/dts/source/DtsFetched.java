package io.setats.flink.dts.source;

import io.setats.flink.dts.DtsRecord;

/** A record as fetched, with the cluster id of the stream it came from. */
final class DtsFetched {
    final DtsRecord record;
    final String clusterId;

    DtsFetched(DtsRecord record, String clusterId) {
        this.record = record;
        this.clusterId = clusterId;
    }
}
