package rowcodec

import (
	"bytes"
	"cmp"
	"github.com/setats/setats/gateway/internal/rowtest"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/setats/setats/catalog"
	"github.com/setats/setats/merge"
)

func TestValueRoundTrip(t *testing.T) {
	tbl := rowtest.AllTypes()
	nulls, extremes := rowtest.NullsRow(), rowtest.ExtremesRow()
	decs := []decimal128.Num{decimal128.FromI64(-1), decimal128.FromI64(1), decimal128.New(-1, 0), decimal128.New(1<<62, math.MaxUint64), decimal128.GetMaxValue(38).Negate()}
	rows := []merge.Row{rowtest.FullRow(1, "a"), nulls, extremes}
	for _, d := range decs {
		r := rowtest.FullRow(2, "d")
		r[8] = d
		rows = append(rows, r)
	}
	var dec ValueDecoder
	dec.Table = tbl
	for i, r := range rows {
		b := EncodeValue(tbl, r)
		got, err := DecodeValue(tbl, b)
		if err != nil {
			t.Fatalf("row %d: %v", i, err)
		}
		if !merge.RowEqual(got, r) {
			t.Errorf("row %d:\n got %v\nwant %v", i, got, r)
		}
		got2, err := dec.Decode(b)
		if err != nil || !merge.RowEqual(got2, r) {
			t.Errorf("row %d arena decode: %v %v", i, got2, err)
		}
		for j := range b {
			b[j] = 0xAA // decoded values must not alias the input
		}
		if !merge.RowEqual(got, r) || !merge.RowEqual(got2, r) {
			t.Errorf("row %d aliases its encoding", i)
		}
	}
}

func TestValueDecodeCorrupt(t *testing.T) {
	tbl := rowtest.AllTypes()
	b := EncodeValue(tbl, rowtest.FullRow(1, "abc"))
	for n := 0; n < len(b); n++ {
		if _, err := DecodeValue(tbl, b[:n]); err == nil {
			t.Errorf("truncated to %d bytes: no error", n)
		}
	}
}

func TestValueFewerColumns(t *testing.T) {
	// A value written when the table had fewer columns decodes with the new columns null.
	tbl := rowtest.AllTypes()
	short := *tbl
	short.Columns = tbl.Columns[:3]
	got, err := DecodeValue(tbl, EncodeValue(&short, merge.Row{int32(1), "a", true}))
	if err != nil {
		t.Fatal(err)
	}
	want := make(merge.Row, len(tbl.Columns))
	want[0], want[1], want[2] = int32(1), "a", true
	if !merge.RowEqual(got, want) {
		t.Errorf("got %v", got)
	}
}

// TestKeyOrder checks that keys compare like their values, column by column, for every type.
func TestKeyOrder(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	strs := []string{"", "\x00", "\x00\x00", "\x00\x01", "\x00\xff", "a", "a\x00", "a\x00b", "ab", "b", "\xff", "\xff\x00"}
	floats := []float64{math.Inf(-1), -1e300, -1, -0.5, -math.SmallestNonzeroFloat64, 0, math.SmallestNonzeroFloat64, 0.5, 1, 1e300, math.Inf(1)}
	floats32 := []float32{float32(math.Inf(-1)), -3e38, -1, -0.5, -math.SmallestNonzeroFloat32, 0, math.SmallestNonzeroFloat32, 0.5, 1, 3e38}
	type gen struct {
		typ  catalog.Type
		rand func() any
		cmp  func(a, b any) int
	}
	gens := []gen{
		{rowtest.Bool, func() any { return rng.IntN(2) == 1 }, func(a, b any) int { return cmp.Compare(b2i(a.(bool)), b2i(b.(bool))) }},
		{rowtest.Tiny, func() any { return int8(rng.Uint32()) }, func(a, b any) int { return cmp.Compare(a.(int8), b.(int8)) }},
		{rowtest.Small, func() any { return int16(rng.Uint32()) }, func(a, b any) int { return cmp.Compare(a.(int16), b.(int16)) }},
		{rowtest.Int, func() any { return int32(rng.Uint32()) }, func(a, b any) int { return cmp.Compare(a.(int32), b.(int32)) }},
		{rowtest.Big, func() any { return int64(rng.Uint64()) }, func(a, b any) int { return cmp.Compare(a.(int64), b.(int64)) }},
		{rowtest.Double, func() any { return floats[rng.IntN(len(floats))] * float64(rng.IntN(3)+1) }, func(a, b any) int { return cmp.Compare(a.(float64), b.(float64)) }},
		{rowtest.Float, func() any { return float32(floats32[rng.IntN(len(floats32))]) }, func(a, b any) int { return cmp.Compare(a.(float32), b.(float32)) }},
		{rowtest.Dec, func() any { return decimal128.New(int64(rng.IntN(5))-2, rng.Uint64()) }, func(a, b any) int { return a.(decimal128.Num).Cmp(b.(decimal128.Num)) }},
		{rowtest.String, func() any { return strs[rng.IntN(len(strs))] }, func(a, b any) int { return cmp.Compare(a.(string), b.(string)) }},
		{rowtest.Bytes, func() any { return []byte(strs[rng.IntN(len(strs))]) }, func(a, b any) int { return bytes.Compare(a.([]byte), b.([]byte)) }},
		{rowtest.Date, func() any { return arrow.Date32(rng.Uint32()) }, func(a, b any) int { return cmp.Compare(a.(arrow.Date32), b.(arrow.Date32)) }},
		{rowtest.Time, func() any { return arrow.Time32(rng.IntN(86400000)) }, func(a, b any) int { return cmp.Compare(a.(arrow.Time32), b.(arrow.Time32)) }},
		{rowtest.Ts9, func() any { return arrow.Timestamp(rng.Uint64()) }, func(a, b any) int { return cmp.Compare(a.(arrow.Timestamp), b.(arrow.Timestamp)) }},
	}
	for _, g1 := range gens {
		for _, g2 := range []gen{gens[8], gens[3]} { // a second key column after each type
			cols := []catalog.Column{{Name: "a", Type: g1.typ}, {Name: "b", Type: g2.typ}}
			tbl := rowtest.Table("k", cols, []int{0, 1}, nil, nil, 1)
			rows := make([]merge.Row, 200)
			for i := range rows {
				rows[i] = merge.Row{g1.rand(), g2.rand()}
			}
			byValue := slices.Clone(rows)
			slices.SortStableFunc(byValue, func(a, b merge.Row) int {
				return cmp.Or(g1.cmp(a[0], b[0]), g2.cmp(a[1], b[1]))
			})
			for i := 1; i < len(byValue); i++ {
				a, b := byValue[i-1], byValue[i]
				want := cmp.Or(g1.cmp(a[0], b[0]), g2.cmp(a[1], b[1]))
				got := bytes.Compare(EncodeKey(tbl, a), EncodeKey(tbl, b))
				if got != want {
					t.Fatalf("%s,%s: compare(%v, %v): key %d, value %d", g1.typ, g2.typ, a, b, got, want)
				}
			}
		}
	}
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

func TestKeyCanonicalFloats(t *testing.T) {
	tbl := rowtest.Table("f", []catalog.Column{{Name: "d", Type: rowtest.Double}, {Name: "f", Type: rowtest.Float}}, []int{0, 1}, nil, nil, 1)
	nan1 := math.Float64frombits(0x7ff8000000000001)
	nan2 := math.Float32frombits(0xffc00001)
	if !bytes.Equal(EncodeKey(tbl, merge.Row{math.NaN(), float32(math.NaN())}), EncodeKey(tbl, merge.Row{nan1, nan2})) {
		t.Error("NaN keys differ")
	}
	if bytes.Equal(EncodeKey(tbl, merge.Row{0.0, float32(0)}), EncodeKey(tbl, merge.Row{math.Copysign(0, -1), float32(0)})) {
		t.Error("-0.0 and 0.0 are one key; merge.ValueEqual keeps them apart")
	}
}

func TestKeyPrefixFree(t *testing.T) {
	tbl := rowtest.Table("s", []catalog.Column{{Name: "a", Type: rowtest.String}, {Name: "b", Type: rowtest.String}}, []int{0, 1}, nil, nil, 1)
	pairs := [][2]merge.Row{
		{{"a", "bc"}, {"ab", "c"}},
		{{"a\x00", "b"}, {"a", "\x00b"}},
		{{"", "a"}, {"a", ""}},
	}
	for _, p := range pairs {
		if bytes.Equal(EncodeKey(tbl, p[0]), EncodeKey(tbl, p[1])) {
			t.Errorf("%v and %v have the same key", p[0], p[1])
		}
	}
}
