package gateway

import (
	"context"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/proto"

	"github.com/setats/setats/internal/flighttest"
	"github.com/setats/setats/proto/setatspb"
)

// TestQuickstart runs the Go quickstart of gateway/README.md (quickstart below, same code)
// against an in-process gateway.
func TestQuickstart(t *testing.T) {
	g := startGateway(t, nil)
	var out strings.Builder
	if err := quickstart(g.ctx, g.s.FlightAddr(), &out); err != nil {
		t.Fatal(err)
	}
	want := "table shop.orders has 2 buckets\nacked 3 rows\n+I [1 ann]\n+I [3 cy]\n+I [2 bob]\n"
	if got := out.String(); !sameLines(got, want) {
		t.Fatalf("quickstart printed:\n%s\nwant (any order):\n%s", got, want)
	}
	// What the quickstart printed is what the store holds, read with the shared test client.
	buckets, err := g.fc.ListBuckets(g.ctx, "shop", "orders")
	if err != nil {
		t.Fatal(err)
	}
	var rows []string
	for _, b := range buckets {
		cl, err := g.fc.ReadChangelog(g.ctx, "shop", "orders", b.GetPartition(), b.GetBucket())
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range cl.Rows {
			rows = append(rows, flighttest.KindString(r.Kind)+flighttest.FormatValues(r.Values))
		}
	}
	if got, want := strings.Join(rows, "\n"), "+I(1,'ann')\n+I(3,'cy')\n+I(2,'bob')"; !sameLines(got, want) {
		t.Fatalf("changelog holds:\n%s\nwant (any order):\n%s", got, want)
	}
}

func sameLines(a, b string) bool {
	la, lb := strings.Split(a, "\n"), strings.Split(b, "\n")
	if len(la) != len(lb) {
		return false
	}
	seen := map[string]int{}
	for _, l := range la {
		seen[l]++
	}
	for _, l := range lb {
		seen[l]--
	}
	for _, n := range seen {
		if n != 0 {
			return false
		}
	}
	return true
}

// --- README quickstart (Go) ---

func quickstart(ctx context.Context, addr string, out io.Writer) error {
	client, err := flight.NewClientWithMiddleware(addr, nil, nil,
		grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return err
	}
	defer client.Close()

	// create-table: the body is a binary CreateTableRequest, the result a TableInfo.
	body, _ := proto.Marshal(&setatspb.CreateTableRequest{
		Spec: &setatspb.TableSpec{
			Database: "shop", Table: "orders",
			Columns: []*setatspb.Column{
				{Name: "id", Type: "BIGINT"},
				{Name: "customer", Type: "STRING"},
			},
			PrimaryKey:  []string{"id"},
			BucketCount: 2,
		},
		CreateDatabase: true,
		IgnoreIfExists: true,
	})
	actions, err := client.DoAction(ctx, &flight.Action{Type: "create-table", Body: body})
	if err != nil {
		return err
	}
	res, err := actions.Recv()
	if err != nil {
		return err
	}
	info := &setatspb.TableInfo{}
	if err := proto.Unmarshal(res.GetBody(), info); err != nil {
		return err
	}
	fmt.Fprintf(out, "table shop.orders has %d buckets\n", info.GetSpec().GetBucketCount())

	// DoPut: a WriteCommand descriptor, then Arrow record batches; one WriteAck per batch.
	mem := memory.NewGoAllocator()
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "customer", Type: arrow.BinaryTypes.String, Nullable: true},
	}, nil)
	b := array.NewRecordBuilder(mem, schema)
	defer b.Release()
	b.Field(0).(*array.Int64Builder).AppendValues([]int64{1, 2, 3}, nil)
	b.Field(1).(*array.StringBuilder).AppendValues([]string{"ann", "bob", "cy"}, nil)
	rec := b.NewRecordBatch()
	defer rec.Release()

	cmd, _ := proto.Marshal(&setatspb.WriteCommand{Database: "shop", Table: "orders"})
	put, err := client.DoPut(ctx)
	if err != nil {
		return err
	}
	w := flight.NewRecordWriter(put, ipc.WithSchema(schema))
	w.SetFlightDescriptor(&flight.FlightDescriptor{Type: flight.DescriptorCMD, Cmd: cmd})
	if err := w.Write(rec); err != nil {
		return err
	}
	w.Close()
	put.CloseSend()
	pr, err := put.Recv()
	if err != nil {
		return err
	}
	ack := &setatspb.WriteAck{}
	if err := proto.Unmarshal(pr.GetAppMetadata(), ack); err != nil {
		return err
	}
	fmt.Fprintf(out, "acked %d rows\n", ack.GetRows())
	for { // drain to the end of the call
		if _, err := put.Recv(); err == io.EOF {
			break
		} else if err != nil {
			return err
		}
	}

	// GetFlightInfo: one endpoint per bucket; DoGet each ticket (a bounded read from earliest).
	fi, err := client.GetFlightInfo(ctx, &flight.FlightDescriptor{
		Type: flight.DescriptorPATH, Path: []string{"shop", "orders"}})
	if err != nil {
		return err
	}
	for _, ep := range fi.GetEndpoint() {
		stream, err := client.DoGet(ctx, ep.GetTicket())
		if err != nil {
			return err
		}
		rdr, err := flight.NewRecordReader(stream)
		if err != nil {
			return err
		}
		for rdr.Next() {
			rec := rdr.RecordBatch()
			kinds := rec.Column(0).(*array.Int8) // _row_kind, then _offset, _commit_timestamp
			ids := rec.Column(3).(*array.Int64)
			names := rec.Column(4).(*array.String)
			for i := 0; i < int(rec.NumRows()); i++ {
				kind := []string{"+I", "-U", "+U", "-D"}[kinds.Value(i)]
				fmt.Fprintf(out, "%s [%d %s]\n", kind, ids.Value(i), names.Value(i))
			}
		}
		err = rdr.Err()
		rdr.Release()
		if err != nil {
			return err
		}
	}
	return nil
}
