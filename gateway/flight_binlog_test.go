package gateway

import (
	"strconv"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/setats/setats/catalog"
	"github.com/setats/setats/gateway/row"
	"github.com/setats/setats/gateway/rowcodec"
	"github.com/setats/setats/proto/setatspb"
)

// TestBinlogActions runs the binlog functions over Flight (SPEC section 8): the orders sequence
// of the seed (INSERT, DELETE, INSERT, UPDATE), a slot that registers sync points, progress,
// sync points, consumed, changes of an offset range, list and drop.
func TestBinlogActions(t *testing.T) {
	clock := &fakeClock{}
	clock.set(10_000)
	g := startGateway(t, func(o *Options) { o.Clock = clock.now })
	g.createTable("shop", "orders_source", 1, []*setatspb.Column{col("id", "INT"), col("v", "STRING")}, []string{"id"},
		map[string]string{"slot.ttl": "30 min"})
	desc := writeCmd(t, &setatspb.WriteCommand{Database: "shop", Table: "orders_source"})
	for _, w := range []struct {
		kind int8
		id   int32
		v    string
	}{{0, 100, "1"}, {3, 100, "1"}, {0, 200, "1"}, {2, 200, "2"}} {
		rec := intStrRecord(g.mem, []int8{w.kind}, []int32{w.id}, []string{w.v})
		if _, err := g.put(desc, rec); err != nil {
			t.Fatal(err)
		}
		rec.Release()
	}
	// changes [0, 5): +I, -D, +I, -U, +U
	rows, err := g.readStream(ticket(t, &setatspb.ChangelogTicket{Database: "shop", Table: "orders_source",
		Start: &setatspb.ChangelogTicket_Offset{Offset: 0}, EndOffset: 5}))
	if err != nil || strings.Join(kindsOf(rows), " ") != "+I -D +I -U +U" {
		t.Fatalf("changes: %q %v", rows, err)
	}
	rows, err = g.readStream(ticket(t, &setatspb.ChangelogTicket{Database: "shop", Table: "orders_source",
		Start: &setatspb.ChangelogTicket_Offset{Offset: 1}, EndOffset: 3}))
	if err != nil || len(rows) != 2 {
		t.Fatalf("changes [1, 3): %q %v", rows, err)
	}
	_, err = g.readStream(ticket(t, &setatspb.ChangelogTicket{Database: "shop", Table: "orders_source",
		Start: &setatspb.ChangelogTicket_Offset{Offset: 0}, EndOffset: 9}))
	wantCode(t, err, codes.OutOfRange, "end offset 9")

	info := &setatspb.SlotInfo{}
	g.mustAction(ActionBinlogAcquireSlot, &setatspb.AcquireSlotRequest{Database: "shop", Table: "orders_source", Slot: "slot1", Owner: "job-a"}, info)
	if !info.GetCreated() || info.GetStatus() != setatspb.SlotStatus_SLOT_ACTIVE || info.GetExpiresAtMs() != 10_000+30*60*1000 {
		t.Fatalf("acquire: %v", info)
	}
	err = g.action(ActionBinlogAcquireSlot, &setatspb.AcquireSlotRequest{Database: "shop", Table: "orders_source", Slot: "slot1", Owner: "job-b"}, nil)
	wantCode(t, err, codes.FailedPrecondition, "slot1", "job-a", "shop.orders_source")

	g.mustAction(ActionBinlogRegisterSyncPoint, &setatspb.RegisterSyncPointRequest{Database: "shop", Table: "orders_source",
		Slot: "slot1", Owner: "job-a", Checkpoint: true, Points: []*setatspb.SyncPointPosition{{Bucket: 0, Offset: 3}}}, info)
	err = g.action(ActionBinlogRegisterSyncPoint, &setatspb.RegisterSyncPointRequest{Database: "shop", Table: "orders_source",
		Slot: "slot1", Owner: "job-a", Checkpoint: true, Points: []*setatspb.SyncPointPosition{{Bucket: 0, Offset: 2}}}, nil)
	wantCode(t, err, codes.FailedPrecondition, "slot1", "bucket 0", "backwards")

	clock.set(12_000)
	pr := &setatspb.ProgressResponse{}
	g.mustAction(ActionBinlogProgress, &setatspb.SlotRequest{Database: "shop", Table: "orders_source"}, pr)
	if len(pr.GetRows()) != 2 {
		t.Fatalf("progress: %v", pr)
	}
	if r := pr.GetRows()[0]; !r.GetCheckpoint() || r.GetConsumedOffset() != 3 || r.GetEndOffset() != 5 || r.GetUnconsumed() != 2 ||
		r.GetLagMs() != 2000 || r.GetStatus() != setatspb.SlotStatus_SLOT_ACTIVE {
		t.Fatalf("progress row: %v", r)
	}
	if v := gaugeValue(t, g.s.metrics.slots.unconsumed.WithLabelValues("shop.orders_source", "slot1")); v != 2 {
		t.Fatalf("unconsumed gauge %v, want 2", v)
	}

	sp := &setatspb.SyncPointResponse{}
	g.mustAction(ActionBinlogSyncPoint, &setatspb.SlotRequest{Database: "shop", Table: "orders_source", Slot: "slot1", Checkpoint: true}, sp)
	if b := sp.GetBuckets()[0]; b.GetLastSyncPoint() != 3 || b.GetLatestSyncPoint() != 5 || !b.GetRegistered() {
		t.Fatalf("sync point: %v", sp)
	}
	cr := &setatspb.ConsumedResponse{}
	g.mustAction(ActionBinlogConsumed, &setatspb.SlotRequest{Database: "shop", Table: "orders_source"}, cr)
	if cr.GetConsumed() {
		t.Fatalf("consumed before catching up: %v", cr)
	}
	g.mustAction(ActionBinlogRegisterSyncPoint, &setatspb.RegisterSyncPointRequest{Database: "shop", Table: "orders_source",
		Slot: "slot1", Owner: "job-a", Checkpoint: true, Points: []*setatspb.SyncPointPosition{{Bucket: 0, Offset: 5}}}, info)
	g.mustAction(ActionBinlogConsumed, &setatspb.SlotRequest{Database: "shop", Table: "orders_source"}, cr)
	if !cr.GetConsumed() {
		t.Fatalf("not consumed after catching up: %v", cr)
	}

	// JSON bodies work as for every action (pyarrow).
	var js []byte
	if err := g.rawAction(ActionBinlogSlots, []byte(`{"database":"shop","table":"orders_source"}`), func(b []byte) error { js = b; return nil }); err != nil {
		t.Fatal(err)
	}
	ls := &setatspb.ListSlotsResponse{}
	if err := protojson.Unmarshal(js, ls); err != nil || len(ls.GetSlots()) != 1 || ls.GetSlots()[0].GetBuckets()[0].GetCheckpointOffset() != 5 {
		t.Fatalf("slots (json): %s %v", js, err)
	}
	g.mustAction(ActionBinlogReleaseSlot, &setatspb.SlotRequest{Database: "shop", Table: "orders_source", Slot: "slot1", Owner: "job-a"}, nil)
	g.mustAction(ActionBinlogAcquireSlot, &setatspb.AcquireSlotRequest{Database: "shop", Table: "orders_source", Slot: "slot1", Owner: "job-b"}, info)
	if info.GetCreated() || info.GetBuckets()[0].GetCheckpointOffset() != 5 {
		t.Fatalf("acquire after release: %v", info)
	}
	g.mustAction(ActionBinlogDropSlot, &setatspb.SlotRequest{Database: "shop", Table: "orders_source", Slot: "slot1"}, nil)
	err = g.action(ActionBinlogDropSlot, &setatspb.SlotRequest{Database: "shop", Table: "orders_source", Slot: "slot1"}, nil)
	wantCode(t, err, codes.NotFound, "slot1")
	err = g.action(ActionBinlogProgress, &setatspb.SlotRequest{Database: "shop", Table: "orders_source", Slot: "slot1"}, pr)
	wantCode(t, err, codes.NotFound, "slot1")
}

func kindsOf(rows []string) []string {
	out := make([]string, len(rows))
	for i, r := range rows {
		out[i] = r[:2]
	}
	return out
}

// TestChangelogDisabled: a table with changelog.enabled = false keeps rows but no changelog;
// reading its changelog and using a slot fail naming the option; a snapshot read works.
func TestChangelogDisabled(t *testing.T) {
	g := startGateway(t, nil)
	g.createTable("default", "upsert_only", 1, []*setatspb.Column{col("id", "INT"), col("v", "STRING")}, []string{"id"},
		map[string]string{"changelog.enabled": "false"})
	rec := intStrRecord(g.mem, nil, []int32{1, 2}, []string{"a", "b"})
	defer rec.Release()
	if _, err := g.put(writeCmd(t, &setatspb.WriteCommand{Table: "upsert_only"}), rec); err != nil {
		t.Fatal(err)
	}
	_, err := g.readStream(ticket(t, &setatspb.ChangelogTicket{Table: "upsert_only"}))
	wantCode(t, err, codes.FailedPrecondition, "changelog.enabled = false", "default.upsert_only")
	err = g.action(ActionBinlogAcquireSlot, &setatspb.AcquireSlotRequest{Table: "upsert_only", Slot: "s", Owner: "j"}, nil)
	wantCode(t, err, codes.FailedPrecondition, "changelog.enabled = false")
	rows, e, err := g.readSnapshot(&setatspb.ChangelogTicket{Table: "upsert_only", Snapshot: &setatspb.SnapshotRead{}})
	if err != nil || e != 0 || strings.Join(rows, " ") != "[1, a] [2, b]" {
		t.Fatalf("snapshot: %q E=%d %v", rows, e, err)
	}
}

// TestSnapshotDoGet reads a bucket's merged rows with E in the schema metadata, page by page
// (max_batch_rows 2) and resumed after a key, and a catch-up read with max_key.
func TestSnapshotDoGet(t *testing.T) {
	g := startGateway(t, nil)
	g.createTable("default", "snap", 1, []*setatspb.Column{col("id", "INT"), col("v", "STRING")}, []string{"id"}, nil)
	desc := writeCmd(t, &setatspb.WriteCommand{Table: "snap"})
	rec := intStrRecord(g.mem, nil, []int32{3, 1, 2, 5, 4}, []string{"c", "a", "b", "e", "d"})
	if _, err := g.put(desc, rec); err != nil {
		t.Fatal(err)
	}
	rec.Release()
	rec = intStrRecord(g.mem, []int8{2, 3}, []int32{1, 4}, []string{"a2", "d"})
	if _, err := g.put(desc, rec); err != nil {
		t.Fatal(err)
	}
	rec.Release()
	rows, e, err := g.readSnapshot(&setatspb.ChangelogTicket{Table: "snap", MaxBatchRows: 2, Snapshot: &setatspb.SnapshotRead{}})
	if err != nil || e != 8 || strings.Join(rows, " ") != "[1, a2] [2, b] [3, c] [5, e]" {
		t.Fatalf("snapshot: %q E=%d %v", rows, e, err)
	}
	key := rowcodec.EncodeKey(g.tableOf(t, "snap"), []any{int32(2), nil})
	rows, _, err = g.readSnapshot(&setatspb.ChangelogTicket{Table: "snap", Snapshot: &setatspb.SnapshotRead{AfterKey: key}})
	if err != nil || strings.Join(rows, " ") != "[3, c] [5, e]" {
		t.Fatalf("resumed after key 2: %q %v", rows, err)
	}
	// Catch-up of keys <= 2 over [5, 8): -U(1,a) +U(1,a2); the -D of key 4 is skipped.
	ch, err := g.readStream(ticket(t, &setatspb.ChangelogTicket{Table: "snap", Start: &setatspb.ChangelogTicket_Offset{Offset: 5}, EndOffset: 8, MaxKey: key}))
	if err != nil || strings.Join(kindsOf(ch), " ") != "-U +U" {
		t.Fatalf("catch-up with max_key: %q %v", ch, err)
	}
	rows, _, err = g.readSnapshot(&setatspb.ChangelogTicket{Table: "snap", Snapshot: &setatspb.SnapshotRead{Columns: []string{"v"}}})
	if err != nil || strings.Join(rows, " ") != "[a2] [b] [c] [e]" {
		t.Fatalf("projected snapshot: %q %v", rows, err)
	}
	_, _, err = g.readSnapshot(&setatspb.ChangelogTicket{Table: "snap", Snapshot: &setatspb.SnapshotRead{Columns: []string{"nope"}}})
	wantCode(t, err, codes.InvalidArgument, "nope")
}

// readSnapshot reads a snapshot DoGet and prints its rows as "[id, v]" with E from the metadata.
func (g *testGateway) readSnapshot(tk *setatspb.ChangelogTicket) ([]string, int64, error) {
	stream, err := g.client.DoGet(g.ctx, &flight.Ticket{Ticket: ticket(g.t, tk)})
	if err != nil {
		return nil, 0, err
	}
	rdr, err := flight.NewRecordReader(stream, ipc.WithAllocator(g.mem))
	if err != nil {
		return nil, 0, err
	}
	defer rdr.Release()
	ev, _ := rdr.Schema().Metadata().GetValue(row.MetaSnapshotEndOffset)
	e, _ := strconv.ParseInt(ev, 10, 64)
	var out []string
	for rdr.Next() {
		rec := rdr.RecordBatch()
		if rec.Schema().Field(0).Name != row.ColKey {
			g.t.Fatalf("first column %s", rec.Schema().Field(0).Name)
		}
		for i := 0; i < int(rec.NumRows()); i++ {
			var vals []string
			for c := 1; c < int(rec.NumCols()); c++ {
				vals = append(vals, rec.Column(c).ValueStr(i))
			}
			_ = rec.Column(0).(*array.Binary).Value(i)
			out = append(out, "["+strings.Join(vals, ", ")+"]")
		}
	}
	return out, e, rdr.Err()
}

func (g *testGateway) tableOf(t *testing.T, name string) *catalog.Table {
	ot, err := g.s.openTable(g.s.cat, "default", name)
	if err != nil {
		t.Fatal(err)
	}
	return ot.tbl
}
