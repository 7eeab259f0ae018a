package store

import (
	"context"
	"fmt"
	"testing"

	"github.com/setats/setats/gateway/row"
	"github.com/setats/setats/merge"
)

// TestFollowNonexistentFreed: following buckets of partitions that were never written (and
// waiting on them), then leaving, leaves no bucket behind; nor does a refused write to a new
// bucket. A followed bucket that does get a row stays. Before, every such reader added a bucket
// for good (issue 7 item 4: +57 MiB per 20k follow DoGets on non-existent partitions).
func TestFollowNonexistentFreed(t *testing.T) {
	tbl := resolve(t, t.TempDir(), spec("p", "dt STRING, id INT, v STRING NOT NULL", "dt, id", "dt", 2, "", nil))
	st := openTable(t, tbl, &fakeClock{ms: 1})
	const n = 1000
	for i := range n {
		id := BucketID{Partition: fmt.Sprintf("dt=nope%d", i), Bucket: int32(i % 2)}
		unfollow := st.Follow(id)
		w := st.Wait(id, 0)
		unfollow()
		<-w // woken when the bucket is forgotten (a hang here is the failure)
		unfollow()
	}
	if got := st.MemBuckets(); got != 0 {
		t.Fatalf("%d buckets kept after %d followers of non-existent partitions left, want 0", got, n)
	}
	// Two followers of one bucket: it stays until the second leaves.
	id := BucketID{Partition: "dt=a", Bucket: 0}
	u1, u2 := st.Follow(id), st.Follow(id)
	u1()
	if st.MemBuckets() != 1 {
		t.Fatal("bucket forgotten while followed")
	}
	u2()
	// A refused write (v is NOT NULL, not declared) to new buckets leaves nothing.
	bad := &row.Batch{Declared: []bool{true, true, false}, Kinds: []merge.RowKind{merge.Insert}, Rows: []merge.Row{{"x", int32(1), nil}}}
	if _, err := st.Write(context.Background(), bad); err == nil {
		t.Fatal("write without a NOT NULL column accepted")
	}
	if got := st.MemBuckets(); got != 0 {
		t.Fatalf("%d buckets kept after a refused write", got)
	}
	// A followed bucket that gets a row stays after its follower left.
	u := st.Follow(BucketID{Partition: "dt=b", Bucket: 0})
	good := &row.Batch{Declared: []bool{true, true, true}, Kinds: []merge.RowKind{merge.Insert}, Rows: []merge.Row{{"b", int32(2), "v"}}}
	c := mustWrite(t, st, good)
	u()
	if got := st.MemBuckets(); got != 1 || len(st.Buckets()) != 1 || c.Buckets[0].Partition != "dt=b" {
		t.Fatalf("buckets %d %v after a write to %v", got, st.Buckets(), c.Buckets)
	}
}
