package rowcodec

import (
	"testing"

	"github.com/setats/setats/gateway/buckethash"
	"github.com/setats/setats/gateway/internal/rowtest"
	"github.com/setats/setats/gateway/partname"
	"github.com/setats/setats/merge"
)

// BenchmarkRowCodecs measures, per row of the seeds' shape, the key, value and bucket
// encodings and the partition name a write computes.
func BenchmarkRowCodecs(b *testing.B) {
	tbl := rowtest.SeedsTable()
	raw := rowtest.SeedsRows(1024)
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
		_ = buckethash.Bucket(tbl, r)
		buf = partname.Append(buf[:0], tbl, r)
	}
}

// BenchmarkDecodeValue measures DecodeValue with the arena decoder (the changelog read path).
func BenchmarkDecodeValue(b *testing.B) {
	tbl := rowtest.SeedsTable()
	v := EncodeValue(tbl, merge.Row(rowtest.SeedsRows(1)[0]))
	d := ValueDecoder{Table: tbl}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := d.Decode(v); err != nil {
			b.Fatal(err)
		}
	}
}
