package merge

import (
	"errors"
	"testing"
)

func TestRowKindWireValues(t *testing.T) {
	// Frozen wire format: Flink's RowKind#toByteValue.
	for _, tc := range []struct {
		b    int8
		kind RowKind
		str  string
	}{
		{0, Insert, "+I"},
		{1, UpdateBefore, "-U"},
		{2, UpdateAfter, "+U"},
		{3, Delete, "-D"},
	} {
		k, err := ParseRowKind(tc.b)
		if err != nil || k != tc.kind || uint8(k) != uint8(tc.b) {
			t.Errorf("ParseRowKind(%d) = %v, %v; want %v", tc.b, k, err, tc.kind)
		}
		if k.String() != tc.str {
			t.Errorf("%d.String() = %q, want %q", tc.b, k.String(), tc.str)
		}
		if k2, err := ParseRowKindString(tc.str); err != nil || k2 != tc.kind {
			t.Errorf("ParseRowKindString(%q) = %v, %v", tc.str, k2, err)
		}
	}
	for _, b := range []int8{-128, -1, 4, 5, 127} {
		_, err := ParseRowKind(b)
		if !errors.Is(err, ErrInvalid) {
			t.Errorf("ParseRowKind(%d): err %v, want InvalidArgument", b, err)
		}
	}
	if s := RowKind(9).String(); s != "RowKind(9)" {
		t.Errorf("RowKind(9).String() = %q", s)
	}
	if _, err := ParseRowKindString("+X"); !errors.Is(err, ErrInvalid) {
		t.Errorf("ParseRowKindString(+X): %v", err)
	}
}
