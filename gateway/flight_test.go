package gateway

import (
	"encoding/json"
	"errors"
	"io"
	"reflect"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"

	"github.com/setats/setats/proto/setatspb"
)

var idV = []*setatspb.Column{col("id", "INT"), col("v", "STRING")}

// TestFlightRoundTrip drives the Flight surface of proto/README.md end to end with the arrow-go
// client: actions, DoPut, GetFlightInfo, DoGet, ListFlights, GetSchema, ListActions, drop.
func TestFlightRoundTrip(t *testing.T) {
	g := startGateway(t, nil)

	gi := &setatspb.GatewayInfo{}
	g.mustAction(ActionGatewayInfo, nil, gi)
	if gi.GetWarehouse() != g.s.Warehouse() || !strings.HasPrefix(gi.GetWarehouse(), "file:///") ||
		gi.GetDefaultBucketCount() != 4 || gi.GetChangelogRetentionMs() != 86400000 || gi.GetVersion() != Version {
		t.Fatalf("gateway-info: %v", gi)
	}

	info := g.createTable("db1", "t", 2, idV, []string{"id"}, nil)
	if info.GetTableId() == "" || info.GetSpec().GetBucketCount() != 2 || len(info.GetArrowSchema()) == 0 {
		t.Fatalf("create-table: %v", info)
	}
	got := &setatspb.TableInfo{}
	g.mustAction(ActionGetTable, &setatspb.TableRequest{Database: "db1", Table: "t"}, got)
	if !proto.Equal(got, info) {
		t.Fatalf("get-table %v, want %v", got, info)
	}
	err := g.action(ActionCreateTable, &setatspb.CreateTableRequest{Spec: info.GetSpec()}, nil)
	wantCode(t, err, codes.AlreadyExists, "t")
	lt := &setatspb.ListTablesResponse{}
	g.mustAction(ActionListTables, &setatspb.ListTablesRequest{Database: "db1"}, lt)
	if !reflect.DeepEqual(lt.GetTables(), []string{"t"}) {
		t.Fatalf("list-tables: %v", lt)
	}
	ld := &setatspb.ListDatabasesResponse{}
	g.mustAction(ActionListDatabases, &setatspb.ListDatabasesRequest{}, ld)
	if !contains(ld.GetDatabases(), "db1") {
		t.Fatalf("list-databases: %v", ld)
	}

	// Two batches in one DoPut: +I 1..3, then update 2 and delete 3.
	desc := writeCmd(t, &setatspb.WriteCommand{Database: "db1", Table: "t"})
	r1 := intStrRecord(g.mem, []int8{0, 0, 0}, []int32{1, 2, 3}, []string{"a", "b", "c"})
	defer r1.Release()
	r2 := intStrRecord(g.mem, []int8{2, 3}, []int32{2, 3}, []string{"B", ""})
	defer r2.Release()
	acks, err := g.put(desc, r1, r2)
	if err != nil {
		t.Fatal(err)
	}
	if len(acks) != 2 || acks[0].GetBatchSeq() != 0 || acks[1].GetBatchSeq() != 1 ||
		acks[0].GetRows() != 3 || acks[0].GetChangelogRows() != 3 || acks[1].GetRows() != 2 || acks[1].GetChangelogRows() != 3 {
		t.Fatalf("acks: %v", acks)
	}

	// list-buckets: every bucket that got a row, ordered; end offsets add up to 6 changelog rows.
	lb := &setatspb.ListBucketsResponse{}
	g.mustAction(ActionListBuckets, &setatspb.TableRequest{Database: "db1", Table: "t"}, lb)
	var total int64
	for i, b := range lb.GetBuckets() {
		if i > 0 && b.GetBucket() <= lb.GetBuckets()[i-1].GetBucket() {
			t.Fatalf("list-buckets not ordered: %v", lb)
		}
		total += b.GetEndOffset()
	}
	if total != 6 {
		t.Fatalf("list-buckets: %v", lb)
	}

	// GetFlightInfo: one endpoint per bucket, bounded read from earliest.
	fi, err := g.client.GetFlightInfo(g.ctx, &flight.FlightDescriptor{Type: flight.DescriptorPATH, Path: []string{"db1", "t"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(fi.GetEndpoint()) != 2 || fi.GetTotalRecords() != 6 {
		t.Fatalf("flight info: %d endpoints, %d records", len(fi.GetEndpoint()), fi.GetTotalRecords())
	}
	sc, err := flight.DeserializeSchema(fi.GetSchema(), g.mem)
	if err != nil {
		t.Fatal(err)
	}
	if names := fieldNames(sc.Fields()); !reflect.DeepEqual(names, []string{"_row_kind", "_offset", "_commit_timestamp", "id", "v"}) {
		t.Fatalf("changelog schema: %v", names)
	}
	var rows []string
	for i, ep := range fi.GetEndpoint() {
		tk := &setatspb.ChangelogTicket{}
		if err := proto.Unmarshal(ep.GetTicket().GetTicket(), tk); err != nil {
			t.Fatal(err)
		}
		if tk.GetBucket() != int32(i) || tk.GetDatabase() != "db1" || tk.GetTable() != "t" || tk.GetFollow() {
			t.Fatalf("ticket %d: %v", i, tk)
		}
		r, err := g.readStream(ep.GetTicket().GetTicket())
		if err != nil {
			t.Fatal(err)
		}
		rows = append(rows, stripTime(r)...)
	}
	want := []string{"+I[1, a] @0", "+I[2, b] @1", "+I[3, c] @2", "-D[3, c] @3", "-U[2, b] @4", "+U[2, B] @5"}
	if !sameRows(rows, want) {
		t.Fatalf("changelog rows %q, want (per bucket offsets aside) %q", rows, want)
	}

	// lookup-offsets: EARLIEST = 0 everywhere, LATEST = each bucket's end.
	lo := &setatspb.LookupOffsetsResponse{}
	g.mustAction(ActionLookupOffsets, &setatspb.LookupOffsetsRequest{Database: "db1", Table: "t",
		Start: &setatspb.LookupOffsetsRequest_Position{Position: setatspb.StartPosition_LATEST}}, lo)
	if len(lo.GetOffsets()) != 2 {
		t.Fatalf("lookup-offsets: %v", lo)
	}
	for i, o := range lo.GetOffsets() {
		if o.GetOffset() != endOf(lb, o.GetBucket()) || !o.GetResolved() || o.GetBucket() != int32(i) {
			t.Fatalf("lookup-offsets LATEST: %v vs %v", lo, lb)
		}
	}

	// ListFlights, GetSchema, ListActions.
	lf, err := g.client.ListFlights(g.ctx, &flight.Criteria{Expression: []byte("db1")})
	if err != nil {
		t.Fatal(err)
	}
	var paths [][]string
	for {
		fi, err := lf.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		paths = append(paths, fi.GetFlightDescriptor().GetPath())
	}
	if !reflect.DeepEqual(paths, [][]string{{"db1", "t"}}) {
		t.Fatalf("ListFlights: %v", paths)
	}
	sr, err := g.client.GetSchema(g.ctx, &flight.FlightDescriptor{Type: flight.DescriptorPATH, Path: []string{"db1", "t"}})
	if err != nil {
		t.Fatal(err)
	}
	if sc, err := flight.DeserializeSchema(sr.GetSchema(), g.mem); err != nil || sc.NumFields() != 5 {
		t.Fatalf("GetSchema: %v %v", sc, err)
	}
	la, err := g.client.ListActions(g.ctx, &flight.Empty{})
	if err != nil {
		t.Fatal(err)
	}
	var types []string
	for {
		a, err := la.Recv()
		if err != nil {
			break
		}
		types = append(types, a.GetType())
	}
	if len(types) != len(actionTypes) || !contains(types, ActionWatch) {
		t.Fatalf("ListActions: %v", types)
	}

	// drop-table: gone from the catalog, its reads are NotFound.
	g.mustAction(ActionDropTable, &setatspb.TableRequest{Database: "db1", Table: "t"}, &setatspb.Empty{})
	err = g.action(ActionGetTable, &setatspb.TableRequest{Database: "db1", Table: "t"}, nil)
	wantCode(t, err, codes.NotFound, "t")
	g.mustAction(ActionDropTable, &setatspb.TableRequest{Database: "db1", Table: "t", IgnoreIfNotExists: true}, &setatspb.Empty{})
	g.mustAction(ActionDropDatabase, &setatspb.DatabaseRequest{Database: "db1"}, &setatspb.Empty{})
}

// TestJSONEncoding: JSON bodies get JSON answers, as pyarrow users send them.
func TestJSONEncoding(t *testing.T) {
	g := startGateway(t, nil)
	var res map[string]any
	if err := g.rawAction(ActionGatewayInfo, []byte("{}"), func(b []byte) error { return json.Unmarshal(b, &res) }); err != nil {
		t.Fatal(err)
	}
	if res["warehouse"] != g.s.Warehouse() || res["defaultBucketCount"] != float64(4) {
		t.Fatalf("gateway-info JSON: %v", res)
	}
	body := `{"spec": {"database": "default", "table": "j", "columns": [{"name": "id", "type": "INT"}, {"name": "v", "type": "STRING"}],
		"primary_key": ["id"], "bucket_count": 1}}`
	if err := g.rawAction(ActionCreateTable, []byte(body), func(b []byte) error { return json.Unmarshal(b, &res) }); err != nil {
		t.Fatal(err)
	}
	if res["tableId"] == "" || res["spec"].(map[string]any)["table"] != "j" {
		t.Fatalf("create-table JSON: %v", res)
	}
	// DoPut with a JSON WriteCommand answers JSON WriteAcks.
	stream, err := g.client.DoPut(g.ctx)
	if err != nil {
		t.Fatal(err)
	}
	rec := intStrRecord(g.mem, nil, []int32{1}, []string{"x"})
	defer rec.Release()
	w := flight.NewRecordWriter(stream, ipc.WithSchema(rec.Schema()), ipc.WithAllocator(g.mem))
	w.SetFlightDescriptor(&flight.FlightDescriptor{Type: flight.DescriptorCMD, Cmd: []byte(`{"table": "j"}`)})
	if err := w.Write(rec); err != nil {
		t.Fatal(err)
	}
	_ = w.Close()
	_ = stream.CloseSend()
	pr, err := stream.Recv()
	if err != nil {
		t.Fatal(err)
	}
	var ack map[string]any
	if err := json.Unmarshal(pr.GetAppMetadata(), &ack); err != nil {
		t.Fatalf("WriteAck is not JSON: %q", pr.GetAppMetadata())
	}
	if ack["rows"] != "1" || ack["changelogRows"] != "1" {
		t.Fatalf("WriteAck JSON: %v", ack)
	}
	// GetFlightInfo with a JSON ReadCommand hands out JSON tickets that DoGet accepts.
	fi, err := g.client.GetFlightInfo(g.ctx, &flight.FlightDescriptor{Type: flight.DescriptorCMD, Cmd: []byte(`{"table": "j", "position": "EARLIEST"}`)})
	if err != nil {
		t.Fatal(err)
	}
	tk := fi.GetEndpoint()[0].GetTicket().GetTicket()
	if detectEncoding(tk) != encJSON {
		t.Fatalf("ticket not JSON: %q", tk)
	}
	rows, err := g.readStream(tk)
	if err != nil || !reflect.DeepEqual(stripTime(rows), []string{"+I[1, x] @0"}) {
		t.Fatalf("DoGet JSON ticket: %q %v", rows, err)
	}
}

// TestDoPutAutoCreate: a WriteCommand with create_if_absent creates the table and its database.
func TestDoPutAutoCreate(t *testing.T) {
	g := startGateway(t, nil)
	spec := &setatspb.TableSpec{Columns: idV, PrimaryKey: []string{"id"}, BucketCount: 3}
	desc := writeCmd(t, &setatspb.WriteCommand{Database: "sink", Table: "auto", CreateIfAbsent: spec})
	rec := intStrRecord(g.mem, nil, []int32{1, 2}, []string{"a", "b"})
	defer rec.Release()
	for i := 0; i < 2; i++ { // the second DoPut finds the table
		acks, err := g.put(desc, rec)
		if err != nil || len(acks) != 1 || acks[0].GetRows() != 2 {
			t.Fatalf("put %d: %v %v", i, acks, err)
		}
	}
	ti := &setatspb.TableInfo{}
	g.mustAction(ActionGetTable, &setatspb.TableRequest{Database: "sink", Table: "auto"}, ti)
	if ti.GetSpec().GetBucketCount() != 3 {
		t.Fatalf("auto-created table: %v", ti)
	}
	// Without create_if_absent a missing table is NotFound naming it.
	_, err := g.put(writeCmd(t, &setatspb.WriteCommand{Database: "sink", Table: "nope"}), rec)
	wantCode(t, err, codes.NotFound, "nope")
	// PATH descriptors write too (no auto-create).
	acks, err := g.put(&flight.FlightDescriptor{Type: flight.DescriptorPATH, Path: []string{"sink", "auto"}}, rec)
	if err != nil || len(acks) != 1 || acks[0].GetChangelogRows() != 0 {
		t.Fatalf("PATH put of unchanged rows: %v %v", acks, err)
	}
}

func fieldNames(fs []arrow.Field) []string {
	out := make([]string, len(fs))
	for i, f := range fs {
		out[i] = f.Name
	}
	return out
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

func endOf(lb *setatspb.ListBucketsResponse, bucket int32) int64 {
	for _, b := range lb.GetBuckets() {
		if b.GetBucket() == bucket {
			return b.GetEndOffset()
		}
	}
	return 0
}

// stripTime removes the " t=..." suffix of printed changelog rows.
func stripTime(rows []string) []string {
	out := make([]string, len(rows))
	for i, r := range rows {
		out[i], _, _ = strings.Cut(r, " t=")
	}
	return out
}

// sameRows compares changelog rows of several buckets ignoring offsets and the order between
// buckets: each key's rows must come in order.
func sameRows(got, want []string) bool {
	strip := func(rs []string) map[string][]string {
		m := map[string][]string{}
		for _, r := range rs {
			body, _, _ := strings.Cut(r, " @")
			key := body[3:strings.IndexAny(body, ",]")]
			m[key] = append(m[key], body)
		}
		return m
	}
	return reflect.DeepEqual(strip(got), strip(want))
}
