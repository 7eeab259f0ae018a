package gatewaytest

import (
	"context"
	"encoding/binary"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/cockroachdb/pebble/v2"

	"github.com/setats/setats/gateway/store"
	"github.com/setats/setats/proto/setatspb"
)

// BenchConfig sizes the gateway benchmark (issue 2, "Benchmarks"). Zero fields take the defaults
// of SetDefaults.
type BenchConfig struct {
	// Keys is the number of distinct keys written by the ingest phase (issue: 1,000,000).
	Keys int
	// UpdatePct is the percentage of ingest writes that update an existing key (issue: 20).
	UpdatePct int
	// BatchRows is the rows per DoPut record batch and per raw Pebble batch. Default 4096.
	BatchRows int
	// Writers is the number of concurrent DoPut streams (and raw Pebble writer goroutines), and of
	// concurrent DoGet readers in the read phase. Default 2 (the machine has 2 cores).
	Writers int
	// Partitions is the number of dt values; Buckets the bucket count per partition. Default 4, 4.
	Partitions, Buckets int
	// LatencyRate is the steady write rate of the latency phase in rows/s (issue: 10,000), sent
	// as LatencyBatchRows-row batches (default 100) for LatencyDuration (default 10 s) after a
	// 1 s warm-up that is not measured.
	LatencyRate, LatencyBatchRows int
	LatencyDuration               time.Duration
	// Seed makes the generated rows reproducible.
	Seed uint64
	// SkipRaw skips the raw Pebble baseline (b).
	SkipRaw bool
	// Logf receives progress lines; nil is silent.
	Logf func(format string, args ...any)
	// OnPhase, when set, is called at the begin and end of each measured phase: "raw", "ingest",
	// "read", "latency" (e.g. to start and stop a CPU profile).
	OnPhase func(phase string, begin bool)
}

// SetDefaults fills the zero fields.
func (c *BenchConfig) SetDefaults() {
	if c.Keys <= 0 {
		c.Keys = 1_000_000
	}
	if c.UpdatePct <= 0 || c.UpdatePct >= 100 {
		c.UpdatePct = 20
	}
	if c.BatchRows <= 0 {
		c.BatchRows = 4096
	}
	if c.Writers <= 0 {
		c.Writers = 2
	}
	if c.Partitions <= 0 {
		c.Partitions = 4
	}
	if c.Buckets <= 0 {
		c.Buckets = 4
	}
	if c.LatencyRate <= 0 {
		c.LatencyRate = 10_000
	}
	if c.LatencyBatchRows <= 0 {
		c.LatencyBatchRows = 100
	}
	if c.LatencyDuration <= 0 {
		c.LatencyDuration = 10 * time.Second
	}
	if c.Seed == 0 {
		c.Seed = 1
	}
	if c.Logf == nil {
		c.Logf = func(string, ...any) {}
	}
	if c.OnPhase == nil {
		c.OnPhase = func(string, bool) {}
	}
}

// BenchTarget is the gateway under test: the built binary (Gateway) or an in-process server.
type BenchTarget interface {
	// FlightAddr is the host:port to dial.
	FlightAddr() string
	// RSS returns the gateway process's resident set size and its peak (VmRSS, VmHWM), bytes.
	RSS() (rss, peak int64, err error)
	// CPU returns the CPU time (user + system) the gateway process has used so far.
	CPU() (time.Duration, error)
}

// BinaryTarget adapts a Gateway process to BenchTarget.
type BinaryTarget struct{ G *Gateway }

// FlightAddr implements BenchTarget.
func (b BinaryTarget) FlightAddr() string { return b.G.Info.FlightAddr }

// RSS implements BenchTarget with /proc/<pid>/status of the gateway process.
func (b BinaryTarget) RSS() (int64, int64, error) {
	rss, err := ProcStatus(b.G.Pid(), "VmRSS")
	if err != nil {
		return 0, 0, err
	}
	hwm, err := ProcStatus(b.G.Pid(), "VmHWM")
	return rss, hwm, err
}

// CPU implements BenchTarget with /proc/<pid>/stat of the gateway process.
func (b BinaryTarget) CPU() (time.Duration, error) { return ProcCPU(b.G.Pid()) }

// BenchResult holds the figures of one run. Rates are rows/s, latencies ms, sizes bytes.
type BenchResult struct {
	Keys, Writes int // distinct keys, rows written by the ingest phase
	// LoadAvg is /proc/loadavg at the start and at the end of the run (the machine is shared).
	LoadAvgStart, LoadAvgEnd string

	RawRowsPerSec float64 // (b) raw Pebble batch writes, Sync per batch
	RawElapsed    time.Duration
	RawCPU        time.Duration // CPU time of this process during (b)

	IngestRowsPerSec   float64 // (a) DoPut upserts, first send to last ack
	IngestElapsed      time.Duration
	IngestChangelogRow int64         // changelog rows the acks reported
	IngestCPU          time.Duration // gateway CPU time during (a)

	ReadRowsPerSec float64 // (c) DoGet from earliest, bounded, all buckets
	ReadRows       int64
	ReadElapsed    time.Duration
	ReadCPU        time.Duration // gateway CPU time during (c)

	// (d) receive time at a follow=true reader minus the batch's send time (client clock), and
	// minus the row's commit timestamp; and send-to-ack.
	LatencySamples                  int
	LatencyExpected                 int
	LatP50Ms, LatP99Ms, LatMaxMs    float64
	CommitP50Ms, CommitP99Ms        float64
	AckP50Ms, AckP99Ms              float64
	LatencyRowsPerSec               float64 // achieved write rate during the measured window
	RSSAfterIngest, PeakRSS, RSSEnd int64   // (e)
}

// Ratio returns (a)/(b).
func (r *BenchResult) Ratio() float64 {
	if r.RawRowsPerSec == 0 {
		return 0
	}
	return r.IngestRowsPerSec / r.RawRowsPerSec
}

// Report renders the figures with the targets.
func (r *BenchResult) Report() string {
	var sb strings.Builder
	ok := func(b bool) string {
		if b {
			return "met"
		}
		return "MISSED"
	}
	mib := func(b int64) float64 { return float64(b) / (1 << 20) }
	fmt.Fprintf(&sb, "keys %d, ingest writes %d (%d%% updates); load average at start %s, at end %s\n",
		r.Keys, r.Writes, 100-int(100*float64(r.Keys)/float64(max(r.Writes, 1))+0.5), r.LoadAvgStart, r.LoadAvgEnd)
	perCPU := func(rows int64, d time.Duration) float64 {
		if d <= 0 {
			return 0
		}
		return float64(rows) / d.Seconds()
	}
	fmt.Fprintf(&sb, "(a) DoPut upsert ingest:      %10.0f rows/s  (%d rows in %s, %d changelog rows)  target >= 200000: %s\n",
		r.IngestRowsPerSec, r.Writes, r.IngestElapsed.Round(time.Millisecond), r.IngestChangelogRow, ok(r.IngestRowsPerSec >= 200_000))
	fmt.Fprintf(&sb, "    gateway CPU %s = %.0f rows per CPU-second (%.2f cores busy)\n",
		r.IngestCPU.Round(time.Millisecond), perCPU(int64(r.Writes), r.IngestCPU), r.IngestCPU.Seconds()/max(r.IngestElapsed.Seconds(), 1e-9))
	if r.RawRowsPerSec > 0 {
		fmt.Fprintf(&sb, "(b) raw Pebble batch writes:  %10.0f rows/s  (%d rows in %s, Sync per batch; CPU %s = %.0f rows per CPU-second)\n",
			r.RawRowsPerSec, r.Writes, r.RawElapsed.Round(time.Millisecond), r.RawCPU.Round(time.Millisecond), perCPU(int64(r.Writes), r.RawCPU))
		fmt.Fprintf(&sb, "    (a)/(b) = %.1f%%  target >= 20%%: %s\n", 100*r.Ratio(), ok(r.Ratio() >= 0.2))
	}
	fmt.Fprintf(&sb, "(c) DoGet changelog read:     %10.0f rows/s  (%d rows in %s)  target >= 1000000: %s\n",
		r.ReadRowsPerSec, r.ReadRows, r.ReadElapsed.Round(time.Millisecond), ok(r.ReadRowsPerSec >= 1_000_000))
	fmt.Fprintf(&sb, "    gateway CPU %s = %.0f rows per CPU-second\n", r.ReadCPU.Round(time.Millisecond), perCPU(r.ReadRows, r.ReadCPU))
	fmt.Fprintf(&sb, "(d) write-to-reader latency at %.0f rows/s: p50 %.2f ms, p99 %.2f ms, max %.2f ms (%d/%d rows seen)  target p99 <= 50 ms: %s\n",
		r.LatencyRowsPerSec, r.LatP50Ms, r.LatP99Ms, r.LatMaxMs, r.LatencySamples, r.LatencyExpected, ok(r.LatP99Ms <= 50 && r.LatencySamples == r.LatencyExpected))
	fmt.Fprintf(&sb, "    commit_ts-to-reader p50 %.0f ms p99 %.0f ms (ms clock); send-to-ack p50 %.2f ms p99 %.2f ms\n",
		r.CommitP50Ms, r.CommitP99Ms, r.AckP50Ms, r.AckP99Ms)
	fmt.Fprintf(&sb, "(e) gateway RSS after ingest: %.0f MiB; peak (VmHWM) %.0f MiB; at end %.0f MiB  target <= 512 MiB: %s\n",
		mib(r.RSSAfterIngest), mib(r.PeakRSS), mib(r.RSSEnd), ok(r.RSSAfterIngest <= 512<<20 && r.PeakRSS <= 512<<20))
	return sb.String()
}

// benchRow is one generated write of the seeds' table shape.
type benchRow struct{ id, dt, name, address string }

// benchWorkload generates, per writer, its batches of rows: Keys distinct keys split across the
// writers, UpdatePct percent of all writes updating a key the writer already wrote.
func benchWorkload(cfg *BenchConfig) [][][]benchRow {
	out := make([][][]benchRow, cfg.Writers)
	var wg sync.WaitGroup
	for w := range cfg.Writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(cfg.Seed, uint64(w)))
			var keys []int
			for k := w; k < cfg.Keys; k += cfg.Writers {
				keys = append(keys, k)
			}
			inserts := len(keys)
			updates := (inserts*cfg.UpdatePct + (100-cfg.UpdatePct)/2) / (100 - cfg.UpdatePct)
			done := 0
			var batch []benchRow
			for inserts > 0 || updates > 0 {
				var k int
				if done > 0 && (inserts == 0 || rng.IntN(inserts+updates) < updates) {
					k = keys[rng.IntN(done)]
					updates--
				} else {
					k = keys[done]
					done++
					inserts--
				}
				batch = append(batch, benchRow{
					id:      fmt.Sprintf("user-%09d", k),
					dt:      fmt.Sprintf("2024-06-%02d", 1+k%cfg.Partitions),
					name:    fmt.Sprintf("name-%08x", rng.Uint32()),
					address: fmt.Sprintf("%d Main Street, Springfield, unit %d", rng.IntN(10000), rng.IntN(1000)),
				})
				if len(batch) == cfg.BatchRows {
					out[w] = append(out[w], batch)
					batch = nil
				}
			}
			if len(batch) > 0 {
				out[w] = append(out[w], batch)
			}
		}()
	}
	wg.Wait()
	return out
}

func benchCols() []Col {
	return []Col{{Name: "id", Type: "STRING", Key: true}, {Name: "dt", Type: "STRING", Key: true},
		{Name: "name", Type: "STRING"}, {Name: "address", Type: "STRING"}}
}

func benchRecord(alloc memory.Allocator, schema *arrow.Schema, rows []benchRow) arrow.RecordBatch {
	b := array.NewRecordBuilder(alloc, schema)
	defer b.Release()
	for i := range 4 {
		sb := b.Field(i).(*array.StringBuilder)
		for _, r := range rows {
			switch i {
			case 0:
				sb.Append(r.id)
			case 1:
				sb.Append(r.dt)
			case 2:
				sb.Append(r.name)
			case 3:
				sb.Append(r.address)
			}
		}
	}
	return b.NewRecordBatch()
}

// RawPebbleOptions are the options of the raw Pebble baseline: gateway/store's own
// (store.PebbleOptions), with a 192 MiB block cache (the gateway's default) and only Pebble's
// errors logged, to stderr.
func RawPebbleOptions() *pebble.Options {
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError}))
	return store.PebbleOptions(pebble.NewCache(192<<20), logger.With("baseline", "raw pebble"))
}

// runRaw writes every generated row as one Pebble Set (key = id, dt; value = name, address,
// length-prefixed), batches of BatchRows committed with Sync by Writers goroutines.
func runRaw(dir string, cfg *BenchConfig, work [][][]benchRow) (time.Duration, error) {
	opts := RawPebbleOptions()
	defer opts.Cache.Unref()
	db, err := pebble.Open(dir, opts)
	if err != nil {
		return 0, err
	}
	defer db.Close()
	put := func(b []byte, s string) []byte {
		b = binary.AppendUvarint(b, uint64(len(s)))
		return append(b, s...)
	}
	start := time.Now()
	var wg sync.WaitGroup
	errs := make(chan error, len(work))
	for _, batches := range work {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var k, v []byte
			for _, rows := range batches {
				b := db.NewBatch()
				for _, r := range rows {
					k = put(put(k[:0], r.id), r.dt)
					v = put(put(v[:0], r.name), r.address)
					if err := b.Set(k, v, nil); err != nil {
						errs <- err
						return
					}
				}
				if err := b.Commit(pebble.Sync); err != nil {
					errs <- err
					return
				}
				b.Close()
			}
		}()
	}
	wg.Wait()
	el := time.Since(start)
	close(errs)
	return el, <-errs
}

// RunBench runs the phases of issue 2's benchmark in order on a fresh table `bench.seeds` of the
// target: (b) raw Pebble baseline in dir (before the gateway is loaded, so they do not compete),
// (a) DoPut ingest, (e) RSS, (c) DoGet read from earliest, (d) latency at a steady rate.
func RunBench(ctx context.Context, cfg BenchConfig, target BenchTarget, dir string) (*BenchResult, error) {
	cfg.SetDefaults()
	res := &BenchResult{Keys: cfg.Keys, LoadAvgStart: loadAvg()}
	defer func() { res.LoadAvgEnd = loadAvg() }()
	cfg.Logf("generating %d keys, %d%% updates, %d writers, %d-row batches", cfg.Keys, cfg.UpdatePct, cfg.Writers, cfg.BatchRows)
	work := benchWorkload(&cfg)
	for _, w := range work {
		for _, b := range w {
			res.Writes += len(b)
		}
	}

	if !cfg.SkipRaw {
		rawDir := filepath.Join(dir, "raw-pebble")
		cfg.OnPhase("raw", true)
		cpu0, _ := ProcCPU(os.Getpid())
		el, err := runRaw(rawDir, &cfg, work)
		cpu1, _ := ProcCPU(os.Getpid())
		res.RawCPU = cpu1 - cpu0
		cfg.OnPhase("raw", false)
		if err != nil {
			return nil, fmt.Errorf("raw pebble: %w", err)
		}
		os.RemoveAll(rawDir)
		res.RawElapsed, res.RawRowsPerSec = el, float64(res.Writes)/el.Seconds()
		cfg.Logf("(b) raw pebble: %.0f rows/s", res.RawRowsPerSec)
	}

	c, err := Dial(target.FlightAddr())
	if err != nil {
		return nil, err
	}
	defer c.Close()
	const db, table = "bench", "seeds"
	spec := &setatspb.TableSpec{Database: db, Table: table, PrimaryKey: []string{"id", "dt"},
		PartitionKeys: []string{"dt"}, BucketCount: int32(cfg.Buckets), MergeEngine: "DEDUPLICATE"}
	for _, col := range benchCols() {
		spec.Columns = append(spec.Columns, &setatspb.Column{Name: col.Name, Type: col.Type, NotNull: col.Key})
	}
	if _, err := c.CreateTable(ctx, spec); err != nil {
		return nil, fmt.Errorf("create-table: %w", err)
	}

	// (a) ingest. Records are built before the clock starts.
	schema, _ := WriteSchema(benchCols(), false)
	alloc := memory.NewGoAllocator()
	recs := make([][]arrow.RecordBatch, len(work))
	for w, batches := range work {
		for _, rows := range batches {
			recs[w] = append(recs[w], benchRecord(alloc, schema, rows))
		}
	}
	work = nil
	var changelogRows atomic.Int64
	cfg.OnPhase("ingest", true)
	cpu0, err := target.CPU()
	if err != nil {
		return nil, err
	}
	start := time.Now()
	var wg sync.WaitGroup
	errs := make(chan error, len(recs))
	for w := range recs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ps, err := c.OpenPut(ctx, db, table, schema)
			if err != nil {
				errs <- err
				return
			}
			defer ps.Abort()
			go func() {
				for _, r := range recs[w] {
					if ps.Send(r) != nil {
						return
					}
				}
				_ = ps.CloseSend()
			}()
			n := 0
			for a := range ps.Acks {
				changelogRows.Add(a.GetChangelogRows())
				n++
			}
			if err := ps.Wait(); err != nil {
				errs <- fmt.Errorf("DoPut writer %d: %w", w, err)
			} else if n != len(recs[w]) {
				errs <- fmt.Errorf("DoPut writer %d: %d acks for %d batches", w, n, len(recs[w]))
			}
		}()
	}
	wg.Wait()
	res.IngestElapsed = time.Since(start)
	cpu1, _ := target.CPU()
	res.IngestCPU = cpu1 - cpu0
	cfg.OnPhase("ingest", false)
	close(errs)
	for e := range errs {
		return nil, e
	}
	for _, rs := range recs {
		for _, r := range rs {
			r.Release()
		}
	}
	recs = nil
	res.IngestRowsPerSec = float64(res.Writes) / res.IngestElapsed.Seconds()
	res.IngestChangelogRow = changelogRows.Load()
	cfg.Logf("(a) ingest: %.0f rows/s (%d rows, %s)", res.IngestRowsPerSec, res.Writes, res.IngestElapsed)
	if res.RSSAfterIngest, res.PeakRSS, err = target.RSS(); err != nil {
		return nil, err
	}

	// (c) read every bucket from earliest, bounded; Writers concurrent streams.
	buckets, err := c.ListBuckets(ctx, db, table)
	if err != nil {
		return nil, err
	}
	var want int64
	for _, b := range buckets {
		want += b.GetEndOffset() - b.GetStartOffset()
	}
	var read atomic.Int64
	cfg.OnPhase("read", true)
	cpu0, _ = target.CPU()
	start = time.Now()
	next := make(chan *setatspb.BucketOffsets, len(buckets))
	for _, b := range buckets {
		next <- b
	}
	close(next)
	errs = make(chan error, cfg.Writers)
	for range cfg.Writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for b := range next {
				t := &setatspb.ChangelogTicket{Database: db, Table: table, Partition: b.GetPartition(), Bucket: b.GetBucket(),
					Start: &setatspb.ChangelogTicket_Position{Position: setatspb.StartPosition_EARLIEST}}
				err := c.DoGet(ctx, t, func(_ *arrow.Schema, rec arrow.RecordBatch) error {
					read.Add(rec.NumRows())
					return nil
				})
				if err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	res.ReadElapsed = time.Since(start)
	cpu1, _ = target.CPU()
	res.ReadCPU = cpu1 - cpu0
	cfg.OnPhase("read", false)
	close(errs)
	for e := range errs {
		return nil, fmt.Errorf("DoGet: %w", e)
	}
	res.ReadRows = read.Load()
	if res.ReadRows != want || res.ReadRows != res.IngestChangelogRow {
		return nil, fmt.Errorf("read %d changelog rows; list-buckets says %d, acks said %d", res.ReadRows, want, res.IngestChangelogRow)
	}
	res.ReadRowsPerSec = float64(res.ReadRows) / res.ReadElapsed.Seconds()
	cfg.Logf("(c) read: %.0f rows/s (%d rows, %s)", res.ReadRowsPerSec, res.ReadRows, res.ReadElapsed)

	cfg.OnPhase("latency", true)
	err = runLatency(ctx, c, &cfg, db, table, buckets, res)
	cfg.OnPhase("latency", false)
	if err != nil {
		return nil, fmt.Errorf("latency: %w", err)
	}
	rss, peak, err := target.RSS()
	if err != nil {
		return nil, err
	}
	res.RSSEnd, res.PeakRSS = rss, max(res.PeakRSS, peak)
	return res, nil
}

// runLatency opens a follow=true reader from LATEST on every bucket, writes updates of existing
// keys at cfg.LatencyRate rows/s and measures per row receive time minus send time (and minus
// commit timestamp). Each written name is "L<seq>-<row>" so the reader finds the batch's send time.
func runLatency(ctx context.Context, c *Client, cfg *BenchConfig, db, table string, buckets []*setatspb.BucketOffsets, res *BenchResult) error {
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var sendTimes sync.Map // seq -> time.Time
	var mu sync.Mutex
	var lat, commitLat []float64
	var seen atomic.Int64
	var measuredFrom atomic.Int64 // first measured seq
	measuredFrom.Store(1 << 62)
	readerErr := make(chan error, len(buckets))
	var rwg sync.WaitGroup
	for _, b := range buckets {
		rwg.Add(1)
		go func() {
			defer rwg.Done()
			t := &setatspb.ChangelogTicket{Database: db, Table: table, Partition: b.GetPartition(), Bucket: b.GetBucket(),
				Start: &setatspb.ChangelogTicket_Position{Position: setatspb.StartPosition_LATEST}, Follow: true}
			err := c.DoGet(rctx, t, func(s *arrow.Schema, rec arrow.RecordBatch) error {
				now := time.Now()
				kinds := rec.Column(0).(*array.Int8)
				ts := rec.Column(2).(*array.Timestamp)
				names, ok := rec.Column(5).(*array.String)
				if !ok || s.Field(5).Name != "name" {
					return fmt.Errorf("column 5 is %s, want name", s.Field(5).Name)
				}
				var l, cl []float64
				for i := range int(rec.NumRows()) {
					if kinds.Value(i) != KindUpdateAfter && kinds.Value(i) != KindInsert {
						continue
					}
					name := names.Value(i)
					if !strings.HasPrefix(name, "L") {
						continue
					}
					dash := strings.IndexByte(name, '-')
					seq, err := strconv.ParseInt(name[1:dash], 10, 64)
					if err != nil {
						return err
					}
					if seq < measuredFrom.Load() {
						continue
					}
					st, ok := sendTimes.Load(seq)
					if !ok {
						continue
					}
					l = append(l, float64(now.Sub(st.(time.Time)).Microseconds())/1000)
					cl = append(cl, float64(now.UnixMilli()-int64(ts.Value(i))))
				}
				if len(l) > 0 {
					mu.Lock()
					lat = append(lat, l...)
					commitLat = append(commitLat, cl...)
					mu.Unlock()
					seen.Add(int64(len(l)))
				}
				return nil
			})
			if err != nil && rctx.Err() == nil {
				readerErr <- err
			}
		}()
	}

	schema, _ := WriteSchema(benchCols(), false)
	ps, err := c.OpenPut(ctx, db, table, schema)
	if err != nil {
		return err
	}
	defer ps.Abort()
	var ackLat []float64
	ackDone := make(chan struct{})
	go func() {
		defer close(ackDone)
		for a := range ps.Acks {
			if st, ok := sendTimes.Load(a.GetBatchSeq()); ok {
				ackLat = append(ackLat, float64(time.Since(st.(time.Time)).Microseconds())/1000)
			}
		}
	}()
	alloc := memory.NewGoAllocator()
	rng := rand.New(rand.NewPCG(cfg.Seed, 1<<20))
	interval := time.Duration(float64(time.Second) * float64(cfg.LatencyBatchRows) / float64(cfg.LatencyRate))
	warmup := time.Second
	begin := time.Now()
	var measuredRows int
	var measuredStart, measuredEnd time.Time
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for seq := int64(0); ; seq++ {
		el := time.Since(begin)
		if el >= warmup+cfg.LatencyDuration {
			break
		}
		rows := make([]benchRow, cfg.LatencyBatchRows)
		used := map[int]bool{}
		for j := range rows {
			k := rng.IntN(cfg.Keys)
			for used[k] {
				k = rng.IntN(cfg.Keys)
			}
			used[k] = true
			rows[j] = benchRow{id: fmt.Sprintf("user-%09d", k), dt: fmt.Sprintf("2024-06-%02d", 1+k%cfg.Partitions),
				name: fmt.Sprintf("L%d-%d", seq, j), address: "latency"}
		}
		rec := benchRecord(alloc, schema, rows)
		if el >= warmup && measuredStart.IsZero() {
			measuredFrom.Store(seq)
			measuredStart = time.Now()
		}
		now := time.Now()
		sendTimes.Store(seq, now)
		err := ps.Send(rec)
		rec.Release()
		if err != nil {
			return fmt.Errorf("DoPut send: %w (%v)", err, ps.Err())
		}
		if !measuredStart.IsZero() {
			measuredRows += len(rows)
			measuredEnd = now
		}
		<-tick.C
	}
	if err := ps.CloseSend(); err != nil {
		return err
	}
	if err := ps.Wait(); err != nil {
		return err
	}
	<-ackDone
	res.LatencyExpected = measuredRows
	deadline := time.Now().Add(10 * time.Second)
	for seen.Load() < int64(measuredRows) && time.Now().Before(deadline) {
		select {
		case err := <-readerErr:
			return err
		case <-time.After(10 * time.Millisecond):
		}
	}
	cancel()
	rwg.Wait()
	select {
	case err := <-readerErr:
		return err
	default:
	}
	mu.Lock()
	defer mu.Unlock()
	res.LatencySamples = len(lat)
	res.LatP50Ms, res.LatP99Ms, res.LatMaxMs = pct(lat, 0.50), pct(lat, 0.99), pct(lat, 1)
	res.CommitP50Ms, res.CommitP99Ms = pct(commitLat, 0.50), pct(commitLat, 0.99)
	res.AckP50Ms, res.AckP99Ms = pct(ackLat, 0.50), pct(ackLat, 0.99)
	if d := measuredEnd.Sub(measuredStart); d > 0 {
		res.LatencyRowsPerSec = float64(measuredRows-cfg.LatencyBatchRows) / d.Seconds()
	}
	cfg.Logf("(d) latency: p50 %.2f ms p99 %.2f ms (%d/%d rows)", res.LatP50Ms, res.LatP99Ms, len(lat), measuredRows)
	if len(lat) != measuredRows {
		return fmt.Errorf("follow readers saw %d of %d measured rows within 10 s", len(lat), measuredRows)
	}
	return nil
}

func loadAvg() string {
	b, _ := os.ReadFile("/proc/loadavg")
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}

// pct returns the q-quantile (nearest rank) of xs, 0 when empty.
func pct(xs []float64, q float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	sort.Float64s(s)
	i := int(q*float64(len(s))+0.5) - 1
	return s[min(max(i, 0), len(s)-1)]
}
