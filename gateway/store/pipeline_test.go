package store

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/setats/setats/merge"
)

// TestApplyPipelined: writes applied one after the other without waiting for their fsyncs each
// see the state of the writes before them (the changelog obeys the RowKind state machine and
// folds to the state), get dense, increasing offsets per bucket, and are all durable and
// published once waited for, in whatever order the waits come.
func TestApplyPipelined(t *testing.T) {
	st := openTable(t, resolve(t, t.TempDir(), spec("kv", "id INT, v STRING", "id", "", 3, "", nil)), &fakeClock{ms: 5})
	ctx := context.Background()
	const n = 30
	var ps []*Pending
	for i := range n {
		b := kvBatch([]int32{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, int32(100 + i)}, fmt.Sprint("v", i))
		p, err := st.Apply(ctx, b)
		if err != nil {
			t.Fatal(err)
		}
		ps = append(ps, p)
	}
	canceled, cancel := context.WithCancel(ctx)
	cancel()
	_, err := st.Apply(canceled, kvBatch([]int32{0}, "canceled"))
	wantKind(t, err, context.Canceled)
	commits := make([]Commit, n)
	for i := n - 1; i >= 0; i-- {
		c, err := ps[i].Wait()
		if err != nil {
			t.Fatal(err)
		}
		if again, err := ps[i].Wait(); err != nil || again.ChangelogRows != c.ChangelogRows {
			t.Fatalf("second Wait of write %d: %+v %v", i, again, err)
		}
		commits[i] = c
	}
	ends := map[BucketID]int64{}
	for i, c := range commits {
		if want := int64(10*2 + 1); i > 0 && c.ChangelogRows != want {
			t.Fatalf("write %d: %d changelog rows, want %d (-U/+U per updated key, +I for the new one)", i, c.ChangelogRows, want)
		}
		for _, bo := range c.Buckets {
			if bo.EndOffset <= ends[bo.BucketID] {
				t.Fatalf("write %d: bucket %v end offset %d after %d", i, bo.BucketID, bo.EndOffset, ends[bo.BucketID])
			}
			ends[bo.BucketID] = bo.EndOffset
		}
	}
	for _, bo := range st.Buckets() {
		if bo.EndOffset != ends[bo.BucketID] {
			t.Fatalf("bucket %v published end %d, last commit said %d", bo.BucketID, bo.EndOffset, ends[bo.BucketID])
		}
	}
	checkFold(t, st)
	if r, ok, err := st.Lookup(merge.Row{int32(3), nil}); err != nil || !ok || r[1] != fmt.Sprint("v", n-1) {
		t.Fatalf("Lookup(3) = %v %v %v", r, ok, err)
	}
}

// TestApplyThenClose: Close waits for the fsyncs of writes nobody waited for; they are durable
// and published, and found again after reopening.
func TestApplyThenClose(t *testing.T) {
	tbl := resolve(t, t.TempDir(), spec("kv", "id INT, v STRING", "id", "", 2, "", nil))
	st, err := Open(tbl, Options{Clock: (&fakeClock{ms: 5}).now})
	if err != nil {
		t.Fatal(err)
	}
	var ps []*Pending
	for i := range 10 {
		p, err := st.Apply(context.Background(), kvBatch([]int32{int32(i), 1000}, fmt.Sprint("v", i)))
		if err != nil {
			t.Fatal(err)
		}
		ps = append(ps, p)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	for i, p := range ps {
		if _, err := p.Wait(); err != nil {
			t.Fatalf("write %d: %v", i, err)
		}
	}
	st = openTable(t, tbl, &fakeClock{ms: 6})
	if got := len(state(t, st)); got != 11 {
		t.Fatalf("%d keys after reopening, want 11", got)
	}
	checkFold(t, st)
}

// TestFollowTail: reads of a followed bucket served from the in-memory tail equal the reads from
// Pebble, for writes of every size (one row, several chunks, a row larger than a chunk, more than
// the tail holds), a write prepared before the first follower came, and after retention.
func TestFollowTail(t *testing.T) {
	clock := &fakeClock{ms: 100}
	tbl := resolve(t, t.TempDir(), spec("tl", "id INT, v STRING", "id", "", 1, "", map[string]string{"changelog.retention.ms": "1000"}))
	st := openTable(t, tbl, clock)
	id := BucketID{}
	ids := func(from, n int32) []int32 {
		var out []int32
		for i := range n {
			out = append(out, from+i)
		}
		return out
	}
	type read struct {
		from int64
		got  []Entry
	}
	var reads []read
	var firsts []int64 // first offset of every write
	// readBoth records reads from the newest write's offsets; served from the tail when tail.
	readBoth := func(tail bool, c Commit) {
		t.Helper()
		end := c.Buckets[0].EndOffset
		first := end - c.ChangelogRows
		firsts = append(firsts, first)
		for _, from := range []int64{first, (first + end) / 2, end - 1, end} {
			if _, _, chunks, _, _ := st.readView(id, from); (chunks != nil) != (tail && from < end) {
				t.Fatalf("offset %d (write [%d, %d)): tail chunks %v, want tail %v", from, first, end, chunks != nil, tail)
			}
			es, err := st.Read(id, from, 0, nil)
			if err != nil || int64(len(es)) != end-from {
				t.Fatalf("read from %d: %d rows, %v; want %d", from, len(es), err, end-from)
			}
			reads = append(reads, read{from, es})
		}
	}
	write := func(b func() Commit) Commit {
		c := b()
		clock.ms += 100
		return c
	}
	// Written before anyone follows: not in the tail.
	readBoth(false, write(func() Commit { return mustWrite(t, st, kvBatch(ids(0, 10), "before")) }))
	// Prepared before the first follower, published after: a gap the tail does not cover.
	p, err := st.Apply(context.Background(), kvBatch(ids(0, 5), "gap"))
	if err != nil {
		t.Fatal(err)
	}
	unfollow := st.Follow(id)
	c, err := p.Wait()
	if err != nil {
		t.Fatal(err)
	}
	clock.ms += 100
	readBoth(false, c)
	for _, w := range []struct {
		ids []int32
		v   string
	}{
		{ids(0, 1), "one"},                           // -U +U
		{ids(100, 700), "short"},                     // 700 rows: 3 chunks by count
		{ids(100, 300), strings.Repeat("x", 200)},    // 600 rows of ~200 bytes: chunks by size
		{ids(5, 1), strings.Repeat("y", 70000)},      // one row larger than a chunk
		{ids(0, 3), "small"},                         // small again
		{ids(1000, 2), strings.Repeat("z", 100_000)}, // more than the tail holds
		{ids(0, 2), "last"},
	} {
		c := write(func() Commit { return mustWrite(t, st, kvBatch(w.ids, w.v)) })
		if len(w.v) == 100_000 {
			end := c.Buckets[0].EndOffset
			if _, _, chunks, _, _ := st.readView(id, end-2); chunks != nil {
				t.Fatal("the tail holds more than tailMaxBytes")
			}
			if _, _, chunks, _, _ := st.readView(id, end-1); chunks == nil {
				t.Fatal("the tail lost the newest row")
			}
			firsts = append(firsts, end-2)
			continue
		}
		readBoth(true, c)
	}
	// Reads from the tail, from the boundaries and across writes, equal reads from Pebble.
	for _, from := range firsts {
		es, err := st.Read(id, from, 0, nil)
		if err != nil {
			t.Fatal(err)
		}
		reads = append(reads, read{from, es})
	}
	checkFold(t, st)
	unfollow()
	unfollow() // twice is harmless
	if _, _, chunks, _, _ := st.readView(id, firsts[len(firsts)-1]); chunks != nil {
		t.Fatal("the tail outlived its last follower")
	}
	for _, r := range reads {
		es, err := st.Read(id, r.from, 0, nil)
		if err != nil {
			t.Fatal(err)
		}
		if len(es) < len(r.got) {
			t.Fatalf("from %d: %d rows from Pebble, %d from the tail", r.from, len(es), len(r.got))
		}
		for i, e := range r.got {
			p := es[i]
			if e.Offset != p.Offset || e.Kind != p.Kind || e.CommitMs != p.CommitMs || !merge.RowEqual(e.Row, p.Row) {
				t.Fatalf("from %d: row %d is %+v from the tail, %+v from Pebble", r.from, i, e, p)
			}
		}
	}

	// Retention under a follower: removed offsets are OutOfRange, the rest still read.
	defer st.Follow(id)()
	c = write(func() Commit { return mustWrite(t, st, kvBatch(ids(0, 4), "kept")) })
	first := c.Buckets[0].EndOffset - c.ChangelogRows
	if _, err := st.ApplyRetention(clock.ms - 150 + 1000); err != nil {
		t.Fatal(err)
	}
	o, _ := st.Offsets(id)
	if o.StartOffset != first {
		t.Fatalf("retention kept from %d, want %d", o.StartOffset, first)
	}
	_, err = st.Read(id, first-1, 0, nil)
	wantKind(t, err, ErrOutOfRange)
	if es, err := st.Read(id, first, 0, nil); err != nil || len(es) != 8 || es[0].Offset != first {
		t.Fatalf("read after retention: %d rows, %v", len(es), err)
	}
	if _, _, chunks, _, _ := st.readView(id, first); chunks == nil {
		t.Fatal("the tail lost the retained write")
	}
}
