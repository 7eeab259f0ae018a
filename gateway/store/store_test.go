package store

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/setats/setats/catalog"
	"github.com/setats/setats/gateway/row"
	"github.com/setats/setats/gateway/rowcodec"
	"github.com/setats/setats/merge"
)

// kindNames are the names the tests print for the kinds of store errors: the gRPC codes the
// gateway answers with (gateway/errors.go).
var kindNames = []struct {
	kind error
	name string
}{
	{ErrInvalid, "InvalidArgument"}, {ErrFailedPrecondition, "FailedPrecondition"}, {ErrOutOfRange, "OutOfRange"},
	{ErrClosed, "Unavailable"}, {ErrTableFailed, "Unavailable"}, {ErrInternal, "Internal"}, {context.Canceled, "Canceled"}, {context.DeadlineExceeded, "DeadlineExceeded"},
	{ErrNotFound, "NotFound"}, {ErrPartitionDropped, "PartitionDropped"},
}

// formatError prints err as "error KIND: message" for the datadriven files.
func formatError(err error) string {
	name := "Unknown"
	for _, k := range kindNames {
		if errors.Is(err, k.kind) {
			name = k.name
			break
		}
	}
	return fmt.Sprintf("error %s: %s\n", name, err.Error())
}

func wantKind(t testing.TB, err error, kind error, contains ...string) {
	t.Helper()
	var typed *Error
	if !errors.Is(err, kind) || !errors.As(err, &typed) {
		t.Fatalf("want a store error of kind %v, got %v", kind, err)
	}
	for _, s := range contains {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("error %q does not contain %q", err, s)
		}
	}
}

// kvBatch builds a +U batch of (id, v) rows for a table "id INT, v STRING".
func kvBatch(ids []int32, v string) *row.Batch {
	b := &row.Batch{Declared: []bool{true, true}}
	for _, id := range ids {
		b.Kinds = append(b.Kinds, merge.UpdateAfter)
		b.Rows = append(b.Rows, merge.Row{id, v})
	}
	return b
}

func TestWriteReadRoundTrip(t *testing.T) {
	clock := &fakeClock{ms: 1000}
	st := openTable(t, resolve(t, t.TempDir(), spec("kv", "id INT, v STRING", "id", "", 4, "", nil)), clock)
	var ids []int32
	for i := int32(0); i < 200; i++ {
		ids = append(ids, i)
	}
	c := mustWrite(t, st, kvBatch(ids, "a"))
	if c.Rows != 200 || c.ChangelogRows != 200 || c.CommitMs != 1000 || len(c.Buckets) != 4 || len(c.NewBuckets) != 4 {
		t.Fatalf("commit %+v", c)
	}
	clock.ms = 2000
	c = mustWrite(t, st, kvBatch(ids[:50], "b"))
	if c.ChangelogRows != 100 || len(c.NewBuckets) != 0 {
		t.Fatalf("commit %+v", c)
	}
	var total int64
	for _, b := range st.Buckets() {
		total += b.EndOffset
		// Page through with small reads: offsets are dense and continue across pages.
		next := int64(0)
		var dst []Entry
		for next < b.EndOffset {
			var err error
			dst, err = st.Read(b.BucketID, next, 7, dst)
			if err != nil {
				t.Fatal(err)
			}
			if len(dst) == 0 || len(dst) > 7 {
				t.Fatalf("read %d rows", len(dst))
			}
			for _, e := range dst {
				if e.Offset != next {
					t.Fatalf("offset %d, want %d", e.Offset, next)
				}
				next++
			}
		}
		if es, err := st.Read(b.BucketID, b.EndOffset, 10, nil); err != nil || len(es) != 0 {
			t.Fatalf("read at end: %v %v", es, err)
		}
	}
	if total != 300 {
		t.Errorf("total changelog rows %d, want 300", total)
	}
	checkFold(t, st)

	r, ok, err := st.Lookup(merge.Row{int32(7), nil})
	if err != nil || !ok || r[1] != "b" {
		t.Errorf("Lookup(7) = %v %v %v", r, ok, err)
	}
	r, ok, err = st.Lookup(merge.Row{int32(70), "ignored"})
	if err != nil || !ok || r[1] != "a" {
		t.Errorf("Lookup(70) = %v %v %v", r, ok, err)
	}
	if _, ok, err = st.Lookup(merge.Row{int32(7000), nil}); err != nil || ok {
		t.Errorf("Lookup(7000) = %v %v", ok, err)
	}
	_, _, err = st.Lookup(merge.Row{nil, nil})
	wantKind(t, err, ErrInvalid, "id")
}

func TestWriteEmptyAndCanceled(t *testing.T) {
	st := openTable(t, resolve(t, t.TempDir(), spec("kv", "id INT, v STRING", "id", "", 2, "", nil)), &fakeClock{ms: 5})
	c, err := st.Write(context.Background(), kvBatch(nil, ""))
	if err != nil || c.Rows != 0 || len(st.Buckets()) != 0 {
		t.Fatalf("empty write: %+v %v", c, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = st.Write(ctx, kvBatch([]int32{1}, "a"))
	wantKind(t, err, context.Canceled)
	if len(st.Buckets()) != 0 || len(state(t, st)) != 0 {
		t.Fatal("a canceled write left data")
	}
	// A batch with rows of the wrong shape.
	bad := kvBatch([]int32{1}, "a")
	bad.Rows[0] = bad.Rows[0][:1]
	_, err = st.Write(context.Background(), bad)
	wantKind(t, err, ErrInvalid, "db.kv")
}

func TestReopenKeepsOffsetsAndState(t *testing.T) {
	dir := t.TempDir()
	tbl := resolve(t, dir, spec("kv", "id INT, v STRING", "id", "", 3, "", nil))
	clock := &fakeClock{ms: 10}
	st, err := Open(tbl, Options{Clock: clock.now})
	if err != nil {
		t.Fatal(err)
	}
	mustWrite(t, st, kvBatch([]int32{1, 2, 3, 4, 5, 6}, "a"))
	clock.ms = 20
	mustWrite(t, st, kvBatch([]int32{1, 2, 3}, "b"))
	before := st.Buckets()
	stateBefore := state(t, st)
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	_, err = st.Read(before[0].BucketID, 0, 1, nil)
	wantKind(t, err, ErrClosed)

	st = openTable(t, tbl, clock)
	after := st.Buckets()
	if fmt.Sprint(before) != fmt.Sprint(after) {
		t.Fatalf("buckets before %v, after reopen %v", before, after)
	}
	if got := state(t, st); fmt.Sprint(got) != fmt.Sprint(stateBefore) {
		t.Fatalf("state before %v, after %v", stateBefore, got)
	}
	clock.ms = 5 // a clock that went back: commit time stays >= the bucket's newest
	c := mustWrite(t, st, kvBatch([]int32{1}, "c"))
	if c.CommitMs != 20 {
		t.Errorf("commit ms %d, want 20", c.CommitMs)
	}
	checkFold(t, st)
}

func TestOpenRejectsOtherFormat(t *testing.T) {
	tbl := resolve(t, t.TempDir(), spec("kv", "id INT, v STRING", "id", "", 1, "", nil))
	st, err := Open(tbl, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := st.db.Set([]byte{tagVersion}, []byte("setats-store-999"), nil); err != nil {
		t.Fatal(err)
	}
	_ = st.Close()
	_, err = Open(tbl, Options{})
	wantKind(t, err, ErrFailedPrecondition, "setats-store-999")
}

func TestWait(t *testing.T) {
	st := openTable(t, resolve(t, t.TempDir(), spec("kv", "id INT, v STRING", "id", "", 1, "", nil)), &fakeClock{ms: 1})
	id := BucketID{Bucket: 0}
	ch := st.Wait(id, 0)
	if st.Wait(id, 0) != ch {
		t.Error("waiters of one offset do not share a channel")
	}
	select {
	case <-ch:
		t.Fatal("closed before any row")
	default:
	}
	mustWrite(t, st, kvBatch([]int32{1}, "a"))
	<-ch // closed by the commit (a hang here is the failure)
	select {
	case <-st.Wait(id, 0):
	default:
		t.Fatal("Wait below the end offset is not closed at once")
	}
	far := st.Wait(id, 2)                      // end is 1: needs end >= 3
	mustWrite(t, st, kvBatch([]int32{1}, "a")) // no change, no new row
	mustWrite(t, st, kvBatch([]int32{2}, "b")) // end 2
	select {
	case <-far:
		t.Fatal("closed before the end offset exceeded 2")
	default:
	}
	mustWrite(t, st, kvBatch([]int32{3}, "c")) // end 3
	<-far
	other := st.Wait(BucketID{Partition: "x", Bucket: 0}, 0)
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	<-other // closed by Close
	<-st.Wait(id, 100)
}

func TestConcurrentWriters(t *testing.T) {
	tbl := resolve(t, t.TempDir(), spec("cw", "id INT, p STRING, v BIGINT", "id,p", "p", 2, "", nil))
	st := openTable(t, tbl, &fakeClock{ms: 1})
	var commits sync.Map
	var wg sync.WaitGroup
	// Six writers: four own a partition each, two share one.
	parts := []string{"p0", "p1", "p2", "p3", "shared", "shared"}
	errs := make(chan error, len(parts))
	for w, p := range parts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(w), 1))
			for i := 0; i < 40; i++ {
				b := &row.Batch{Declared: []bool{true, true, true}}
				for j := 0; j < 25; j++ {
					kind := merge.UpdateAfter
					if rng.IntN(10) == 0 {
						kind = merge.Delete
					}
					b.Kinds = append(b.Kinds, kind)
					b.Rows = append(b.Rows, merge.Row{int32(rng.IntN(60)), p, int64(rng.IntN(3))})
				}
				c, err := st.Write(context.Background(), b)
				if err != nil {
					errs <- err
					return
				}
				commits.Store(fmt.Sprint(w, i), c)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	var emitted int64
	commits.Range(func(_, v any) bool { emitted += v.(Commit).ChangelogRows; return true })
	var ends int64
	for _, b := range st.Buckets() {
		ends += b.EndOffset
	}
	if ends != emitted {
		t.Fatalf("end offsets add up to %d, commits reported %d changelog rows", ends, emitted)
	}
	checkFold(t, st)
}

// model is the reference semantics of SPEC section 4, written independently of package merge.
type model struct {
	partial        bool // PARTIAL_UPDATE, else DEDUPLICATE
	ignoreDelete   bool
	removeOnDelete bool
	rows           map[string]merge.Row
}

// apply applies a batch; ok is false when the batch must fail (a delete that PARTIAL_UPDATE
// cannot apply), leaving the model unchanged.
func (m *model) apply(tbl *catalog.Table, b *row.Batch) (ok bool) {
	next := map[string]merge.Row{}
	for k, v := range m.rows {
		next[k] = v
	}
	for i, in := range b.Rows {
		k := string(rowcodec.EncodeKey(tbl, in))
		old, present := next[k]
		switch b.Kinds[i] {
		case merge.UpdateBefore:
		case merge.Delete:
			switch {
			case m.ignoreDelete:
			case m.partial && !m.removeOnDelete:
				return false
			default:
				delete(next, k)
			}
		default:
			r := make(merge.Row, len(in))
			if present {
				copy(r, old)
			}
			for c, v := range in {
				if b.Declared[c] && (!m.partial || v != nil) {
					r[c] = v
				}
			}
			next[k] = r
		}
	}
	m.rows = next
	return true
}

// TestModelRandomized writes random upserts, deletes and partial writes over a few hundred keys
// in several partitions and buckets, reopening the store between rounds; after every round the
// state equals the reference model and each bucket's changelog folds to the state with the
// RowKind rules (checkFold).
func TestModelRandomized(t *testing.T) {
	configs := []struct {
		name    string
		engine  string
		options map[string]string
		m       model
	}{
		{"deduplicate", "DEDUPLICATE", nil, model{}},
		{"deduplicate-ignore-delete", "DEDUPLICATE", map[string]string{"ignore-delete": "true"}, model{ignoreDelete: true}},
		{"partial-remove-on-delete", "PARTIAL_UPDATE", map[string]string{"partial-update.remove-record-on-delete": "true"}, model{partial: true, removeOnDelete: true}},
		{"partial-ignore-delete", "PARTIAL_UPDATE", map[string]string{"ignore-delete": "true"}, model{partial: true, ignoreDelete: true}},
		{"partial-deletes-fail", "PARTIAL_UPDATE", nil, model{partial: true}},
	}
	for ci, cfg := range configs {
		t.Run(cfg.name, func(t *testing.T) {
			tbl := resolve(t, t.TempDir(), spec("m", "id INT, p STRING, a STRING, b BIGINT, c BOOLEAN", "id,p", "p", 3, cfg.engine, cfg.options))
			m := cfg.m
			m.rows = map[string]merge.Row{}
			rng := rand.New(rand.NewPCG(uint64(ci), 42))
			clock := &fakeClock{ms: 1}
			st, err := Open(tbl, Options{Clock: clock.now, CacheBytes: 4 << 20})
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = st.Close() }()
			for round := 0; round < 12; round++ {
				for batch := 0; batch < 8; batch++ {
					clock.ms += int64(rng.IntN(3))
					b := randomBatch(rng, tbl, cfg.m.partial && !cfg.m.removeOnDelete && !cfg.m.ignoreDelete)
					ok := m.apply(tbl, b)
					_, err := st.Write(context.Background(), b)
					if ok != (err == nil) {
						t.Fatalf("round %d batch %d: model ok=%v, store error %v", round, batch, ok, err)
					}
					if err != nil {
						wantKind(t, err, ErrInvalid, "ignore-delete", "partial-update.remove-record-on-delete")
					}
				}
				got := state(t, st)
				if len(got) != len(m.rows) {
					t.Fatalf("round %d: %d stored rows, model has %d", round, len(got), len(m.rows))
				}
				for k, r := range m.rows {
					if !merge.RowEqual(got[k], r) {
						t.Fatalf("round %d: stored %s, model %s", round, formatRow(got[k]), formatRow(r))
					}
				}
				checkFold(t, st)
				// Flushes and compactions now and then, so that chunks of long values go
				// through blob files (PebbleOptions) and sstables, not only the memtable.
				if rng.IntN(2) == 0 {
					if err := st.db.Flush(); err != nil {
						t.Fatal(err)
					}
				}
				if rng.IntN(4) == 0 {
					if err := st.db.Compact(context.Background(), []byte{0}, []byte{0xff}, false); err != nil {
						t.Fatal(err)
					}
				}
				if err := st.Close(); err != nil {
					t.Fatal(err)
				}
				if st, err = Open(tbl, Options{Clock: clock.now, CacheBytes: 4 << 20}); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}

// randomBatch returns 1..40 random rows over 300 keys in 3 partitions, declaring a random subset
// of the non-key columns; one value of column a in eight is 1,200 bytes long (its state row and
// chunk go to blob files). rareDeletes makes deletes rare (they fail the whole batch).
func randomBatch(rng *rand.Rand, tbl *catalog.Table, rareDeletes bool) *row.Batch {
	declared := []bool{true, true, rng.IntN(3) > 0, rng.IntN(3) > 0, rng.IntN(3) > 0}
	b := &row.Batch{Declared: declared}
	n := 1 + rng.IntN(40)
	for i := 0; i < n; i++ {
		var kind merge.RowKind
		switch x := rng.IntN(20); {
		case x < 2 && (!rareDeletes || rng.IntN(20) == 0):
			kind = merge.Delete
		case x < 3:
			kind = merge.UpdateBefore
		case x < 8:
			kind = merge.Insert
		default:
			kind = merge.UpdateAfter
		}
		r := merge.Row{int32(rng.IntN(100)), "p" + strconv.Itoa(rng.IntN(3)), nil, nil, nil}
		if declared[2] && rng.IntN(4) > 0 {
			r[2] = "v" + strconv.Itoa(rng.IntN(4))
			if rng.IntN(8) == 0 { // long values: chunks above the blob-file threshold
				r[2] = strings.Repeat(r[2].(string), 600)
			}
		}
		if declared[3] && rng.IntN(4) > 0 {
			r[3] = int64(rng.IntN(3) - 1)
		}
		if declared[4] && rng.IntN(4) > 0 {
			r[4] = rng.IntN(2) == 0
		}
		b.Kinds = append(b.Kinds, kind)
		b.Rows = append(b.Rows, r)
	}
	return b
}

// crashBatch is batch i of the crash test: 40 upserts over 500 keys plus a marker row
// (id -1) holding i.
func crashBatch(i int) *row.Batch {
	b := &row.Batch{Declared: []bool{true, true}}
	for j := 0; j < 40; j++ {
		b.Kinds = append(b.Kinds, merge.UpdateAfter)
		b.Rows = append(b.Rows, merge.Row{int32((i*37 + j*13) % 500), "v" + strconv.Itoa(i)})
	}
	b.Kinds = append(b.Kinds, merge.UpdateAfter)
	b.Rows = append(b.Rows, merge.Row{int32(-1), strconv.Itoa(i)})
	return b
}

const crashEnv = "SETATS_STORE_CRASH_DIR"

// TestCrashChild is the writer process of TestCrashDurability; it runs only when started by it.
func TestCrashChild(t *testing.T) {
	dir := os.Getenv(crashEnv)
	if dir == "" {
		t.Skip("run by TestCrashDurability")
	}
	st, err := Open(resolve(t, dir, spec("crash", "id INT, v STRING", "id", "", 4, "", nil)), Options{})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; ; i++ {
		if _, err := st.Write(context.Background(), crashBatch(i)); err != nil {
			t.Fatal(err)
		}
		fmt.Printf("acked %d\n", i)
	}
}

// TestCrashDurability kills a writing process with SIGKILL and checks SPEC section 7 on reopen:
// every acknowledged batch is there, the state is exactly that of some prefix of the batches (no
// half batch) and the changelog folds to it.
func TestCrashDurability(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a child process")
	}
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestCrashChild$", "-test.v")
	cmd.Env = append(os.Environ(), crashEnv+"="+dir)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	acked := -1
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		if n, ok := strings.CutPrefix(sc.Text(), "acked "); ok {
			acked, _ = strconv.Atoi(n)
			if acked >= 25 {
				break
			}
		}
	}
	_ = cmd.Process.Signal(syscall.SIGKILL)
	_ = cmd.Wait()
	if acked < 25 {
		t.Fatalf("child acknowledged only %d batches", acked)
	}

	tbl := resolve(t, dir, spec("crash", "id INT, v STRING", "id", "", 4, "", nil))
	st := openTable(t, tbl, &fakeClock{ms: 1})
	marker, ok, err := st.Lookup(merge.Row{int32(-1), nil})
	if err != nil || !ok {
		t.Fatalf("marker row: %v %v", ok, err)
	}
	last, _ := strconv.Atoi(marker[1].(string))
	if last < acked {
		t.Fatalf("batch %d was acknowledged, the store holds batches up to %d", acked, last)
	}
	m := model{rows: map[string]merge.Row{}}
	for i := 0; i <= last; i++ {
		m.apply(tbl, crashBatch(i))
	}
	got := state(t, st)
	if len(got) != len(m.rows) {
		t.Fatalf("%d stored rows, %d expected after batch %d", len(got), len(m.rows), last)
	}
	for k, r := range m.rows {
		if !merge.RowEqual(got[k], r) {
			t.Fatalf("stored %s, expected %s after batch %d", formatRow(got[k]), formatRow(r), last)
		}
	}
	checkFold(t, st)
	t.Logf("killed after ack %d; store holds batches 0..%d", acked, last)
}

// TestKeyIndex checks writes against a reopened table once its key index is built (updates of
// keys stored before Open must find them), and with an index that outgrew its limit.
func TestKeyIndex(t *testing.T) {
	for _, maxKeys := range []int{0, 30, -1} {
		t.Run(fmt.Sprint("max=", maxKeys), func(t *testing.T) {
			tbl := resolve(t, t.TempDir(), spec("ki", "id INT, v STRING", "id", "", 2, "", nil))
			clock := &fakeClock{ms: 1}
			st, err := Open(tbl, Options{Clock: clock.now, KeyIndexMaxKeys: maxKeys})
			if err != nil {
				t.Fatal(err)
			}
			var ids []int32
			for i := int32(0); i < 50; i++ {
				ids = append(ids, i)
			}
			mustWrite(t, st, kvBatch(ids[:25], "a"))
			if err := st.Close(); err != nil {
				t.Fatal(err)
			}
			st, err = Open(tbl, Options{Clock: clock.now, KeyIndexMaxKeys: maxKeys})
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			<-st.keysBuilt
			st.keys.mu.RLock()
			ready, disabled, n := st.keys.ready, st.keys.disabled, st.keys.set.len()
			st.keys.mu.RUnlock()
			if maxKeys >= 0 && (!ready || disabled || n != 25) {
				t.Fatalf("index ready=%v disabled=%v keys=%d after the build", ready, disabled, n)
			}
			c := mustWrite(t, st, kvBatch(ids, "b")) // 25 updates (-U +U) and 25 inserts
			if c.ChangelogRows != 75 {
				t.Fatalf("%d changelog rows, want 75", c.ChangelogRows)
			}
			c = mustWrite(t, st, kvBatch(ids, "c")) // 50 updates
			if c.ChangelogRows != 100 {
				t.Fatalf("%d changelog rows, want 100", c.ChangelogRows)
			}
			st.keys.mu.RLock()
			disabled = st.keys.disabled
			st.keys.mu.RUnlock()
			if disabled != (maxKeys != 0) {
				t.Errorf("disabled = %v with limit %d and 50 keys", disabled, maxKeys)
			}
			checkFold(t, st)
		})
	}
}

// TestChunks covers changelog chunking: writes of more rows than a chunk holds, rows long enough
// for multi-byte lengths and chunks cut by size, reads starting at every offset, timestamps
// resolving to chunk starts, and retention removing whole writes.
func TestChunks(t *testing.T) {
	clock := &fakeClock{ms: 100}
	tbl := resolve(t, t.TempDir(), spec("ch", "id INT, v STRING", "id", "", 1, "", map[string]string{"changelog.retention.ms": "1000"}))
	st := openTable(t, tbl, clock)
	var ids []int32
	for i := int32(0); i < 700; i++ {
		ids = append(ids, i)
	}
	type span struct{ ms, start, end int64 }
	var spans []span
	write := func(b *row.Batch) {
		c := mustWrite(t, st, b)
		end := c.Buckets[0].EndOffset
		spans = append(spans, span{c.CommitMs, end - c.ChangelogRows, end})
		clock.ms += 100
	}
	write(kvBatch(ids, "short"))                        // 700 rows: 3 chunks by count
	write(kvBatch(ids[:300], strings.Repeat("x", 200))) // 600 rows of ~200 bytes: chunks by size
	write(kvBatch(ids[:1], "one"))                      // -U +U
	write(kvBatch(ids[5:6], strings.Repeat("y", 70000)))
	checkFold(t, st)
	end := spans[len(spans)-1].end
	id := BucketID{}
	all, err := st.Read(id, 0, 0, nil)
	if err != nil || int64(len(all)) != end {
		t.Fatalf("read all: %d rows, %v", len(all), err)
	}
	for from := int64(0); from <= end; from += 7 {
		es, err := st.Read(id, from, 13, nil)
		if err != nil {
			t.Fatal(err)
		}
		if want := min(13, end-from); int64(len(es)) != want {
			t.Fatalf("read from %d: %d rows, want %d", from, len(es), want)
		}
		for i, e := range es {
			if e.Offset != from+int64(i) || !merge.RowEqual(e.Row, all[from+int64(i)].Row) || e.Kind != all[from+int64(i)].Kind {
				t.Fatalf("read from %d: row %d differs", from, i)
			}
		}
	}
	for _, sp := range spans {
		for _, ts := range []int64{sp.ms - 50, sp.ms} {
			off, resolved, err := st.OffsetForTimestamp(id, ts)
			if err != nil || !resolved || off != sp.start {
				t.Errorf("OffsetForTimestamp(%d) = %d %v %v, want %d", ts, off, resolved, err, sp.start)
			}
		}
	}
	if off, resolved, _ := st.OffsetForTimestamp(id, clock.ms); resolved || off != end {
		t.Errorf("OffsetForTimestamp(after the newest) = %d %v, want %d unresolved", off, resolved, end)
	}
	// now - retention = spans[2].ms: the first two writes go.
	n, err := st.ApplyRetention(spans[2].ms + 1000)
	if err != nil || n != spans[2].start {
		t.Fatalf("retention removed %d (%v), want %d", n, err, spans[2].start)
	}
	_, err = st.Read(id, spans[2].start-1, 1, nil)
	wantKind(t, err, ErrOutOfRange, fmt.Sprintf("[0, %d)", spans[2].start))
	es, err := st.Read(id, spans[2].start, 0, nil)
	if err != nil || int64(len(es)) != end-spans[2].start {
		t.Fatalf("read after retention: %d rows, %v", len(es), err)
	}
}
