package gateway

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/setats/setats/proto/setatspb"
)

// TestShutdownDrainsWrites: a batch whose fsync is still running when Shutdown begins is
// acknowledged (drained), then the stream, now idle, ends at once with Unavailable; Shutdown
// returns and the rows are durable (a new gateway on the warehouse reads them). A batch sent
// after Shutdown began is not applied.
func TestShutdownDrainsWrites(t *testing.T) {
	wh := t.TempDir()
	fs := newHoldFS()
	g := startGateway(t, func(o *Options) { o.Warehouse = wh; o.ShutdownTimeout = time.Minute; o.StoreFS = fs })
	g.createTable("default", "d", 1, idV, []string{"id"}, nil)
	stream, err := g.client.DoPut(g.ctx)
	if err != nil {
		t.Fatal(err)
	}
	r1 := intStrRecord(g.mem, nil, []int32{1}, []string{"before"})
	defer r1.Release()
	r2 := intStrRecord(g.mem, nil, []int32{2}, []string{"in flight"})
	defer r2.Release()
	w := flight.NewRecordWriter(stream, ipc.WithSchema(r1.Schema()), ipc.WithAllocator(g.mem))
	w.SetFlightDescriptor(writeCmd(t, &setatspb.WriteCommand{Table: "d"}))
	if err := w.Write(r1); err != nil {
		t.Fatal(err)
	}
	if _, err := stream.Recv(); err != nil {
		t.Fatal(err)
	}
	waitWritesSettled(t, g)
	fs.hold(t)
	if err := w.Write(r2); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the second batch applied with its fsync held", func() bool {
		return fs.blocked.Load() > 0 && metricValue(t, g.s, "setats_write_batches_pending") == 1
	})
	done := make(chan struct{})
	go func() { g.s.Shutdown(); close(done) }()
	<-g.s.quit // shutdown has begun
	fs.release()
	pr, err := stream.Recv()
	if err != nil {
		t.Fatalf("ack of the batch in flight at shutdown: %v", err)
	}
	ack := &setatspb.WriteAck{}
	if err := proto.Unmarshal(pr.GetAppMetadata(), ack); err != nil || ack.GetBatchSeq() != 1 {
		t.Fatalf("ack %v %v", ack, err)
	}
	if _, err := stream.Recv(); status.Code(err) != codes.Unavailable {
		t.Fatalf("end of the idle DoPut at shutdown: %v", err)
	}
	_ = w.Close()
	<-done

	g2 := startGateway(t, func(o *Options) { o.Warehouse = wh })
	rows, err := g2.readStream(ticket(t, &setatspb.ChangelogTicket{Table: "d"}))
	if err != nil || !reflect.DeepEqual(stripTime(rows), []string{"+I[1, before] @0", "+I[2, in flight] @1"}) {
		t.Fatalf("after restart: %q %v", rows, err)
	}
}

// TestShutdownTimeout: a DoPut left open by its client does not hold Shutdown past
// ShutdownTimeout; the call is cut with an error.
func TestShutdownTimeout(t *testing.T) {
	g := startGateway(t, func(o *Options) { o.ShutdownTimeout = 50 * time.Millisecond })
	g.createTable("default", "d", 1, idV, []string{"id"}, nil)
	stream, err := g.client.DoPut(g.ctx)
	if err != nil {
		t.Fatal(err)
	}
	rec := intStrRecord(g.mem, nil, []int32{1}, []string{"x"})
	defer rec.Release()
	w := flight.NewRecordWriter(stream, ipc.WithSchema(rec.Schema()), ipc.WithAllocator(g.mem))
	w.SetFlightDescriptor(writeCmd(t, &setatspb.WriteCommand{Table: "d"}))
	if err := w.Write(rec); err != nil {
		t.Fatal(err)
	}
	if _, err := stream.Recv(); err != nil {
		t.Fatal(err)
	}
	g.s.Shutdown() // returns although the client never closes its stream
	if _, err := stream.Recv(); err == nil || errors.Is(err, io.EOF) {
		t.Fatalf("DoPut cut by shutdown: %v", err)
	}
	_ = w.Close()
}

// TestPartitionedTable: endpoints are ordered by partition then bucket and cover every bucket of
// every partition; DoGet reads one partition's bucket; NEW_BUCKET names the partition.
func TestPartitionedTable(t *testing.T) {
	g := startGateway(t, nil)
	g.mustAction(ActionCreateTable, &setatspb.CreateTableRequest{Spec: &setatspb.TableSpec{Table: "p",
		Columns:    []*setatspb.Column{col("id", "INT"), col("dt", "STRING"), col("v", "STRING")},
		PrimaryKey: []string{"id", "dt"}, PartitionKeys: []string{"dt"}, BucketCount: 2}}, &setatspb.TableInfo{})
	ctx, cancel := context.WithCancel(g.ctx)
	defer cancel()
	watch := g.watchStream(ctx, &setatspb.WatchRequest{Table: "p"})
	if n := watch(); n.GetKind() != setatspb.NotificationKind_READY {
		t.Fatal(n)
	}
	fDt := arrow.Field{Name: "dt", Type: arrow.BinaryTypes.String}
	rec := recordOf(g.mem, []arrow.Field{fID, fDt, fV}, []int32{1, 2, 3, 4}, []string{"d2", "d1", "d1", "d2"}, []string{"a", "b", "c", "d"})
	defer rec.Release()
	if _, err := g.put(writeCmd(t, &setatspb.WriteCommand{Table: "p"}), rec); err != nil {
		t.Fatal(err)
	}
	newBuckets := map[string]bool{}
	for len(newBuckets) < 2 {
		n := watch()
		if n.GetKind() == setatspb.NotificationKind_NEW_BUCKET {
			newBuckets[n.GetPartition()] = true
		}
	}
	if !newBuckets["dt=d1"] || !newBuckets["dt=d2"] {
		t.Fatalf("NEW_BUCKET partitions: %v", newBuckets)
	}
	fi, err := g.client.GetFlightInfo(g.ctx, &flight.FlightDescriptor{Type: flight.DescriptorPATH, Path: []string{"p"}})
	if err != nil {
		t.Fatal(err)
	}
	var eps []string
	var rows []string
	for _, ep := range fi.GetEndpoint() {
		tk := &setatspb.ChangelogTicket{}
		if err := proto.Unmarshal(ep.GetTicket().GetTicket(), tk); err != nil {
			t.Fatal(err)
		}
		eps = append(eps, fmt.Sprintf("%s/%d", tk.GetPartition(), tk.GetBucket()))
		r, err := g.readStream(ep.GetTicket().GetTicket())
		if err != nil {
			t.Fatal(err)
		}
		rows = append(rows, r...)
	}
	if !reflect.DeepEqual(eps, []string{"dt=d1/0", "dt=d1/1", "dt=d2/0", "dt=d2/1"}) || len(rows) != 4 {
		t.Fatalf("endpoints %v, rows %q", eps, rows)
	}
	// A partition without rows yet reads empty; a malformed partition name is InvalidArgument.
	if r, err := g.readStream(ticket(t, &setatspb.ChangelogTicket{Table: "p", Partition: "dt=d3"})); err != nil || len(r) != 0 {
		t.Fatalf("empty partition: %q %v", r, err)
	}
	_, err = g.readStream(ticket(t, &setatspb.ChangelogTicket{Table: "p", Partition: "day=d3"}))
	wantCode(t, err, codes.InvalidArgument, "day=d3")
}

// TestDropDatabaseCascade: a cascading drop-database drops each table like drop-table: stores
// closed, data removed, TABLE_DROPPED published.
func TestDropDatabaseCascade(t *testing.T) {
	g := startGateway(t, nil)
	var locs []string
	for _, name := range []string{"a", "b"} {
		info := g.createTable("gone", name, 1, idV, []string{"id"}, nil)
		locs = append(locs, strings.TrimPrefix(info.GetSpec().GetLocation(), "file://"))
		rec := intStrRecord(g.mem, nil, []int32{1}, []string{"x"})
		_, err := g.put(writeCmd(t, &setatspb.WriteCommand{Database: "gone", Table: name}), rec)
		rec.Release()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(locs[len(locs)-1]); err != nil {
			t.Fatalf("table data: %v", err)
		}
	}
	ctx, cancel := context.WithCancel(g.ctx)
	defer cancel()
	watch := g.watchStream(ctx, &setatspb.WatchRequest{Database: "gone"})
	if n := watch(); n.GetKind() != setatspb.NotificationKind_READY {
		t.Fatal(n)
	}
	err := g.action(ActionDropDatabase, &setatspb.DatabaseRequest{Database: "gone"}, nil)
	wantCode(t, err, codes.FailedPrecondition, "gone")
	g.mustAction(ActionDropDatabase, &setatspb.DatabaseRequest{Database: "gone", Cascade: true}, &setatspb.Empty{})
	for _, name := range []string{"a", "b"} {
		if n := watch(); n.GetKind() != setatspb.NotificationKind_TABLE_DROPPED || n.GetTable() != name {
			t.Fatalf("notification %v, want TABLE_DROPPED of %s", n, name)
		}
	}
	for _, loc := range locs {
		if _, err := os.Stat(loc); !os.IsNotExist(err) {
			t.Fatalf("data of dropped table at %s: %v", loc, err)
		}
	}
	if n := gaugeValue(t, g.s.metrics.openTables); n != 0 {
		t.Fatalf("open tables %v after drop", n)
	}
	err = g.action(ActionListTables, &setatspb.ListTablesRequest{Database: "gone"}, nil)
	wantCode(t, err, codes.NotFound, "gone")
}
