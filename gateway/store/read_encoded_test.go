package store

import (
	"fmt"
	"strings"
	"testing"

	"github.com/setats/setats/gateway/row"
	"github.com/setats/setats/gateway/rowcodec"
	"github.com/setats/setats/merge"
)

// TestReadEncoded: ReadEncoded returns the rows Read returns (offsets, kinds, commit times, and
// values that decode to Read's rows), from Pebble and from a followed bucket's in-memory tail,
// from any offset (inside a chunk, at a chunk boundary) and with any row limit, while reusing
// its slices across calls; values larger than the arena's block and arena growth in the middle
// of a read keep earlier values intact.
func TestReadEncoded(t *testing.T) {
	tbl := resolve(t, t.TempDir(), spec("r", "id INT, v STRING", "id", "", 1, "", nil))
	st := openTable(t, tbl, &fakeClock{ms: 1})
	id := BucketID{Bucket: 0}
	write := func(first, n, size int) {
		b := &row.Batch{Declared: []bool{true, true}}
		for i := first; i < first+n; i++ {
			b.Kinds = append(b.Kinds, merge.Insert)
			b.Rows = append(b.Rows, merge.Row{int32(i % 700), fmt.Sprintf("%d:%s", i, strings.Repeat("x", size))})
		}
		mustWrite(t, st, b)
	}
	write(0, 600, 10)                     // chunks of 256 rows; ids 0-599
	write(600, 200, 1000)                 // large values (arena growth); ids 600-699 new, then updates of 0-99
	if err := st.db.Flush(); err != nil { // the rows so far from sstables, the rest from memtables
		t.Fatal(err)
	}
	unfollow := st.Follow(id)
	defer unfollow()
	write(800, 50, 100_000) // values larger than the arena's first block
	write(850, 30, 5)       // while followed: from the tail
	end := st.Buckets()[0].EndOffset

	var enc []EncodedEntry
	var arena []byte
	for _, from := range []int64{0, 1, 255, 256, 300, 599, 600, 700, end - 80, end - 30, end - 1, end} {
		for _, limit := range []int{0, 1, 7, 256, 1000} {
			want, err := st.Read(id, from, limit, nil)
			if err != nil {
				t.Fatal(err)
			}
			enc, arena, err = st.ReadEncoded(id, from, limit, enc, arena)
			if err != nil {
				t.Fatal(err)
			}
			if len(enc) != len(want) {
				t.Fatalf("from %d limit %d: %d rows, Read %d", from, limit, len(enc), len(want))
			}
			for i, e := range enc {
				r, err := rowcodec.DecodeValue(tbl, e.Value)
				if err != nil {
					t.Fatalf("from %d limit %d row %d: %v", from, limit, i, err)
				}
				w := want[i]
				if e.Offset != w.Offset || e.Kind != w.Kind || e.CommitMs != w.CommitMs || !merge.RowEqual(r, w.Row) {
					t.Fatalf("from %d limit %d row %d: got %d %v %d %v, want %d %v %d %v", from, limit, i,
						e.Offset, e.Kind, e.CommitMs, formatRow(r), w.Offset, w.Kind, w.CommitMs, formatRow(w.Row))
				}
			}
		}
	}
	// Errors as Read's: beyond the end offset.
	_, _, err := st.ReadEncoded(id, end+1, 0, nil, nil)
	wantKind(t, err, ErrOutOfRange)
}
