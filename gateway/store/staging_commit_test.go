package store

import (
	"context"
	"fmt"
	"testing"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/setats/setats/gateway/row"
)

// stagedKV is a staging test table "id INT, v STRING" with its staging of ("job", 0) started.
func stagedKV(t *testing.T, dir string) (*Table, int64) {
	t.Helper()
	tbl := resolve(t, dir, spec("kv", "id INT, v STRING", "id", "", 2, "", nil))
	st := openTable(t, tbl, &fakeClock{ms: 10})
	r, err := st.AbortStaged("job", 0, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	return st, r.Epoch
}

func mustStage(t *testing.T, st *Table, ckpt, epoch int64, b *row.Batch) {
	t.Helper()
	p, err := st.Stage(context.Background(), StageTarget{CommitUser: "job", Subtask: 0, Checkpoint: ckpt, Epoch: epoch}, b, nil)
	if err == nil {
		_, err = p.Wait()
	}
	if err != nil {
		t.Fatalf("stage checkpoint %d: %v", ckpt, err)
	}
}

func mustCommit(t *testing.T, st *Table, ckpt int64) CommitResult {
	t.Helper()
	r, err := st.CommitStaged(context.Background(), "job", 0, ckpt)
	if err == nil && r.Pending != nil {
		_, err = r.Pending.Wait()
	}
	if err != nil {
		t.Fatalf("commit checkpoint %d: %v", ckpt, err)
	}
	return r
}

// recommitThenNext checks, after a restart (what), that committing checkpoint 1 ({1, 2, 3} "a")
// again is a no-op and that checkpoint 2 ({1} "b") then commits: 3, then 5 changelog rows
// (+I 1, 2, 3; -U/+U 1).
func recommitThenNext(t *testing.T, st *Table, what string) {
	t.Helper()
	if r := mustCommit(t, st, 1); !r.AlreadyCommitted {
		t.Fatalf("checkpoint 1 committed a second time after %s", what)
	}
	if n := changelogRows(t, st); n != 3 {
		t.Fatalf("%d changelog rows after %s, want 3", n, what)
	}
	mustCommit(t, st, 2)
	if n := changelogRows(t, st); n != 5 {
		t.Fatalf("%d changelog rows after checkpoint 2, want 5", n)
	}
}

// changelogRows counts the changelog rows of every bucket.
func changelogRows(t *testing.T, st *Table) int {
	n := 0
	for _, es := range changelog(t, st) {
		n += len(es)
	}
	return n
}

// TestStageDuringCommit: while checkpoint 1's commit merges (held at the "apply" hook), the
// staging mutex is free, a batch of checkpoint 2 stages and becomes durable, and a batch of
// checkpoint 1 is refused; both checkpoints then commit with the right state and changelog.
func TestStageDuringCommit(t *testing.T) {
	st, epoch := stagedKV(t, t.TempDir())
	mustStage(t, st, 1, epoch, kvBatch([]int32{1, 2, 3}, "a"))
	ss := st.stageFor("job", 0)
	ran := false
	st.commitHook = func(point string) {
		if point != "apply" || ran {
			return
		}
		ran = true
		if !ss.mu.TryLock() {
			t.Fatal("the staging mutex is held while the commit merges")
		}
		ss.mu.Unlock()
		mustStage(t, st, 2, epoch, kvBatch([]int32{1}, "b"))
		_, err := st.Stage(context.Background(), StageTarget{CommitUser: "job", Checkpoint: 1, Epoch: epoch}, kvBatch([]int32{4}, "late"), nil)
		wantKind(t, err, ErrFailedPrecondition, "checkpoint 1 is being committed")
	}
	mustCommit(t, st, 1)
	if !ran {
		t.Fatal("the commit hook did not run")
	}
	st.commitHook = nil
	if got, want := fmt.Sprint(state(t, st)), "map[\x80\x00\x00\x01:[1 a] \x80\x00\x00\x02:[2 a] \x80\x00\x00\x03:[3 a]]"; got != want {
		t.Fatalf("state after checkpoint 1: %q, want %q", got, want)
	}
	if si := st.Staging(); len(si) != 1 || si[0].Committed != 1 || fmt.Sprint(si[0].StagedCheckpoints) != "[2]" || si[0].StagedRows != 1 {
		t.Fatalf("staging after checkpoint 1: %+v", si)
	}
	mustCommit(t, st, 2)
	if n := changelogRows(t, st); n != 5 { // +I 1, 2, 3; -U/+U 1
		t.Fatalf("%d changelog rows, want 5", n)
	}
	if b, r := st.StagingStats(); b != 0 || r != 0 || st.stagedMem.Load() != 0 {
		t.Fatalf("staged %d bytes %d rows (%d in memory) after both commits", b, r, st.stagedMem.Load())
	}
}

// TestRestartAfterStageDuringCommit: a Stage of checkpoint 2 that rewrites the staging header
// after checkpoint 1's commit batch is in Pebble (the "applied" hook) must not roll back the
// committed checkpoint: after a restart, committing checkpoint 1 again is a no-op (not a
// refusal, not a second changelog row) and checkpoint 2, read back from Pebble, commits.
func TestRestartAfterStageDuringCommit(t *testing.T) {
	dir := t.TempDir()
	st, epoch := stagedKV(t, dir)
	mustStage(t, st, 1, epoch, kvBatch([]int32{1, 2, 3}, "a"))
	st.commitHook = func(point string) {
		if point == "applied" {
			mustStage(t, st, 2, epoch, kvBatch([]int32{1}, "b"))
		}
	}
	mustCommit(t, st, 1)
	st.commitHook = nil
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}

	st = openTable(t, resolve(t, dir, spec("kv", "id INT, v STRING", "id", "", 2, "", nil)), &fakeClock{ms: 20})
	if si := st.Staging(); len(si) != 1 || si[0].Committed != 1 || fmt.Sprint(si[0].StagedCheckpoints) != "[2]" {
		t.Fatalf("staging after the restart: %+v", si)
	}
	recommitThenNext(t, st, "the restart")
	checkFold(t, st)
}

// TestStagedMemoryBound: past maxStagedMemBytes a checkpoint's batches are read back from
// Pebble at its commit, in staging order, with the same result.
func TestStagedMemoryBound(t *testing.T) {
	old := maxStagedMemBytes
	t.Cleanup(func() { maxStagedMemBytes = old })
	st, epoch := stagedKV(t, t.TempDir())
	mustStage(t, st, 1, epoch, kvBatch([]int32{1, 2}, "a"))
	if st.stagedMem.Load() == 0 {
		t.Fatal("the first batch is not kept in memory")
	}
	maxStagedMemBytes = stagedMemAll.Load() // room for the first batch only
	mustStage(t, st, 1, epoch, kvBatch([]int32{1}, "b"))
	if m := st.stagedMem.Load(); m != 0 || stagedMemAll.Load() != 0 {
		t.Fatalf("%d bytes in memory past the bound, want 0", m)
	}
	mustCommit(t, st, 1)
	if got := fmt.Sprint(state(t, st)); got != "map[\x80\x00\x00\x01:[1 b] \x80\x00\x00\x02:[2 a]]" {
		t.Fatalf("state %q", got)
	}
}

// TestCrashBetweenCommitAndStagedDelete: a crash after a commit's merge is durable but before
// its staged rows are deleted from the staging DB (the "delete-staged" hook) leaves those rows
// behind; on reopen they are ignored (not counted, not committed again) and deleted, while the
// rows of the next, uncommitted checkpoint stay staged and commit.
func TestCrashBetweenCommitAndStagedDelete(t *testing.T) {
	mem := vfs.NewCrashableMem()
	tbl := resolve(t, "/wh", spec("kv", "id INT, v STRING", "id", "", 2, "", nil))
	open := func(fs vfs.FS) *Table {
		st, err := Open(tbl, Options{FS: fs, Clock: (&fakeClock{ms: 10}).now, CacheBytes: 8 << 20})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = st.Close() })
		return st
	}
	st := open(mem)
	a, err := st.AbortStaged("job", 0, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	mustStage(t, st, 1, a.Epoch, kvBatch([]int32{1, 2, 3}, "a"))
	mustStage(t, st, 2, a.Epoch, kvBatch([]int32{1}, "b"))
	var crashed *vfs.MemFS
	st.commitHook = func(point string) {
		if point == "delete-staged" {
			crashed = mem.CrashClone(vfs.CrashCloneCfg{})
		}
	}
	mustCommit(t, st, 1)
	if crashed == nil {
		t.Fatal("the delete-staged hook did not run before the commit was reported")
	}
	st.commitHook = nil
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}

	st = open(crashed)
	if si := st.Staging(); len(si) != 1 || si[0].Committed != 1 || fmt.Sprint(si[0].StagedCheckpoints) != "[2]" || si[0].StagedRows != 1 {
		t.Fatalf("staging after the crash: %+v", si)
	}
	if _, r := st.StagingStats(); r != 1 {
		t.Fatalf("%d staged rows after the crash, want 1", r)
	}
	recommitThenNext(t, st, "the crash")
	it, err := st.sdb.Load().NewIter(&pebble.IterOptions{LowerBound: []byte{tagStaging}, UpperBound: []byte{tagStaging + 1}})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for it.First(); it.Valid(); it.Next() {
		n++ // the header only: rows of checkpoint 1 deleted at load, of 2 by its commit
	}
	if err := it.Close(); err != nil {
		t.Fatal(err)
	}
	if n != 1 {
		t.Fatalf("%d keys in the staging DB after both commits, want 1 (the header)", n)
	}
	checkFold(t, st)
}

// TestStagingMovedFromTableDB: staging headers and staged rows in the table's DB (where an older
// gateway kept them) are moved into the staging DB at open, and commit as if staged there.
func TestStagingMovedFromTableDB(t *testing.T) {
	dir := t.TempDir()
	st, epoch := stagedKV(t, dir)
	mustStage(t, st, 1, epoch, kvBatch([]int32{1, 2, 3}, "a"))
	mustStage(t, st, 2, epoch, kvBatch([]int32{1}, "b"))
	// The older layout: every staging key of the staging DB in the table's DB instead.
	sdb := st.sdb.Load()
	it, err := sdb.NewIter(&pebble.IterOptions{LowerBound: []byte{tagStaging}, UpperBound: []byte{tagStaging + 1}})
	if err != nil {
		t.Fatal(err)
	}
	moved := 0
	for it.First(); it.Valid(); it.Next() {
		if err := st.db.Set(it.Key(), it.Value(), pebble.Sync); err != nil {
			t.Fatal(err)
		}
		moved++
	}
	if err := it.Close(); err != nil {
		t.Fatal(err)
	}
	if moved != 3 { // the header, one batch of each checkpoint
		t.Fatalf("%d staging keys, want 3", moved)
	}
	if err := sdb.DeleteRange([]byte{tagStaging}, []byte{tagStaging + 1}, pebble.Sync); err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}

	st = openTable(t, resolve(t, dir, spec("kv", "id INT, v STRING", "id", "", 2, "", nil)), &fakeClock{ms: 20})
	if si := st.Staging(); len(si) != 1 || si[0].Epoch != epoch || fmt.Sprint(si[0].StagedCheckpoints) != "[1 2]" || si[0].StagedRows != 4 {
		t.Fatalf("staging after the move: %+v", si)
	}
	mustCommit(t, st, 1)
	mustCommit(t, st, 2)
	if n := changelogRows(t, st); n != 5 { // +I 1, 2, 3; -U/+U 1
		t.Fatalf("%d changelog rows, want 5", n)
	}
	v, closer, err := st.db.Get(st.stageFor("job", 0).headerKey())
	if err == nil {
		_ = closer.Close()
		t.Fatalf("the staging header is still in the table's DB: %x", v)
	}
	checkFold(t, st)
}
