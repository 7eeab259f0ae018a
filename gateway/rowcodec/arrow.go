package rowcodec

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/setats/setats/catalog"
)

// ArrowAppender decodes values written by EncodeValue straight into Arrow column builders, without
// a merge.Row in between: no boxed values, no copies of string and byte values other than the one
// into the builder's buffers (the snapshot read of SPEC section 13, whose per-row cost this is).
// Not safe for concurrent use.
type ArrowAppender struct {
	tbl *catalog.Table
	out []array.Builder // per table column; nil: the column is decoded and dropped
	// bin[c], when set (UseBinaryColumn), receives column c instead of out[c]; nil until a
	// column is set.
	bin []*BinaryColumn
}

// NewArrowAppender returns an appender for tbl's values: out[c] receives table column c (nil: not
// projected). Each non-nil out[c] must be the builder of catalog.Type.ArrowType of the column
// (*array.Int32Builder for INT, *array.StringBuilder for VARCHAR, ...); another builder type is
// an error naming the column.
func NewArrowAppender(tbl *catalog.Table, out []array.Builder) (*ArrowAppender, error) {
	if len(out) != len(tbl.Columns) {
		return nil, fmt.Errorf("table %s: %d column builders for %d columns", tbl.QualifiedName(), len(out), len(tbl.Columns))
	}
	for c, b := range out {
		if b != nil && !arrow.TypeEqual(b.Type(), tbl.Columns[c].Type.ArrowType()) {
			return nil, fmt.Errorf("table %s: column %q: builder of Arrow type %s for column type %s",
				tbl.QualifiedName(), tbl.Columns[c].Name, b.Type(), tbl.Columns[c].Type)
		}
	}
	return &ArrowAppender{tbl: tbl, out: out}, nil
}

// UseBinaryColumn makes Append write table column c into col instead of the builder out[c]
// (which then receives nothing). Column c must be CHAR, VARCHAR, BINARY or VARBINARY and col of
// its Arrow type; anything else is an error naming the column.
func (a *ArrowAppender) UseBinaryColumn(c int, col *BinaryColumn) error {
	if c < 0 || c >= len(a.tbl.Columns) {
		return fmt.Errorf("table %s: no column %d", a.tbl.QualifiedName(), c)
	}
	switch t := a.tbl.Columns[c].Type; t.Kind {
	case catalog.Char, catalog.VarChar, catalog.Binary, catalog.VarBinary:
		if !arrow.TypeEqual(col.Type(), t.ArrowType()) {
			return fmt.Errorf("table %s: column %q: binary column of Arrow type %s for column type %s",
				a.tbl.QualifiedName(), a.tbl.Columns[c].Name, col.Type(), t)
		}
	default:
		return fmt.Errorf("table %s: column %q of type %s is not a string or binary column",
			a.tbl.QualifiedName(), a.tbl.Columns[c].Name, t)
	}
	if a.bin == nil {
		a.bin = make([]*BinaryColumn, len(a.tbl.Columns))
	}
	a.bin[c] = col
	return nil
}

// Append decodes b (a value written by EncodeValue for the appender's table; b may be reused
// after the call) and appends one value (or null) to every non-nil builder. Columns the value
// does not store (added after it was written) are null. It returns about how many bytes of
// Arrow buffers the appended values take: 8 per value (16 for a DECIMAL) plus the length of
// string and byte values. A malformed b is an error; some builders may then hold one value more
// than others (the builders are unusable).
func (a *ArrowAppender) Append(b []byte) (int, error) { return a.decode(b, true) }

// Size returns what Append would return for b without appending anything: the Arrow size
// estimate of the value (so that a caller can bound a record batch before appending to it). A
// malformed b is an error.
func (a *ArrowAppender) Size(b []byte) (int, error) { return a.decode(b, false) }

// decode walks the value b, appending to the builders when emit is set, and returns its Arrow
// size estimate.
func (a *ArrowAppender) decode(b []byte, emit bool) (int, error) {
	stored, k := binary.Uvarint(b)
	if k <= 0 || stored > 1<<20 {
		return 0, errCorrupt
	}
	b = b[k:]
	n := int(stored)
	nb := (n + 7) / 8
	if len(b) < nb {
		return 0, errCorrupt
	}
	bm := b[:nb]
	b = b[nb:]
	size := 0
	for c, out := range a.out {
		var bin *BinaryColumn
		if a.bin != nil {
			bin = a.bin[c]
		}
		if c >= n || bm[c/8]&(1<<(c%8)) != 0 {
			if bin != nil {
				if emit {
					bin.AppendNull()
				}
				size += 8
			} else if out != nil {
				if emit {
					out.AppendNull()
				}
				size += 8
			}
			continue
		}
		if bin != nil {
			// The type was checked by UseBinaryColumn: a length-prefixed value.
			l, k := binary.Uvarint(b)
			if k <= 0 || uint64(len(b)-k) < l {
				return 0, fmt.Errorf("column %q: %w", a.tbl.Columns[c].Name, errCorrupt)
			}
			if emit {
				if err := bin.Append(b[k : k+int(l)]); err != nil {
					return 0, fmt.Errorf("column %q: %w", a.tbl.Columns[c].Name, err)
				}
			}
			b = b[k+int(l):]
			size += 8 + int(l)
			continue
		}
		if !emit {
			out = nil
		}
		var err error
		var sz int
		b, sz, err = appendOne(a.tbl.Columns[c].Type, b, out)
		if err != nil {
			return 0, fmt.Errorf("column %q: %w", a.tbl.Columns[c].Name, err)
		}
		size += sz
	}
	return size, nil
}

// appendOne decodes the value of type t at the start of b, appends it to out (nil: drops it) and
// returns the rest of b and the value's Arrow size estimate.
func appendOne(t catalog.Type, b []byte, out array.Builder) ([]byte, int, error) {
	switch t.Kind {
	case catalog.Boolean, catalog.TinyInt:
		if len(b) < 1 {
			return nil, 0, errCorrupt
		}
		switch o := out.(type) {
		case *array.BooleanBuilder:
			o.Append(b[0] != 0)
		case *array.Int8Builder:
			o.Append(int8(b[0]))
		}
		return b[1:], 8, nil
	case catalog.SmallInt, catalog.Int, catalog.BigInt, catalog.Date, catalog.Time, catalog.Timestamp, catalog.TimestampLTZ:
		v, k := binary.Varint(b)
		if k <= 0 {
			return nil, 0, errCorrupt
		}
		switch o := out.(type) {
		case *array.Int16Builder:
			o.Append(int16(v))
		case *array.Int32Builder:
			o.Append(int32(v))
		case *array.Int64Builder:
			o.Append(v)
		case *array.Date32Builder:
			o.Append(arrow.Date32(v))
		case *array.Time32Builder:
			o.Append(arrow.Time32(v))
		case *array.TimestampBuilder:
			o.Append(arrow.Timestamp(v))
		}
		return b[k:], 8, nil
	case catalog.Float:
		if len(b) < 4 {
			return nil, 0, errCorrupt
		}
		if o, ok := out.(*array.Float32Builder); ok {
			o.Append(math.Float32frombits(binary.LittleEndian.Uint32(b)))
		}
		return b[4:], 8, nil
	case catalog.Double:
		if len(b) < 8 {
			return nil, 0, errCorrupt
		}
		if o, ok := out.(*array.Float64Builder); ok {
			o.Append(math.Float64frombits(binary.LittleEndian.Uint64(b)))
		}
		return b[8:], 8, nil
	case catalog.Decimal:
		hi, k := binary.Varint(b)
		if k <= 0 {
			return nil, 0, errCorrupt
		}
		b = b[k:]
		lo, k := binary.Uvarint(b)
		if k <= 0 {
			return nil, 0, errCorrupt
		}
		if hi < 0 {
			lo = ^lo
		}
		if o, ok := out.(*array.Decimal128Builder); ok {
			o.Append(decimal128.New(hi, lo))
		}
		return b[k:], 16, nil
	case catalog.Char, catalog.VarChar, catalog.Binary, catalog.VarBinary:
		l, k := binary.Uvarint(b)
		if k <= 0 || uint64(len(b)-k) < l {
			return nil, 0, errCorrupt
		}
		raw := b[k : k+int(l)]
		switch o := out.(type) {
		case *array.StringBuilder:
			o.BinaryBuilder.Append(raw)
		case *array.BinaryBuilder:
			o.Append(raw)
		}
		return b[k+int(l):], 8 + int(l), nil
	}
	return nil, 0, fmt.Errorf("unsupported column type %s", t)
}
