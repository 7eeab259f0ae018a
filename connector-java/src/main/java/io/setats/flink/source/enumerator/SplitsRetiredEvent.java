package io.setats.flink.source.enumerator;

import io.setats.flink.source.split.TableBucket;

import org.apache.flink.api.connector.source.SourceEvent;

import java.util.ArrayList;
import java.util.Collection;
import java.util.List;

/**
 * SplitsRetiredEvent goes from a setats-cdc reader to its enumerator when the reader finished
 * splits because their partition was dropped (the gateway ended their DoGets with ChangelogEnd
 * END_PARTITION_DROPPED, proto/README.md "Dropping partitions"). The enumerator removes them from
 * its assigned buckets, so its next checkpoint no longer holds them and they are never assigned
 * again; a bucket of the partition written again later is found by discovery as a new split.
 */
public final class SplitsRetiredEvent implements SourceEvent {
    private static final long serialVersionUID = 1L;

    private final List<TableBucket> buckets;

    public SplitsRetiredEvent(Collection<TableBucket> buckets) {
        this.buckets = new ArrayList<>(buckets);
    }

    /** The retired splits' buckets. */
    public List<TableBucket> buckets() {
        return buckets;
    }

    @Override
    public String toString() {
        return "SplitsRetiredEvent" + buckets;
    }
}
