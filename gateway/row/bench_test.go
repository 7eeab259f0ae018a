package row

import (
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/setats/setats/gateway/internal/rowtest"
)

// BenchmarkDecode measures Decode of a 4096-row DoPut record of the seeds' shape (rows/s).
func BenchmarkDecode(b *testing.B) {
	tbl := rowtest.SeedsTable()
	rec := buildRecord(b, memory.NewGoAllocator(), tbl.Schema, rowtest.SeedsRows(4096))
	defer rec.Release()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := Decode(tbl, rec); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)*4096/b.Elapsed().Seconds(), "rows/s")
}
