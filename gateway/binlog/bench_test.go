package binlog

import (
	"context"
	"fmt"
	"testing"

	"github.com/setats/setats/gateway/row"
	"github.com/setats/setats/gateway/store"
	"github.com/setats/setats/merge"
)

// BenchmarkProgress100Slots64Buckets: one binlog-progress over 100 slots of a 64-bucket table
// (12800 rows of progress, 4 commit-time lookups per slot and bucket).
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
			pts = append(pts, Point{Bucket: o.BucketID, Offset: o.EndOffset * int64(s%10) / 10})
		}
		if _, err := h.slots.Register(name, "job"+name, pts, true); err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	for b.Loop() {
		rows, err := h.slots.Progress("")
		if err != nil || len(rows) != 100*64*2 {
			b.Fatalf("%d rows, %v", len(rows), err)
		}
	}
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
