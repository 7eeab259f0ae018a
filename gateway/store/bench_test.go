package store

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/setats/setats/catalog"
	"github.com/setats/setats/gateway/buckethash"
	"github.com/setats/setats/gateway/partname"
	"github.com/setats/setats/gateway/row"
	"github.com/setats/setats/gateway/rowcodec"
	"github.com/setats/setats/merge"
)

// The write benchmarks replay the seeds' table shape (id STRING, dt STRING, name STRING,
// address STRING, primary key (id, dt), partitioned by dt, 4 buckets): benchKeys distinct keys
// inserted in time order (dt advances every quarter of the keys), with 20% of the writes being
// updates of a random earlier key (a new name: -U and +U), in batches of benchBatch rows, each
// committed with fsync. Generating the rows is not timed.
//
//	go test ./gateway/store/ -run '^$' -bench . -benchtime 1x
var (
	benchKeys  = flag.Int("bench.keys", 1_000_000, "distinct keys of the write benchmarks")
	benchBatch = flag.Int("bench.batch", 4096, "rows per write batch")
)

var benchCacheMiB = flag.Int("bench.cache-mib", 256, "Pebble block cache of the write benchmarks (MiB)")

type workload struct {
	tbl      *catalog.Table
	keys     int
	inserted int
	version  []uint32 // per key: name version
	rng      uint64
}

func newWorkload(b *testing.B, dir string) *workload {
	tbl := resolve(b, dir, spec("seeds", "id STRING, dt STRING, name STRING, address STRING", "id,dt", "dt", 4, "", nil))
	return &workload{tbl: tbl, keys: *benchKeys, version: make([]uint32, *benchKeys), rng: 0x9E3779B97F4A7C15}
}

func (w *workload) rand() uint64 {
	w.rng ^= w.rng << 13
	w.rng ^= w.rng >> 7
	w.rng ^= w.rng << 17
	return w.rng
}

// rowOf returns the row of key k at its current version.
func (w *workload) rowOf(k int) merge.Row {
	id := strconv.FormatUint(uint64(k)*0x9E3779B1%1_000_000_000_007, 36) // scrambled, unique
	dt := "2026-11-" + strconv.Itoa(26+4*k/w.keys)
	name := "name-" + strconv.Itoa(k) + "-v" + strconv.Itoa(int(w.version[k]))
	addr := "No. " + strconv.Itoa(k%9973) + " Zhongguancun Street, Haidian, Beijing"
	return merge.Row{id, dt, name, addr}
}

// next returns the next batch (nil when every key is inserted) and which of its rows update an
// existing key.
func (w *workload) next(n int) (*row.Batch, []bool) {
	if w.inserted >= w.keys {
		return nil, nil
	}
	b := &row.Batch{Declared: []bool{true, true, true, true}, Kinds: make([]merge.RowKind, 0, n), Rows: make([]merge.Row, 0, n)}
	var updates []bool
	for len(b.Rows) < n && w.inserted < w.keys {
		k := w.inserted
		update := w.inserted > 0 && w.rand()%5 == 0
		if update {
			k = int(w.rand() % uint64(w.inserted))
			w.version[k]++
		} else {
			w.inserted++
		}
		b.Kinds = append(b.Kinds, merge.UpdateAfter)
		b.Rows = append(b.Rows, w.rowOf(k))
		updates = append(updates, update)
	}
	return b, updates
}

type benchResult struct {
	rows, changelogRows int64
	elapsed             time.Duration
	cpu                 time.Duration // process CPU time (user + system, all threads) of the run
}

// cpuTime returns the process's CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func (r benchResult) rate() float64 { return float64(r.rows) / r.elapsed.Seconds() }

// runRaw writes the same keys and values as the store would (a state row per written row, and
// changelog chunks with one row per insert and two per update) straight into a Pebble DB with
// the store's options: no lookup, no merge. Only the commit (fsync included) is timed.
func runRaw(b *testing.B, dir string) (res benchResult) {
	w := newWorkload(b, dir)
	cache := pebble.NewCache(int64(*benchCacheMiB) << 20)
	defer cache.Unref()
	db, err := pebble.Open(filepath.Join(dir, "raw"), PebbleOptions(cache, discardLogger()))
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	cpu0 := cpuTime()
	defer func() { res.cpu = cpuTime() - cpu0 }()
	ends := map[BucketID]int64{}
	for {
		batch, updates := w.next(*benchBatch)
		if batch == nil {
			break
		}
		pb := db.NewBatch()
		writers := map[BucketID]*chunkWriter{}
		for i, r := range batch.Rows {
			id := BucketID{Partition: partname.Of(w.tbl, r), Bucket: buckethash.Bucket(w.tbl, r)}
			cw := writers[id]
			if cw == nil {
				cw = &chunkWriter{tbl: w.tbl, prefix: bucketPrefix(id), commitMs: 1, batch: pb}
				writers[id] = cw
			}
			val := rowcodec.EncodeValue(w.tbl, r)
			if err := pb.Set(rowcodec.AppendKey(appendStateKey(nil, cw.prefix), w.tbl, r), val, nil); err != nil {
				b.Fatal(err)
			}
			n := 1
			if updates[i] {
				n = 2 // an update emits -U and +U
			}
			for range n {
				if err := cw.add(ends[id], merge.UpdateAfter, r); err != nil {
					b.Fatal(err)
				}
				ends[id]++
				res.changelogRows++
			}
		}
		for _, cw := range writers {
			if err := cw.flush(); err != nil {
				b.Fatal(err)
			}
		}
		start := time.Now()
		if err := pb.Commit(pebble.Sync); err != nil {
			b.Fatal(err)
		}
		res.elapsed += time.Since(start)
		_ = pb.Close()
		res.rows += int64(len(batch.Rows))
	}
	return res
}

// runStore writes the workload through Table.Write.
func runStore(b *testing.B, dir string) (benchResult, *Table) {
	w := newWorkload(b, dir)
	st, err := Open(w.tbl, Options{CacheBytes: int64(*benchCacheMiB) << 20, Logger: discardLogger()})
	if err != nil {
		b.Fatal(err)
	}
	var res benchResult
	cpu0 := cpuTime()
	ctx := context.Background()
	for {
		batch, _ := w.next(*benchBatch)
		if batch == nil {
			break
		}
		start := time.Now()
		c, err := st.Write(ctx, batch)
		if err != nil {
			b.Fatal(err)
		}
		res.elapsed += time.Since(start)
		res.rows += c.Rows
		res.changelogRows += c.ChangelogRows
	}
	res.cpu = cpuTime() - cpu0
	return res, st
}

// BenchmarkWrite reports (b) the raw Pebble rate, (a) the store's Write rate and their ratio, in
// one run, and the process's peak RSS after the store run.
func BenchmarkWrite(b *testing.B) {
	for i := 0; i < b.N; i++ {
		raw := runRaw(b, b.TempDir())
		runtime.GC()
		st, table := runStore(b, b.TempDir())
		rss := rssMiB()
		_ = table.Close()
		b.ReportMetric(raw.rate(), "raw-rows/s")
		b.ReportMetric(st.rate(), "store-rows/s")
		b.ReportMetric(st.rate()/raw.rate(), "store/raw")
		b.ReportMetric(float64(st.changelogRows)/float64(st.rows), "changelog/row")
		b.ReportMetric(rss, "RSS-MiB")
		b.Logf("raw: %d rows in %v = %.0f rows/s (CPU %v); store: %d rows (%d changelog rows) in %v = %.0f rows/s (CPU %v); store/raw = %.3f; RSS after store run %.0f MiB, peak %.0f MiB",
			raw.rows, raw.elapsed, raw.rate(), raw.cpu, st.rows, st.changelogRows, st.elapsed, st.rate(), st.cpu, st.rate()/raw.rate(), rss, peakRSSMiB())
	}
}

// BenchmarkWriteStore runs only the store's write workload (for a clean RSS figure).
func BenchmarkWriteStore(b *testing.B) {
	for i := 0; i < b.N; i++ {
		st, table := runStore(b, b.TempDir())
		rss := rssMiB()
		_ = table.Close()
		b.ReportMetric(st.rate(), "store-rows/s")
		b.ReportMetric(rss, "RSS-MiB")
		b.Logf("store: %d rows (%d changelog rows) in %v = %.0f rows/s, CPU %v; RSS %.0f MiB, peak %.0f MiB",
			st.rows, st.changelogRows, st.elapsed, st.rate(), st.cpu, rss, peakRSSMiB())
	}
}

// BenchmarkRead writes the workload, then reads every bucket's changelog from offset 0 with Read
// in pages of 4096 rows and reports rows/s.
func BenchmarkRead(b *testing.B) {
	_, st := runStore(b, b.TempDir())
	defer st.Close()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		var rows int64
		start := time.Now()
		var dst []Entry
		for _, bo := range st.Buckets() {
			for off := bo.StartOffset; off < bo.EndOffset; {
				var err error
				dst, err = st.Read(bo.BucketID, off, 4096, dst)
				if err != nil {
					b.Fatal(err)
				}
				off += int64(len(dst))
				rows += int64(len(dst))
			}
		}
		el := time.Since(start)
		b.ReportMetric(float64(rows)/el.Seconds(), "read-rows/s")
		b.Logf("read %d changelog rows in %v = %.0f rows/s", rows, el, float64(rows)/el.Seconds())
	}
}

func discardLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func rssMiB() float64     { return procStatusMiB("VmRSS:") }
func peakRSSMiB() float64 { return procStatusMiB("VmHWM:") }

// procStatusMiB reads a kB field of /proc/self/status in MiB (0 when unavailable).
func procStatusMiB(field string) float64 {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, field); ok {
			var kb float64
			fmt.Sscanf(strings.TrimSpace(v), "%f", &kb)
			return kb / 1024
		}
	}
	return 0
}
