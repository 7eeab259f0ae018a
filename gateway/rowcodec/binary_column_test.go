package rowcodec

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/setats/setats/catalog"
	"github.com/setats/setats/gateway/internal/rowtest"
	"github.com/setats/setats/merge"
)

// TestBinaryColumn checks BinaryColumn against array.BinaryBuilder / StringBuilder: the same
// arrays (values, nulls, lengths; valid per ValidateFull) for random values and nulls over
// several batches of different sizes (an empty one, one without nulls, one of nulls only,
// batches crossing bitmap bytes), Value of each value just appended, and that an array NewArray
// returned keeps its values while the column goes on with the next batch.
func TestBinaryColumn(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 12))
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	for _, typ := range []arrow.DataType{arrow.BinaryTypes.String, arrow.BinaryTypes.Binary} {
		col := NewBinaryColumn(typ)
		type batch struct {
			got, want arrow.Array
		}
		var kept []batch
		for round, spec := range []struct{ n, nullPct int }{{0, 0}, {1, 0}, {9, 0}, {17, 50}, {8, 100}, {1000, 10}, {64, 30}} {
			ref := array.NewBuilder(mem, typ)
			for i := 0; i < spec.n; i++ {
				if rng.IntN(100) < spec.nullPct {
					col.AppendNull()
					ref.AppendNull()
					continue
				}
				v := make([]byte, rng.IntN(40))
				for j := range v {
					v[j] = byte('a' + rng.IntN(26))
				}
				var err error
				if typ == arrow.BinaryTypes.String && i%2 == 0 {
					err = col.AppendString(string(v))
				} else {
					err = col.Append(v)
				}
				if err != nil {
					t.Fatal(err)
				}
				switch b := ref.(type) {
				case *array.StringBuilder:
					b.Append(string(v))
				case *array.BinaryBuilder:
					b.Append(v)
				}
				if got := col.Value(col.Len() - 1); string(got) != string(v) {
					t.Fatalf("%s round %d: Value(%d) = %q, want %q", typ, round, col.Len()-1, got, v)
				}
				if len(v) > 0 {
					v[0] = '!' // the column copied the value
				}
			}
			if col.Len() != spec.n {
				t.Fatalf("%s round %d: Len %d, want %d", typ, round, col.Len(), spec.n)
			}
			got, want := col.NewArray(), ref.NewArray()
			ref.Release()
			if err := got.(interface{ ValidateFull() error }).ValidateFull(); err != nil {
				t.Fatalf("%s round %d: %v", typ, round, err)
			}
			if !arrow.TypeEqual(got.DataType(), typ) || got.Len() != want.Len() || got.NullN() != want.NullN() || !array.Equal(got, want) {
				t.Fatalf("%s round %d:\n got %v (%d nulls)\nwant %v (%d nulls)", typ, round, got, got.NullN(), want, want.NullN())
			}
			if col.Len() != 0 || col.DataLen() != 0 {
				t.Fatalf("%s round %d: after NewArray Len %d, DataLen %d", typ, round, col.Len(), col.DataLen())
			}
			kept = append(kept, batch{got, want})
		}
		for i, k := range kept { // later batches did not write into earlier arrays
			if !array.Equal(k.got, k.want) {
				t.Errorf("%s: batch %d changed after the next ones: %v, want %v", typ, i, k.got, k.want)
			}
			k.got.Release()
			k.want.Release()
		}
	}
}

// TestArrowAppenderBinaryColumn checks that values appended through UseBinaryColumn give the
// same arrays and sizes as through the column builders, and that UseBinaryColumn refuses a
// column that is not CHAR/VARCHAR/BINARY/VARBINARY or a column of the other Arrow type.
func TestArrowAppenderBinaryColumn(t *testing.T) {
	tbl := rowtest.Table("bin", []catalog.Column{{Name: "id", Type: rowtest.String}, {Name: "c", Type: rowtest.Char3},
		{Name: "s", Type: rowtest.Varchar}, {Name: "b", Type: rowtest.Bytes}, {Name: "n", Type: rowtest.Int}}, []int{0}, nil, nil, 1)
	vals := [][]byte{
		EncodeValue(tbl, merge.Row{"user-1", "abc", "n", []byte{0, 1, 2}, int32(5)}),
		EncodeValue(tbl, merge.Row{"user-2", nil, nil, nil, nil}),
		EncodeValue(tbl, merge.Row{"", "", "", []byte{}, int32(-1)}),
	}
	mem := memory.NewGoAllocator()
	mk := func() []array.Builder {
		out := make([]array.Builder, len(tbl.Columns))
		for c, col := range tbl.Columns {
			out[c] = array.NewBuilder(mem, col.Type.ArrowType())
		}
		return out
	}
	refOut, binOut := mk(), mk()
	ref, err := NewArrowAppender(tbl, refOut)
	if err != nil {
		t.Fatal(err)
	}
	fast, err := NewArrowAppender(tbl, binOut)
	if err != nil {
		t.Fatal(err)
	}
	bins := make([]*BinaryColumn, len(tbl.Columns))
	for c := 0; c < 4; c++ {
		bins[c] = NewBinaryColumn(tbl.Columns[c].Type.ArrowType())
		if err := fast.UseBinaryColumn(c, bins[c]); err != nil {
			t.Fatal(err)
		}
	}
	for i, v := range vals {
		n1, err1 := ref.Append(v)
		n2, err2 := fast.Append(v)
		s2, err3 := fast.Size(v)
		if err1 != nil || err2 != nil || err3 != nil || n1 != n2 || n2 != s2 {
			t.Fatalf("value %d: sizes %d / %d / %d, errors %v / %v / %v", i, n1, n2, s2, err1, err2, err3)
		}
	}
	for c := range tbl.Columns {
		want := refOut[c].NewArray()
		var got arrow.Array
		if bins[c] != nil {
			got = bins[c].NewArray()
			if binOut[c].Len() != 0 {
				t.Errorf("column %d: the builder got %d values beside the binary column", c, binOut[c].Len())
			}
		} else {
			got = binOut[c].NewArray()
		}
		if !array.Equal(got, want) {
			t.Errorf("column %d: got %v, want %v", c, got, want)
		}
		got.Release()
		want.Release()
	}
	if _, err := fast.Append(vals[0][:len(vals[0])-2]); err == nil {
		t.Error("truncated value: no error")
	}
	if err := fast.UseBinaryColumn(4, NewBinaryColumn(arrow.BinaryTypes.String)); err == nil {
		t.Error("UseBinaryColumn of an INT column: no error")
	}
	if err := fast.UseBinaryColumn(3, NewBinaryColumn(arrow.BinaryTypes.String)); err == nil {
		t.Error("UseBinaryColumn of a VARBINARY column with a string column: no error")
	}
	if err := fast.UseBinaryColumn(5, NewBinaryColumn(arrow.BinaryTypes.String)); err == nil {
		t.Error(fmt.Sprint("UseBinaryColumn of column 5 of ", len(tbl.Columns), ": no error"))
	}
}

// TestBinaryColumnReusesReleasedBuffers checks that once the arrays of earlier batches are
// released, the next batches are appended into their buffers: a batch of 1,000 100-byte values
// (100 kB of data, 4 kB of offsets) then allocates less than 16 kB (the array and data structs
// only), where fresh buffers per batch would take over 104 kB.
func TestBinaryColumnReusesReleasedBuffers(t *testing.T) {
	col := NewBinaryColumn(arrow.BinaryTypes.String)
	v := make([]byte, 100)
	round := func() {
		for i := 0; i < 1000; i++ {
			if i%10 == 0 {
				col.AppendNull()
			} else if err := col.Append(v); err != nil {
				t.Fatal(err)
			}
		}
		col.NewArray().Release()
	}
	for range 3 { // the first batches grow the buffers
		round()
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	const rounds = 10
	for range rounds {
		round()
	}
	runtime.ReadMemStats(&after)
	if per := (after.TotalAlloc - before.TotalAlloc) / rounds; per >= 16<<10 {
		t.Errorf("a batch after the first ones allocated %d bytes", per)
	}
}
