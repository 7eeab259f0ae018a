package merge

import (
	"fmt"
)

// RowKind is the kind of a changelog row or of a written row, as in Flink's
// org.apache.flink.types.RowKind (SPEC section 0).
//
// The numeric values are wire format, frozen: they equal Flink's RowKind#toByteValue and travel
// as the int8 column `_row_kind` (proto/README.md). Never renumber them.
type RowKind uint8

const (
	// Insert (+I) is a new row. Wire value 0.
	Insert RowKind = 0
	// UpdateBefore (-U) is the previous content of an updated row; it is immediately followed by
	// the UpdateAfter of the same key in the changelog. Wire value 1.
	UpdateBefore RowKind = 1
	// UpdateAfter (+U) is the new content of an updated row. Wire value 2.
	UpdateAfter RowKind = 2
	// Delete (-D) is a removed row, with every column of the row as it was stored. Wire value 3.
	Delete RowKind = 3
)

// String returns Flink's short form: "+I", "-U", "+U" or "-D"; "RowKind(n)" for other values.
func (k RowKind) String() string {
	switch k {
	case Insert:
		return "+I"
	case UpdateBefore:
		return "-U"
	case UpdateAfter:
		return "+U"
	case Delete:
		return "-D"
	default:
		return fmt.Sprintf("RowKind(%d)", uint8(k))
	}
}

// Valid reports whether k is one of Insert, UpdateBefore, UpdateAfter, Delete.
func (k RowKind) Valid() bool { return k <= Delete }

// ParseRowKind converts a `_row_kind` byte (Flink RowKind#toByteValue) to a RowKind. Values
// outside 0..3 are an ErrInvalid error naming `_row_kind` and the value.
func ParseRowKind(b int8) (RowKind, error) {
	if b < 0 || b > int8(Delete) {
		return 0, errorf(ErrInvalid,
			"invalid _row_kind %d: want 0 (+I), 1 (-U), 2 (+U) or 3 (-D)", b)
	}
	return RowKind(b), nil
}

// ParseRowKindString converts Flink's short form ("+I", "-U", "+U", "-D") to a RowKind; anything
// else is an ErrInvalid error.
func ParseRowKindString(s string) (RowKind, error) {
	switch s {
	case "+I":
		return Insert, nil
	case "-U":
		return UpdateBefore, nil
	case "+U":
		return UpdateAfter, nil
	case "-D":
		return Delete, nil
	}
	return 0, errorf(ErrInvalid, "invalid row kind %q: want +I, -U, +U or -D", s)
}
