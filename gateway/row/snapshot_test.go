package row

import (
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/setats/setats/gateway/internal/rowtest"
	"github.com/setats/setats/gateway/rowcodec"
)

// TestSnapshotBuilderAppendEncoded checks that decoding stored values straight into the Arrow
// builders (AppendEncoded, the DoGet snapshot path) gives the same record batches as decoding
// them into rows first (Append), for every column type, nulls, extreme values, values written
// before columns were added, and projections.
func TestSnapshotBuilderAppendEncoded(t *testing.T) {
	tbl := rowtest.AllTypes()
	rows, vals := encodedTestRows(tbl)
	old := rows[len(rows)-1]

	for _, tc := range []struct {
		name string
		cols []int
	}{
		{"all columns", nil},
		{"reordered subset", []int{16, 10, 0, 8, 7}},
		{"one column", []int{11}},
		{"no column", []int{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
			defer mem.AssertSize(t, 0)
			s := ProjectedSnapshotSchema(tbl, tc.cols, "", 0, 7)
			byRow := NewProjectedSnapshotBuilder(mem, tbl, tc.cols, s)
			defer byRow.Release()
			encoded := NewProjectedSnapshotBuilder(mem, tbl, tc.cols, s)
			defer encoded.Release()
			for round := 0; round < 2; round++ { // the builders are reused across batches
				for i, r := range rows {
					key := rowcodec.EncodeKey(tbl, r)
					if err := byRow.Append(key, r); err != nil {
						t.Fatal(err)
					}
					if err := encoded.AppendEncoded(key, vals[i]); err != nil {
						t.Fatal(err)
					}
				}
				if got, want := string(encoded.LastKey(nil)), string(rowcodec.EncodeKey(tbl, old)); got != want {
					t.Errorf("LastKey %q, want %q", got, want)
				}
				if encoded.Len() != len(rows) {
					t.Errorf("Len %d", encoded.Len())
				}
				want, got := byRow.NewRecordBatch(), encoded.NewRecordBatch()
				if !got.Schema().Equal(s) || !array.RecordApproxEqual(got, want, array.WithNaNsEqual(true), array.WithAbsTolerance(0)) {
					t.Errorf("round %d:\n got %v\nwant %v", round, got, want)
				}
				want.Release()
				got.Release()
			}
		})
	}
}

func TestSnapshotBuilderAppendEncodedCorrupt(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	tbl := rowtest.AllTypes()
	val := rowcodec.EncodeValue(tbl, rowtest.FullRow(1, "abc"))
	s := SnapshotSchema(tbl, "", 0, 1)
	for n := 0; n < len(val); n++ {
		b := NewSnapshotBuilder(mem, tbl, s)
		wantKind(t, b.AppendEncoded([]byte("k"), val[:n]), ErrInternal)
		b.Release()
	}
}

func TestArrowAppenderBuilderType(t *testing.T) {
	// A builder whose Arrow type is not the column's is refused when the appender is made.
	mem := memory.NewGoAllocator()
	tbl := rowtest.AllTypes()
	out := make([]array.Builder, len(tbl.Columns))
	out[0] = array.NewInt64Builder(mem) // column 0 is INT
	defer out[0].Release()
	if _, err := rowcodec.NewArrowAppender(tbl, out); err == nil {
		t.Error("an INT64 builder for an INT column: no error")
	}
	if _, err := rowcodec.NewArrowAppender(tbl, out[:1]); err == nil {
		t.Error("one builder for a table of many columns: no error")
	}
}
