package row

import (
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/setats/setats/gateway/internal/rowtest"
	"github.com/setats/setats/gateway/rowcodec"
	"github.com/setats/setats/merge"
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

// BenchmarkChangelogBuilder measures turning 4096 stored changelog values of the seeds' shape
// into one DoGet record batch (rows/s): "decode-append" decodes each into a row
// (rowcodec.ValueDecoder, as store.Table.Read) and appends it (Append), sizing it with RowBytes;
// "append-encoded" sizes it with EncodedRowBytes and appends the value (AppendEncoded), the
// DoGet path since store.Table.ReadEncoded (now ReadFunc).
func BenchmarkChangelogBuilder(b *testing.B) {
	tbl := rowtest.SeedsTable()
	rows := rowtest.SeedsRows(4096)
	vals := make([][]byte, len(rows))
	for i, r := range rows {
		vals[i] = rowcodec.EncodeValue(tbl, r)
	}
	schema := ChangelogSchema(tbl, "dt=x", 0)
	for _, encoded := range []bool{false, true} {
		name := "decode-append"
		if encoded {
			name = "append-encoded"
		}
		b.Run(name, func(b *testing.B) {
			bld := NewChangelogBuilder(memory.NewGoAllocator(), tbl, schema)
			defer bld.Release()
			size := 0
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				dec := rowcodec.ValueDecoder{Table: tbl}
				for j, v := range vals {
					var err error
					if encoded {
						var n int
						if n, err = bld.EncodedRowBytes(v); err == nil {
							size += n
							err = bld.AppendEncoded(merge.Insert, int64(j), 1, v)
						}
					} else {
						var r merge.Row
						if r, err = dec.Decode(v); err == nil {
							size += RowBytes(r)
							err = bld.Append(merge.Insert, int64(j), 1, r)
						}
					}
					if err != nil {
						b.Fatal(err)
					}
				}
				bld.NewRecordBatch().Release()
			}
			b.ReportMetric(float64(b.N)*float64(len(vals))/b.Elapsed().Seconds(), "rows/s")
		})
	}
}
