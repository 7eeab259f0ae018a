package merge

import (
	"bytes"
	"math"
	"reflect"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
)

// ValueEqual reports whether two row values are the same value of the same Go type. It decides
// whether a merge result equals the stored row (SPEC section 4: an equal result emits nothing).
//
//   - nil (SQL NULL) equals only nil.
//   - Values of different Go types are never equal (int32(1) != int64(1)).
//   - []byte compares by content; a nil and an empty []byte are equal (both are the empty value).
//   - decimal128.Num compares the unscaled value; both sides carry the column's scale, so this is
//     equality by value.
//   - float32/float64 compare like Java's Double.equals, which is what Flink's binary rows do: by
//     their IEEE-754 bits, except that every NaN equals every other NaN. So NaN equals NaN (writing
//     NaN over NaN changes nothing) and 0.0 differs from -0.0 (the sign is kept as written).
//   - Other types (string, bool, integers, arrow.Date32, arrow.Time32, arrow.Timestamp, ...)
//     compare with ==; types that are not comparable fall back to reflect.DeepEqual.
func ValueEqual(a, b any) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	switch x := a.(type) {
	case string:
		y, ok := b.(string)
		return ok && x == y
	case int32:
		y, ok := b.(int32)
		return ok && x == y
	case int64:
		y, ok := b.(int64)
		return ok && x == y
	case []byte:
		y, ok := b.([]byte)
		return ok && bytes.Equal(x, y)
	case float64:
		y, ok := b.(float64)
		return ok && float64Equal(x, y)
	case float32:
		y, ok := b.(float32)
		return ok && float32Equal(x, y)
	case decimal128.Num:
		y, ok := b.(decimal128.Num)
		return ok && x == y
	case bool:
		y, ok := b.(bool)
		return ok && x == y
	case int8:
		y, ok := b.(int8)
		return ok && x == y
	case int16:
		y, ok := b.(int16)
		return ok && x == y
	case arrow.Date32:
		y, ok := b.(arrow.Date32)
		return ok && x == y
	case arrow.Time32:
		y, ok := b.(arrow.Time32)
		return ok && x == y
	case arrow.Timestamp:
		y, ok := b.(arrow.Timestamp)
		return ok && x == y
	}
	ta, tb := reflect.TypeOf(a), reflect.TypeOf(b)
	if ta != tb {
		return false
	}
	if ta.Comparable() {
		return a == b
	}
	return reflect.DeepEqual(a, b)
}

func float64Equal(x, y float64) bool {
	if math.IsNaN(x) || math.IsNaN(y) {
		return math.IsNaN(x) && math.IsNaN(y)
	}
	return math.Float64bits(x) == math.Float64bits(y)
}

func float32Equal(x, y float32) bool {
	if x != x || y != y { // NaN
		return x != x && y != y
	}
	return math.Float32bits(x) == math.Float32bits(y)
}

// RowEqual reports whether two rows have the same length and pairwise ValueEqual values. A nil
// row means "no row" (an absent key): it equals only another nil row, never a present row.
func RowEqual(a, b Row) bool {
	if (a == nil) != (b == nil) || len(a) != len(b) {
		return false
	}
	for i := range a {
		if !ValueEqual(a[i], b[i]) {
			return false
		}
	}
	return true
}
