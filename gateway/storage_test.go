package gateway

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/vfs/errorfs"
	"github.com/nats-io/nats.go"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/setats/setats/proto/setatspb"
)

// metricValue returns the value of the unlabelled gauge or counter name on the server's registry.
func metricValue(t *testing.T, s *Server, name string) float64 {
	t.Helper()
	mfs, err := s.metrics.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		m := mf.GetMetric()[0]
		if g := m.GetGauge(); g != nil {
			return g.GetValue()
		}
		return m.GetCounter().GetValue()
	}
	t.Fatalf("no metric %s", name)
	return 0
}

// holdFS is the OS filesystem whose WAL fsyncs (Sync, SyncData, SyncTo of *.log files) block
// while held: a write is then applied (in the memtable, visible to later writes) but not durable.
type holdFS struct {
	vfs.FS
	mu      sync.Mutex
	held    chan struct{} // nil when not held; closed by release
	blocked atomic.Int32  // fsyncs waiting
}

func newHoldFS() *holdFS { return &holdFS{FS: vfs.Default} }

// hold makes the following WAL fsyncs block until release, at the latest until t ends: a test
// that fails while holding them must not hang in the gateway's shutdown (its cleanup, registered
// before, runs after this one).
func (fs *holdFS) hold(t *testing.T) {
	fs.mu.Lock()
	fs.held = make(chan struct{})
	fs.mu.Unlock()
	t.Cleanup(fs.release)
}

func (fs *holdFS) release() {
	fs.mu.Lock()
	if fs.held != nil {
		close(fs.held)
		fs.held = nil
	}
	fs.mu.Unlock()
}

func (fs *holdFS) wait() {
	fs.mu.Lock()
	ch := fs.held
	fs.mu.Unlock()
	if ch != nil {
		fs.blocked.Add(1)
		<-ch
		fs.blocked.Add(-1)
	}
}

// waitWritesSettled waits until no batch is pending (setats_write_batches_pending = 0). The
// gauge is decremented by a goroutine of its own once the batch is durable, so it may still
// count a batch whose ack the client already has: a test that holds fsyncs and then waits for
// the gauge to reach N must first wait here, or an earlier batch is counted as one of the N.
func waitWritesSettled(t *testing.T, g *testGateway) {
	t.Helper()
	waitFor(t, "earlier batches to settle", func() bool { return metricValue(t, g.s, "setats_write_batches_pending") == 0 })
}

func (fs *holdFS) Create(name string, cat vfs.DiskWriteCategory) (vfs.File, error) {
	f, err := fs.FS.Create(name, cat)
	if err != nil || !strings.HasSuffix(name, ".log") {
		return f, err
	}
	return &holdFile{File: f, fs: fs}, nil
}

func (fs *holdFS) ReuseForWrite(oldname, newname string, cat vfs.DiskWriteCategory) (vfs.File, error) {
	f, err := fs.FS.ReuseForWrite(oldname, newname, cat)
	if err != nil || !strings.HasSuffix(newname, ".log") {
		return f, err
	}
	return &holdFile{File: f, fs: fs}, nil
}

type holdFile struct {
	vfs.File
	fs *holdFS
}

func (f *holdFile) Sync() error     { f.fs.wait(); return f.File.Sync() }
func (f *holdFile) SyncData() error { f.fs.wait(); return f.File.SyncData() }
func (f *holdFile) SyncTo(n int64) (bool, error) {
	f.fs.wait()
	return f.File.SyncTo(n)
}

// TestCommitSideEffectsWithoutClient: batches that become durable after their client left are
// still announced (NEW_BUCKET, NEW_DATA) and counted, because the store's commit hook drives
// them. Before, they came from the acknowledgement path and only the first batch was announced.
func TestCommitSideEffectsWithoutClient(t *testing.T) {
	fs := newHoldFS()
	g := startGateway(t, func(o *Options) { o.StoreFS = fs })
	g.createTable("default", "gone", 1, idV, []string{"id"}, nil)
	nc, err := nats.Connect(g.s.NATSURL(), nats.UserInfo(g.s.nats.user, g.s.nats.pass)) // the embedded server's own credential
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	sub, err := nc.SubscribeSync("setats.default.gone.>")
	if err != nil {
		t.Fatal(err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	// Open the store before holding fsyncs (its first write, the format version, syncs).
	first := intStrRecord(g.mem, nil, []int32{0}, []string{"x"})
	defer first.Release()
	if _, err := g.put(writeCmd(t, &setatspb.WriteCommand{Table: "gone"}), first); err != nil {
		t.Fatal(err)
	}
	waitWritesSettled(t, g)

	fs.hold(t)
	ctx, cancel := context.WithCancel(g.ctx)
	stream, err := g.client.DoPut(ctx)
	if err != nil {
		t.Fatal(err)
	}
	const batches = 5
	w := flight.NewRecordWriter(stream, ipc.WithSchema(first.Schema()), ipc.WithAllocator(g.mem))
	w.SetFlightDescriptor(writeCmd(t, &setatspb.WriteCommand{Table: "gone"}))
	for i := int32(1); i <= batches; i++ {
		rec := intStrRecord(g.mem, nil, []int32{i}, []string{"y"})
		err := w.Write(rec)
		rec.Release()
		if err != nil {
			t.Fatal(err)
		}
	}
	// Every batch is applied and waits for the held fsync; then the client goes away.
	waitFor(t, "5 batches applied", func() bool { return metricValue(t, g.s, "setats_write_batches_pending") == batches })
	cancel()
	_ = w.Close()
	fs.release()
	waitFor(t, "the pending batches to be durable", func() bool { return metricValue(t, g.s, "setats_write_batches_pending") == 0 })

	// Every durable batch was announced: NEW_DATA up to end offset 1+batches.
	var end int64
	for end < 1+batches {
		m, err := sub.NextMsg(testTimeout)
		if err != nil {
			t.Fatalf("NEW_DATA up to end offset %d: got up to %d: %v", 1+batches, end, err)
		}
		n := &setatspb.Notification{}
		if err := protojson.Unmarshal(m.Data, n); err != nil {
			t.Fatal(err)
		}
		if n.GetKind() == setatspb.NotificationKind_NEW_DATA {
			end = max(end, n.GetEndOffset())
		}
	}
	if got := counterSum(t, g.s.metrics.writeBatches); got != 1+batches {
		t.Fatalf("setats_write_batches_total %v, want %d", got, 1+batches)
	}
}

// walWriteFault fails every write to a WAL file (*.log) while on.
type walWriteFault struct{ on atomic.Bool }

func (f *walWriteFault) String() string { return "walWriteFault" }
func (f *walWriteFault) MaybeError(op errorfs.Op) error {
	if f.on.Load() && strings.HasSuffix(op.Path, ".log") && (op.Kind == errorfs.OpFileWrite || op.Kind == errorfs.OpFileWriteAt) {
		return errorfs.ErrInjected
	}
	return nil
}

// TestStorageFailure: a failed WAL write fails the batch with Unavailable naming the table, makes
// /readyz 503 naming the table (other tables keep working), refuses later writes of that table at
// once instead of hanging, is reported on Server.Failed, and Shutdown still completes.
func TestStorageFailure(t *testing.T) {
	fault := &walWriteFault{}
	g := startGateway(t, func(o *Options) { o.StoreFS = errorfs.Wrap(vfs.Default, fault) })
	g.createTable("default", "bad", 1, idV, []string{"id"}, nil)
	g.createTable("default", "good", 1, idV, []string{"id"}, nil)
	put := func(table string, id int32) error {
		rec := intStrRecord(g.mem, nil, []int32{id}, []string{"v"})
		defer rec.Release()
		_, err := g.put(writeCmd(t, &setatspb.WriteCommand{Table: table}), rec)
		return err
	}
	if err := put("bad", 1); err != nil {
		t.Fatal(err)
	}
	if err := put("good", 1); err != nil {
		t.Fatal(err)
	}
	if code, r := readyz(t, g.s); code != http.StatusOK || len(r.FailedTables) != 0 {
		t.Fatalf("readyz before the failure: %d %+v", code, r)
	}

	fault.on.Store(true)
	wantCode(t, put("bad", 2), codes.Unavailable, "default.bad", "storage failed")
	fault.on.Store(false)
	select {
	case err := <-g.s.Failed():
		if !strings.Contains(err.Error(), "default.bad") {
			t.Fatalf("Failed reported %v", err)
		}
	default:
		t.Fatal("Failed reported nothing")
	}
	code, r := readyz(t, g.s)
	if code != http.StatusServiceUnavailable || r.Ready || len(r.FailedTables) != 1 || r.FailedTables[0].Table != "default.bad" ||
		!strings.Contains(r.FailedTables[0].Error, "injected") {
		t.Fatalf("readyz after the failure: %d %+v", code, r)
	}
	if v := metricValue(t, g.s, "setats_tables_failed"); v != 1 {
		t.Fatalf("setats_tables_failed %v", v)
	}
	// The failed table refuses writes at once (before: they hung forever); others work.
	wantCode(t, put("bad", 3), codes.Unavailable, "default.bad")
	if err := put("good", 2); err != nil {
		t.Fatalf("write to a healthy table after another failed: %v", err)
	}
	// Reads of what was durable still work.
	if rows, err := g.readStream(ticket(t, &setatspb.ChangelogTicket{Table: "bad"})); err != nil || len(rows) != 1 {
		t.Fatalf("read of the failed table: %q %v", rows, err)
	}
	g.s.Shutdown() // must return (before: it hung on the store's lock)
}

// TestReadersWaitForFsync: while a batch's WAL fsync is held, neither a following DoGet nor a
// bounded DoGet nor lookup of the offsets sees it; once the fsync completes the follower gets it.
func TestReadersWaitForFsync(t *testing.T) {
	fs := newHoldFS()
	g := startGateway(t, func(o *Options) { o.StoreFS = fs })
	g.createTable("default", "durable", 1, idV, []string{"id"}, nil)
	desc := writeCmd(t, &setatspb.WriteCommand{Table: "durable"})
	r1 := intStrRecord(g.mem, nil, []int32{1}, []string{"synced"})
	defer r1.Release()
	if _, err := g.put(desc, r1); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(g.ctx)
	defer cancel()
	stream, err := g.client.DoGet(ctx, &flight.Ticket{Ticket: ticket(t, &setatspb.ChangelogTicket{Table: "durable", Follow: true})})
	if err != nil {
		t.Fatal(err)
	}
	rdr, err := flight.NewRecordReader(stream, ipc.WithAllocator(g.mem))
	if err != nil {
		t.Fatal(err)
	}
	followed := make(chan string, 16)
	// At the end the follow stream is cancelled and its goroutine has left rdr.Next before
	// rdr.Release: releasing a reader inside Next is a data race (go test -race found it).
	defer func() {
		cancel()
		for range followed {
		}
		rdr.Release()
	}()
	go func() {
		for rdr.Next() {
			for _, r := range stripTime(printChangelog(rdr.RecordBatch())) {
				followed <- r
			}
		}
		close(followed)
	}()
	if r := <-followed; r != "+I[1, synced] @0" {
		t.Fatalf("followed %q", r)
	}
	waitWritesSettled(t, g)

	fs.hold(t)
	r2 := intStrRecord(g.mem, nil, []int32{2}, []string{"held"})
	defer r2.Release()
	acked := make(chan error, 1)
	go func() { _, err := g.put(desc, r2); acked <- err }()
	waitFor(t, "the batch applied with its fsync held", func() bool { return fs.blocked.Load() > 0 && metricValue(t, g.s, "setats_write_batches_pending") == 1 })
	rows, err := g.readStream(ticket(t, &setatspb.ChangelogTicket{Table: "durable"}))
	if err != nil || len(rows) != 1 {
		t.Fatalf("bounded read while the fsync is held: %q %v, want only the synced row", rows, err)
	}
	select {
	case r := <-followed:
		t.Fatalf("follower got %q before its fsync", r)
	case err := <-acked:
		t.Fatalf("acknowledged before its fsync: %v", err)
	default:
	}
	fs.release()
	if err := <-acked; err != nil {
		t.Fatal(err)
	}
	if r := <-followed; r != "+I[2, held] @1" {
		t.Fatalf("followed %q after the fsync", r)
	}
}

// TestWatchSlowWatcherCutOff: a watcher that does not read while notifications pile up is cut
// off with ResourceExhausted once more than watchMaxBytes wait for it (before, each watch stream
// buffered up to 4096 messages of up to 1 MiB), and oversized forged messages are dropped.
func TestWatchSlowWatcherCutOff(t *testing.T) {
	g := startGateway(t, nil)
	// A client of its own with fixed 64 KiB HTTP/2 flow-control windows (this also turns off
	// grpc-go's BDP window growth): the transport then holds at most ~128 KiB of the 3 MiB, so
	// the rest must wait in the watch's buffer. With the shared client the window could grow to
	// several MiB and absorb everything: the cut-off then depended on timing (it failed once).
	slow, err := flight.NewClientWithMiddleware(g.s.FlightAddr(), nil, nil,
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithInitialWindowSize(64<<10), grpc.WithInitialConnWindowSize(64<<10))
	if err != nil {
		t.Fatal(err)
	}
	defer slow.Close()
	body, _ := proto.Marshal(&setatspb.WatchRequest{Table: "w"})
	stream, err := slow.DoAction(g.ctx, &flight.Action{Type: ActionWatch, Body: body})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := stream.Recv(); err != nil { // READY
		t.Fatal(err)
	}
	nc, err := nats.Connect(g.s.NATSURL(), nats.UserInfo(g.s.nats.user, g.s.nats.pass))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	// Valid, signed Notifications with a 32 KiB table name, 3 MiB in all, plus one over the
	// per-message bound; nobody reads the watch meanwhile.
	big, _ := protojson.Marshal(&setatspb.Notification{Kind: setatspb.NotificationKind_NEW_DATA, Database: "default",
		Table: strings.Repeat("w", 32<<10)})
	huge, _ := protojson.Marshal(&setatspb.Notification{Kind: setatspb.NotificationKind_NEW_DATA, Database: "default",
		Table: strings.Repeat("w", 128<<10)})
	publish := func(data []byte) { // signed like the gateway's own
		m := nats.NewMsg("setats.default.w.data")
		m.Data = data
		m.Header.Set(signatureHeader, g.s.nats.sign(m.Subject, data))
		if err := nc.PublishMsg(m); err != nil {
			t.Fatal(err)
		}
	}
	publish(huge)
	for range 96 {
		publish(big)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	// Read only once the buffer has gone over its bound: a reader draining meanwhile could keep
	// it under (also a matter of timing).
	waitFor(t, "the watch buffer to overflow", func() bool { return metricValue(t, g.s, "setats_watch_overflows_total") == 1 })
	got := 0
	for {
		r, err := stream.Recv()
		if err != nil {
			wantCode(t, err, codes.ResourceExhausted, "default.w", "watch again")
			break
		}
		if len(r.GetBody()) > watchMaxMessageBytes {
			t.Fatalf("oversized forged notification relayed (%d bytes)", len(r.GetBody()))
		}
		got++
	}
	if got >= 96 {
		t.Fatalf("the slow watcher got all %d notifications instead of being cut off", got)
	}
}
