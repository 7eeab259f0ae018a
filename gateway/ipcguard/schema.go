package ipcguard

import (
	"fmt"
	"strconv"

	"github.com/setats/setats/internal/culprit"
)

// Field types (Arrow format Schema.fbs, union Type; wire values, fixed).
const (
	typeNONE            = 0
	typeNull            = 1
	typeInt             = 2
	typeFloatingPoint   = 3
	typeBinary          = 4
	typeUtf8            = 5
	typeBool            = 6
	typeDecimal         = 7
	typeDate            = 8
	typeTime            = 9
	typeTimestamp       = 10
	typeInterval        = 11
	typeList            = 12
	typeStruct          = 13
	typeUnion           = 14
	typeFixedSizeBinary = 15
	typeFixedSizeList   = 16
	typeMap             = 17
	typeDuration        = 18
	typeLargeBinary     = 19
	typeLargeUtf8       = 20
	typeLargeList       = 21
	typeRunEndEncoded   = 22
	typeBinaryView      = 23
	typeUtf8View        = 24
	typeListView        = 25
	typeLargeListView   = 26
)

var typeNames = [...]string{"NONE", "Null", "Int", "FloatingPoint", "Binary", "Utf8", "Bool", "Decimal", "Date",
	"Time", "Timestamp", "Interval", "List", "Struct", "Union", "FixedSizeBinary", "FixedSizeList", "Map",
	"Duration", "LargeBinary", "LargeUtf8", "LargeList", "RunEndEncoded", "BinaryView", "Utf8View", "ListView",
	"LargeListView"}

func typeName(t uint8) string {
	if int(t) < len(typeNames) {
		return typeNames[t]
	}
	return "type " + strconv.Itoa(int(t))
}

// Schema and Field table slots (Schema.fbs).
const (
	schemaEndianness     = 0
	schemaFields         = 1
	schemaCustomMetadata = 2
	schemaFeatures       = 3

	fieldName           = 0
	fieldNullable       = 1
	fieldTypeType       = 2
	fieldType           = 3
	fieldDictionary     = 4
	fieldChildren       = 5
	fieldCustomMetadata = 6
)

// layout is how a flat field's values are laid out in a record batch.
type layout uint8

const (
	layoutFixed     layout = iota // validity + values of width bytes
	layoutBits                    // validity + bit-packed values (Bool)
	layoutOffsets32               // validity + int32 offsets + data (Binary, Utf8)
	layoutOffsets64               // validity + int64 offsets + data (LargeBinary, LargeUtf8)
)

// field is a checked top-level field of the schema: one node and the buffers of its layout.
type field struct {
	name   string // truncated for messages
	layout layout
	width  uint64 // bytes per value of layoutFixed
}

// buffers returns the number of buffers of the field in a record batch.
func (f field) buffers() int {
	if f.layout == layoutOffsets32 || f.layout == layoutOffsets64 {
		return 3
	}
	return 2
}

// checkSchema verifies the Schema table: endianness little, at most MaxFields fields at most
// MaxDepth deep, names within MaxNameBytes, metadata within the budget, and every top-level field
// of a flat type the decoder reads within bounds (no dictionary encoding, no children).
func (g *Guard) checkSchema(s table, meta *metaBudget) ([]field, error) {
	end, err := s.int16(schemaEndianness, 0)
	if err != nil {
		return nil, fmt.Errorf("malformed flatbuffer: %v", err)
	}
	if end != 0 {
		return nil, fmt.Errorf("big-endian schemas are not accepted (endianness %d)", end)
	}
	if _, _, err := s.vector(schemaFeatures, 8); err != nil {
		return nil, fmt.Errorf("schema features: malformed flatbuffer: %v", err)
	}
	if err := meta.add(s, schemaCustomMetadata, "schema"); err != nil {
		return nil, err
	}
	if n, err := s.vectorLen(schemaFields); err != nil {
		return nil, fmt.Errorf("schema fields: malformed flatbuffer: %v", err)
	} else if n > uint64(g.limits.MaxFields) {
		return nil, fmt.Errorf("field count %d > limit %d", n, g.limits.MaxFields)
	}
	start, n, err := s.vector(schemaFields, 4)
	if err != nil {
		return nil, fmt.Errorf("schema fields: malformed flatbuffer: %v", err)
	}
	w := &schemaWalk{g: g, meta: meta, total: int(n)}
	fields := make([]field, 0, n)
	for i := uint64(0); i < n; i++ {
		ft, err := s.tableElem(start, i)
		if err != nil {
			return nil, fmt.Errorf("field %d: malformed flatbuffer: %v", i, err)
		}
		f, err := w.field(ft, fmt.Sprintf("field %d", i), 1)
		if err != nil {
			return nil, err
		}
		fields = append(fields, f)
	}
	return fields, nil
}

type schemaWalk struct {
	g     *Guard
	meta  *metaBudget
	total int // fields seen so far (all depths) and announced at the current level
}

// field verifies one Field table at depth (1 = top level), its children first (bounded by
// MaxDepth and MaxFields), then its type; what names it ("field 3").
func (w *schemaWalk) field(ft table, what string, depth int) (field, error) {
	l := w.g.limits
	if depth > l.MaxDepth {
		return field{}, fmt.Errorf("%s: nesting depth %d > limit %d", what, depth, l.MaxDepth)
	}
	name, err := ft.bytes(fieldName)
	if err != nil {
		return field{}, fmt.Errorf("%s name: malformed flatbuffer: %v", what, err)
	}
	if len(name) > l.MaxNameBytes {
		return field{}, fmt.Errorf("%s: name of %d bytes > limit %d", what, len(name), l.MaxNameBytes)
	}
	what = fmt.Sprintf("%s %s", what, culprit.Quote(string(name)))
	if _, err := ft.uint8(fieldNullable, 0); err != nil {
		return field{}, fmt.Errorf("%s: malformed flatbuffer: %v", what, err)
	}
	if err := w.meta.add(ft, fieldCustomMetadata, what); err != nil {
		return field{}, err
	}
	if nc, err := ft.vectorLen(fieldChildren); err != nil {
		return field{}, fmt.Errorf("%s children: malformed flatbuffer: %v", what, err)
	} else if uint64(w.total)+nc > uint64(l.MaxFields) {
		return field{}, fmt.Errorf("%s: field count %d (nested fields included) > limit %d", what, uint64(w.total)+nc, l.MaxFields)
	}
	cstart, nc, err := ft.vector(fieldChildren, 4)
	if err != nil {
		return field{}, fmt.Errorf("%s children: malformed flatbuffer: %v", what, err)
	}
	w.total += int(nc)
	for i := uint64(0); i < nc; i++ {
		ct, err := ft.tableElem(cstart, i)
		if err != nil {
			return field{}, fmt.Errorf("%s child %d: malformed flatbuffer: %v", what, i, err)
		}
		if _, err := w.field(ct, fmt.Sprintf("%s child %d", what, i), depth+1); err != nil {
			return field{}, err
		}
	}
	if _, ok, err := ft.sub(fieldDictionary); err != nil {
		return field{}, fmt.Errorf("%s dictionary: malformed flatbuffer: %v", what, err)
	} else if ok {
		return field{}, fmt.Errorf("%s: dictionary-encoded fields are not accepted", what)
	}
	tt, err := ft.uint8(fieldTypeType, 0)
	if err != nil {
		return field{}, fmt.Errorf("%s: malformed flatbuffer: %v", what, err)
	}
	typ, ok, err := ft.sub(fieldType)
	if err != nil {
		return field{}, fmt.Errorf("%s type: malformed flatbuffer: %v", what, err)
	}
	if !ok {
		return field{}, fmt.Errorf("%s: no type table", what)
	}
	if depth > 1 {
		return field{}, nil // walked for its bounds only: its top-level field is refused below
	}
	if nc > 0 {
		return field{}, fmt.Errorf("%s: nested Arrow types are not accepted (a Setats column is a flat type; this field has type %s with %d children)",
			what, typeName(tt), nc)
	}
	f, err := flatField(tt, typ, w.g.limits)
	if err != nil {
		return field{}, fmt.Errorf("%s: %v", what, err)
	}
	f.name = what
	return f, nil
}

// flatField checks the type table of a flat field and returns its layout. The units and widths
// accepted are those arrow-go's ipc reader implements (anything else it rejects with an error or
// a panic); Setats columns use a subset (row.Decode names the expected type).
func flatField(tt uint8, typ table, l Limits) (field, error) {
	bad := func(format string, args ...any) (field, error) {
		return field{}, fmt.Errorf("Arrow type %s: %s", typeName(tt), fmt.Sprintf(format, args...))
	}
	malformed := func(err error) (field, error) { return bad("malformed flatbuffer: %v", err) }
	switch tt {
	case typeBool:
		return field{layout: layoutBits}, nil
	case typeBinary, typeUtf8:
		return field{layout: layoutOffsets32}, nil
	case typeLargeBinary, typeLargeUtf8:
		return field{layout: layoutOffsets64}, nil
	case typeInt:
		bw, err := typ.int32(0, 0)
		if err != nil {
			return malformed(err)
		}
		if _, err := typ.uint8(1, 0); err != nil {
			return malformed(err)
		}
		switch bw {
		case 8, 16, 32, 64:
			return field{layout: layoutFixed, width: uint64(bw / 8)}, nil
		}
		return bad("bit width %d (want 8, 16, 32 or 64)", bw)
	case typeFloatingPoint:
		p, err := typ.int16(0, 0)
		if err != nil {
			return malformed(err)
		}
		switch p {
		case 0, 1, 2: // HALF, SINGLE, DOUBLE
			return field{layout: layoutFixed, width: 2 << p}, nil
		}
		return bad("precision %d", p)
	case typeDecimal:
		for slot := 0; slot < 2; slot++ { // precision, scale
			if _, err := typ.int32(slot, 0); err != nil {
				return malformed(err)
			}
		}
		bw, err := typ.int32(2, 128)
		if err != nil {
			return malformed(err)
		}
		switch bw {
		case 32, 64, 128, 256:
			return field{layout: layoutFixed, width: uint64(bw / 8)}, nil
		}
		return bad("bit width %d (want 32, 64, 128 or 256)", bw)
	case typeDate:
		u, err := typ.int16(0, 1)
		if err != nil {
			return malformed(err)
		}
		switch u {
		case 0: // DAY
			return field{layout: layoutFixed, width: 4}, nil
		case 1: // MILLISECOND
			return field{layout: layoutFixed, width: 8}, nil
		}
		return bad("unit %d", u)
	case typeTime:
		u, err := typ.int16(0, 1)
		if err != nil {
			return malformed(err)
		}
		bw, err := typ.int32(1, 32)
		if err != nil {
			return malformed(err)
		}
		switch {
		case bw == 32 && (u == 0 || u == 1): // s, ms
			return field{layout: layoutFixed, width: 4}, nil
		case bw == 64 && (u == 2 || u == 3): // us, ns
			return field{layout: layoutFixed, width: 8}, nil
		}
		return bad("unit %d with bit width %d", u, bw)
	case typeTimestamp:
		u, err := typ.int16(0, 0)
		if err != nil {
			return malformed(err)
		}
		if u < 0 || u > 3 {
			return bad("unit %d", u)
		}
		tz, err := typ.bytes(1)
		if err != nil {
			return malformed(err)
		}
		if len(tz) > l.MaxNameBytes {
			return bad("time zone of %d bytes > limit %d", len(tz), l.MaxNameBytes)
		}
		return field{layout: layoutFixed, width: 8}, nil
	case typeDuration:
		u, err := typ.int16(0, 1)
		if err != nil {
			return malformed(err)
		}
		if u < 0 || u > 3 {
			return bad("unit %d", u)
		}
		return field{layout: layoutFixed, width: 8}, nil
	case typeInterval:
		u, err := typ.int16(0, 0)
		if err != nil {
			return malformed(err)
		}
		switch u {
		case 0: // YEAR_MONTH
			return field{layout: layoutFixed, width: 4}, nil
		case 1: // DAY_TIME
			return field{layout: layoutFixed, width: 8}, nil
		case 2: // MONTH_DAY_NANO
			return field{layout: layoutFixed, width: 16}, nil
		}
		return bad("unit %d", u)
	case typeFixedSizeBinary:
		w, err := typ.int32(0, 0)
		if err != nil {
			return malformed(err)
		}
		if w <= 0 || w > 1<<20 {
			return bad("byte width %d (want 1..%d)", w, 1<<20)
		}
		return field{layout: layoutFixed, width: uint64(w)}, nil
	}
	return bad("not accepted (Setats columns are flat: bool, integers, floating point, decimal, date, time, timestamp, string, binary)")
}
