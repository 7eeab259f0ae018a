package gateway

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"google.golang.org/protobuf/proto"

	"github.com/setats/setats/internal/flighttest"
	"github.com/setats/setats/proto/setatspb"
)

// benchGateway starts a gateway for a benchmark (no checked allocator: the numbers are the
// point) with a table default.b (id INT, v STRING) of the given bucket count.
func benchGateway(b *testing.B, buckets int32) (*flighttest.Client, context.Context) {
	s, err := NewServer(Options{FlightAddr: "127.0.0.1:0", AdminAddr: "127.0.0.1:0", NATSListen: "127.0.0.1:-1",
		Warehouse: b.TempDir(), Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		b.Fatal(err)
	}
	if err := s.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(s.Shutdown)
	c, err := flighttest.Dial(s.FlightAddr())
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = c.Close() })
	ctx := context.Background()
	if _, err := c.CreateTable(ctx, &setatspb.TableSpec{Table: "b", Columns: idV,
		PrimaryKey: []string{"id"}, BucketCount: buckets}); err != nil {
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
	const rows = 1000
	first := benchBatch(mem, 0, rows)
	ps, err := c.OpenPut(ctx, "", "b", first.Schema())
	first.Release()
	if err != nil {
		b.Fatal(err)
	}
	defer ps.Abort()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		rec := benchBatch(mem, i*rows, rows)
		if err := ps.Send(rec); err != nil {
			b.Fatal(err)
		}
		rec.Release()
		if _, ok := <-ps.Acks; !ok {
			b.Fatal(ps.Err())
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(b.N*rows)/b.Elapsed().Seconds(), "rows/s")
	_ = ps.CloseSend()
}

// BenchmarkFollowLatency measures the time from sending a one-row write until a following DoGet
// stream of its bucket delivers the row (write + fsync + wake-up + send); ns/op is that latency.
func BenchmarkFollowLatency(b *testing.B) {
	c, ctx := benchGateway(b, 1)
	mem := memory.NewGoAllocator()
	tk, _ := proto.Marshal(&setatspb.ChangelogTicket{Table: "b", Follow: true})
	rdr, err := c.OpenGet(ctx, tk)
	if err != nil {
		b.Fatal(err)
	}
	defer rdr.Release()
	first := benchBatch(mem, 0, 1)
	ps, err := c.OpenPut(ctx, "", "b", first.Schema())
	first.Release()
	if err != nil {
		b.Fatal(err)
	}
	defer ps.Abort()
	go func() { // drain acks
		for range ps.Acks {
		}
	}()
	var total time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		rec := benchBatch(mem, i, 1)
		begin := time.Now()
		if err := ps.Send(rec); err != nil {
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
	_ = ps.CloseSend()
}
