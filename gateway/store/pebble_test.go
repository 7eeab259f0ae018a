package store

import (
	"context"
	"runtime"
	"strings"
	"testing"
)

// TestChangelogChunksInBlobFiles checks the value separation of PebbleOptions: changelog chunks
// (values of blobMinValueBytes or more) live in Pebble blob files, which compactions move by
// reference instead of rewriting, reads after a reopen find them, and retention's range deletion
// of every chunk leaves no blob file behind once compacted, while the state rows stay.
func TestChangelogChunksInBlobFiles(t *testing.T) {
	clock := &fakeClock{ms: 100}
	dir := t.TempDir()
	tbl := resolve(t, dir, spec("blob", "id INT, v STRING", "id", "", 1, "", map[string]string{"changelog.retention.ms": "1000"}))
	st, err := Open(tbl, Options{Clock: clock.now, CacheBytes: 8 << 20})
	if err != nil {
		t.Fatal(err)
	}
	var ids []int32
	for i := int32(0); i < 256; i++ {
		ids = append(ids, i)
	}
	for w := 0; w < 4; w++ {
		mustWrite(t, st, kvBatch(ids, strings.Repeat(string(rune('a'+w)), 100)))
		clock.ms += 100
	}
	if err := st.db.Flush(); err != nil {
		t.Fatal(err)
	}
	m := st.db.Metrics()
	if m.BlobFiles.LiveCount == 0 || m.BlobFiles.ReferencedValueSize < 4*256*100 {
		t.Fatalf("after a flush: %d blob files holding %d value bytes, want the chunks (> %d bytes) in blob files",
			m.BlobFiles.LiveCount, m.BlobFiles.ReferencedValueSize, 4*256*100)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}

	st = openTable(t, tbl, clock)
	checkFold(t, st)
	all, err := st.Read(BucketID{}, 0, 0, nil)
	if err != nil || len(all) != 256+3*512 {
		t.Fatalf("read after reopen: %d rows (%v), want %d", len(all), err, 256+3*512)
	}

	clock.ms += 10_000
	if n, err := st.ApplyRetention(clock.ms); err != nil || n != int64(len(all)) {
		t.Fatalf("retention removed %d rows (%v), want %d", n, err, len(all))
	}
	if err := st.db.Compact(context.Background(), []byte{0}, []byte{0xff}, false); err != nil {
		t.Fatal(err)
	}
	if m := st.db.Metrics(); m.BlobFiles.LiveCount != 0 {
		t.Fatalf("after retention and a compaction: %d live blob files (%d bytes), want none", m.BlobFiles.LiveCount, m.BlobFiles.LiveSize)
	}
	if got := len(state(t, st)); got != len(ids) {
		t.Fatalf("state after retention: %d rows, want %d", got, len(ids))
	}
}

// TestCompactionConcurrencyRange checks PebbleOptions' bound on concurrent compactions per table
// DB: 1 up to 3 cores (two long L0 compactions on 2 cores left writers and readers no core), half
// of GOMAXPROCS above that, never more than 2 (one DB per table: many tables on many cores).
func TestCompactionConcurrencyRange(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	for _, c := range []struct{ procs, want int }{{1, 1}, {2, 1}, {3, 1}, {4, 2}, {5, 2}, {8, 2}, {64, 2}} {
		runtime.GOMAXPROCS(c.procs)
		lo, hi := PebbleOptions(nil, nil).CompactionConcurrencyRange()
		if lo != 1 || hi != c.want {
			t.Errorf("GOMAXPROCS %d: compaction concurrency %d..%d, want 1..%d", c.procs, lo, hi, c.want)
		}
	}
}
