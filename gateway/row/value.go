package row

import (
	"fmt"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/setats/setats/catalog"
)

// checkValue reports an error when v, a non-nil value, is not a value of column type t: its Go
// type must fit t, a CHAR/VARCHAR/STRING value must be valid UTF-8 (as Arrow's utf8 type
// requires) and a DECIMAL(p, s) value must have at most p digits.
func checkValue(t catalog.Type, v any) error {
	ok := false
	switch t.Kind {
	case catalog.Boolean:
		_, ok = v.(bool)
	case catalog.TinyInt:
		_, ok = v.(int8)
	case catalog.SmallInt:
		_, ok = v.(int16)
	case catalog.Int:
		_, ok = v.(int32)
	case catalog.BigInt:
		_, ok = v.(int64)
	case catalog.Float:
		_, ok = v.(float32)
	case catalog.Double:
		_, ok = v.(float64)
	case catalog.Decimal:
		var n decimal128.Num
		if n, ok = v.(decimal128.Num); ok {
			// -10^p < n < 10^p (FitsInPrecision misses the smallest 128-bit value, whose Abs overflows).
			m := decimal128.GetScaleMultiplier(t.Precision)
			if !n.Less(m) || !m.Negate().Less(n) {
				return fmt.Errorf("%s has more than %d digits", n.ToString(int32(t.Scale)), t.Precision)
			}
		}
	case catalog.Char, catalog.VarChar:
		var s string
		if s, ok = v.(string); ok && !utf8.ValidString(s) {
			return fmt.Errorf("%q is not valid UTF-8", s)
		}
	case catalog.Binary, catalog.VarBinary:
		_, ok = v.([]byte)
	case catalog.Date:
		_, ok = v.(arrow.Date32)
	case catalog.Time:
		_, ok = v.(arrow.Time32)
	case catalog.Timestamp, catalog.TimestampLTZ:
		_, ok = v.(arrow.Timestamp)
	}
	if !ok {
		return fmt.Errorf("value of Go type %T does not fit type %s", v, t)
	}
	return nil
}
