package io.setats.bench.flink;

import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.databind.ObjectMapper;
import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.databind.node.ObjectNode;
import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;

/** The report of the driver: medians and setats/paimon ratios of the runs' figures. */
class BenchFlinkTest {

    private static ObjectNode run(ObjectMapper m, int run, double ingest, double read, double p50, double p99) {
        ObjectNode n = m.createObjectNode();
        n.put("run", run).put("ingest_rows_per_s", ingest).put("ingest_job_rows_per_s", ingest / 2).put("read_rows_per_s", read)
                .put("ingest_jvm_cpu_s", 2).put("ingest_gateway_cpu_s", 1).put("read_jvm_cpu_s", 1).put("read_gateway_cpu_s", 0.5)
                .put("jvm_cpu_s", 10).put("gateway_cpu_s", 3).put("load_start", "1 1 1").put("load_end", "2 2 2");
        for (long c : new long[] {1000, 10000}) {
            n.withArray("freshness").addObject().put("checkpoint_ms", c).put("p50_ms", p50 * c / 1000).put("p99_ms", p99 * c / 1000)
                    .put("samples", 10).put("expected", 10).put("complete", true);
        }
        return n;
    }

    @Test
    void mediansAndRatios() {
        ObjectMapper m = new ObjectMapper();
        ObjectNode r = m.createObjectNode();
        r.put("load_start", "1 1 1").put("load_end", "2 2 2");
        r.withArray("setats").add(run(m, 1, 300, 100, 10, 50)).add(run(m, 2, 200, 120, 20, 60)).add(run(m, 3, 250, 80, 30, 70));
        r.withArray("paimon").add(run(m, 1, 100, 200, 1000, 2000)).add(run(m, 2, 125, 100, 1000, 2000)).add(run(m, 3, 150, 300, 1000, 2000));
        r.withArray("loadgen").addObject().put("IngestRowsPerSec", 500).put("ReadRowsPerSec", 1000).put("CommitP50Ms", 1.5).put("CommitP99Ms", 4);
        BenchFlink.print(r);
        assertEquals(250, r.at("/figures/ingest/setats").asDouble());
        assertEquals(125, r.at("/figures/ingest/paimon").asDouble());
        assertEquals(2.0, r.at("/figures/ingest/ratio").asDouble());
        assertEquals(125, r.at("/figures/ingest-until-job-end/setats").asDouble());
        assertEquals(0.5, r.at("/figures/read/ratio").asDouble());
        assertEquals(0.02, r.at("/figures/freshness-p50/ratio").asDouble(), 1e-9);
        assertEquals(60, r.at("/figures/freshness-p99/setats").asDouble());
        assertEquals(20000, r.at("/figures/freshness-p99-paimon-10000ms/paimon").asDouble());
        assertEquals(3.0 / 2.0, r.at("/figures/ingest-cpu-s/ratio").asDouble());
        assertEquals(0.5, r.at("/gateway/ingest_over_doput").asDouble());
        assertEquals(0.1, r.at("/gateway/read_over_doget").asDouble());
        assertEquals(4, r.at("/gateway/commit_to_doget_p99_ms").asDouble());
        assertEquals(1.5, r.at("/gateway/commit_to_doget_p50_ms").asDouble());
    }
}
