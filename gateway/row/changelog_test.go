package row

import (
	"testing"

	"github.com/setats/setats/gateway/internal/rowtest"
	"github.com/setats/setats/gateway/rowcodec"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/setats/setats/merge"
)

func TestChangelogSchema(t *testing.T) {
	tbl := rowtest.AllTypes()
	s := ChangelogSchema(tbl, "dt=2026-11-29", 3)
	if s.NumFields() != 3+len(tbl.Columns) {
		t.Fatalf("%d fields", s.NumFields())
	}
	want := []arrow.Field{
		{Name: "_row_kind", Type: arrow.PrimitiveTypes.Int8},
		{Name: "_offset", Type: arrow.PrimitiveTypes.Int64},
		{Name: "_commit_timestamp", Type: &arrow.TimestampType{Unit: arrow.Millisecond, TimeZone: "UTC"}},
	}
	for i, w := range want {
		if f := s.Field(i); !f.Equal(w) {
			t.Errorf("field %d = %v, want %v", i, f, w)
		}
	}
	for c := range tbl.Columns {
		if f := s.Field(3 + c); !f.Equal(tbl.Schema.Field(c)) {
			t.Errorf("field %d = %v, want %v", 3+c, f, tbl.Schema.Field(c))
		}
	}
	md := s.Metadata()
	if p, _ := md.GetValue(MetaPartition); p != "dt=2026-11-29" {
		t.Errorf("partition metadata %q", p)
	}
	if b, _ := md.GetValue(MetaBucket); b != "3" {
		t.Errorf("bucket metadata %q", b)
	}
}

func TestChangelogBuilder(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	tbl := rowtest.AllTypes()
	s := ChangelogSchema(tbl, "", 0)
	b := NewChangelogBuilder(mem, tbl, s)
	defer b.Release()
	rows := []merge.Row{rowtest.FullRow(1, "a"), {int32(2), "b", nil, nil, nil, int64(1), nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil}}
	kinds := []merge.RowKind{merge.Insert, merge.Delete}
	for round := 0; round < 2; round++ {
		for i, r := range rows {
			if err := b.Append(kinds[i], int64(10+i), 1000+int64(i), r); err != nil {
				t.Fatal(err)
			}
		}
		if b.Len() != 2 {
			t.Fatalf("Len %d", b.Len())
		}
		rec := b.NewRecordBatch()
		if b.Len() != 0 {
			t.Errorf("Len after NewRecordBatch %d", b.Len())
		}
		if !rec.Schema().Equal(s) || rec.NumRows() != 2 {
			t.Fatalf("record schema/rows: %v %d", rec.Schema(), rec.NumRows())
		}
		// Decoding the table columns back (DoPut shape) must give the rows again.
		k := rec.Column(0).(*array.Int8)
		o := rec.Column(1).(*array.Int64)
		ts := rec.Column(2).(*array.Timestamp)
		for i := range rows {
			if merge.RowKind(k.Value(i)) != kinds[i] || o.Value(i) != int64(10+i) || int64(ts.Value(i)) != 1000+int64(i) {
				t.Errorf("row %d meta: %d %d %d", i, k.Value(i), o.Value(i), ts.Value(i))
			}
		}
		tail := array.NewRecordBatch(arrow.NewSchema(s.Fields()[3:], nil), rec.Columns()[3:], rec.NumRows())
		dec, err := Decode(tbl, tail)
		tail.Release()
		rec.Release()
		if err != nil {
			t.Fatal(err)
		}
		for i := range rows {
			if !merge.RowEqual(dec.Rows[i], rows[i]) {
				t.Errorf("row %d: got %v want %v", i, dec.Rows[i], rows[i])
			}
		}
	}
}

func TestChangelogBuilderBadValue(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	tbl := rowtest.AllTypes()
	b := NewChangelogBuilder(mem, tbl, ChangelogSchema(tbl, "", 0))
	defer b.Release()
	r := rowtest.FullRow(1, "a")
	r[2] = "not a bool"
	wantKind(t, b.Append(merge.Insert, 0, 0, r), ErrInternal)
	wantKind(t, b.Append(merge.Insert, 0, 0, r[:2]), ErrInternal)
}

// TestChangelogBuilderAppendEncoded checks that decoding stored values straight into the Arrow
// builders (AppendEncoded, the DoGet changelog path) gives the same record batches and the same
// Bytes as decoding them into rows first (Append), for every column type, nulls, extreme values
// and values written before columns were added; also through the fallback that decodes into a
// row (no ArrowAppender), and that EncodedRowBytes is RowBytes of the decoded row and at most
// MaxEncodedRowBytes (DoGet parses a value twice only when that bound does not fit the batch).
func TestChangelogBuilderAppendEncoded(t *testing.T) {
	tbl := rowtest.AllTypes()
	rows, vals := encodedTestRows(tbl)
	for _, fallback := range []bool{false, true} {
		mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
		s := ChangelogSchema(tbl, "p", 1)
		byRow := NewChangelogBuilder(mem, tbl, s)
		encoded := NewChangelogBuilder(mem, tbl, s)
		if encoded.enc == nil {
			t.Fatalf("no ArrowAppender for ChangelogSchema: %v", encoded.encErr)
		}
		if fallback {
			encoded.enc = nil
		}
		for round := 0; round < 2; round++ { // the builders are reused across batches
			for i, r := range rows {
				kind, off, ms := merge.RowKind(i%4), int64(100*round+i), int64(1000+i)
				if err := byRow.Append(kind, off, ms, r); err != nil {
					t.Fatal(err)
				}
				n, err := encoded.EncodedRowBytes(vals[i])
				if err != nil {
					t.Fatal(err)
				}
				if n != RowBytes(r) {
					t.Errorf("fallback %v row %d: EncodedRowBytes %d, RowBytes %d", fallback, i, n, RowBytes(r))
				}
				if m := encoded.MaxEncodedRowBytes(vals[i]); n > m {
					t.Errorf("fallback %v row %d: EncodedRowBytes %d above MaxEncodedRowBytes %d", fallback, i, n, m)
				}
				if err := encoded.AppendEncoded(kind, off, ms, vals[i]); err != nil {
					t.Fatal(err)
				}
			}
			if encoded.Len() != len(rows) || encoded.Bytes() != byRow.Bytes() {
				t.Errorf("fallback %v: Len %d, Bytes %d, want %d, %d", fallback, encoded.Len(), encoded.Bytes(), len(rows), byRow.Bytes())
			}
			want, got := byRow.NewRecordBatch(), encoded.NewRecordBatch()
			if !got.Schema().Equal(s) || !array.RecordApproxEqual(got, want, array.WithNaNsEqual(true), array.WithAbsTolerance(0)) {
				t.Errorf("fallback %v round %d:\n got %v\nwant %v", fallback, round, got, want)
			}
			want.Release()
			got.Release()
		}
		byRow.Release()
		encoded.Release()
		mem.AssertSize(t, 0)
	}
}

func TestChangelogBuilderAppendEncodedCorrupt(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	tbl := rowtest.AllTypes()
	val := rowcodec.EncodeValue(tbl, rowtest.FullRow(1, "abc"))
	s := ChangelogSchema(tbl, "", 0)
	for n := 0; n < len(val); n++ {
		b := NewChangelogBuilder(mem, tbl, s)
		_, err := b.EncodedRowBytes(val[:n])
		wantKind(t, err, ErrInternal)
		wantKind(t, b.AppendEncoded(merge.Insert, 0, 0, val[:n]), ErrInternal)
		b.Release()
	}
}
