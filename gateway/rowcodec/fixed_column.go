package rowcodec

import (
	"encoding/binary"
	"fmt"
	"slices"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// FixedColumn accumulates the values of one not-null fixed-width Arrow column of 1, 2, 4 or 8
// bytes per value (INT8 ... INT64, DATE32, TIME32, TIMESTAMP) as the raw little-endian data
// buffer of its array, without a builder's per-value calls, and reuses the buffers of released
// arrays like BinaryColumn: the DoGet changelog's reserved columns `_row_kind`, `_offset` and
// `_commit_timestamp` (SPEC section 5), one value per row, millions per second. The arrays have
// no validity buffer (no nulls). Not safe for concurrent use (its arrays may be released
// anywhere).
type FixedColumn struct {
	typ   arrow.FixedWidthDataType
	width int // bytes per value
	data  []byte
	spare spareBuffers
}

// NewFixedColumn returns an empty column of typ, a fixed-width type of 8, 16, 32 or 64 bits
// whose values are integers (arrow.PrimitiveTypes.Int8 ... Int64, Date32, Time32, Timestamp);
// another type (BOOLEAN's 1 bit, DECIMAL's 128) is an error.
func NewFixedColumn(typ arrow.DataType) (*FixedColumn, error) {
	fw, ok := typ.(arrow.FixedWidthDataType)
	if !ok {
		return nil, fmt.Errorf("rowcodec: fixed column of type %s: not a fixed-width type", typ)
	}
	switch fw.BitWidth() {
	case 8, 16, 32, 64:
	default:
		return nil, fmt.Errorf("rowcodec: fixed column of type %s: %d bits per value, not 8, 16, 32 or 64", typ, fw.BitWidth())
	}
	return &FixedColumn{typ: fw, width: fw.BitWidth() / 8}, nil
}

// Len returns the number of values appended since the last NewArray.
func (c *FixedColumn) Len() int { return len(c.data) / c.width }

// Append appends v, truncated to the column's width (two's complement, as a Go conversion
// int64 -> int8/int16/int32 does).
func (c *FixedColumn) Append(v int64) {
	n := len(c.data)
	if cap(c.data)-n < c.width {
		c.data = slices.Grow(c.data, c.width)
	}
	// Re-slicing a field to itself stores no pointer: no GC write barrier per value.
	c.data = c.data[:n+c.width]
	switch c.width {
	case 1:
		c.data[n] = byte(v)
	case 2:
		binary.LittleEndian.PutUint16(c.data[n:], uint16(v))
	case 4:
		binary.LittleEndian.PutUint32(c.data[n:], uint32(v))
	default:
		binary.LittleEndian.PutUint64(c.data[n:], uint64(v))
	}
}

// NewArray returns the values appended so far as an array of the column's type (the caller
// releases it) and starts the column over with room for as many values, in a buffer of an
// array already released when there is one (the array's buffer is its own until it is
// released).
func (c *FixedColumn) NewArray() arrow.Array {
	n := c.Len()
	buf := memory.NewBufferWithAllocator(c.data, &c.spare)
	c.data = c.spare.get(cap(c.data))
	d := array.NewData(c.typ, n, []*memory.Buffer{nil, buf}, nil, 0, 0)
	a := array.MakeFromData(d)
	d.Release()
	buf.Release() // the array holds it
	return a
}
