package catalog

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// flinkDurationUnits maps the unit words of Flink's duration syntax (TimeUtils.parseDuration) to
// their length in nanoseconds.
var flinkDurationUnits = map[string]int64{
	"ns": 1, "nano": 1, "nanos": 1, "nanosecond": 1, "nanoseconds": 1,
	"µs": 1e3, "us": 1e3, "micro": 1e3, "micros": 1e3, "microsecond": 1e3, "microseconds": 1e3,
	"ms": 1e6, "milli": 1e6, "millis": 1e6, "millisecond": 1e6, "milliseconds": 1e6,
	"s": 1e9, "sec": 1e9, "secs": 1e9, "second": 1e9, "seconds": 1e9,
	"m": 60e9, "min": 60e9, "mins": 60e9, "minute": 60e9, "minutes": 60e9,
	"h": 3600e9, "hour": 3600e9, "hours": 3600e9,
	"d": 86400e9, "day": 86400e9, "days": 86400e9,
}

// ParseFlinkDuration parses a duration in Flink's configuration syntax and returns it in whole
// milliseconds (rounded down): a non-negative integer, optional blanks, then an optional unit
// (ns, us, ms, s, min/m, h, d and their long forms, case-insensitive), e.g. "24h", "30 min",
// "500 ms"; a bare number is milliseconds, as in Flink. Errors name the value.
func ParseFlinkDuration(s string) (int64, error) {
	v := strings.TrimSpace(s)
	i := 0
	for i < len(v) && v[i] >= '0' && v[i] <= '9' {
		i++
	}
	if i == 0 {
		return 0, fmt.Errorf("duration %q: want a number followed by an optional unit", s)
	}
	n, err := strconv.ParseInt(v[:i], 10, 64)
	if err != nil {
		return 0, fmt.Errorf("duration %q: %v", s, err)
	}
	unit := strings.ToLower(strings.TrimSpace(v[i:]))
	if unit == "" {
		return n, nil
	}
	ns, ok := flinkDurationUnits[unit]
	if !ok {
		return 0, fmt.Errorf("duration %q: unknown unit %q (want ns, us, ms, s, min, h or d)", s, unit)
	}
	if ns >= 1e6 {
		per := ns / 1e6
		if n > math.MaxInt64/per {
			return 0, fmt.Errorf("duration %q is too large", s)
		}
		return n * per, nil
	}
	return n / (1e6 / ns), nil
}
