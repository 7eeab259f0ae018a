package gateway

import (
	"context"
	"fmt"
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/setats/setats/proto/setatspb"
)

// TestDoGetFollow: a following stream gets the schema at once, then every row as soon as its
// DoPut is acknowledged, in offset order, without polling; it ends when the client cancels.
func TestDoGetFollow(t *testing.T) {
	g := startGateway(t, nil)
	g.createTable("default", "f", 1, idV, []string{"id"}, nil)
	ctx, cancel := context.WithCancel(g.ctx)
	defer cancel()
	stream, err := g.client.DoGet(ctx, &flight.Ticket{Ticket: ticket(t, &setatspb.ChangelogTicket{
		Table: "f", Bucket: 0, Follow: true, MaxBatchRows: 2,
		Start: &setatspb.ChangelogTicket_Position{Position: setatspb.StartPosition_LATEST}})})
	if err != nil {
		t.Fatal(err)
	}
	rdr, err := flight.NewRecordReader(stream, ipc.WithAllocator(g.mem))
	if err != nil { // the schema arrives before any row is written
		t.Fatal(err)
	}
	defer rdr.Release()
	if md := rdr.Schema().Metadata(); md.FindKey("setats.bucket") < 0 || md.Values()[md.FindKey("setats.bucket")] != "0" {
		t.Fatalf("schema metadata: %v", md)
	}
	desc := writeCmd(t, &setatspb.WriteCommand{Table: "f"})
	var got []string
	for round, batch := range [][]int32{{1, 2, 3}, {4}} {
		vs := make([]string, len(batch))
		for i := range vs {
			vs[i] = "r" + string(rune('0'+round))
		}
		rec := intStrRecord(g.mem, nil, batch, vs)
		if _, err := g.put(desc, rec); err != nil {
			t.Fatal(err)
		}
		rec.Release()
		for len(got) < int(batch[len(batch)-1]) {
			if !rdr.Next() {
				t.Fatalf("stream ended: %v", rdr.Err())
			}
			rec := rdr.RecordBatch()
			if rec.NumRows() > 2 {
				t.Fatalf("batch of %d rows, max_batch_rows 2", rec.NumRows())
			}
			got = append(got, stripTime(printChangelog(rec))...)
		}
	}
	want := []string{"+I[1, r0] @0", "+I[2, r0] @1", "+I[3, r0] @2", "+I[4, r1] @3"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("followed %q, want %q", got, want)
	}
	if n := gaugeValue(t, g.s.metrics.openStreams); n != 1 {
		t.Fatalf("open streams gauge %v, want 1", n)
	}
	cancel()
	for rdr.Next() {
	}
	if status.Code(rdr.Err()) != codes.Canceled {
		t.Fatalf("after cancel: %v", rdr.Err())
	}
}

// TestDoGetFollowEndsOnDropAndShutdown: a following stream ends with NotFound when its table is
// dropped and with Unavailable when the gateway shuts down.
func TestDoGetFollowEndsOnDropAndShutdown(t *testing.T) {
	g := startGateway(t, nil)
	g.createTable("default", "a", 1, idV, []string{"id"}, nil)
	g.createTable("default", "b", 1, idV, []string{"id"}, nil)
	open := func(table string) *flight.Reader {
		stream, err := g.client.DoGet(g.ctx, &flight.Ticket{Ticket: ticket(t, &setatspb.ChangelogTicket{Table: table, Follow: true})})
		if err != nil {
			t.Fatal(err)
		}
		rdr, err := flight.NewRecordReader(stream, ipc.WithAllocator(g.mem))
		if err != nil {
			t.Fatal(err)
		}
		return rdr
	}
	ra, rb := open("a"), open("b")
	defer ra.Release()
	defer rb.Release()
	g.mustAction(ActionDropTable, &setatspb.TableRequest{Table: "a"}, &setatspb.Empty{})
	for ra.Next() {
	}
	wantCode(t, ra.Err(), codes.NotFound, "default.a", "dropped")
	g.s.Shutdown()
	for rb.Next() {
	}
	wantCode(t, rb.Err(), codes.Unavailable, "shutting down")
}

// TestReadCaseR1 is SPEC read case R1 at the Flight level: from-timestamp is inclusive, and a
// time before the oldest row means earliest. The fake clock commits the rows at 100 and 200 ms.
func TestReadCaseR1(t *testing.T) {
	clock := &fakeClock{}
	g := startGateway(t, func(o *Options) { o.Clock = clock.now })
	g.createTable("default", "r1", 1, idV, []string{"id"}, nil)
	desc := writeCmd(t, &setatspb.WriteCommand{Table: "r1"})
	for i, at := range []int64{100, 200} {
		clock.set(at)
		rec := intStrRecord(g.mem, []int8{0}, []int32{int32(i + 1)}, []string{string(rune('a' + i))})
		acks, err := g.put(desc, rec)
		rec.Release()
		if err != nil || acks[0].GetCommitMs() != at {
			t.Fatalf("write at %d: %v %v", at, acks, err)
		}
	}
	for _, tc := range []struct {
		ts   int64
		want []string
	}{
		{50, []string{"+I[1, a] @0 t=100", "+I[2, b] @1 t=200"}},
		{100, []string{"+I[1, a] @0 t=100", "+I[2, b] @1 t=200"}},
		{150, []string{"+I[2, b] @1 t=200"}},
		{250, nil},
	} {
		// Through a ReadCommand, as the connector plans from-timestamp reads.
		cmd, _ := proto.Marshal(&setatspb.ReadCommand{Table: "r1", Start: &setatspb.ReadCommand_TimestampMs{TimestampMs: tc.ts}})
		fi, err := g.client.GetFlightInfo(g.ctx, &flight.FlightDescriptor{Type: flight.DescriptorCMD, Cmd: cmd})
		if err != nil {
			t.Fatal(err)
		}
		rows, err := g.readStream(fi.GetEndpoint()[0].GetTicket().GetTicket())
		if err != nil || !reflect.DeepEqual(rows, tc.want) {
			t.Fatalf("from-timestamp %d: %q %v, want %q", tc.ts, rows, err, tc.want)
		}
		// lookup-offsets resolves the same positions.
		lo := &setatspb.LookupOffsetsResponse{}
		g.mustAction(ActionLookupOffsets, &setatspb.LookupOffsetsRequest{Table: "r1",
			Start: &setatspb.LookupOffsetsRequest_TimestampMs{TimestampMs: tc.ts}}, lo)
		if o := lo.GetOffsets()[0]; o.GetOffset() != 2-int64(len(tc.want)) || o.GetResolved() != (len(tc.want) > 0) {
			t.Fatalf("lookup-offsets %d: %v", tc.ts, lo)
		}
	}
}

// TestReadCaseR6 is SPEC read case R6 at the Flight level: once retention removed offset 0, a
// reader restored at offset 0 fails with OutOfRange naming the bucket and the removed offsets.
func TestReadCaseR6(t *testing.T) {
	clock := &fakeClock{}
	clock.set(100)
	g := startGateway(t, func(o *Options) { o.Clock = clock.now })
	g.createTable("default", "r6", 1, []*setatspb.Column{col("id", "INT")}, []string{"id"},
		map[string]string{"changelog.retention.ms": "1000"})
	rec := intRecord(g.mem, 1)
	defer rec.Release()
	if _, err := g.put(writeCmd(t, &setatspb.WriteCommand{Table: "r6"}), rec); err != nil {
		t.Fatal(err)
	}
	tk := ticket(t, &setatspb.ChangelogTicket{Table: "r6", Start: &setatspb.ChangelogTicket_Offset{Offset: 0}})
	if rows, err := g.readStream(tk); err != nil || len(rows) != 1 {
		t.Fatalf("before retention: %q %v", rows, err)
	}
	clock.set(100 + 1000 + 1)
	if n := g.s.RunRetention(); n != 1 {
		t.Fatalf("retention removed %d rows, want 1", n)
	}
	_, err := g.readStream(tk)
	wantCode(t, err, codes.OutOfRange, "default.r6", "bucket 0", "offset 0", "[0, 1)")
	lb := &setatspb.ListBucketsResponse{}
	g.mustAction(ActionListBuckets, &setatspb.TableRequest{Table: "r6"}, lb)
	if b := lb.GetBuckets()[0]; b.GetStartOffset() != 1 || b.GetEndOffset() != 1 {
		t.Fatalf("after retention: %v", lb)
	}
	// EARLIEST now starts after the removed rows; an offset above the end is OutOfRange too.
	rows, err := g.readStream(ticket(t, &setatspb.ChangelogTicket{Table: "r6"}))
	if err != nil || len(rows) != 0 {
		t.Fatalf("earliest after retention: %q %v", rows, err)
	}
	_, err = g.readStream(ticket(t, &setatspb.ChangelogTicket{Table: "r6", Start: &setatspb.ChangelogTicket_Offset{Offset: 5}}))
	wantCode(t, err, codes.OutOfRange, "bucket 0", "offset 5")
}

// TestRetentionCoversUnopenedTables is R6 for a table nobody used since a restart: retention
// still removes its expired rows (it opens the store itself), and a reader restored at the
// removed offset then fails with OutOfRange.
func TestRetentionCoversUnopenedTables(t *testing.T) {
	clock := &fakeClock{}
	clock.set(100)
	wh := t.TempDir()
	g := startGateway(t, func(o *Options) { o.Clock = clock.now; o.Warehouse = wh })
	g.createTable("default", "idle", 2, []*setatspb.Column{col("id", "INT")}, []string{"id"},
		map[string]string{"changelog.retention.ms": "1000"})
	rec := intRecord(g.mem, 1, 2, 3, 4, 5, 6)
	defer rec.Release()
	if _, err := g.put(writeCmd(t, &setatspb.WriteCommand{Table: "idle"}), rec); err != nil {
		t.Fatal(err)
	}
	g.s.Shutdown()

	g = startGateway(t, func(o *Options) { o.Clock = clock.now; o.Warehouse = wh })
	if n := gaugeValue(t, g.s.metrics.openTables); n != 0 {
		t.Fatalf("%v stores open after restart, want 0", n)
	}
	clock.set(100 + 1000 + 1)
	if n := g.s.RunRetention(); n != 6 {
		t.Fatalf("retention removed %d rows, want 6", n)
	}
	lb := &setatspb.ListBucketsResponse{}
	g.mustAction(ActionListBuckets, &setatspb.TableRequest{Table: "idle"}, lb)
	var removed int64
	for _, b := range lb.GetBuckets() {
		if b.GetStartOffset() != b.GetEndOffset() {
			t.Fatalf("bucket %d keeps rows after retention: %v", b.GetBucket(), lb)
		}
		removed += b.GetEndOffset()
	}
	if removed != 6 {
		t.Fatalf("buckets after retention: %v", lb)
	}
	_, err := g.readStream(ticket(t, &setatspb.ChangelogTicket{Table: "idle", Bucket: lb.GetBuckets()[0].GetBucket(),
		Start: &setatspb.ChangelogTicket_Offset{Offset: 0}}))
	wantCode(t, err, codes.OutOfRange, "default.idle", "offset 0")
}

// TestDoGetBatchLimits: DoGet record batches stay within the message limit however large the
// rows are (the bucket used to be unreadable: one batch of max_batch_rows large rows exceeded
// --max-message-bytes, ResourceExhausted on every retry), whatever max_batch_rows asks for, and a
// row larger than the batch budget goes alone.
func TestDoGetBatchLimits(t *testing.T) {
	g := startGateway(t, func(o *Options) { o.MaxMessageBytes = 8 << 20 })
	g.createTable("default", "big", 1, idV, []string{"id"}, nil)
	desc := writeCmd(t, &setatspb.WriteCommand{Table: "big"})
	var want []string
	for b := 0; b < 3; b++ { // 3 batches of 10 rows of 160 KiB: each within the 8 MiB limit
		ids, vs := make([]int32, 10), make([]string, 10)
		for i := range ids {
			ids[i], vs[i] = int32(b*10+i), strings.Repeat(string(rune('a'+b)), 160<<10)
			want = append(want, fmt.Sprintf("+I %d %d", ids[i], len(vs[i])))
		}
		rec := intStrRecord(g.mem, nil, ids, vs)
		_, err := g.put(desc, rec)
		rec.Release()
		if err != nil {
			t.Fatal(err)
		}
	}
	huge := intStrRecord(g.mem, nil, []int32{99}, []string{strings.Repeat("h", 1536<<10)}) // above the 1 MiB budget, below the 2 MiB row cap
	if _, err := g.put(desc, huge); err != nil {
		t.Fatal(err)
	}
	huge.Release()
	want = append(want, fmt.Sprintf("+I 99 %d", 1536<<10))
	read := func(tk *setatspb.ChangelogTicket, n int) (rows []string, batches []int64) {
		ctx, cancel := context.WithCancel(g.ctx)
		defer cancel()
		stream, err := g.client.DoGet(ctx, &flight.Ticket{Ticket: ticket(t, tk)})
		if err != nil {
			t.Fatal(err)
		}
		rdr, err := flight.NewRecordReader(stream, ipc.WithAllocator(g.mem))
		if err != nil {
			t.Fatal(err)
		}
		defer rdr.Release()
		for len(rows) < n && rdr.Next() {
			rec := rdr.RecordBatch()
			for i := 0; i < int(rec.NumRows()); i++ {
				rows = append(rows, fmt.Sprintf("+I %d %d", rec.Column(3).(*array.Int32).Value(i), len(rec.Column(4).(*array.String).Value(i))))
			}
			if rec.NumRows() > 0 {
				batches = append(batches, rec.NumRows())
			}
		}
		if err := rdr.Err(); err != nil {
			t.Fatalf("read %v: %v", tk, err)
		}
		return rows, batches
	}
	for _, follow := range []bool{false, true} {
		rows, batches := read(&setatspb.ChangelogTicket{Table: "big", Follow: follow, MaxBatchRows: math.MaxInt32}, len(want))
		if !reflect.DeepEqual(rows, want) {
			t.Fatalf("follow %v: rows %q, want %q", follow, rows, want)
		}
		// 6 rows of 160 KiB fit the 1 MiB budget, 7 do not; the 1.5 MiB row goes alone.
		if want := []int64{6, 6, 6, 6, 6, 1}; !reflect.DeepEqual(batches, want) {
			t.Fatalf("follow %v: record batches of %v rows, want %v", follow, batches, want)
		}
	}
}
