package partname

import (
	"fmt"
	"math/big"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/setats/setats/catalog"
)

// Partition-key values must have a partition name (proto/README.md "Partition names") that
// Validate accepts, so that readers can name the partition in a ticket: DATE and
// TIMESTAMP values in the years 0000..9999 (the yyyy-MM-dd form), TIME values within a day.
var (
	minPartitionTime = time.Date(0, 1, 1, 0, 0, 0, 0, time.UTC)
	maxPartitionTime = time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC) // exclusive
)

// CheckValue reports an error when v, a non-nil value of column type t (the Go type of t, as
// row.Batch.Validate checks first), is a value of a partition-key column that has no partition
// name: DATE and TIMESTAMP values outside the years 0000..9999, TIME values outside a day.
func CheckValue(t catalog.Type, v any) error {
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
	panic(fmt.Sprintf("partname: value of Go type %T does not fit column type %s", v, t))
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
