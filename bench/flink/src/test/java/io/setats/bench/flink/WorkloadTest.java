package io.setats.bench.flink;

import static org.junit.jupiter.api.Assertions.assertEquals;

import org.apache.flink.table.data.RowData;
import org.apache.flink.types.Row;
import org.apache.flink.types.RowKind;
import org.junit.jupiter.api.Test;

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
}
