package rowcodec

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/setats/setats/catalog"
	"github.com/setats/setats/merge"
)

// Key encoding (EncodeKey)
//
// A key is the concatenation of the primary-key values in primary-key order, each encoded so
// that bytes.Compare of two keys orders them like their values, column by column
// ("memcomparable"), and so that no encoded key is a prefix of another:
//
//	BOOLEAN                      1 byte, 0 or 1
//	TINYINT..BIGINT, DATE, TIME,
//	TIMESTAMP, TIMESTAMP_LTZ     big-endian two's complement of the type's width (1, 2, 4, 8
//	                             bytes; DATE and TIME 4, timestamps 8) with the sign bit flipped
//	FLOAT, DOUBLE                big-endian IEEE-754 bits (4 or 8 bytes): sign bit flipped for
//	                             positive values, all bits flipped for negative ones; every NaN
//	                             is written as the canonical quiet NaN (NaN keys are one key,
//	                             as merge.ValueEqual says); -0.0 and 0.0 are distinct keys
//	DECIMAL                      16 bytes big-endian two's complement of the unscaled value,
//	                             sign bit flipped (the scale is fixed per column)
//	CHAR, VARCHAR, STRING,
//	BINARY, VARBINARY, BYTES     the bytes with 0x00 written as 0x00 0xFF, then 0x00 0x01
//
// Primary-key values are never null, so keys carry no null markers.

// EncodeKey returns the primary-key encoding of row (see AppendKey).
func EncodeKey(tbl *catalog.Table, row merge.Row) []byte {
	return AppendKey(nil, tbl, row)
}

// AppendKey appends the memcomparable encoding of row's primary-key values to dst and returns
// the extended slice. Values must be non-null and of their columns' Go types (Batch.Validate);
// otherwise AppendKey panics.
func AppendKey(dst []byte, tbl *catalog.Table, row merge.Row) []byte {
	return AppendKeyPrefix(dst, tbl, row, len(tbl.PrimaryKey))
}

// AppendKeyPrefix appends the encoding of row's first k primary-key values (0 <= k <=
// len(tbl.PrimaryKey)): a byte prefix of AppendKey's, and since every column's encoding is
// prefix-free, the keys that start with it are exactly those whose first k values are row's
// (the prefix lookups of SPEC section 13). Only those k values must be set; panics as AppendKey.
func AppendKeyPrefix(dst []byte, tbl *catalog.Table, row merge.Row, k int) []byte {
	for _, c := range tbl.PrimaryKey[:k] {
		dst = appendKeyValue(dst, tbl.Columns[c].Type, row[c])
	}
	return dst
}

func appendKeyValue(dst []byte, t catalog.Type, v any) []byte {
	switch x := v.(type) {
	case bool:
		if x {
			return append(dst, 1)
		}
		return append(dst, 0)
	case int8:
		return append(dst, uint8(x)^0x80)
	case int16:
		return binary.BigEndian.AppendUint16(dst, uint16(x)^(1<<15))
	case int32:
		return binary.BigEndian.AppendUint32(dst, uint32(x)^(1<<31))
	case int64:
		return binary.BigEndian.AppendUint64(dst, uint64(x)^(1<<63))
	case arrow.Date32:
		return binary.BigEndian.AppendUint32(dst, uint32(x)^(1<<31))
	case arrow.Time32:
		return binary.BigEndian.AppendUint32(dst, uint32(x)^(1<<31))
	case arrow.Timestamp:
		return binary.BigEndian.AppendUint64(dst, uint64(x)^(1<<63))
	case float32:
		b := math.Float32bits(x)
		if x != x {
			b = 0x7fc00000
		}
		if b&(1<<31) != 0 {
			b = ^b
		} else {
			b |= 1 << 31
		}
		return binary.BigEndian.AppendUint32(dst, b)
	case float64:
		b := math.Float64bits(x)
		if x != x {
			b = 0x7ff8000000000000
		}
		if b&(1<<63) != 0 {
			b = ^b
		} else {
			b |= 1 << 63
		}
		return binary.BigEndian.AppendUint64(dst, b)
	case decimal128.Num:
		dst = binary.BigEndian.AppendUint64(dst, uint64(x.HighBits())^(1<<63))
		return binary.BigEndian.AppendUint64(dst, x.LowBits())
	case string:
		return appendEscaped(dst, x)
	case []byte:
		return appendEscaped(dst, x)
	}
	mismatch(t, v)
	return nil
}

// appendEscaped appends s with 0x00 escaped as 0x00 0xFF and the terminator 0x00 0x01.
func appendEscaped[S string | []byte](dst []byte, s S) []byte {
	for {
		i := indexZero(s)
		if i < 0 {
			dst = append(dst, s...)
			break
		}
		dst = append(dst, s[:i]...)
		dst = append(dst, 0x00, 0xFF)
		s = s[i+1:]
	}
	return append(dst, 0x00, 0x01)
}

func indexZero[S string | []byte](s S) int {
	for i := 0; i < len(s); i++ {
		if s[i] == 0 {
			return i
		}
	}
	return -1
}

// AppendEscaped appends the order-preserving, prefix-free encoding of s (the string encoding of
// keys: 0x00 written as 0x00 0xFF, then the terminator 0x00 0x01). The store uses it for
// partition names inside its keys.
func AppendEscaped(dst []byte, s string) []byte { return appendEscaped(dst, s) }

// Value encoding (EncodeValue)
//
//	uvarint   number of columns n
//	bitmap    ceil(n/8) bytes, bit i%8 of byte i/8 set when column i is null
//	values    for each non-null column, in table order:
//	  BOOLEAN, TINYINT              1 byte
//	  SMALLINT, INT, BIGINT, DATE,
//	  TIME, TIMESTAMP(_LTZ)         zigzag varint
//	  FLOAT, DOUBLE                 4 or 8 bytes little-endian IEEE-754 bits
//	  DECIMAL                       zigzag varint of the high 64 bits h, then uvarint of the low
//	                                64 bits (their complement when h < 0), so small values of
//	                                either sign take 2-10 bytes
//	  strings, bytes                uvarint length, then the bytes
//
// A value with fewer columns than the table decodes with the missing trailing columns null.

// EncodeValue returns the value encoding of a full row (see AppendValue).
func EncodeValue(tbl *catalog.Table, row merge.Row) []byte {
	return AppendValue(nil, tbl, row)
}

// AppendValue appends the compact encoding of row (every table column, nil = null) to dst and
// returns the extended slice. Values must be of their columns' Go types; otherwise it panics.
func AppendValue(dst []byte, tbl *catalog.Table, row merge.Row) []byte {
	n := len(tbl.Columns)
	dst = binary.AppendUvarint(dst, uint64(n))
	bm := len(dst)
	for i := 0; i < (n+7)/8; i++ {
		dst = append(dst, 0)
	}
	for c := 0; c < n; c++ {
		v := row[c]
		if v == nil {
			dst[bm+c/8] |= 1 << (c % 8)
			continue
		}
		switch x := v.(type) {
		case bool:
			if x {
				dst = append(dst, 1)
			} else {
				dst = append(dst, 0)
			}
		case int8:
			dst = append(dst, uint8(x))
		case int16:
			dst = binary.AppendVarint(dst, int64(x))
		case int32:
			dst = binary.AppendVarint(dst, int64(x))
		case int64:
			dst = binary.AppendVarint(dst, x)
		case arrow.Date32:
			dst = binary.AppendVarint(dst, int64(x))
		case arrow.Time32:
			dst = binary.AppendVarint(dst, int64(x))
		case arrow.Timestamp:
			dst = binary.AppendVarint(dst, int64(x))
		case float32:
			dst = binary.LittleEndian.AppendUint32(dst, math.Float32bits(x))
		case float64:
			dst = binary.LittleEndian.AppendUint64(dst, math.Float64bits(x))
		case decimal128.Num:
			hi, lo := x.HighBits(), x.LowBits()
			dst = binary.AppendVarint(dst, hi)
			if hi < 0 {
				lo = ^lo
			}
			dst = binary.AppendUvarint(dst, lo)
		case string:
			dst = binary.AppendUvarint(dst, uint64(len(x)))
			dst = append(dst, x...)
		case []byte:
			dst = binary.AppendUvarint(dst, uint64(len(x)))
			dst = append(dst, x...)
		default:
			mismatch(tbl.Columns[c].Type, v)
		}
	}
	return dst
}

var errCorrupt = errors.New("corrupt value encoding")

// DecodeValue decodes a value written by EncodeValue for tbl into a new row. String and []byte
// values are copied: b may be reused after the call. A malformed b is an error.
func DecodeValue(tbl *catalog.Table, b []byte) (merge.Row, error) {
	r := make(merge.Row, len(tbl.Columns))
	if err := decodeValueInto(tbl, b, r, nil); err != nil {
		return nil, err
	}
	return r, nil
}

// ValueDecoder decodes values like DecodeValue but takes the memory of rows and of their string
// and byte values from arenas it allocates in chunks that grow with use (up to 64 KiB), for
// reads of many rows. Rows and values it returns stay valid for as long as they are referenced
// (the arenas are garbage collected); the decoder itself is not safe for concurrent use.
type ValueDecoder struct {
	Table *catalog.Table
	bytes []byte
	slots []any
	chunk int // size of the next byte chunk
}

const arenaChunk = 64 << 10

// Decode decodes b into a new row; b may be reused after the call.
func (d *ValueDecoder) Decode(b []byte) (merge.Row, error) {
	n := len(d.Table.Columns)
	if len(d.slots) < n {
		d.chunk = min(max(2*d.chunk, 1<<10), arenaChunk)
		d.slots = make([]any, max(n, d.chunk/16))
	}
	r := merge.Row(d.slots[:n:n])
	d.slots = d.slots[n:]
	if err := decodeValueInto(d.Table, b, r, d); err != nil {
		return nil, err
	}
	return r, nil
}

// alloc returns n bytes of arena memory (nil arena: a fresh slice).
func (d *ValueDecoder) alloc(n int) []byte {
	if d == nil || n > arenaChunk/4 {
		return make([]byte, n)
	}
	if len(d.bytes) < n {
		d.bytes = make([]byte, max(d.chunk, n))
	}
	s := d.bytes[:n:n]
	d.bytes = d.bytes[n:]
	return s
}

func decodeValueInto(tbl *catalog.Table, b []byte, r merge.Row, d *ValueDecoder) error {
	stored, k := binary.Uvarint(b)
	if k <= 0 || stored > 1<<20 {
		return errCorrupt
	}
	b = b[k:]
	n := int(stored)
	nb := (n + 7) / 8
	if len(b) < nb {
		return errCorrupt
	}
	bm := b[:nb]
	b = b[nb:]
	for c := range r {
		r[c] = nil
		if c >= n || bm[c/8]&(1<<(c%8)) != 0 {
			continue
		}
		t := tbl.Columns[c].Type
		var err error
		r[c], b, err = decodeOne(t, b, d)
		if err != nil {
			return fmt.Errorf("column %q: %w", tbl.Columns[c].Name, err)
		}
	}
	return nil
}

func decodeOne(t catalog.Type, b []byte, d *ValueDecoder) (any, []byte, error) {
	varint := func() (int64, bool) {
		v, k := binary.Varint(b)
		if k <= 0 {
			return 0, false
		}
		b = b[k:]
		return v, true
	}
	switch t.Kind {
	case catalog.Boolean, catalog.TinyInt:
		if len(b) < 1 {
			return nil, nil, errCorrupt
		}
		if t.Kind == catalog.Boolean {
			return b[0] != 0, b[1:], nil
		}
		return int8(b[0]), b[1:], nil
	case catalog.SmallInt, catalog.Int, catalog.BigInt, catalog.Date, catalog.Time, catalog.Timestamp, catalog.TimestampLTZ:
		v, ok := varint()
		if !ok {
			return nil, nil, errCorrupt
		}
		switch t.Kind {
		case catalog.SmallInt:
			return int16(v), b, nil
		case catalog.Int:
			return int32(v), b, nil
		case catalog.BigInt:
			return v, b, nil
		case catalog.Date:
			return arrow.Date32(v), b, nil
		case catalog.Time:
			return arrow.Time32(v), b, nil
		default:
			return arrow.Timestamp(v), b, nil
		}
	case catalog.Float:
		if len(b) < 4 {
			return nil, nil, errCorrupt
		}
		return math.Float32frombits(binary.LittleEndian.Uint32(b)), b[4:], nil
	case catalog.Double:
		if len(b) < 8 {
			return nil, nil, errCorrupt
		}
		return math.Float64frombits(binary.LittleEndian.Uint64(b)), b[8:], nil
	case catalog.Decimal:
		hi, ok := varint()
		if !ok {
			return nil, nil, errCorrupt
		}
		lo, k := binary.Uvarint(b)
		if k <= 0 {
			return nil, nil, errCorrupt
		}
		if hi < 0 {
			lo = ^lo
		}
		return decimal128.New(hi, lo), b[k:], nil
	case catalog.Char, catalog.VarChar, catalog.Binary, catalog.VarBinary:
		l, k := binary.Uvarint(b)
		if k <= 0 || uint64(len(b)-k) < l {
			return nil, nil, errCorrupt
		}
		raw := b[k : k+int(l)]
		b = b[k+int(l):]
		if t.Kind == catalog.Char || t.Kind == catalog.VarChar {
			if d == nil {
				return string(raw), b, nil
			}
			if l == 0 {
				return "", b, nil
			}
			m := d.alloc(int(l))
			copy(m, raw)
			return unsafeString(m), b, nil
		}
		m := d.alloc(int(l))
		copy(m, raw)
		return m, b, nil
	}
	return nil, nil, fmt.Errorf("unsupported column type %s", t)
}

// unsafeString views arena bytes as a string. Arena bytes are written once, before the view is
// made, and never again.
func unsafeString(b []byte) string { return unsafe.String(&b[0], len(b)) }

// mismatch panics for a value whose Go type does not fit its column: rows reaching the encoders
// are validated (Decode, Batch.Validate), so this is a programming error.
func mismatch(t catalog.Type, v any) {
	panic(fmt.Sprintf("rowcodec: value of Go type %T does not fit column type %s", v, t))
}
