package buckethash

import "github.com/apache/arrow-go/v18/arrow"

// splitTimestamp splits a timestamp value v counted in unit since the epoch into epoch
// milliseconds (rounded towards negative infinity) and the nanoseconds within that millisecond
// (0..999999), as Flink's TimestampData holds it.
func splitTimestamp(v int64, unit arrow.TimeUnit) (ms int64, nanoOfMs int32) {
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
