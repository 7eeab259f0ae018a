package binlog

import (
	"context"
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/setats/setats/gateway/row"
	"github.com/setats/setats/gateway/store"
	"github.com/setats/setats/merge"
)

// BenchmarkProgress100Slots64Buckets: one binlog-progress over 100 slots of a 64-bucket table
// (12800 rows of progress). Every slot sits at its own offset in every bucket (the worst case:
// 4 distinct commit-time lookups per slot and bucket; slots at the same point share them).
func BenchmarkProgress100Slots64Buckets(b *testing.B) {
	h, err := newHarness(b.TempDir(), 64, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer h.close()
	for w := range 20 {
		bt := &row.Batch{Declared: []bool{true, true}}
		for i := range 1000 {
			bt.Kinds = append(bt.Kinds, merge.UpdateAfter)
			bt.Rows = append(bt.Rows, merge.Row{int32(w*1000 + i), "v"})
		}
		if _, err := h.st.Write(context.Background(), bt); err != nil {
			b.Fatal(err)
		}
	}
	for s := range 100 {
		name := fmt.Sprintf("s%d", s)
		if _, _, err := h.slots.Acquire(name, "job"+name, false, 0); err != nil {
			b.Fatal(err)
		}
		var pts []Point
		for _, o := range h.st.Buckets() {
			pts = append(pts, Point{Bucket: o.BucketID, Offset: o.EndOffset * int64(s) / 100})
		}
		if _, err := h.slots.Register(name, "job"+name, pts, true); err != nil {
			b.Fatal(err)
		}
	}
	cpu0 := cpuTime()
	for b.Loop() {
		rows, err := h.slots.Progress("")
		if err != nil || len(rows) != 100*64*2 {
			b.Fatalf("%d rows, %v", len(rows), err)
		}
	}
	// CPU time of the process per op: on a loaded machine ns/op is mostly waiting for a core.
	b.ReportMetric(float64(cpuTime()-cpu0)/float64(b.N)/1e6, "cpu-ms/op")
}

// cpuTime returns the user + system CPU time of the process so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkRegisterCheckpoint64Buckets: one checkpoint registration of 64 buckets (one fsynced
// batch), the cost a setats-cdc job adds per checkpoint.
func BenchmarkRegisterCheckpoint64Buckets(b *testing.B) {
	h, err := newHarness(b.TempDir(), 64, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer h.close()
	if _, _, err := h.slots.Acquire("s", "job", false, 0); err != nil {
		b.Fatal(err)
	}
	pts := make([]Point, 64)
	for i := range pts {
		pts[i] = Point{Bucket: store.BucketID{Bucket: int32(i)}, Offset: 0}
	}
	for b.Loop() {
		h.now++
		if _, err := h.slots.Register("s", "job", pts, true); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkIngestSlot: the cost of a slot on ingest. Two 4-bucket tables are written in turn,
// one durable write of 1000 upserts each per op, so both see the same machine load: "no slot"
// only writes; "slot" also does what a setats-cdc job with slot.name adds to its table's store:
// a running sync point for every bucket whenever slot.sync-point-size (5000) rows arrived in it
// since the last one, and a checkpoint sync point for every bucket
// every 100 writes (one checkpoint per 100k rows, about a second of ingest). The registrations run in the writer's goroutine, so the figure is an
// upper bound (a job registers from its own connection, beside the writes). Reports ns per write
// of each, their difference in percent (overhead-%: noisy on a loaded machine) and the time
// spent registering relative to the time spent writing on the slot's table (register-%: the
// slot's own cost, the same writes either way). docs/PERF-NOTES.md "Binlog".
func BenchmarkIngestSlot(b *testing.B) {
	type side struct {
		h           *harness
		slot        bool
		lastRunning map[store.BucketID]int64
		ns, reg     time.Duration // all of step; of the Register calls
		writes      int
	}
	var sides [2]*side
	for i := range sides {
		h, err := newHarness(b.TempDir(), 4, nil)
		if err != nil {
			b.Fatal(err)
		}
		defer h.close()
		sides[i] = &side{h: h, slot: i == 1, lastRunning: map[store.BucketID]int64{}}
		if i == 1 {
			if _, _, err := h.slots.Acquire("s", "job", false, 0); err != nil {
				b.Fatal(err)
			}
		}
	}
	key := 0
	step := func(sd *side) {
		bt := &row.Batch{Declared: []bool{true, true}}
		for range 1000 {
			bt.Kinds = append(bt.Kinds, merge.UpdateAfter)
			bt.Rows = append(bt.Rows, merge.Row{int32(key % 200_000), "value of the row"})
			key++
		}
		t0 := time.Now()
		c, err := sd.h.st.Write(context.Background(), bt)
		if err != nil {
			b.Fatal(err)
		}
		sd.writes++
		t1 := time.Now()
		if sd.slot {
			var running []Point
			for _, o := range c.Buckets {
				if o.EndOffset-sd.lastRunning[o.BucketID] >= 5000 {
					running = append(running, Point{Bucket: o.BucketID, Offset: o.EndOffset})
					sd.lastRunning[o.BucketID] = o.EndOffset
				}
			}
			if len(running) > 0 {
				if _, err := sd.h.slots.Register("s", "job", running, false); err != nil {
					b.Fatal(err)
				}
			}
			if sd.writes%100 == 0 {
				var cp []Point
				for _, o := range sd.h.st.Buckets() {
					cp = append(cp, Point{Bucket: o.BucketID, Offset: o.EndOffset})
				}
				sd.h.now++
				if _, err := sd.h.slots.Register("s", "job", cp, true); err != nil {
					b.Fatal(err)
				}
			}
		}
		sd.reg += time.Since(t1)
		sd.ns += time.Since(t0)
	}
	n := 0
	for b.Loop() {
		// Alternate which table goes first, so neither always follows the other's fsync.
		if n%2 == 0 {
			step(sides[0])
			step(sides[1])
		} else {
			step(sides[1])
			step(sides[0])
		}
		n++
	}
	no, with := float64(sides[0].ns)/float64(n), float64(sides[1].ns)/float64(n)
	b.ReportMetric(no, "no-slot-ns/write")
	b.ReportMetric(with, "slot-ns/write")
	b.ReportMetric(100*(with-no)/no, "overhead-%")
	b.ReportMetric(100*float64(sides[1].reg)/float64(sides[1].ns-sides[1].reg), "register-%")
}
