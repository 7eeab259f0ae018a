package store

import (
	"context"
	"flag"
	"os"
	"runtime"
	"testing"
	"time"
)

// BenchmarkCommitStaged: the commit of an exactly-once checkpoint from the staged batches kept
// in memory against the same commit reading them back from Pebble (maxStagedMemBytes 0), in
// alternating rounds of one run on the seeds' table shape: 5 checkpoints of 50,000 rows (20%
// updates) staged in 4096-row batches, each committed. Staging is not timed. Reports the commit
// time per checkpoint (ms) of each mode and their ratio.
//
//	go test ./gateway/store/ -run '^$' -bench CommitStaged -benchtime 3x
func BenchmarkCommitStaged(b *testing.B) {
	var memMs, readMs float64
	for i := 0; i < b.N; i++ {
		for _, mem := range []bool{i%2 == 0, i%2 != 0} {
			ms := commitStagedRun(b, mem)
			if mem {
				memMs += ms
			} else {
				readMs += ms
			}
		}
	}
	b.ReportMetric(memMs/float64(b.N), "memory-ms/ckpt")
	b.ReportMetric(readMs/float64(b.N), "readback-ms/ckpt")
	b.ReportMetric(memMs/readMs, "memory/readback")
}

// commitStagedRun stages and commits 5 checkpoints and returns the mean commit time (ms).
func commitStagedRun(b *testing.B, mem bool) float64 {
	const ckpts, rows, batch = 5, 50_000, 4096
	old := maxStagedMemBytes
	defer func() { maxStagedMemBytes = old }()
	if !mem {
		maxStagedMemBytes = 0
	}
	dir, err := os.MkdirTemp("", "commit-staged")
	if err != nil {
		b.Fatal(err)
	}
	defer os.RemoveAll(dir)
	w := newWorkload(b, dir)
	w.keys = ckpts * rows * 4 / 5
	w.version = make([]uint32, w.keys)
	st, err := Open(w.tbl, Options{CacheBytes: 64 << 20})
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	a, err := st.AbortStaged("bench", 0, 0, 0)
	if err != nil {
		b.Fatal(err)
	}
	var total time.Duration
	for c := int64(1); c <= ckpts; c++ {
		for n := 0; n < rows; n += batch {
			rb, _ := w.next(min(batch, rows-n))
			p, err := st.Stage(context.Background(), StageTarget{CommitUser: "bench", Checkpoint: c, Epoch: a.Epoch}, rb, nil)
			if err == nil {
				_, err = p.Wait()
			}
			if err != nil {
				b.Fatal(err)
			}
		}
		start := time.Now()
		r, err := st.CommitStaged(context.Background(), "bench", 0, c)
		if err == nil {
			_, err = r.Pending.Wait()
		}
		if err != nil {
			b.Fatal(err)
		}
		total += time.Since(start)
	}
	return float64(total.Milliseconds()) / ckpts
}

var (
	benchEOMode    = flag.String("bench.eo-mode", "both", "BenchmarkExactlyOnceCPU: both (alternating rounds), alo or eo (one mode, for a CPU profile of it)")
	benchEOCkpt    = flag.Int("bench.eo-checkpoint-rows", 50_000, "BenchmarkExactlyOnceCPU: rows per subtask between two commits (one checkpoint)")
	benchEOMetrics = flag.Bool("bench.eo-pebble-metrics", false, "BenchmarkExactlyOnceCPU: log each run's Pebble metrics (flushes, compactions, bytes per level) before Close")
)

// BenchmarkExactlyOnceCPU: the process CPU per row (all goroutines: the write path, Pebble's WAL,
// flushes and compactions, up to Close) of the seeds' workload (-bench.keys rows, 20% updates,
// -bench.batch rows per batch) written at least once (Write) against exactly once (Stage by two
// subtasks in turn, CommitStaged of both every -bench.eo-checkpoint-rows rows per subtask, like
// one checkpoint), in alternating rounds of one run; reports both and eo/alo. -bench.eo-mode=alo
// or eo runs one mode only, for `-cpuprofile`; -bench.eo-pebble-metrics logs Pebble's metrics.
//
//	go test ./gateway/store/ -run '^$' -bench ExactlyOnceCPU -benchtime 2x -bench.keys 300000
func BenchmarkExactlyOnceCPU(b *testing.B) {
	var cpu [2]time.Duration
	var rows [2]int64
	for i := 0; i < b.N; i++ {
		modes := []bool{i%2 == 1, i%2 == 0}
		switch *benchEOMode {
		case "alo":
			modes = []bool{false}
		case "eo":
			modes = []bool{true}
		}
		for _, eo := range modes {
			r := exactlyOnceRun(b, b.TempDir(), eo)
			m := 0
			if eo {
				m = 1
			}
			cpu[m] += r.cpu
			rows[m] += r.rows
			b.Logf("eo=%v: %d rows, CPU %v = %.2f us/row, %d changelog rows", eo, r.rows, r.cpu, float64(r.cpu.Microseconds())/float64(r.rows), r.changelogRows)
		}
	}
	per := func(m int) float64 { return float64(cpu[m].Nanoseconds()) / 1e3 / float64(max(rows[m], 1)) }
	if rows[0] > 0 {
		b.ReportMetric(per(0), "alo-cpu-us/row")
	}
	if rows[1] > 0 {
		b.ReportMetric(per(1), "eo-cpu-us/row")
	}
	if rows[0] > 0 && rows[1] > 0 {
		b.ReportMetric(per(1)/per(0), "eo/alo-cpu")
	}
}

// exactlyOnceRun writes the workload once at least once or exactly once (see
// BenchmarkExactlyOnceCPU) and returns the rows and the process CPU from Open to Close.
func exactlyOnceRun(b *testing.B, dir string, eo bool) (res benchResult) {
	w := newWorkload(b, dir)
	runtime.GC()
	cpu0 := cpuTime()
	st, err := Open(w.tbl, Options{CacheBytes: int64(*benchCacheMiB) << 20, Logger: discardLogger()})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	var epochs [2]int64
	if eo {
		for s := range epochs {
			a, err := st.AbortStaged("bench", int32(s), 0, 0)
			if err != nil {
				b.Fatal(err)
			}
			epochs[s] = a.Epoch
		}
	}
	ckpt, inCkpt := int64(1), 0
	var staged [2]bool // the subtask staged rows of ckpt
	commit := func() {
		for s := range epochs {
			if !staged[s] {
				continue
			}
			staged[s] = false
			r, err := st.CommitStaged(ctx, "bench", int32(s), ckpt)
			if err != nil {
				b.Fatal(err)
			}
			c, err := r.Pending.Wait()
			if err != nil {
				b.Fatal(err)
			}
			res.changelogRows += c.ChangelogRows
		}
		ckpt, inCkpt = ckpt+1, 0
	}
	for n := 0; ; n++ {
		batch, _ := w.next(*benchBatch)
		if batch == nil {
			break
		}
		res.rows += int64(len(batch.Rows))
		if !eo {
			c, err := st.Write(ctx, batch)
			if err != nil {
				b.Fatal(err)
			}
			res.changelogRows += c.ChangelogRows
			continue
		}
		s := n % 2
		p, err := st.Stage(ctx, StageTarget{CommitUser: "bench", Subtask: int32(s), Checkpoint: ckpt, Epoch: epochs[s]}, batch, nil)
		if err == nil {
			_, err = p.Wait()
		}
		if err != nil {
			b.Fatal(err)
		}
		staged[s] = true
		if inCkpt += len(batch.Rows); inCkpt >= 2**benchEOCkpt {
			commit()
		}
	}
	if eo && inCkpt > 0 {
		commit()
	}
	if *benchEOMetrics {
		b.Logf("eo=%v pebble metrics:\n%s", eo, st.db.Metrics())
	}
	if err := st.Close(); err != nil {
		b.Fatal(err)
	}
	res.cpu = cpuTime() - cpu0
	return res
}
