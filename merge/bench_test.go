package merge

import "testing"

// BenchmarkMerge measures one Merge of a 6-column row: an update that changes one column, and an
// update that changes nothing; and the insert of a new key of the seeds' shape (4 strings), whose
// allocations (B/op, allocs/op) do not depend on the machine's load.
func BenchmarkMerge(b *testing.B) {
	for _, name := range []string{Deduplicate, PartialUpdate} {
		e, err := New(name, nil)
		if err != nil {
			b.Fatal(err)
		}
		old := Row{int64(1), "name", int32(7), 3.5, []byte("payload"), nil}
		changed := Row{int64(1), "name", int32(8), 3.5, []byte("payload"), nil}
		same := Row{int64(1), "name", int32(7), 3.5, []byte("payload"), nil}
		dst := make([]Change, 0, 2)
		seed := Row{"1234567", "20261201", "n7clq", "addr-9e3779b97f4a7c15"}
		b.Run(name+"/insert-seed-row", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				_, _, _ = e.Merge(dst[:0], nil, Insert, seed, nil)
			}
		})
		b.Run(name+"/changed", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				_, _, _ = e.Merge(dst[:0], old, UpdateAfter, changed, nil)
			}
		})
		b.Run(name+"/unchanged", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				_, _, _ = e.Merge(dst[:0], old, UpdateAfter, same, nil)
			}
		})
	}
}
