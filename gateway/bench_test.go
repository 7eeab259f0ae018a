package gateway

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/proto"

	"github.com/setats/setats/proto/setatspb"
)

// benchGateway starts a gateway for a benchmark (no checked allocator: the numbers are the
// point) with a table default.b (id INT, v STRING) of the given bucket count.
func benchGateway(b *testing.B, buckets int32) (flight.Client, context.Context) {
	s, err := NewServer(Options{FlightAddr: "127.0.0.1:0", AdminAddr: "127.0.0.1:0", NATSListen: "127.0.0.1:-1",
		Warehouse: b.TempDir(), Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		b.Fatal(err)
	}
	if err := s.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(s.Shutdown)
	c, err := flight.NewClientWithMiddleware(s.FlightAddr(), nil, nil, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = c.Close() })
	ctx := context.Background()
	body, _ := proto.Marshal(&setatspb.CreateTableRequest{Spec: &setatspb.TableSpec{Table: "b", Columns: idV,
		PrimaryKey: []string{"id"}, BucketCount: buckets}})
	st, err := c.DoAction(ctx, &flight.Action{Type: ActionCreateTable, Body: body})
	if err == nil {
		_, err = st.Recv()
	}
	if err != nil {
		b.Fatal(err)
	}
	return c, ctx
}

// benchBatch builds rows ids [from, from+n) with a 32-byte value.
func benchBatch(mem memory.Allocator, from, n int) arrow.RecordBatch {
	bld := array.NewRecordBuilder(mem, arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int32}, {Name: "v", Type: arrow.BinaryTypes.String, Nullable: true}}, nil))
	defer bld.Release()
	for i := 0; i < n; i++ {
		bld.Field(0).(*array.Int32Builder).Append(int32(from + i))
		bld.Field(1).(*array.StringBuilder).Append("value-0123456789-0123456789-0123")
	}
	return bld.NewRecordBatch()
}

// BenchmarkDoPut measures acknowledged (durable) writes of 1000-row batches over one DoPut
// stream into a 4-bucket table; rows/s is reported.
func BenchmarkDoPut(b *testing.B) {
	c, ctx := benchGateway(b, 4)
	mem := memory.NewGoAllocator()
	stream, err := c.DoPut(ctx)
	if err != nil {
		b.Fatal(err)
	}
	cmd, _ := proto.Marshal(&setatspb.WriteCommand{Table: "b"})
	const rows = 1000
	first := benchBatch(mem, 0, rows)
	w := flight.NewRecordWriter(stream, ipc.WithSchema(first.Schema()))
	w.SetFlightDescriptor(&flight.FlightDescriptor{Type: flight.DescriptorCMD, Cmd: cmd})
	first.Release()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		rec := benchBatch(mem, i*rows, rows)
		if err := w.Write(rec); err != nil {
			b.Fatal(err)
		}
		rec.Release()
		if _, err := stream.Recv(); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(b.N*rows)/b.Elapsed().Seconds(), "rows/s")
	_ = w.Close()
	_ = stream.CloseSend()
}

// BenchmarkFollowLatency measures the time from sending a one-row write until a following DoGet
// stream of its bucket delivers the row (write + fsync + wake-up + send); ns/op is that latency.
func BenchmarkFollowLatency(b *testing.B) {
	c, ctx := benchGateway(b, 1)
	mem := memory.NewGoAllocator()
	tk, _ := proto.Marshal(&setatspb.ChangelogTicket{Table: "b", Follow: true})
	get, err := c.DoGet(ctx, &flight.Ticket{Ticket: tk})
	if err != nil {
		b.Fatal(err)
	}
	rdr, err := flight.NewRecordReader(get)
	if err != nil {
		b.Fatal(err)
	}
	defer rdr.Release()
	put, err := c.DoPut(ctx)
	if err != nil {
		b.Fatal(err)
	}
	cmd, _ := proto.Marshal(&setatspb.WriteCommand{Table: "b"})
	first := benchBatch(mem, 0, 1)
	w := flight.NewRecordWriter(put, ipc.WithSchema(first.Schema()))
	w.SetFlightDescriptor(&flight.FlightDescriptor{Type: flight.DescriptorCMD, Cmd: cmd})
	first.Release()
	go func() { // drain acks
		for {
			if _, err := put.Recv(); err != nil {
				return
			}
		}
	}()
	var total time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		rec := benchBatch(mem, i, 1)
		begin := time.Now()
		if err := w.Write(rec); err != nil {
			b.Fatal(err)
		}
		rec.Release()
		for got := false; !got; {
			if !rdr.Next() {
				b.Fatal(rdr.Err())
			}
			got = rdr.RecordBatch().NumRows() > 0
		}
		total += time.Since(begin)
	}
	b.StopTimer()
	b.ReportMetric(float64(total.Microseconds())/float64(b.N), "µs/row-visible")
	_ = w.Close()
	_ = put.CloseSend()
}
