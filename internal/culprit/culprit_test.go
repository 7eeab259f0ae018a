package culprit

import (
	"strings"
	"testing"
)

func TestTruncate(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"short", "short"},
		{strings.Repeat("a", MaxBytes), strings.Repeat("a", MaxBytes)},
		{strings.Repeat("a", 1<<20), strings.Repeat("a", MaxBytes) + "...(1048576 bytes)"},
		{strings.Repeat("a", MaxBytes-1) + "é", strings.Repeat("a", MaxBytes-1) + "...(129 bytes)"}, // cut at a rune start
	} {
		if got := Truncate(tc.in); got != tc.want {
			t.Errorf("Truncate(%d bytes) = %q, want %q", len(tc.in), got, tc.want)
		}
	}
	if got := Quote("a\x00b"); got != `"a\x00b"` {
		t.Errorf("Quote = %s", got)
	}
	if got := Quote(strings.Repeat("x", 1000)); got != `"`+strings.Repeat("x", MaxBytes)+`"...(1000 bytes)` {
		t.Errorf("Quote = %s", got)
	}
}

func TestCap(t *testing.T) {
	if got := Cap("fine"); got != "fine" {
		t.Errorf("Cap = %q", got)
	}
	long := "table default." + strings.Repeat("n", 1<<20) + " not found"
	got := Cap(long)
	if len(got) > MaxMessageBytes+64 || !strings.HasPrefix(got, "table default.nnn") ||
		!strings.HasSuffix(got, "nnn not found") || !strings.Contains(got, "...(1048600 bytes)...") {
		t.Errorf("Cap = %q (%d bytes)", got, len(got))
	}
}
