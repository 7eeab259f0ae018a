package store

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/setats/setats/gateway/row"
	"github.com/setats/setats/gateway/rowcodec"
	"github.com/setats/setats/merge"
)

// TestReadFunc: ReadFunc calls its function with the rows Read returns (offsets, kinds, commit
// times, and values that decode to Read's rows), from Pebble and from a followed bucket's
// in-memory tail, from any offset (inside a chunk, at a chunk boundary) and with any row limit;
// ErrStopRead ends the read at the row that returned it without an error, another error of the
// function is returned as is, and the store's own errors are Read's.
func TestReadFunc(t *testing.T) {
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
	write(600, 200, 1000)                 // large values; ids 600-699 new, then updates of 0-99
	if err := st.db.Flush(); err != nil { // the rows so far from sstables, the rest from memtables
		t.Fatal(err)
	}
	unfollow := st.Follow(id)
	defer unfollow()
	write(800, 50, 100_000) // values larger than a chunk
	write(850, 30, 5)       // while followed: from the tail
	end := st.Buckets()[0].EndOffset

	type got struct {
		off, commitMs int64
		kind          merge.RowKind
		row           merge.Row
	}
	read := func(from int64, limit, stopAt int) ([]got, error) {
		var rows []got
		err := st.ReadFunc(id, from, limit, func(off int64, kind merge.RowKind, commitMs int64, val []byte) error {
			if len(rows) == stopAt {
				return ErrStopRead
			}
			r, err := rowcodec.DecodeValue(tbl, val)
			if err != nil {
				return err
			}
			rows = append(rows, got{off, commitMs, kind, r})
			return nil
		})
		return rows, err
	}
	for _, from := range []int64{0, 1, 255, 256, 300, 599, 600, 700, end - 80, end - 30, end - 1, end} {
		for _, limit := range []int{0, 1, 7, 256, 1000} {
			want, err := st.Read(id, from, limit, nil)
			if err != nil {
				t.Fatal(err)
			}
			for _, stopAt := range []int{-1, 0, 1, 255, 256, 600} {
				rows, err := read(from, limit, stopAt)
				if err != nil {
					t.Fatalf("from %d limit %d stop at %d: %v", from, limit, stopAt, err)
				}
				w := want
				if stopAt >= 0 && stopAt < len(w) {
					w = w[:stopAt]
				}
				if len(rows) != len(w) {
					t.Fatalf("from %d limit %d stop at %d: %d rows, want %d", from, limit, stopAt, len(rows), len(w))
				}
				for i, g := range rows {
					if g.off != w[i].Offset || g.kind != w[i].Kind || g.commitMs != w[i].CommitMs || !merge.RowEqual(g.row, w[i].Row) {
						t.Fatalf("from %d limit %d stop at %d row %d: got %d %v %d %v, want %d %v %d %v", from, limit, stopAt, i,
							g.off, g.kind, g.commitMs, formatRow(g.row), w[i].Offset, w[i].Kind, w[i].CommitMs, formatRow(w[i].Row))
					}
				}
			}
		}
	}
	// The function's own error comes back as is.
	mine := errors.New("mine")
	if err := st.ReadFunc(id, 0, 0, func(int64, merge.RowKind, int64, []byte) error { return mine }); err != mine {
		t.Fatalf("function error: got %v, want it as is", err)
	}
	// Errors as Read's: beyond the end offset.
	_, err := read(end+1, 0, -1)
	wantKind(t, err, ErrOutOfRange)
}
