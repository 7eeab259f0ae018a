package row

import (
	"fmt"
	"math/big"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/setats/setats/catalog"
)

// SplitTimestamp splits a timestamp value v counted in unit since the epoch into epoch
// milliseconds (rounded towards negative infinity) and the nanoseconds within that millisecond
// (0..999999), as Flink's TimestampData holds it.
func SplitTimestamp(v int64, unit arrow.TimeUnit) (ms int64, nanoOfMs int32) {
	switch unit {
	case arrow.Second:
		return v * 1000, 0
	case arrow.Millisecond:
		return v, 0
	case arrow.Microsecond:
		ms, rem := floorDivMod(v, 1000)
		return ms, int32(rem * 1000)
	default:
		ms, rem := floorDivMod(v, 1_000_000)
		return ms, int32(rem)
	}
}

// floorDivMod returns floor(a / b) and a - b*floor(a / b) for b > 0.
func floorDivMod(a, b int64) (q, r int64) {
	q, r = a/b, a%b
	if r < 0 {
		q--
		r += b
	}
	return q, r
}

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

// Partition-key values must have a partition name (proto/README.md "Partition names") that
// ValidatePartitionName accepts, so that readers can name the partition in a ticket: DATE and
// TIMESTAMP values in the years 0000..9999 (the yyyy-MM-dd form), TIME values within a day.
var (
	minPartitionTime = time.Date(0, 1, 1, 0, 0, 0, 0, time.UTC)
	maxPartitionTime = time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC) // exclusive
)

// checkPartitionValue reports an error when v, a non-nil value that passed checkValue, is a
// value of a partition-key column of type t that has no partition name.
func checkPartitionValue(t catalog.Type, v any) error {
	var tm time.Time
	switch x := v.(type) {
	case arrow.Time32:
		if x < 0 || x >= 24*60*60*1000 {
			return fmt.Errorf("TIME value %d ms is not a time of day (0 <= ms < 86400000)", x)
		}
		return nil
	case arrow.Date32:
		tm = x.ToTime()
	case arrow.Timestamp:
		tm = x.ToTime(catalog.TimestampUnit(t.Precision))
	default:
		return nil
	}
	if tm.Before(minPartitionTime) || !tm.Before(maxPartitionTime) {
		return fmt.Errorf("%s value %d is outside the years 0000..9999 that partition names can hold", t, v)
	}
	return nil
}

// mismatch panics for a value whose Go type does not fit its column: rows reaching the encoders
// are validated (Decode, Batch.Validate), so this is a programming error.
func mismatch(t catalog.Type, v any) {
	panic(fmt.Sprintf("row: value of Go type %T does not fit column type %s", v, t))
}

// parseDecimal parses a plain decimal string ("-12.30", "7") exactly into the unscaled value of
// DECIMAL(precision, scale). It accepts at most scale fraction digits (fewer are padded with
// zeros) and fails when the value has more than precision digits.
func parseDecimal(s string, precision, scale int) (decimal128.Num, error) {
	neg := strings.HasPrefix(s, "-")
	digits := strings.TrimPrefix(s, "-")
	intPart, frac, _ := strings.Cut(digits, ".")
	if intPart == "" || len(frac) > scale || strings.Contains(s, ".") && frac == "" {
		return decimal128.Num{}, fmt.Errorf("%q is not a DECIMAL(%d, %d) value", s, precision, scale)
	}
	all := intPart + frac + strings.Repeat("0", scale-len(frac))
	for _, ch := range all {
		if ch < '0' || ch > '9' {
			return decimal128.Num{}, fmt.Errorf("%q is not a DECIMAL(%d, %d) value", s, precision, scale)
		}
	}
	var n big.Int
	n.SetString(all, 10)
	if neg {
		n.Neg(&n)
	}
	if len(strings.TrimLeft(all, "0")) > precision {
		return decimal128.Num{}, fmt.Errorf("%q does not fit DECIMAL(%d, %d)", s, precision, scale)
	}
	return decimal128.FromBigInt(&n), nil
}
