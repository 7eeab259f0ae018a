package catalog

import "testing"

func TestParseFlinkDuration(t *testing.T) {
	for _, c := range []struct {
		in   string
		ms   int64
		fail bool
	}{
		{"24h", 24 * 3600 * 1000, false},
		{"30 min", 30 * 60 * 1000, false},
		{"2s", 2000, false},
		{"500 ms", 500, false},
		{"1500", 1500, false},
		{"3 d", 3 * 86400 * 1000, false},
		{"259200 s", 259200 * 1000, false},
		{" 1 HOURS ", 3600 * 1000, false},
		{"1500000 us", 1500, false},
		{"5m", 300000, false},
		{"", 0, true},
		{"h", 0, true},
		{"-1s", 0, true},
		{"1 week", 0, true},
		{"1.5h", 0, true},
		{"99999999999999999999d", 0, true},
		{"9999999999999999d", 0, true},
	} {
		got, err := ParseFlinkDuration(c.in)
		if (err != nil) != c.fail || got != c.ms {
			t.Errorf("ParseFlinkDuration(%q) = %d, %v; want %d fail=%v", c.in, got, err, c.ms, c.fail)
		}
	}
}
