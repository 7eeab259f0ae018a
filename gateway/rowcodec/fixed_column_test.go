package rowcodec

import (
	"math"
	"math/rand/v2"
	"runtime"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// TestFixedColumn checks FixedColumn against Arrow's builders: the same arrays (and a data
// buffer of at least a value's width per value) for every width over batches of different sizes (empty, one value, extremes, random values),
// arrays of earlier batches unchanged by later ones, and NewFixedColumn refusing types that are
// not 8/16/32/64-bit integers.
func TestFixedColumn(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	ts := &arrow.TimestampType{Unit: arrow.Millisecond, TimeZone: "UTC"}
	for _, tc := range []struct {
		typ    arrow.DataType
		append func(b array.Builder, v int64)
	}{
		{arrow.PrimitiveTypes.Int8, func(b array.Builder, v int64) { b.(*array.Int8Builder).Append(int8(v)) }},
		{arrow.PrimitiveTypes.Int16, func(b array.Builder, v int64) { b.(*array.Int16Builder).Append(int16(v)) }},
		{arrow.PrimitiveTypes.Int32, func(b array.Builder, v int64) { b.(*array.Int32Builder).Append(int32(v)) }},
		{arrow.PrimitiveTypes.Int64, func(b array.Builder, v int64) { b.(*array.Int64Builder).Append(v) }},
		{arrow.FixedWidthTypes.Date32, func(b array.Builder, v int64) { b.(*array.Date32Builder).Append(arrow.Date32(v)) }},
		{ts, func(b array.Builder, v int64) { b.(*array.TimestampBuilder).Append(arrow.Timestamp(v)) }},
	} {
		col, err := NewFixedColumn(tc.typ)
		if err != nil {
			t.Fatal(err)
		}
		var kept [][2]arrow.Array
		for round, n := range []int{0, 1, 5, 1000, 64, 3} {
			ref := array.NewBuilder(mem, tc.typ)
			for i := 0; i < n; i++ {
				v := int64(rng.Uint64())
				switch i {
				case 0:
					v = math.MinInt64
				case 1:
					v = math.MaxInt64
				case 2:
					v = -1
				}
				col.Append(v)
				tc.append(ref, v)
			}
			if col.Len() != n {
				t.Fatalf("%s round %d: Len %d, want %d", tc.typ, round, col.Len(), n)
			}
			got, want := col.NewArray(), ref.NewArray()
			ref.Release()
			if got.Data().Buffers()[1].Len() < n*tc.typ.(arrow.FixedWidthDataType).BitWidth()/8 {
				t.Fatalf("%s round %d: data buffer of %d bytes for %d values", tc.typ, round, got.Data().Buffers()[1].Len(), n)
			}
			if !arrow.TypeEqual(got.DataType(), tc.typ) || got.NullN() != 0 || !array.Equal(got, want) {
				t.Fatalf("%s round %d:\n got %v\nwant %v", tc.typ, round, got, want)
			}
			if col.Len() != 0 {
				t.Fatalf("%s round %d: Len %d after NewArray", tc.typ, round, col.Len())
			}
			kept = append(kept, [2]arrow.Array{got, want})
		}
		for i, k := range kept {
			if !array.Equal(k[0], k[1]) {
				t.Errorf("%s: batch %d changed after the next ones: %v, want %v", tc.typ, i, k[0], k[1])
			}
			k[0].Release()
			k[1].Release()
		}
	}
	for _, typ := range []arrow.DataType{arrow.FixedWidthTypes.Boolean, &arrow.Decimal128Type{Precision: 10, Scale: 2}, arrow.BinaryTypes.String} {
		if _, err := NewFixedColumn(typ); err == nil {
			t.Errorf("NewFixedColumn(%s): no error", typ)
		}
	}
}

// TestFixedColumnReusesReleasedBuffers: once the arrays of earlier batches are released, a batch
// of 1,000 int64 values (8 kB) allocates less than 2 kB (the array and data structs only).
func TestFixedColumnReusesReleasedBuffers(t *testing.T) {
	col, err := NewFixedColumn(arrow.PrimitiveTypes.Int64)
	if err != nil {
		t.Fatal(err)
	}
	round := func() {
		for i := range 1000 {
			col.Append(int64(i))
		}
		col.NewArray().Release()
	}
	for range 3 { // the first batches grow the buffer
		round()
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	const rounds = 10
	for range rounds {
		round()
	}
	runtime.ReadMemStats(&after)
	if per := (after.TotalAlloc - before.TotalAlloc) / rounds; per >= 2<<10 {
		t.Errorf("a batch after the first ones allocated %d bytes", per)
	}
}
