package row

import (
	"strconv"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/setats/setats/catalog"
	"github.com/setats/setats/merge"
)

// seedsTable is the seeds' table shape: id, dt, name, address STRING, pk (id, dt), by dt.
func seedsTable() *catalog.Table {
	return mkTable("seeds", []catalog.Column{
		{Name: "id", Type: tString}, {Name: "dt", Type: tString}, {Name: "name", Type: tString}, {Name: "address", Type: tString},
	}, []int{0, 1}, []int{1}, nil, 4)
}

func seedsRows(n int) [][]any {
	rows := make([][]any, n)
	for i := range rows {
		rows[i] = []any{"user-" + strconv.Itoa(i*7919), "2026-11-29", "name-" + strconv.Itoa(i), "No. " + strconv.Itoa(i) + " Zhongguancun Street, Haidian, Beijing"}
	}
	return rows
}

// BenchmarkDecode measures Decode of a 4096-row DoPut record of the seeds' shape (rows/s).
func BenchmarkDecode(b *testing.B) {
	tbl := seedsTable()
	rec := buildRecord(b, memory.NewGoAllocator(), tbl.Schema, seedsRows(4096))
	defer rec.Release()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := Decode(tbl, rec); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)*4096/b.Elapsed().Seconds(), "rows/s")
}

// BenchmarkRowCodecs measures, per row of the seeds' shape, the key, value and bucket
// encodings and the partition name a write computes.
func BenchmarkRowCodecs(b *testing.B) {
	tbl := seedsTable()
	raw := seedsRows(1024)
	rows := make([]merge.Row, len(raw))
	for i, r := range raw {
		rows[i] = merge.Row(r)
	}
	var buf []byte
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		r := rows[i%len(rows)]
		buf = AppendKey(buf[:0], tbl, r)
		buf = AppendValue(buf[:0], tbl, r)
		_ = Bucket(tbl, r)
		buf = AppendPartitionName(buf[:0], tbl, r)
	}
}

// BenchmarkDecodeValue measures DecodeValue with the arena decoder (the changelog read path).
func BenchmarkDecodeValue(b *testing.B) {
	tbl := seedsTable()
	v := EncodeValue(tbl, merge.Row(seedsRows(1)[0]))
	d := ValueDecoder{Table: tbl}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := d.Decode(v); err != nil {
			b.Fatal(err)
		}
	}
}
