package io.setats.bench.flink;

import org.apache.flink.api.connector.source.lib.NumberSequenceSource;

import java.util.ArrayList;
import java.util.List;

/**
 * The ingest's source: Flink's number sequence source with one split per {@link Workload} stream,
 * so that {@code streams} source subtasks make the rows in parallel and every key's rows still come
 * from one split, in order (its insert, then its update).
 *
 * <p>Split {@code s} holds the numbers {@code s * rows .. s * rows + streamRows(s) - 1}; {@link
 * #stream} and {@link #position} decode a number, {@link Workload#streamIndex} turns it into the
 * workload's row index. A split is read by one subtask in order (Flink's iterator source reader);
 * with fewer subtasks than splits a subtask reads several, one after the other, which keeps the
 * order too.
 */
final class IngestSource extends NumberSequenceSource {
    private static final long serialVersionUID = 1L;

    private final Workload workload;
    private final int streams;

    /**
     * @throws IllegalArgumentException when {@code streams} is not positive or is a multiple of 5
     *     ({@link Workload#streamRows})
     */
    IngestSource(Workload workload, int streams) {
        super(0, (long) streams * workload.rows() - 1);
        workload.streamRows(streams - 1, streams); // validates streams
        this.workload = workload;
        this.streams = streams;
    }

    int streams() {
        return streams;
    }

    /** The stream of a number of this source. */
    int stream(long n) {
        return (int) (n / workload.rows());
    }

    /** The position of a number of this source in its stream. */
    long position(long n) {
        return n % workload.rows();
    }

    /** The workload row index of a number of this source. */
    long rowIndex(long n) {
        return workload.streamIndex(stream(n), streams, position(n));
    }

    /** One split per non-empty stream, whatever the parallelism asked for. */
    @Override
    protected List<NumberSequenceSplit> splitNumberRange(long from, long to, int numSplits) {
        List<NumberSequenceSplit> out = new ArrayList<>();
        for (int s = 0; s < streams; s++) {
            long n = workload.streamRows(s, streams);
            if (n > 0) {
                long first = s * workload.rows();
                out.add(new NumberSequenceSplit("stream-" + s, first, first + n - 1));
            }
        }
        return out;
    }
}
