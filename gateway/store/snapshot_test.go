package store

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand"
	"sync"
	"testing"

	"github.com/setats/setats/gateway/row"
	"github.com/setats/setats/gateway/rowcodec"
	"github.com/setats/setats/merge"
)

// TestSnapshotViewIsTheFoldAtItsEndOffset takes snapshot views while writers update, insert and
// delete keys of the same buckets, and checks for each view that its rows are exactly the fold of
// the changelog rows [0, E) of its bucket, in key order, whatever page size reads them, and that
// resuming after any key gives the rest.
func TestSnapshotViewIsTheFoldAtItsEndOffset(t *testing.T) {
	tbl := resolve(t, t.TempDir(), spec("snap", "id INT, v STRING", "id", "", 2, "", nil))
	st := openTable(t, tbl, &fakeClock{ms: 1})
	ctx := context.Background()
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rnd := rand.New(rand.NewSource(int64(w)))
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				b := &row.Batch{Declared: []bool{true, true}}
				for range 1 + rnd.Intn(20) {
					k := merge.UpdateAfter
					if rnd.Intn(5) == 0 {
						k = merge.Delete
					}
					b.Kinds = append(b.Kinds, k)
					b.Rows = append(b.Rows, merge.Row{int32(rnd.Intn(200)), fmt.Sprintf("w%d-%d", w, i)})
				}
				if _, err := st.Write(ctx, b); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	for round := range 30 {
		id := BucketID{Bucket: int32(round % 2)}
		v, err := st.OpenSnapshot(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		// The fold of [0, E).
		es, err := st.Read(id, 0, int(v.EndOffset()), nil)
		if err != nil || int64(len(es)) != v.EndOffset() {
			t.Fatalf("read [0, %d): %d rows, %v", v.EndOffset(), len(es), err)
		}
		fold := map[string]merge.Row{}
		for _, e := range es {
			k := string(rowcodec.EncodeKey(tbl, e.Row))
			if e.Kind == merge.Delete || e.Kind == merge.UpdateBefore {
				delete(fold, k)
			} else {
				fold[k] = e.Row
			}
		}
		page := 1 + round%7
		var got []SnapshotRow
		var after []byte
		for {
			rows, more, err := v.Scan(after, page, 0, nil)
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, rows...)
			if len(rows) > 0 {
				after = rows[len(rows)-1].Key
			}
			if !more {
				break
			}
		}
		if len(got) != len(fold) {
			t.Fatalf("round %d: view at %d has %d rows, the fold %d", round, v.EndOffset(), len(got), len(fold))
		}
		for i, r := range got {
			if i > 0 && bytes.Compare(got[i-1].Key, r.Key) >= 0 {
				t.Fatalf("round %d: keys out of order at %d", round, i)
			}
			if want := fold[string(r.Key)]; formatRow(want) != formatRow(r.Row) {
				t.Fatalf("round %d: key %x: view %s, fold %s", round, r.Key, formatRow(r.Row), formatRow(want))
			}
		}
		if len(got) > 2 {
			rest, _, err := v.Scan(got[1].Key, 0, 0, nil)
			if err != nil || len(rest) != len(got)-2 {
				t.Fatalf("resume after the second key: %d rows, want %d (%v)", len(rest), len(got)-2, err)
			}
		}
		v.Release()
		v.Release() // twice is fine
	}
	close(stop)
	wg.Wait()
	if n := st.OpenViews(); n != 0 {
		t.Fatalf("%d views open after release", n)
	}
}

// TestSnapshotViewLease: a view not read for its lease is released by ReleaseExpiredViews; its
// Scan then fails Aborted, asking to resume with a new view.
func TestSnapshotViewLease(t *testing.T) {
	tbl := resolve(t, t.TempDir(), spec("lease", "id INT, v STRING", "id", "", 1, "", nil))
	clock := &fakeClock{ms: 1000}
	st, err := Open(tbl, Options{Clock: clock.now, CacheBytes: 8 << 20, ViewLeaseMs: 500})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	b, _ := parseRows(tbl, nil, []string{"+I(1,'a') +I(2,'b')"})
	if _, err := st.Write(context.Background(), b); err != nil {
		t.Fatal(err)
	}
	v, err := st.OpenSnapshot(context.Background(), BucketID{})
	if err != nil || v.EndOffset() != 2 {
		t.Fatalf("open: %v E=%d", err, v.EndOffset())
	}
	clock.ms = 1400
	if _, _, err := v.Scan(nil, 1, 0, nil); err != nil { // renews until 1900
		t.Fatal(err)
	}
	clock.ms = 1800
	if n := st.ReleaseExpiredViews(clock.ms); n != 0 {
		t.Fatalf("released %d views inside the lease", n)
	}
	clock.ms = 2000
	if n := st.ReleaseExpiredViews(clock.ms); n != 1 {
		t.Fatalf("released %d views after the lease, want 1", n)
	}
	_, _, err = v.Scan(nil, 1, 0, nil)
	if !errors.Is(err, ErrAborted) {
		t.Fatalf("scan of a released view: %v, want Aborted", err)
	}
	v.Release()
}

// TestTruncateChangelogWholeChunks: TruncateChangelog never removes a row at or above upto, and
// removes only whole chunks.
func TestTruncateChangelogWholeChunks(t *testing.T) {
	tbl := resolve(t, t.TempDir(), spec("trunc", "id INT, v STRING", "id", "", 1, "", nil))
	st := openTable(t, tbl, &fakeClock{ms: 1})
	for _, in := range []string{"+I(1,'a') +I(2,'b') +I(3,'c')", "+I(4,'a') +I(5,'b')", "+I(6,'a')"} {
		b, _ := parseRows(tbl, nil, []string{in})
		if _, err := st.Write(context.Background(), b); err != nil {
			t.Fatal(err)
		}
	}
	id := BucketID{}
	for _, c := range []struct{ upto, start int64 }{{2, 0}, {3, 3}, {4, 3}, {5, 5}, {6, 6}, {9, 6}} {
		if _, err := st.TruncateChangelog(id, c.upto, nil); err != nil {
			t.Fatal(err)
		}
		if o, _ := st.Offsets(id); o.StartOffset != c.start {
			t.Fatalf("truncate to %d: start %d, want %d", c.upto, o.StartOffset, c.start)
		}
	}
}
