package gateway

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"net"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"

	"github.com/setats/setats/proto/setatspb"
)

// recordOf builds a one-batch record from columns given as (field, values) pairs; values are
// []int32, []int64, []int8 or []string, a nil entry of []*int32 is a null.
func recordOf(mem memory.Allocator, fields []arrow.Field, cols ...any) arrow.RecordBatch {
	b := array.NewRecordBuilder(mem, arrow.NewSchema(fields, nil))
	defer b.Release()
	for i, c := range cols {
		switch v := c.(type) {
		case []int32:
			b.Field(i).(*array.Int32Builder).AppendValues(v, nil)
		case []*int32:
			for _, x := range v {
				if x == nil {
					b.Field(i).AppendNull()
				} else {
					b.Field(i).(*array.Int32Builder).Append(*x)
				}
			}
		case []int64:
			b.Field(i).(*array.Int64Builder).AppendValues(v, nil)
		case []int8:
			b.Field(i).(*array.Int8Builder).AppendValues(v, nil)
		case []string:
			b.Field(i).(*array.StringBuilder).AppendValues(v, nil)
		}
	}
	return b.NewRecordBatch()
}

var (
	fID    = arrow.Field{Name: "id", Type: arrow.PrimitiveTypes.Int32}
	fV     = arrow.Field{Name: "v", Type: arrow.BinaryTypes.String, Nullable: true}
	fKind  = arrow.Field{Name: "_row_kind", Type: arrow.PrimitiveTypes.Int8}
	fID64  = arrow.Field{Name: "id", Type: arrow.PrimitiveTypes.Int64}
	fExtra = arrow.Field{Name: "zzz", Type: arrow.PrimitiveTypes.Int32}
)

func i32(v int32) *int32 { return &v }

// captureStream records the FlightData messages a flight.Writer sends.
type captureStream struct{ msgs []*flight.FlightData }

func (c *captureStream) Send(d *flight.FlightData) error {
	c.msgs = append(c.msgs, proto.Clone(d).(*flight.FlightData))
	return nil
}

// encodeFlightData returns the FlightData messages (schema, then one per record) of a DoPut.
func encodeFlightData(t testing.TB, mem memory.Allocator, desc *flight.FlightDescriptor, rec arrow.RecordBatch) []*flight.FlightData {
	c := &captureStream{}
	w := flight.NewRecordWriter(c, ipc.WithSchema(rec.Schema()), ipc.WithAllocator(mem))
	w.SetFlightDescriptor(desc)
	if err := w.Write(rec); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return c.msgs
}

// putRaw sends raw FlightData messages in one DoPut and returns the call's outcome.
func (g *testGateway) putRaw(msgs []*flight.FlightData) error {
	stream, err := g.client.DoPut(g.ctx)
	if err != nil {
		return err
	}
	for _, m := range msgs {
		if err := stream.Send(m); err != nil {
			break
		}
	}
	_ = stream.CloseSend()
	for {
		if _, err := stream.Recv(); err != nil {
			if err.Error() == "EOF" {
				return nil
			}
			return err
		}
	}
}

// TestBadInput: every kind of bad input is rejected with its gRPC code and a message naming the
// culprit; nothing of the batch is applied (the table's changelog and state are unchanged) and
// the gateway keeps serving.
func TestBadInput(t *testing.T) {
	g := startGateway(t, func(o *Options) { o.MaxMessageBytes = 64 << 10 })
	g.createTable("default", "bad", 1, idV, []string{"id"}, nil)
	desc := writeCmd(t, &setatspb.WriteCommand{Table: "bad"})
	good := intStrRecord(g.mem, nil, []int32{1}, []string{"ok"})
	defer good.Release()
	if _, err := g.put(desc, good); err != nil {
		t.Fatal(err)
	}
	snapshot := func() []string {
		rows, err := g.readStream(ticket(t, &setatspb.ChangelogTicket{Table: "bad"}))
		if err != nil {
			t.Fatal(err)
		}
		return rows
	}
	before := snapshot()

	big := strings.Repeat("x", 100<<10)
	cases := []struct {
		name     string
		fields   []arrow.Field
		cols     []any
		raw      func() []*flight.FlightData
		desc     *flight.FlightDescriptor
		code     codes.Code
		culprits []string
	}{
		{name: "wrong column type", fields: []arrow.Field{fID64, fV}, cols: []any{[]int64{10}, []string{"x"}},
			code: codes.InvalidArgument, culprits: []string{"default.bad", `"id"`, "int32", "int64"}},
		{name: "unknown column", fields: []arrow.Field{fID, fV, fExtra}, cols: []any{[]int32{10}, []string{"x"}, []int32{1}},
			code: codes.InvalidArgument, culprits: []string{"default.bad", "zzz"}},
		{name: "missing primary-key column", fields: []arrow.Field{fV}, cols: []any{[]string{"x"}},
			code: codes.InvalidArgument, culprits: []string{"default.bad", `"id"`}},
		{name: "null key", fields: []arrow.Field{fID, fV}, cols: []any{[]*int32{i32(10), nil}, []string{"x", "y"}},
			code: codes.InvalidArgument, culprits: []string{"default.bad", `"id"`, "null"}},
		{name: "invalid UTF-8", fields: []arrow.Field{fID, fV}, cols: []any{[]int32{10, 11}, []string{"ok", "bad\xff"}},
			code: codes.InvalidArgument, culprits: []string{"default.bad", `"v"`, "index 1", "utf8"}},
		{name: "unknown RowKind", fields: []arrow.Field{fKind, fID, fV}, cols: []any{[]int8{0, 7}, []int32{10, 11}, []string{"x", "y"}},
			code: codes.InvalidArgument, culprits: []string{"default.bad", "_row_kind", "7"}},
		{name: "oversized message", fields: []arrow.Field{fID, fV}, cols: []any{[]int32{10}, []string{big}},
			code: codes.ResourceExhausted, culprits: []string{"larger than max", "65536"}}, // gRPC's own status
		{name: "unknown table", fields: []arrow.Field{fID, fV}, cols: []any{[]int32{10}, []string{"x"}},
			desc: writeCmd(t, &setatspb.WriteCommand{Table: "nosuch"}), code: codes.NotFound, culprits: []string{"nosuch"}},
		{name: "malformed IPC: garbage first message", raw: func() []*flight.FlightData {
			return []*flight.FlightData{{FlightDescriptor: desc, DataHeader: []byte("not an arrow message")}}
		}, code: codes.InvalidArgument, culprits: []string{"IPC"}},
		{name: "malformed IPC: truncated record body", raw: func() []*flight.FlightData {
			rec := intStrRecord(g.mem, nil, []int32{10, 11, 12}, []string{"a", "b", "c"})
			defer rec.Release()
			msgs := encodeFlightData(t, g.mem, desc, rec)
			msgs[1].DataBody = msgs[1].DataBody[:len(msgs[1].DataBody)/3]
			return msgs
		}, code: codes.InvalidArgument, culprits: []string{"default.bad", "IPC"}},
		{name: "malformed IPC: decreasing string offsets", raw: func() []*flight.FlightData {
			// The IPC reader checks the last offset only; decoding such a record used to panic
			// in DoPut's decoding goroutine and take the gateway down.
			rec := intStrRecord(g.mem, nil, []int32{10, 11}, []string{"ab", "c"})
			defer rec.Release()
			msgs := encodeFlightData(t, g.mem, desc, rec)
			body := msgs[1].DataBody
			i := bytes.Index(body, []byte{0, 0, 0, 0, 2, 0, 0, 0, 3, 0, 0, 0}) // v's offsets [0, 2, 3]
			if i < 0 {
				t.Fatal("offsets of column v not found in the IPC body")
			}
			binary.LittleEndian.PutUint32(body[i+4:], 5) // [0, 5, 3]
			return msgs
		}, code: codes.InvalidArgument, culprits: []string{"default.bad", `"v"`, "offset 5 of value 1 is decreasing"}},
		{name: "schema bomb: 2^31 fields", raw: func() []*flight.FlightData {
			return []*flight.FlightData{{FlightDescriptor: desc, DataHeader: schemaMessage(1 << 31)}}
		}, code: codes.InvalidArgument, culprits: []string{"schema message 0", "field count 2147483648 > limit 4096"}},
		{name: "empty IPC header", raw: func() []*flight.FlightData {
			return []*flight.FlightData{{FlightDescriptor: desc, AppMetadata: []byte("x")}}
		}, code: codes.InvalidArgument, culprits: []string{"message 0", "no IPC data header"}},
		{name: "long column name", fields: []arrow.Field{fID, {Name: strings.Repeat("c", 5000), Type: arrow.PrimitiveTypes.Int32}},
			cols: []any{[]int32{10}, []int32{1}}, code: codes.InvalidArgument, culprits: []string{"field 1: name of 5000 bytes > limit 1024"}},
		{name: "bad WriteCommand", raw: func() []*flight.FlightData {
			rec := intStrRecord(g.mem, nil, []int32{10}, []string{"a"})
			defer rec.Release()
			return encodeFlightData(t, g.mem, &flight.FlightDescriptor{Type: flight.DescriptorCMD, Cmd: []byte(`{"tabel": "bad"}`)}, rec)
		}, code: codes.InvalidArgument, culprits: []string{"WriteCommand", "tabel"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var err error
			if tc.raw != nil {
				err = g.putRaw(tc.raw())
			} else {
				rec := recordOf(g.mem, tc.fields, tc.cols...)
				defer rec.Release()
				d := desc
				if tc.desc != nil {
					d = tc.desc
				}
				_, err = g.put(d, rec)
			}
			wantCode(t, err, tc.code, tc.culprits...)
			if after := snapshot(); strings.Join(after, "\n") != strings.Join(before, "\n") {
				t.Fatalf("rejected batch changed the changelog:\nbefore %q\nafter  %q", before, after)
			}
		})
	}
	// Still serving: a good batch after all that lands at the next offset.
	next := intStrRecord(g.mem, nil, []int32{2}, []string{"fine"})
	defer next.Release()
	acks, err := g.put(desc, next)
	if err != nil || acks[0].GetBuckets()[0].GetEndOffset() != int64(len(before))+1 {
		t.Fatalf("good write after bad input: %v %v", acks, err)
	}
	// Six rejected batches of a known table are counted before the client sees the error: the
	// five bad records and the truncated body (the oversized message is answered by gRPC itself,
	// maybe before DoPut counts it).
	if n := counterSum(t, g.s.metrics.writeErrors); n < 6 {
		t.Fatalf("setats_write_errors_total = %v, want >= 6", n)
	}
}

// TestBadRequests: malformed tickets, descriptors and action bodies.
func TestBadRequests(t *testing.T) {
	g := startGateway(t, nil)
	g.createTable("default", "t", 2, idV, []string{"id"}, nil)
	g.createTable("default", "p", 1, []*setatspb.Column{col("id", "INT"), col("dt", "STRING")}, []string{"id", "dt"}, nil)

	_, err := g.readStream(ticket(t, &setatspb.ChangelogTicket{Table: "t", Bucket: 2}))
	wantCode(t, err, codes.InvalidArgument, "default.t", "bucket 2")
	_, err = g.readStream(ticket(t, &setatspb.ChangelogTicket{Table: "t", Partition: "dt=1"}))
	wantCode(t, err, codes.InvalidArgument, "default.t", "dt=1")
	_, err = g.readStream(ticket(t, &setatspb.ChangelogTicket{Table: "gone"}))
	wantCode(t, err, codes.NotFound, "gone")
	_, err = g.readStream([]byte(`{"table": 5}`))
	wantCode(t, err, codes.InvalidArgument, "ChangelogTicket")
	_, err = g.client.GetFlightInfo(g.ctx, &flight.FlightDescriptor{Type: flight.DescriptorPATH, Path: []string{"a", "b", "c"}})
	wantCode(t, err, codes.InvalidArgument, "PATH")
	err = g.rawAction("no-such-action", nil, func([]byte) error { return nil })
	wantCode(t, err, codes.InvalidArgument, "no-such-action")
	err = g.rawAction(ActionGetTable, []byte("{bad json"), func([]byte) error { return nil })
	wantCode(t, err, codes.InvalidArgument, "get-table")
	err = g.action(ActionCreateTable, &setatspb.CreateTableRequest{Spec: &setatspb.TableSpec{Table: "x",
		Columns: []*setatspb.Column{col("_row_kind", "INT")}, PrimaryKey: []string{"_row_kind"}}}, nil)
	wantCode(t, err, codes.InvalidArgument, "_row_kind")
}

// TestCatalogContext: every request carrying a CatalogContext is checked first: catalog-type
// hive whose metastore is down is Unavailable naming its URI (watch needs no catalog), hive
// without uri is InvalidArgument naming uri, an unknown type InvalidArgument naming
// catalog-type, a foreign warehouse is FailedPrecondition naming both warehouses; the gateway's
// own warehouse (in any spelling) passes.
func TestCatalogContext(t *testing.T) {
	g := startGateway(t, nil)
	g.createTable("default", "t", 1, idV, []string{"id"}, nil)
	own := strings.TrimPrefix(g.s.Warehouse(), "file://") + "/"
	dead := deadAddr(t)
	hive := &setatspb.CatalogContext{CatalogType: "hive", Uri: "thrift://" + dead}
	noURI := &setatspb.CatalogContext{CatalogType: "hive"}
	jdbc := &setatspb.CatalogContext{CatalogType: "jdbc"}
	other := &setatspb.CatalogContext{CatalogType: "hadoop", Warehouse: "/elsewhere/wh"}
	ok := &setatspb.CatalogContext{CatalogType: "HADOOP", Warehouse: own, CatalogName: "my_catalog"}
	rec := intStrRecord(g.mem, nil, []int32{1}, []string{"a"})
	defer rec.Release()

	calls := map[string]func(cc *setatspb.CatalogContext) error{
		"create-table": func(cc *setatspb.CatalogContext) error {
			return g.action(ActionCreateTable, &setatspb.CreateTableRequest{Catalog: cc, IgnoreIfExists: true,
				Spec: &setatspb.TableSpec{Table: "t", Columns: idV, PrimaryKey: []string{"id"}}}, nil)
		},
		"get-table": func(cc *setatspb.CatalogContext) error {
			return g.action(ActionGetTable, &setatspb.TableRequest{Catalog: cc, Table: "t"}, nil)
		},
		"list-databases": func(cc *setatspb.CatalogContext) error {
			return g.action(ActionListDatabases, &setatspb.ListDatabasesRequest{Catalog: cc}, nil)
		},
		"lookup-offsets": func(cc *setatspb.CatalogContext) error {
			return g.action(ActionLookupOffsets, &setatspb.LookupOffsetsRequest{Catalog: cc, Table: "t"}, nil)
		},
		"DoPut": func(cc *setatspb.CatalogContext) error {
			_, err := g.put(writeCmd(t, &setatspb.WriteCommand{Catalog: cc, Table: "t"}), rec)
			return err
		},
		"GetFlightInfo": func(cc *setatspb.CatalogContext) error {
			cmd, _ := proto.Marshal(&setatspb.ReadCommand{Catalog: cc, Table: "t"})
			_, err := g.client.GetFlightInfo(g.ctx, &flight.FlightDescriptor{Type: flight.DescriptorCMD, Cmd: cmd})
			return err
		},
		"DoGet": func(cc *setatspb.CatalogContext) error {
			_, err := g.readStream(ticket(t, &setatspb.ChangelogTicket{Catalog: cc, Table: "t"}))
			return err
		},
		"watch": func(cc *setatspb.CatalogContext) error {
			ctx, cancel := context.WithCancel(g.ctx)
			defer cancel()
			body, _ := proto.Marshal(&setatspb.WatchRequest{Catalog: cc, Table: "t"})
			stream, err := g.client.DoAction(ctx, &flight.Action{Type: ActionWatch, Body: body})
			if err == nil {
				_, err = stream.Recv()
			}
			return err
		},
	}
	for name, call := range calls {
		t.Run(name, func(t *testing.T) {
			if name == "watch" {
				if err := call(hive); err != nil {
					t.Fatalf("watch with catalog-type hive: %v", err)
				}
			} else {
				wantCode(t, call(hive), codes.Unavailable, "thrift://"+dead)
			}
			wantCode(t, call(noURI), codes.InvalidArgument, "uri")
			wantCode(t, call(jdbc), codes.InvalidArgument, "catalog-type", "jdbc")
			wantCode(t, call(other), codes.FailedPrecondition, "/elsewhere/wh", g.s.Warehouse())
			if err := call(ok); err != nil {
				t.Fatalf("own warehouse %q: %v", own, err)
			}
		})
	}
}

// deadAddr returns a loopback host:port nothing listens on.
func deadAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

// TestTicketBucketValidation: a ChangelogTicket's (partition, bucket) is checked before the store
// is asked for it (bounded or following): a bucket outside [0, bucket_count) or a partition name
// the table cannot have is InvalidArgument naming the table, the partition and the bucket.
func TestTicketBucketValidation(t *testing.T) {
	g := startGateway(t, nil)
	g.createTable("default", "t", 2, idV, []string{"id"}, nil)
	g.mustAction(ActionCreateTable, &setatspb.CreateTableRequest{Spec: &setatspb.TableSpec{Table: "p",
		Columns:    []*setatspb.Column{col("id", "INT"), col("dt", "STRING"), col("n", "INT")},
		PrimaryKey: []string{"id", "dt", "n"}, PartitionKeys: []string{"dt", "n"}, BucketCount: 2}}, &setatspb.TableInfo{})
	for _, tc := range []struct {
		table, partition string
		bucket           int32
	}{
		{"t", "", 2},
		{"t", "", -1},
		{"t", "dt=1", 0},
		{"p", "dt=a/n=1", 2},
		{"p", "", 0},
		{"p", "dt=a", 0},
		{"p", "day=a/n=1", 0},
		{"p", "dt=a/n=01", 1},
		{"p", "dt=a/n=x", 1},
		{"p", "dt=a%2fb/n=1", 1}, // escapes are upper-case hex
		{"p", "dt=a%41/n=1", 1},  // 'A' is not escaped
		{"p", "dt=a/b/n=1", 1},   // a raw '/' in a value
		{"p", "dt=a/n=1/x=2", 1},
	} {
		for _, follow := range []bool{false, true} {
			_, err := g.readStream(ticket(t, &setatspb.ChangelogTicket{Table: tc.table, Partition: tc.partition,
				Bucket: tc.bucket, Follow: follow}))
			wantCode(t, err, codes.InvalidArgument, "default."+tc.table, fmt.Sprintf("%q", tc.partition),
				fmt.Sprintf("bucket %d", tc.bucket))
		}
	}
	// Valid names of partitions that have no rows yet read empty.
	for _, part := range []string{"dt=a%2Fb/n=1", "dt=/n=-5", "dt=%25/n=0", "dt=日本/n=1"} {
		if r, err := g.readStream(ticket(t, &setatspb.ChangelogTicket{Table: "p", Partition: part, Bucket: 1})); err != nil || len(r) != 0 {
			t.Fatalf("partition %q: %q %v", part, r, err)
		}
	}
}

// TestDoPutBadSecondBatch: in a DoPut of three batches whose second is bad, the first stays
// applied and acknowledged, nothing of the second is applied (not even its good rows), the third
// is never applied, and the stream's error names the batch, the table, the column and the row.
func TestDoPutBadSecondBatch(t *testing.T) {
	g := startGateway(t, nil)
	g.createTable("default", "two", 2, idV, []string{"id"}, nil)
	b0 := recordOf(g.mem, []arrow.Field{fID, fV}, []int32{1, 2}, []string{"a", "b"})
	defer b0.Release()
	b1 := recordOf(g.mem, []arrow.Field{fID, fV}, []*int32{i32(3), nil}, []string{"c", "d"})
	defer b1.Release()
	b2 := recordOf(g.mem, []arrow.Field{fID, fV}, []int32{4}, []string{"e"})
	defer b2.Release()
	acks, err := g.put(writeCmd(t, &setatspb.WriteCommand{Table: "two"}), b0, b1, b2)
	wantCode(t, err, codes.InvalidArgument, "batch 1", "default.two", `"id"`, "row 1", "null")
	if len(acks) != 1 || acks[0].GetBatchSeq() != 0 || acks[0].GetRows() != 2 {
		t.Fatalf("acks %v, want the ack of batch 0 alone", acks)
	}
	var rows []string
	for b := int32(0); b < 2; b++ {
		r, err := g.readStream(ticket(t, &setatspb.ChangelogTicket{Table: "two", Bucket: b}))
		if err != nil {
			t.Fatal(err)
		}
		for _, row := range stripTime(r) {
			rows = append(rows, row[:strings.Index(row, " @")])
		}
	}
	sort.Strings(rows)
	if want := []string{"+I[1, a]", "+I[2, b]"}; !reflect.DeepEqual(rows, want) {
		t.Fatalf("changelog %q, want %q: the rows of batch 0 only", rows, want)
	}
}
