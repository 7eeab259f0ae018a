package merge

import "testing"

// BenchmarkMerge measures one Merge of a 6-column row: an update that changes one column, and an
// update that changes nothing.
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
