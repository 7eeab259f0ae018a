package store

import (
	"context"
	"flag"
	"slices"
	"testing"
	"time"

	"github.com/setats/setats/gateway/row"
	"github.com/setats/setats/merge"
)

var benchUpdates = flag.Int("bench.updates", 1000, "100-row update batches of BenchmarkUpdates")

// BenchmarkUpdates loads bench.keys keys like BenchmarkWrite (block cache bench.cache-mib), then
// writes bench.updates batches of 100 updates of random existing keys one after the other, the
// write shape of the gateway's latency benchmark (d), and reports the process CPU time per
// updated row (lookups, merge, commit and background work: unlike elapsed time, it hardly
// depends on what else runs on the machine) and the p50/p99 of Write.
//
//	go test ./gateway/store/ -run '^$' -bench Updates -benchtime 1x -bench.cache-mib 64
func BenchmarkUpdates(b *testing.B) {
	for i := 0; i < b.N; i++ {
		w := newWorkload(b, b.TempDir())
		st, err := Open(w.tbl, Options{CacheBytes: int64(*benchCacheMiB) << 20, Logger: discardLogger()})
		if err != nil {
			b.Fatal(err)
		}
		ctx := context.Background()
		for {
			batch, _ := w.next(*benchBatch)
			if batch == nil {
				break
			}
			if _, err := st.Write(ctx, batch); err != nil {
				b.Fatal(err)
			}
		}
		<-st.keysBuilt
		// Let the compactions the load started finish, so that they do not count.
		for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
			if m := st.db.Metrics(); m.Compact.NumInProgress == 0 && m.Compact.EstimatedDebt == 0 {
				break
			}
		}
		lat := make([]time.Duration, 0, *benchUpdates)
		m0 := st.db.Metrics()
		cpu0 := cpuTime()
		start := time.Now()
		var rows int64
		for range *benchUpdates {
			batch := &row.Batch{Declared: []bool{true, true, true, true}}
			used := map[int]bool{}
			for len(batch.Rows) < 100 {
				k := int(w.rand() % uint64(w.keys))
				if used[k] {
					continue
				}
				used[k] = true
				w.version[k]++
				batch.Kinds = append(batch.Kinds, merge.UpdateAfter)
				batch.Rows = append(batch.Rows, w.rowOf(k))
			}
			t0 := time.Now()
			c, err := st.Write(ctx, batch)
			if err != nil {
				b.Fatal(err)
			}
			lat = append(lat, time.Since(t0))
			rows += c.Rows
		}
		cpu, el := cpuTime()-cpu0, time.Since(start)
		rss := rssMiB()
		m1 := st.db.Metrics()
		hits, misses := m1.BlockCache.Hits-m0.BlockCache.Hits, m1.BlockCache.Misses-m0.BlockCache.Misses
		_ = st.Close()
		slices.Sort(lat)
		p50, p99 := lat[len(lat)/2], lat[len(lat)*99/100]
		b.ReportMetric(float64(cpu.Microseconds())/float64(rows), "CPU-us/row")
		b.ReportMetric(float64(p50.Microseconds())/1000, "p50-ms")
		b.ReportMetric(float64(p99.Microseconds())/1000, "p99-ms")
		b.ReportMetric(rss, "RSS-MiB")
		b.Logf("%d updates of %d keys in %v: CPU %v (%.1f us/row), Write p50 %v p99 %v; RSS %.0f MiB; block cache %d MiB in use, %.1f%% hits, %.1f misses per row",
			rows, w.keys, el, cpu, float64(cpu.Microseconds())/float64(rows), p50, p99, rss,
			m1.BlockCache.Size>>20, 100*float64(hits)/float64(max(1, hits+misses)), float64(misses)/float64(rows))
	}
}
