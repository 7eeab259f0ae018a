package gatewaytest

import (
	"path/filepath"
	"testing"
	"time"
)

// BenchmarkGateway runs issue 2's benchmark phases against the built binary: (b) raw Pebble
// baseline, (a) DoPut ingest, (c) DoGet read from earliest, (d) latency at a steady rate, (e) RSS.
// Default size 50,000 keys; SETATS_BENCH_KEYS=1000000 is the size and
// SETATS_BENCH_LATENCY_SECONDS sets the measured latency window (default 3). The full report is
// logged; the main figures are reported as metrics. e2e/cmd/setats-loadgen runs the same with flags.
func BenchmarkGateway(b *testing.B) {
	keys := envInt64(b, "SETATS_BENCH_KEYS", 50_000)
	latency := envInt64(b, "SETATS_BENCH_LATENCY_SECONDS", 3)
	var res *BenchResult
	for range b.N {
		dir := b.TempDir()
		gw, err := StartGateway(setatsBin, filepath.Join(dir, "warehouse"), filepath.Join(dir, "gateway.log"))
		if err != nil {
			b.Fatal(err)
		}
		res, err = RunBench(testCtx(b), BenchConfig{Keys: int(keys), LatencyDuration: time.Duration(latency) * time.Second, Logf: b.Logf},
			BinaryTarget{G: gw}, dir)
		if err != nil {
			b.Logf("gateway log tail:\n%s", gw.LogTail(40))
			gw.Kill()
			b.Fatal(err)
		}
		if err := gw.Stop(time.Minute); err != nil {
			b.Fatal(err)
		}
	}
	b.Logf("\n%s", res.Report())
	b.ReportMetric(res.IngestRowsPerSec, "ingest-rows/s")
	b.ReportMetric(res.RawRowsPerSec, "raw-pebble-rows/s")
	b.ReportMetric(100*res.Ratio(), "ingest/raw-%")
	b.ReportMetric(res.ReadRowsPerSec, "read-rows/s")
	b.ReportMetric(res.LatP50Ms, "lat-p50-ms")
	b.ReportMetric(res.LatP99Ms, "lat-p99-ms")
	b.ReportMetric(float64(res.PeakRSS)/(1<<20), "peak-rss-MiB")
	b.ReportMetric(0, "ns/op")
}
