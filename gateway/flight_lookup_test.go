package gateway

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"

	"github.com/setats/setats/internal/flighttest"
	"github.com/setats/setats/proto/setatspb"
)

// lookupSession is one DoExchange "lookup" stream.
type lookupSession struct {
	t   testing.TB
	ex  flight.FlightService_DoExchangeClient
	w   *flight.Writer
	rdr *flight.Reader
	mem memory.Allocator
}

func (g *testGateway) openLookup(cmd *setatspb.LookupCommand, keySchema *arrow.Schema) *lookupSession {
	g.t.Helper()
	ex, err := g.client.DoExchange(g.ctx)
	if err != nil {
		g.t.Fatal(err)
	}
	b, _ := proto.Marshal(cmd)
	w := flight.NewRecordWriter(ex, ipc.WithSchema(keySchema), ipc.WithAllocator(g.mem))
	w.SetFlightDescriptor(&flight.FlightDescriptor{Type: flight.DescriptorCMD, Cmd: b})
	return &lookupSession{t: g.t, ex: ex, w: w, mem: g.mem}
}

// lookup sends one key batch and prints the answer as "#index name=value ...".
func (l *lookupSession) lookup(keys arrow.RecordBatch) ([]string, error) {
	defer keys.Release()
	if err := l.w.Write(keys); err != nil {
		// gRPC: a send that fails with io.EOF means the server ended the stream; its status
		// comes with the next receive.
		if errors.Is(err, io.EOF) {
			if _, rerr := l.ex.Recv(); rerr != nil && !errors.Is(rerr, io.EOF) {
				return nil, rerr
			}
		}
		return nil, err
	}
	if l.rdr == nil {
		rdr, err := flight.NewRecordReader(l.ex, ipc.WithAllocator(l.mem))
		if err != nil {
			return nil, err
		}
		l.rdr = rdr
	}
	if !l.rdr.Next() {
		return nil, l.rdr.Err()
	}
	rec := l.rdr.RecordBatch()
	var out []string
	for i := 0; i < int(rec.NumRows()); i++ {
		s := fmt.Sprintf("#%d", rec.Column(0).(*array.Int32).Value(i))
		for c := 1; c < int(rec.NumCols()); c++ {
			s += " " + rec.ColumnName(c) + "=" + rec.Column(c).ValueStr(i)
		}
		out = append(out, s)
	}
	return out, nil
}

func (l *lookupSession) close() {
	_ = l.w.Close()
	_ = l.ex.CloseSend()
	if l.rdr != nil {
		for l.rdr.Next() {
		}
		l.rdr.Release()
	}
}

func partKeys(mem memory.Allocator, ids []int32, dts []string) arrow.RecordBatch {
	b := array.NewRecordBuilder(mem, arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int32}, {Name: "dt", Type: arrow.BinaryTypes.String}}, nil))
	defer b.Release()
	b.Field(0).(*array.Int32Builder).AppendValues(ids, nil)
	b.Field(1).(*array.StringBuilder).AppendValues(dts, nil)
	return b.NewRecordBatch()
}

var partKeySchema = arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int32}, {Name: "dt", Type: arrow.BinaryTypes.String}}, nil)

// TestLookupExchange: keys of several partitions and buckets in one request come back in request
// order with their `_index`, absent keys give no row, the projection applies, a later request
// sees a write acknowledged in between, and hostile requests are refused naming the culprit.
func TestLookupExchange(t *testing.T) {
	g := startGateway(t, nil)
	g.createPartTable("p", 4)
	put := func(rows ...flighttest.WriteRow) {
		if _, err := g.fc.Put(g.ctx, "default", "p", partCols, true, [][]flighttest.WriteRow{rows}); err != nil {
			t.Fatal(err)
		}
	}
	put(flighttest.WriteRow{Kind: 0, Values: []any{int32(1), "d1", "a"}}, flighttest.WriteRow{Kind: 0, Values: []any{int32(2), "d1", "b"}},
		flighttest.WriteRow{Kind: 0, Values: []any{int32(3), "d2", "c"}}, flighttest.WriteRow{Kind: 0, Values: []any{int32(4), "d2", nil}})
	l := g.openLookup(&setatspb.LookupCommand{Table: "p", Columns: []string{"v", "id"}}, partKeySchema)
	got, err := l.lookup(partKeys(g.mem, []int32{3, 9, 1, 2, 4, 1}, []string{"d2", "d1", "d1", "d2", "d2", "d1"}))
	if err != nil || strings.Join(got, ";") != "#0 v=c id=3;#2 v=a id=1;#4 v=(null) id=4;#5 v=a id=1" {
		t.Fatalf("lookup: %q %v", got, err)
	}
	put(flighttest.WriteRow{Kind: 2, Values: []any{int32(1), "d1", "a2"}}, flighttest.WriteRow{Kind: 3, Values: []any{int32(3), "d2", "c"}})
	got, err = l.lookup(partKeys(g.mem, []int32{1, 3}, []string{"d1", "d2"}))
	if err != nil || strings.Join(got, ";") != "#0 v=a2 id=1" {
		t.Fatalf("lookup after an update and a delete: %q %v", got, err)
	}
	got, err = l.lookup(partKeys(g.mem, nil, nil))
	if err != nil || len(got) != 0 {
		t.Fatalf("empty request: %q %v", got, err)
	}
	l.close()

	// The descriptor alone first, then the schema (how Arrow Java's doExchange sends it).
	ex, err := g.client.DoExchange(g.ctx)
	if err != nil {
		t.Fatal(err)
	}
	cb, _ := proto.Marshal(&setatspb.LookupCommand{Table: "p", Columns: []string{"v"}})
	if err := ex.Send(&flight.FlightData{FlightDescriptor: &flight.FlightDescriptor{Type: flight.DescriptorCMD, Cmd: cb}}); err != nil {
		t.Fatal(err)
	}
	jl := &lookupSession{t: t, ex: ex, w: flight.NewRecordWriter(ex, ipc.WithSchema(partKeySchema), ipc.WithAllocator(g.mem)), mem: g.mem}
	got, err = jl.lookup(partKeys(g.mem, []int32{2}, []string{"d1"}))
	if err != nil || strings.Join(got, ";") != "#0 v=b" {
		t.Fatalf("lookup after a descriptor-only first message: %q %v", got, err)
	}
	jl.close()

	// Hostile requests.
	l = g.openLookup(&setatspb.LookupCommand{Table: "p"}, arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int32}, {Name: "v", Type: arrow.BinaryTypes.String}}, nil))
	b := array.NewRecordBuilder(g.mem, arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int32}, {Name: "v", Type: arrow.BinaryTypes.String}}, nil))
	b.Field(0).(*array.Int32Builder).Append(1)
	b.Field(1).(*array.StringBuilder).Append("x")
	_, err = l.lookup(b.NewRecordBatch())
	b.Release()
	wantCode(t, err, codes.InvalidArgument, `"v"`, "not a primary-key column")
	l.close()

	l = g.openLookup(&setatspb.LookupCommand{Table: "p"}, arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int32}}, nil))
	_, err = l.lookup(intRecord(g.mem, 1))
	wantCode(t, err, codes.InvalidArgument, "dt")
	l.close()

	l = g.openLookup(&setatspb.LookupCommand{Table: "p"}, partKeySchema)
	ids := make([]int32, MaxLookupKeys+1)
	dts := make([]string, len(ids))
	_, err = l.lookup(partKeys(g.mem, ids, dts))
	wantCode(t, err, codes.InvalidArgument, "4097 keys")
	l.close()

	l = g.openLookup(&setatspb.LookupCommand{Table: "p", Columns: []string{strings.Repeat("c", 3000)}}, partKeySchema)
	_, err = l.lookup(partKeys(g.mem, []int32{1}, []string{"d1"}))
	wantCode(t, err, codes.InvalidArgument, "unknown columns", "(3000 bytes)")
	l.close()

	l = g.openLookup(&setatspb.LookupCommand{Table: "nope"}, partKeySchema)
	_, err = l.lookup(partKeys(g.mem, []int32{1}, []string{"d1"}))
	wantCode(t, err, codes.NotFound, "nope")
	l.close()
}

// TestLookupExchangePrefix: with LookupCommand.prefix, keys of the first k primary-key columns
// (covering the partition and bucket keys, in any order) return every row that starts with them,
// in request order then key order, `_index` repeating; a deleted row is gone; key columns that
// are not a leading part of the key or miss the bucket key are InvalidArgument naming them, and
// without prefix a partial key is refused as before.
func TestLookupExchangePrefix(t *testing.T) {
	g := startGateway(t, nil)
	g.mustAction(ActionCreateTable, &setatspb.CreateTableRequest{
		Spec: &setatspb.TableSpec{Database: "default", Table: "pp",
			Columns:    []*setatspb.Column{col("dt", "STRING"), col("u", "INT"), col("s", "STRING"), col("v", "STRING")},
			PrimaryKey: []string{"dt", "u", "s"}, PartitionKeys: []string{"dt"}, BucketKey: []string{"u"}, BucketCount: 4},
	}, &setatspb.TableInfo{})
	cols := []flighttest.Col{{Name: "dt", Type: "STRING", Key: true}, {Name: "u", Type: "INT", Key: true}, {Name: "s", Type: "STRING", Key: true}, {Name: "v", Type: "STRING"}}
	var rows []flighttest.WriteRow
	for _, dt := range []string{"d1", "d2"} {
		for u := int32(1); u <= 3; u++ {
			for _, s := range []string{"b", "a", "ab"} {
				rows = append(rows, flighttest.WriteRow{Kind: 0, Values: []any{dt, u, s, fmt.Sprintf("%s/%d/%s", dt, u, s)}})
			}
		}
	}
	rows = append(rows, flighttest.WriteRow{Kind: 3, Values: []any{"d1", int32(2), "ab", nil}})
	if _, err := g.fc.Put(g.ctx, "default", "pp", cols, true, [][]flighttest.WriteRow{rows}); err != nil {
		t.Fatal(err)
	}
	uDt := arrow.NewSchema([]arrow.Field{{Name: "u", Type: arrow.PrimitiveTypes.Int32}, {Name: "dt", Type: arrow.BinaryTypes.String}}, nil)
	keys := func(us []int32, dts []string) arrow.RecordBatch {
		b := array.NewRecordBuilder(g.mem, uDt)
		defer b.Release()
		b.Field(0).(*array.Int32Builder).AppendValues(us, nil)
		b.Field(1).(*array.StringBuilder).AppendValues(dts, nil)
		return b.NewRecordBatch()
	}
	l := g.openLookup(&setatspb.LookupCommand{Table: "pp", Columns: []string{"v"}, Prefix: true}, uDt)
	got, err := l.lookup(keys([]int32{2, 9, 1}, []string{"d1", "d1", "d2"}))
	want := "#0 v=d1/2/a;#0 v=d1/2/b;#2 v=d2/1/a;#2 v=d2/1/ab;#2 v=d2/1/b"
	if err != nil || strings.Join(got, ";") != want {
		t.Fatalf("prefix lookup: %q %v, want %q", got, err, want)
	}
	l.close()

	// The whole key with prefix: one row per key, as a point lookup.
	l = g.openLookup(&setatspb.LookupCommand{Table: "pp", Columns: []string{"v"}, Prefix: true},
		arrow.NewSchema([]arrow.Field{{Name: "s", Type: arrow.BinaryTypes.String}, {Name: "u", Type: arrow.PrimitiveTypes.Int32}, {Name: "dt", Type: arrow.BinaryTypes.String}}, nil))
	b := array.NewRecordBuilder(g.mem, arrow.NewSchema([]arrow.Field{{Name: "s", Type: arrow.BinaryTypes.String}, {Name: "u", Type: arrow.PrimitiveTypes.Int32}, {Name: "dt", Type: arrow.BinaryTypes.String}}, nil))
	b.Field(0).(*array.StringBuilder).AppendValues([]string{"a", "ab"}, nil)
	b.Field(1).(*array.Int32Builder).AppendValues([]int32{3, 2}, nil)
	b.Field(2).(*array.StringBuilder).AppendValues([]string{"d2", "d1"}, nil)
	got, err = l.lookup(b.NewRecordBatch())
	b.Release()
	if err != nil || strings.Join(got, ";") != "#0 v=d2/3/a" {
		t.Fatalf("full key with prefix: %q %v", got, err)
	}
	l.close()

	for _, c := range []struct {
		fields []arrow.Field
		prefix bool
		want   []string
	}{
		{[]arrow.Field{{Name: "dt", Type: arrow.BinaryTypes.String}}, true, []string{"bucket key", `"u" is missing`}},
		{[]arrow.Field{{Name: "dt", Type: arrow.BinaryTypes.String}, {Name: "s", Type: arrow.BinaryTypes.String}}, true, []string{"not the first 2 primary-key columns"}},
		{uDt.Fields(), false, []string{"missing primary-key column", `"s"`}},
	} {
		sc := arrow.NewSchema(c.fields, nil)
		l = g.openLookup(&setatspb.LookupCommand{Table: "pp", Prefix: c.prefix}, sc)
		rb := array.NewRecordBuilder(g.mem, sc)
		for i, f := range c.fields {
			if f.Type.ID() == arrow.STRING {
				rb.Field(i).(*array.StringBuilder).Append("d1")
			} else {
				rb.Field(i).(*array.Int32Builder).Append(1)
			}
		}
		_, err = l.lookup(rb.NewRecordBatch())
		rb.Release()
		wantCode(t, err, codes.InvalidArgument, c.want...)
		l.close()
	}
}
