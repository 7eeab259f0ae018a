package store

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/vfs/errorfs"
	"github.com/setats/setats/gateway/rowcodec"
)

// walFault injects errorfs.ErrInjected into the operations of kind on WAL files (*.log) while on.
type walFault struct {
	kinds []errorfs.OpKind
	on    atomic.Bool
	hits  atomic.Int32
}

func (f *walFault) String() string { return "walFault" }

func (f *walFault) MaybeError(op errorfs.Op) error {
	if !f.on.Load() || !strings.HasSuffix(op.Path, ".log") {
		return nil
	}
	for _, k := range f.kinds {
		if op.Kind == k {
			f.hits.Add(1)
			return errorfs.ErrInjected
		}
	}
	return nil
}

// TestWALFailure: a failed WAL write or WAL fsync fails the write with an error naming the
// table (Unavailable), reports the failure once, refuses later writes and retention at once
// (before this, a write after a WAL failure hung forever in Pebble's commit pipeline), lets
// Close return, and after a crash (only synced data kept) every acknowledged row is there.
func TestWALFailure(t *testing.T) {
	for _, tc := range []struct {
		name  string
		kinds []errorfs.OpKind
	}{
		{"write", []errorfs.OpKind{errorfs.OpFileWrite, errorfs.OpFileWriteAt}},
		{"fsync", []errorfs.OpKind{errorfs.OpFileSync, errorfs.OpFileSyncData, errorfs.OpFileSyncTo}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mem := vfs.NewCrashableMem()
			fault := &walFault{kinds: tc.kinds}
			tbl := resolve(t, "/wh", spec("kv", "id INT, v STRING", "id", "", 2, "", nil))
			var failures atomic.Int32
			var reported error
			st, err := Open(tbl, Options{
				FS: errorfs.Wrap(mem, fault), CacheBytes: 8 << 20, Clock: (&fakeClock{ms: 1000}).now,
				OnFailure: func(err error) { failures.Add(1); reported = err },
			})
			if err != nil {
				t.Fatal(err)
			}
			acked := mustWrite(t, st, kvBatch([]int32{1, 2, 3}, "a"))

			fault.on.Store(true)
			_, err = st.Write(context.Background(), kvBatch([]int32{4, 5}, "b"))
			if !errors.Is(err, ErrTableFailed) || !strings.Contains(err.Error(), "table db.kv") {
				t.Fatalf("write with a failing WAL %s: %v", tc.name, err)
			}
			var f *ErrFailed
			if !errors.As(err, &f) || !errors.Is(err, errorfs.ErrInjected) || fault.hits.Load() == 0 {
				t.Fatalf("error %v (%T), %d faults hit", err, err, fault.hits.Load())
			}
			if failures.Load() != 1 || !errors.Is(reported, errorfs.ErrInjected) || !errors.Is(st.Err(), errorfs.ErrInjected) {
				t.Fatalf("OnFailure called %d times with %v; Err %v", failures.Load(), reported, st.Err())
			}
			// Later writes and retention are refused without entering Pebble (which would block
			// forever); the disk being fine again changes nothing (no fsync retry).
			fault.on.Store(false)
			if _, err := st.Write(context.Background(), kvBatch([]int32{6}, "c")); !errors.As(err, &f) {
				t.Fatalf("write after the failure: %v", err)
			}
			if _, err := st.ApplyRetention(1 << 40); !errors.As(err, &f) {
				t.Fatalf("retention after the failure: %v", err)
			}
			if failures.Load() != 1 {
				t.Fatalf("OnFailure called %d times", failures.Load())
			}
			// Published rows stay readable.
			if got := changelog(t, st); len(got) == 0 {
				t.Fatal("no changelog readable after the failure")
			}
			if err := st.Close(); !errors.As(err, &f) {
				t.Fatalf("Close of a failed table: %v", err)
			}

			// Crash: only synced data survives; Pebble replays the WAL on open.
			st2, err := Open(tbl, Options{FS: mem.CrashClone(vfs.CrashCloneCfg{}), CacheBytes: 8 << 20})
			if err != nil {
				t.Fatal(err)
			}
			defer st2.Close()
			s := state(t, st2)
			for _, r := range kvBatch([]int32{1, 2, 3}, "a").Rows {
				if got, ok := s[string(rowcodec.EncodeKey(st2.tbl, r))]; !ok || formatRow(got) != formatRow(r) {
					t.Fatalf("acknowledged row %s lost after the crash; state %v", formatRow(r), s)
				}
			}
			var end int64
			for _, b := range st2.Buckets() {
				end += b.EndOffset
			}
			if end < acked.ChangelogRows {
				t.Fatalf("changelog rows after the crash %d < acknowledged %d", end, acked.ChangelogRows)
			}
		})
	}
}
