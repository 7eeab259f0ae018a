package merge

import (
	"math"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
)

func TestValueEqual(t *testing.T) {
	nan := math.NaN()
	otherNaN := math.Float64frombits(0x7ff8000000000001)
	for _, tc := range []struct {
		name string
		a, b any
		want bool
	}{
		{"nil nil", nil, nil, true},
		{"nil value", nil, int32(0), false},
		{"value nil", "", nil, false},
		{"int32", int32(7), int32(7), true},
		{"int32 differs", int32(7), int32(8), false},
		{"int32 vs int64", int32(7), int64(7), false},
		{"int8", int8(-1), int8(-1), true},
		{"int16", int16(300), int16(301), false},
		{"bool", true, true, true},
		{"bool differs", true, false, false},
		{"string", "a", "a", true},
		{"string differs", "a", "b", false},
		{"bytes by content", []byte{1, 2}, []byte{1, 2}, true},
		{"bytes differ", []byte{1, 2}, []byte{1, 3}, false},
		{"bytes nil vs empty", []byte(nil), []byte{}, true},
		{"bytes vs string", []byte("a"), "a", false},
		{"decimal", decimal128.FromI64(150), decimal128.FromI64(150), true},
		{"decimal differs", decimal128.FromI64(150), decimal128.FromI64(-150), false},
		{"decimal big", decimal128.New(1, 0), decimal128.New(1, 0), true},
		{"decimal high bits differ", decimal128.New(1, 0), decimal128.New(2, 0), false},
		{"float64", 1.5, 1.5, true},
		{"float64 NaN", nan, nan, true},
		{"float64 NaN payloads", nan, otherNaN, true},
		{"float64 NaN vs 0", nan, 0.0, false},
		{"float64 zero signs", 0.0, math.Copysign(0, -1), false},
		{"float32 NaN", float32(nan), float32(nan), true},
		{"float32 zero signs", float32(0), float32(math.Copysign(0, -1)), false},
		{"float32 vs float64", float32(1), 1.0, false},
		{"date32", arrow.Date32(19000), arrow.Date32(19000), true},
		{"time32", arrow.Time32(1000), arrow.Time32(1001), false},
		{"timestamp", arrow.Timestamp(5), arrow.Timestamp(5), true},
		{"timestamp vs int64", arrow.Timestamp(5), int64(5), false},
		{"other comparable", uint32(5), uint32(5), true},
		{"other uncomparable", []int{1}, []int{1}, true},
		{"other uncomparable differs", []int{1}, []int{2}, false},
	} {
		if got := ValueEqual(tc.a, tc.b); got != tc.want {
			t.Errorf("%s: ValueEqual(%#v, %#v) = %v, want %v", tc.name, tc.a, tc.b, got, tc.want)
		}
		if got := ValueEqual(tc.b, tc.a); got != tc.want {
			t.Errorf("%s: ValueEqual not symmetric", tc.name)
		}
	}
}

func TestRowEqual(t *testing.T) {
	for _, tc := range []struct {
		name string
		a, b Row
		want bool
	}{
		{"nil rows", nil, nil, true},
		{"absent vs present", nil, Row{}, false},
		{"empty rows", Row{}, Row{}, true},
		{"same", Row{int32(1), []byte("x"), nil}, Row{int32(1), []byte("x"), nil}, true},
		{"null differs", Row{int32(1), nil}, Row{int32(1), "x"}, false},
		{"length differs", Row{int32(1)}, Row{int32(1), nil}, false},
	} {
		if got := RowEqual(tc.a, tc.b); got != tc.want {
			t.Errorf("%s: RowEqual = %v, want %v", tc.name, got, tc.want)
		}
	}
}
