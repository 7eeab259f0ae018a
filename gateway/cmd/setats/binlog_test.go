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

// dialTestGateway starts a gateway without users or TLS (startTestGateway) and connects to it: its
// manager-url, a client and a context of a minute for the calls, all ended with the test.
func dialTestGateway(t *testing.T) (string, flight.Client, context.Context) {
	t.Helper()
	s := startTestGateway(t, gateway.Security{})
	url := "grpc://" + s.FlightAddr()
	c, err := dialFlight(url, "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return url, c, ctx
}

// TestBinlogCLI runs `setats binlog ...` against a real gateway: the seed's orders sequence
// (INSERT, DELETE, INSERT, UPDATE), a slot with a checkpoint sync point, then every command in
// table and JSON form.
func TestBinlogCLI(t *testing.T) {
	url, c, ctx := dialTestGateway(t)
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

// TestBinlogAcquireSlotCLI runs `setats binlog acquire-slot` against a real gateway, step by step
// on the same slots: a new slot, its renewal, another job's refusal, flags that are refused before
// any call, the gateway's refusals, and --reset of an expired slot (a table whose slot.ttl is 1 ms).
func TestBinlogAcquireSlotCLI(t *testing.T) {
	url, c, ctx := dialTestGateway(t)
	for _, tbl := range []struct{ name, ttl string }{{"orders", "259200 s"}, {"short_ttl", "1 ms"}} {
		spec := &setatspb.TableSpec{Database: "shop", Table: tbl.name, BucketCount: 1, PrimaryKey: []string{"c1"},
			Columns: []*setatspb.Column{{Name: "c1", Type: "INT"}}, Options: map[string]string{"slot.ttl": tbl.ttl}}
		if err := doAction(ctx, c, "create-table", &setatspb.CreateTableRequest{Spec: spec, CreateDatabase: true}, &setatspb.TableInfo{}); err != nil {
			t.Fatal(err)
		}
	}
	// A slot of short_ttl that has expired by the time the steps use it (1 ms without a checkpoint).
	if err := doAction(ctx, c, "binlog-acquire-slot", &setatspb.AcquireSlotRequest{Database: "shop", Table: "short_ttl", Slot: "old", Owner: "job-0"}, &setatspb.SlotInfo{}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(5 * time.Millisecond)

	slot := func(table, slot string, extra ...string) []string {
		return append([]string{"binlog", "acquire-slot", "--manager-url", url, "--table", "shop." + table, "--slot", slot}, extra...)
	}
	const header = "slot   status  owner  lease_until               created  buckets  created_at                updated_at                expires_at\n"
	for _, step := range []struct {
		name string
		args []string
		code int
		want []string // in stdout + stderr
	}{
		{"creates the slot", slot("orders", "slot1", "--owner", "job-1"), 0, []string{header, "\nslot1  active  job-1  ", "  true     0        "}},
		{"renews the lease", slot("orders", "slot1", "--owner", "job-1", "--lease", "2m"), 0, []string{header, "  false    0        "}},
		{"another job", slot("orders", "slot1", "--owner", "job-2"), 1, []string{"FailedPrecondition", "owned by job job-1", "job job-2 cannot use it"}},
		{"no owner", slot("orders", "slot1"), 2, []string{"--owner is required"}},
		{"empty owner", slot("orders", "slot1", "--owner", ""), 2, []string{"--owner is required"}},
		{"control character in the owner", slot("orders", "slot1", "--owner", "job-1\n\x1b[2J"), 2, []string{`--owner "job-1\n\x1b[2J"`, "no control characters"}},
		{"negative lease", slot("orders", "slot1", "--owner", "job-1", "--lease", "-1s"), 2, []string{"--lease -1s: want 0"}},
		{"lease under 1 ms", slot("orders", "slot1", "--owner", "job-1", "--lease", "500us"), 2, []string{"--lease 500µs: want 0"}},
		{"lease not a duration", slot("orders", "slot1", "--owner", "job-1", "--lease", "soon"), 2, []string{`invalid value "soon" for flag -lease`}},
		{"no slot", []string{"binlog", "acquire-slot", "--manager-url", url, "--table", "shop.orders", "--owner", "job-1"}, 2, []string{"--slot is required"}},
		{"no table", []string{"binlog", "acquire-slot", "--manager-url", url, "--slot", "s", "--owner", "job-1"}, 2, []string{"--table db.table is required"}},
		{"extra argument", slot("orders", "slot1", "--owner", "job-1", "now"), 2, []string{`unexpected arguments ["now"]`}},
		{"bad slot name", slot("orders", "../../etc", "--owner", "job-1"), 1, []string{"InvalidArgument", `invalid slot name "../../etc"`}},
		{"unknown table", slot("nope", "slot1", "--owner", "job-1"), 1, []string{"NotFound", "shop.nope"}},
		{"bad manager-url", []string{"binlog", "acquire-slot", "--manager-url", strings.Replace(url, "grpc://", "http://", 1), "--table", "shop.orders", "--slot", "s", "--owner", "j"}, 1, []string{"want grpc://host:port"}},
		{"expired slot", slot("short_ttl", "old", "--owner", "job-1"), 1, []string{"FailedPrecondition", `slot "old" of table shop.short_ttl expired`, "startup.mode = 'initial'"}},
		{"expired slot, reset", slot("short_ttl", "old", "--owner", "job-1", "--reset"), 0, []string{"\nold   active  job-1  ", "  true     0        "}},
	} {
		t.Run(step.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			if rc := run(step.args, &out, &errb); rc != step.code {
				t.Fatalf("setats %q: exit %d, want %d; stdout %s stderr %s", step.args, rc, step.code, out.String(), errb.String())
			}
			got := out.String() + errb.String()
			for _, w := range step.want {
				if !strings.Contains(got, w) {
					t.Fatalf("setats %q printed\n%s\nwithout %q", step.args, got, w)
				}
			}
			if step.code != 0 && out.Len() > 0 {
				t.Fatalf("setats %q failed but printed on stdout: %s", step.args, out.String())
			}
		})
	}

	// --json: the gateway's SlotInfo; --lease sets the end of the lease from the call's time.
	var out, errb bytes.Buffer
	before := time.Now().UnixMilli()
	if rc := run(slot("orders", "slot1", "--owner", "job-1", "--lease", "90m", "--json"), &out, &errb); rc != 0 {
		t.Fatalf("acquire-slot --json: exit %d: %s", rc, errb.String())
	}
	after := time.Now().UnixMilli()
	var info struct {
		Name, Status, Owner string
		OwnerLeaseUntilMs   int64 `json:",string"`
		Created             bool
	}
	if err := json.Unmarshal(out.Bytes(), &info); err != nil {
		t.Fatalf("acquire-slot --json: %v\n%s", err, out.String())
	}
	lease := int64(90 * time.Minute / time.Millisecond)
	if info.Name != "slot1" || info.Status != "SLOT_ACTIVE" || info.Owner != "job-1" || info.Created ||
		info.OwnerLeaseUntilMs < before+lease || info.OwnerLeaseUntilMs > after+lease {
		t.Fatalf("acquire-slot --json: %+v, want slot1 active, owned by job-1, not created, lease until %d..%d", info, before+lease, after+lease)
	}
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
