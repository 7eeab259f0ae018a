package gateway

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"google.golang.org/protobuf/proto"

	"github.com/setats/setats/internal/flighttest"
	"github.com/setats/setats/proto/setatspb"
)

// benchServer starts an in-process gateway on free loopback ports with a fresh warehouse (no
// checked allocator, logs discarded), stopped when the benchmark ends, and a client of it.
func benchServer(b *testing.B) (*flighttest.Client, context.Context) {
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
	return c, context.Background()
}

// benchGateway starts a gateway for a benchmark (no checked allocator: the numbers are the
// point) with a table default.b (id INT, v STRING) of the given bucket count.
func benchGateway(b *testing.B, buckets int32) (*flighttest.Client, context.Context) {
	c, ctx := benchServer(b)
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

// benchDoGetKeys is the number of distinct keys BenchmarkDoGet writes before reading.
var benchDoGetKeys = flag.Int("bench.doget-keys", 200_000, "distinct keys written before BenchmarkDoGet reads (20% more writes update them)")

// BenchmarkDoGet measures the changelog read of the load generator's phase (c) in one process:
// a table of the seeds' shape (id, dt, name, address STRING, primary key (id, dt), partitioned
// by dt with 4 values, 4 buckets) gets -bench.doget-keys inserts and 20% more updates of stored
// keys in 4096-row DoPut batches (an -U/+U pair each), then every op reads all 16 buckets from
// earliest, bounded, with 2 concurrent DoGet streams (rows counted, not decoded). It reports
// rows/s and CPU ns per row (the process's user+system CPU: gateway and client together).
func BenchmarkDoGet(b *testing.B) {
	c, ctx := benchServer(b)
	if _, err := c.CreateTable(ctx, &setatspb.TableSpec{Table: "seeds",
		Columns:    []*setatspb.Column{col("id", "STRING"), col("dt", "STRING"), col("name", "STRING"), col("address", "STRING")},
		PrimaryKey: []string{"id", "dt"}, PartitionKeys: []string{"dt"}, BucketCount: 4}); err != nil {
		b.Fatal(err)
	}
	mem := memory.NewGoAllocator()
	schema := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.BinaryTypes.String}, {Name: "dt", Type: arrow.BinaryTypes.String},
		{Name: "name", Type: arrow.BinaryTypes.String, Nullable: true}, {Name: "address", Type: arrow.BinaryTypes.String, Nullable: true}}, nil)
	ps, err := c.OpenPut(ctx, "", "seeds", schema)
	if err != nil {
		b.Fatal(err)
	}
	keys := *benchDoGetKeys
	writes := keys + keys/5
	rng := rand.New(rand.NewPCG(1, 2))
	var want int64
	for from := 0; from < writes; from += 4096 {
		bld := array.NewRecordBuilder(mem, schema)
		for w := from; w < min(from+4096, writes); w++ {
			k := w
			if w >= keys {
				k = rng.IntN(keys) // an update: -U/+U
				want++
			}
			want++
			bld.Field(0).(*array.StringBuilder).Append(fmt.Sprintf("user-%09d", k))
			bld.Field(1).(*array.StringBuilder).Append(fmt.Sprintf("2024-06-%02d", 1+k%4))
			bld.Field(2).(*array.StringBuilder).Append(fmt.Sprintf("name-%08x", rng.Uint32()))
			bld.Field(3).(*array.StringBuilder).Append(fmt.Sprintf("%d Main Street, Springfield, unit %d", rng.IntN(10000), rng.IntN(1000)))
		}
		rec := bld.NewRecordBatch()
		bld.Release()
		if err := ps.Send(rec); err != nil {
			b.Fatal(err)
		}
		rec.Release()
		if _, ok := <-ps.Acks; !ok {
			b.Fatal(ps.Err())
		}
	}
	if err := ps.CloseSend(); err != nil {
		b.Fatal(err)
	}
	buckets, err := c.ListBuckets(ctx, "", "seeds")
	if err != nil {
		b.Fatal(err)
	}
	readAll := func() {
		next := make(chan *setatspb.BucketOffsets, len(buckets))
		for _, bo := range buckets {
			next <- bo
		}
		close(next)
		var read atomic.Int64
		var wg sync.WaitGroup
		errs := make(chan error, 2)
		for range 2 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for bo := range next {
					t := &setatspb.ChangelogTicket{Table: "seeds", Partition: bo.GetPartition(), Bucket: bo.GetBucket(),
						Start: &setatspb.ChangelogTicket_Position{Position: setatspb.StartPosition_EARLIEST}}
					if err := c.DoGet(ctx, t, func(_ *arrow.Schema, rec arrow.RecordBatch) error {
						read.Add(rec.NumRows())
						return nil
					}); err != nil {
						errs <- err
						return
					}
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			b.Fatal(err)
		}
		if read.Load() != want {
			b.Fatalf("read %d changelog rows, wrote %d", read.Load(), want)
		}
	}
	readAll() // warms the block cache
	cpu0 := processCPU(b)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		readAll()
	}
	b.StopTimer()
	rows := float64(want) * float64(b.N)
	b.ReportMetric(rows/b.Elapsed().Seconds(), "rows/s")
	b.ReportMetric(float64((processCPU(b)-cpu0).Nanoseconds())/rows, "cpu-ns/row")
}

// processCPU returns the user+system CPU time of this process so far.
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
