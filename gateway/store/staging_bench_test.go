package store

import (
	"context"
	"os"
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
