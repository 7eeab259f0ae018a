package main

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"google.golang.org/protobuf/proto"

	"github.com/setats/setats/gateway"
	"github.com/setats/setats/proto/setatspb"
)

// TestBinlogCLI runs `setats binlog ...` against a real gateway: the seed's orders sequence
// (INSERT, DELETE, INSERT, UPDATE), a slot with a checkpoint sync point, then every command in
// table and JSON form.
func TestBinlogCLI(t *testing.T) {
	s := startTestGateway(t, gateway.Security{})
	url := "grpc://" + s.FlightAddr()
	c, err := dialFlight(url, "")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	spec := &setatspb.TableSpec{Database: "shop", Table: "orders_source", BucketCount: 1, PrimaryKey: []string{"c1"},
		Columns: []*setatspb.Column{{Name: "c1", Type: "INT"}, {Name: "c2", Type: "INT"}, {Name: "c3", Type: "INT"}}}
	if err := doAction(ctx, c, "create-table", &setatspb.CreateTableRequest{Spec: spec, CreateDatabase: true}, &setatspb.TableInfo{}); err != nil {
		t.Fatal(err)
	}
	for _, w := range [][4]int32{{0, 100, 1, 1}, {3, 100, 1, 1}, {0, 200, 1, 1}, {2, 200, 2, 1}} {
		put(t, ctx, c, int8(w[0]), w[1], w[2], w[3])
	}
	if err := doAction(ctx, c, "binlog-acquire-slot", &setatspb.AcquireSlotRequest{Database: "shop", Table: "orders_source", Slot: "slot1", Owner: "job-1"}, &setatspb.SlotInfo{}); err != nil {
		t.Fatal(err)
	}
	run := func(want int, args ...string) string {
		t.Helper()
		var out, errb bytes.Buffer
		if rc := run(append([]string{"binlog"}, args...), &out, &errb); rc != want {
			t.Fatalf("setats binlog %q: exit %d, want %d; stderr %s", args, rc, want, errb.String())
		}
		return out.String() + errb.String()
	}
	common := []string{"--manager-url", url, "--table", "shop.orders_source"}
	out := run(0, append([]string{"changes"}, common...)...)
	for _, want := range []string{"offset  row_kind  commit_time", "+I", "-D", "-U", "+U", "c1", "200"} {
		if !strings.Contains(out, want) {
			t.Fatalf("changes output lacks %q:\n%s", want, out)
		}
	}
	if n := strings.Count(out, "\n"); n != 6 {
		t.Fatalf("changes: %d lines, want header + 5:\n%s", n, out)
	}
	out = run(0, append([]string{"register-sync-point", "--slot", "slot1", "--owner", "job-1", "--points", "0:3"}, common...)...)
	if !strings.Contains(out, "3                  3") {
		t.Fatalf("register: %s", out)
	}
	out = run(0, append([]string{"progress", "--slot", "slot1"}, common...)...)
	if !strings.Contains(out, "slot1") || !strings.Contains(out, "unconsumed") || !strings.Contains(out, "active") {
		t.Fatalf("progress: %s", out)
	}
	out = run(0, append([]string{"progress", "--slot", "slot1", "--json"}, common...)...)
	var pr struct {
		Rows []struct {
			ConsumedOffset, EndOffset, Unconsumed string
			Checkpoint                            bool
		}
	}
	if err := json.Unmarshal([]byte(out), &pr); err != nil || len(pr.Rows) != 2 || pr.Rows[0].Unconsumed != "2" || pr.Rows[0].EndOffset != "5" {
		t.Fatalf("progress --json: %v\n%s", err, out)
	}
	out = run(0, append([]string{"sync-point", "--slot", "slot1"}, common...)...)
	if !strings.Contains(out, "last_sync_point") || !strings.Contains(out, "checkpoint") {
		t.Fatalf("sync-point: %s", out)
	}
	out = run(0, append([]string{"consumed"}, common...)...)
	if !strings.Contains(out, "consumed: false") {
		t.Fatalf("consumed: %s", out)
	}
	run(0, append([]string{"register-sync-point", "--slot", "slot1", "--owner", "job-1", "--points", "0:5"}, common...)...)
	if out = run(0, append([]string{"consumed"}, common...)...); !strings.Contains(out, "consumed: true") {
		t.Fatalf("consumed after catching up: %s", out)
	}
	out = run(0, append([]string{"slots"}, common...)...)
	if !strings.Contains(out, "slot1") || !strings.Contains(out, "job-1") {
		t.Fatalf("slots: %s", out)
	}
	out = run(1, append([]string{"register-sync-point", "--slot", "slot1", "--owner", "job-2", "--points", "0:5"}, common...)...)
	if !strings.Contains(out, "FailedPrecondition") || !strings.Contains(out, "job-1") {
		t.Fatalf("foreign owner: %s", out)
	}
	run(0, append([]string{"drop-slot", "--slot", "slot1"}, common...)...)
	out = run(1, append([]string{"drop-slot", "--slot", "slot1"}, common...)...)
	if !strings.Contains(out, "NotFound") {
		t.Fatalf("second drop: %s", out)
	}
	run(2, append([]string{"sync-point"}, common...)...)
	run(2, "progress")
	run(2, append([]string{"nope"}, common...)...)
}

// put writes one row (c1, c2, c3) with a RowKind through DoPut.
func put(t *testing.T, ctx context.Context, c flight.Client, kind int8, c1, c2, c3 int32) {
	t.Helper()
	mem := memory.NewGoAllocator()
	sc := arrow.NewSchema([]arrow.Field{{Name: "_row_kind", Type: arrow.PrimitiveTypes.Int8},
		{Name: "c1", Type: arrow.PrimitiveTypes.Int32}, {Name: "c2", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
		{Name: "c3", Type: arrow.PrimitiveTypes.Int32, Nullable: true}}, nil)
	b := array.NewRecordBuilder(mem, sc)
	defer b.Release()
	b.Field(0).(*array.Int8Builder).Append(kind)
	b.Field(1).(*array.Int32Builder).Append(c1)
	b.Field(2).(*array.Int32Builder).Append(c2)
	b.Field(3).(*array.Int32Builder).Append(c3)
	rec := b.NewRecordBatch()
	defer rec.Release()
	stream, err := c.DoPut(ctx)
	if err != nil {
		t.Fatal(err)
	}
	cmd, _ := proto.Marshal(&setatspb.WriteCommand{Database: "shop", Table: "orders_source"})
	w := flight.NewRecordWriter(stream, ipc.WithSchema(sc))
	w.SetFlightDescriptor(&flight.FlightDescriptor{Type: flight.DescriptorCMD, Cmd: cmd})
	if err := w.Write(rec); err != nil {
		t.Fatal(err)
	}
	_ = w.Close()
	_ = stream.CloseSend()
	if _, err := stream.Recv(); err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := stream.Recv(); err != nil {
			break
		}
	}
}
