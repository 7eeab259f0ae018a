package gateway

import (
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"google.golang.org/protobuf/proto"

	"github.com/setats/setats/proto/setatspb"
)

// BenchmarkTableRead compares reading a whole 1-bucket table of 100k keys, each written twice
// (changelog: +I, -U, +U per key = 300k rows), as a snapshot read (100k merged rows) and as a
// changelog read from earliest (300k rows). Both report rows/s; the ratio of the two is the
// closing figure of issue 14 (snapshot rows/s vs changelog rows/s).
func BenchmarkTableRead(b *testing.B) {
	c, ctx := benchGateway(b, 1)
	mem := memory.NewGoAllocator()
	desc := writeCmd(b, &setatspb.WriteCommand{Table: "b"})
	const keys = 100_000
	for round := 0; round < 2; round++ {
		for from := 0; from < keys; from += 5000 {
			rec := benchBatch(mem, from, 5000)
			if round == 1 { // another value: the second round updates every key (-U, +U)
				ids := make([]int32, 5000)
				vs := make([]string, 5000)
				for i := range ids {
					ids[i], vs[i] = int32(from+i), "value-updated-0123456789-0123456"
				}
				rec.Release()
				rec = intStrRecord(mem, nil, ids, vs)
			}
			if _, err := c.PutRecords(ctx, desc, rec); err != nil {
				b.Fatal(err)
			}
			rec.Release()
		}
	}
	read := func(b *testing.B, tk *setatspb.ChangelogTicket) {
		raw, _ := proto.Marshal(tk)
		var rows int64
		for i := 0; i < b.N; i++ {
			if err := c.DoGetTicket(ctx, raw, func(_ *arrow.Schema, rec arrow.RecordBatch) error {
				rows += rec.NumRows()
				return nil
			}); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(rows)/b.Elapsed().Seconds(), "rows/s")
	}
	b.Run("snapshot", func(b *testing.B) {
		read(b, &setatspb.ChangelogTicket{Table: "b", Snapshot: &setatspb.SnapshotRead{}})
	})
	b.Run("changelog-earliest", func(b *testing.B) {
		read(b, &setatspb.ChangelogTicket{Table: "b", Start: &setatspb.ChangelogTicket_Position{Position: setatspb.StartPosition_EARLIEST}})
	})
}
