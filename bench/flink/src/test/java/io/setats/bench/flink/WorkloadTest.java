package io.setats.bench.flink;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.apache.flink.table.data.RowData;
import org.apache.flink.types.Row;
import org.apache.flink.types.RowKind;
import org.junit.jupiter.api.Test;

import java.util.HashMap;
import java.util.List;
import java.util.Map;

class WorkloadTest {

    /** The ingest's RowData rows are the Row rows, field for field (inserts, then updates). */
    @Test
    void rowDataEqualsRow() {
        check(new Workload(50), 0, 60);
        Workload big = new Workload(1_000_000);
        check(big, 999_990, 1_000_010);
        check(big, big.rows() - 10, big.rows());
    }

    private static void check(Workload w, long from, long to) {
        for (long i = from; i < to; i++) {
            Row r = w.row(i);
            RowData d = w.rowData(i);
            assertEquals(RowKind.INSERT, d.getRowKind());
            assertEquals(4, d.getArity());
            for (int f = 0; f < 4; f++) {
                assertEquals(r.getField(f), d.getString(f).toString(), "row " + i + " field " + f);
            }
        }
    }

    @Test
    void updateRowsRewriteEveryFifthKey() {
        Workload w = new Workload(50);
        assertEquals("10|" + Workload.dt(10), Workload.key(w.rowData(w.keys() + 2).getString(0), w.rowData(w.keys() + 2).getString(1)));
    }

    /**
     * The streams of the parallel ingest source: together every row once; each stream in index
     * order; every key's rows in one stream; so folding the streams in any interleaving (here one
     * after the other, last stream first, and round robin) gives the expected table.
     */
    @Test
    void streamsPartitionTheRowsByKeyAndFoldToTheExpectedTable() {
        long[][] shapes = {{50, 10}, {51, 10}, {7, 1}, {1, 0}, {3, 0}, {1000, 200}, {999, 3}};
        for (long[] shape : shapes) {
            Workload w = new Workload(shape[0], shape[1]);
            for (int p : new int[] {1, 2, 3, 4, 6}) {
                String what = w.keys() + " keys, " + w.updates() + " updates, " + p + " streams";
                boolean[] seen = new boolean[(int) w.rows()];
                long total = 0;
                List<List<Long>> streams = new java.util.ArrayList<>();
                for (int s = 0; s < p; s++) {
                    List<Long> rows = new java.util.ArrayList<>();
                    long prev = -1;
                    for (long t = 0; t < w.streamRows(s, p); t++) {
                        long i = w.streamIndex(s, p, t);
                        assertTrue(i > prev, what + ": stream " + s + " out of order at " + t);
                        prev = i;
                        assertTrue(!seen[(int) i], what + ": row " + i + " twice");
                        seen[(int) i] = true;
                        long k = Long.parseLong(w.row(i).getField(0).toString());
                        assertEquals(s, k % p, what + ": key " + k + " in stream " + s);
                        rows.add(i);
                    }
                    total += rows.size();
                    streams.add(rows);
                }
                assertEquals(w.rows(), total, what);
                Map<String, String> reversed = new HashMap<>();
                for (int s = p - 1; s >= 0; s--) {
                    for (long i : streams.get(s)) {
                        upsert(reversed, w, i);
                    }
                }
                Map<String, String> roundRobin = new HashMap<>();
                for (int t = 0; ; t++) {
                    boolean any = false;
                    for (List<Long> rows : streams) {
                        if (t < rows.size()) {
                            upsert(roundRobin, w, rows.get(t));
                            any = true;
                        }
                    }
                    if (!any) {
                        break;
                    }
                }
                for (Map<String, String> table : List.of(reversed, roundRobin)) {
                    assertEquals(w.keys(), table.size(), what);
                    for (long k = 0; k < w.keys(); k++) {
                        assertEquals(w.expected(k), table.get(Workload.key(k, Workload.dt(k))), what + ": key " + k);
                    }
                }
            }
        }
    }

    private static void upsert(Map<String, String> table, Workload w, long i) {
        Row r = w.row(i);
        table.put(Workload.key(r.getField(0), r.getField(1)), Workload.value(r.getField(2), r.getField(3)));
    }

    /** Stream counts that are multiples of 5 cannot place the updates; bad streams are refused. */
    @Test
    void badStreamsRefused() {
        Workload w = new Workload(50);
        assertThrows(IllegalArgumentException.class, () -> w.streamRows(0, 5));
        assertThrows(IllegalArgumentException.class, () -> w.streamRows(2, 2));
        assertThrows(IllegalArgumentException.class, () -> w.streamRows(-1, 2));
        assertThrows(IllegalArgumentException.class, () -> new IngestSource(w, 10));
    }

    /** The source's numbers decode to every workload row once (stream, position, row index). */
    @Test
    void ingestSourceNumbersDecodeToTheStreams() {
        Workload w = new Workload(1000);
        IngestSource src = new IngestSource(w, 2);
        boolean[] seen = new boolean[(int) w.rows()];
        for (org.apache.flink.api.connector.source.lib.NumberSequenceSource.NumberSequenceSplit split
                : src.splitNumberRange(0, 0, 7)) {
            for (long n = split.from(); n <= split.to(); n++) {
                long i = src.rowIndex(n);
                assertEquals(w.streamIndex(src.stream(n), 2, src.position(n)), i);
                assertTrue(!seen[(int) i], "row " + i + " twice");
                seen[(int) i] = true;
            }
        }
        for (int i = 0; i < seen.length; i++) {
            assertTrue(seen[i], "row " + i + " missing");
        }
    }
}
