package io.setats.bench.flink;

import java.util.Map;

/**
 * What the driver reads of one collector subtask's fold of the changelog ({@link Fold} over
 * strings, {@link DenseFold} over the source's {@code RowData}): the counters and the folded
 * table. Callers hold the fold's monitor (the lock its collector subtask applies rows under).
 */
interface ChangelogFold {
    /** Changelog rows applied. */
    long applied();

    /** -U/-D rows of a key the fold did not hold (a changelog that is not a valid fold). */
    long retractOfAbsent();

    /** The folded table: key {@link Workload#key} to value {@link Workload#value}. */
    Map<String, String> rows();
}
