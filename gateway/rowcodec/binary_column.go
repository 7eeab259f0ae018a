package rowcodec

import (
	"encoding/binary"
	"errors"
	"math"
	"slices"
	"sync"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// BinaryColumn accumulates the values of one Arrow string or binary column (catalog types CHAR,
// VARCHAR, BINARY, VARBINARY) as the three buffers of its array: the validity bitmap, the int32
// offsets and the value bytes. It does what array.BinaryBuilder does for one column of a record
// batch without a builder's per-value calls (capacity checks, buffer builders, bitmap resizing):
// the DoGet changelog path appends millions of values per second through it
// (ArrowAppender.UseBinaryColumn). The buffers of an array NewArray returned come back to the
// column when the array's last reference is released (Arrow's reference counts), and the next
// batches reuse them: no allocation and zeroing of fresh buffers per record batch once a stream
// is under way. Not safe for concurrent use (the arrays it returns may be released anywhere).
type BinaryColumn struct {
	typ     arrow.DataType
	offsets []byte // little-endian int32: value i starts at offset i; Len()+1 of them
	data    []byte
	valid   []byte // bit i (LSB first) set: value i is not null; kept only when nulls > 0
	nulls   int
	spare   spareBuffers
}

// errColumnTooLarge is the error of a value that would take a column's data past the int32
// offsets of an Arrow string or binary array.
var errColumnTooLarge = errors.New("column data of one record batch would exceed 2 GiB")

// NewBinaryColumn returns an empty column of typ, which must be arrow.BinaryTypes.String or
// arrow.BinaryTypes.Binary (the Arrow types of catalog.Type.ArrowType for CHAR/VARCHAR and
// BINARY/VARBINARY).
func NewBinaryColumn(typ arrow.DataType) *BinaryColumn {
	return &BinaryColumn{typ: typ, offsets: make([]byte, 4)}
}

// Type returns the column's Arrow type.
func (c *BinaryColumn) Type() arrow.DataType { return c.typ }

// Len returns the number of values (nulls included) appended since the last NewArray.
func (c *BinaryColumn) Len() int { return len(c.offsets)/4 - 1 }

// DataLen returns the number of value bytes appended since the last NewArray.
func (c *BinaryColumn) DataLen() int { return len(c.data) }

// Value returns the bytes of value i (0 <= i < Len(); empty for a null) appended since the last
// NewArray, valid until the next call that changes the column.
func (c *BinaryColumn) Value(i int) []byte {
	return c.data[binary.LittleEndian.Uint32(c.offsets[4*i:]):binary.LittleEndian.Uint32(c.offsets[4*i+4:])]
}

// Append appends one non-null value (copied). A value that would take the column's data past
// math.MaxInt32 bytes is an error and appends nothing.
func (c *BinaryColumn) Append(v []byte) error {
	d := len(c.data)
	if len(v) > math.MaxInt32-d {
		return errColumnTooLarge
	}
	if len(v) > cap(c.data)-d {
		c.data = slices.Grow(c.data, len(v))
	}
	// Re-slicing a field to itself stores no pointer: no GC write barrier per value.
	c.data = c.data[:d+len(v)]
	copy(c.data[d:], v)
	c.push(true)
	return nil
}

// AppendString is Append of a string value.
func (c *BinaryColumn) AppendString(v string) error {
	d := len(c.data)
	if len(v) > math.MaxInt32-d {
		return errColumnTooLarge
	}
	if len(v) > cap(c.data)-d {
		c.data = slices.Grow(c.data, len(v))
	}
	c.data = c.data[:d+len(v)]
	copy(c.data[d:], v)
	c.push(true)
	return nil
}

// AppendNull appends a null. The validity bitmap is kept from a column's first null on (the
// values before it are all valid); a batch without nulls has none, as in Arrow.
func (c *BinaryColumn) AppendNull() {
	if c.nulls == 0 {
		i := c.Len()
		c.valid = c.valid[:0]
		for range i / 8 {
			c.valid = append(c.valid, 0xFF)
		}
		if i%8 != 0 {
			c.valid = append(c.valid, byte(1)<<(i%8)-1)
		}
	}
	c.nulls++
	c.push(false)
}

// push records the end offset of the value just appended and, once the column has a null, its
// validity bit.
func (c *BinaryColumn) push(valid bool) {
	o := len(c.offsets)
	if cap(c.offsets)-o < 4 {
		c.offsets = slices.Grow(c.offsets, 4)
	}
	c.offsets = c.offsets[:o+4]
	binary.LittleEndian.PutUint32(c.offsets[o:], uint32(len(c.data)))
	if c.nulls == 0 {
		return
	}
	i := o/4 - 1
	if i%8 == 0 {
		c.valid = append(c.valid, 0)
	}
	if valid {
		c.valid[i/8] |= 1 << (i % 8)
	}
}

// NewArray returns the values appended so far as an array of the column's type (the caller
// releases it; no validity buffer when there is no null) and starts the column over with room
// for as many values and bytes, in buffers of arrays already released when there are (the
// array's buffers are its own until it is released).
func (c *BinaryColumn) NewArray() arrow.Array {
	var valid *memory.Buffer
	if c.nulls > 0 {
		valid = memory.NewBufferWithAllocator(c.valid, &c.spare)
	}
	n, nulls := c.Len(), c.nulls
	bufs := []*memory.Buffer{valid, memory.NewBufferWithAllocator(c.offsets, &c.spare), memory.NewBufferWithAllocator(c.data, &c.spare)}
	offsets, data := cap(c.offsets), cap(c.data)
	if nulls > 0 {
		c.valid = c.spare.get(cap(c.valid)) // the array has the bitmap
	}
	c.offsets = append(c.spare.get(offsets), 0, 0, 0, 0)
	c.data, c.valid, c.nulls = c.spare.get(data), c.valid[:0], 0
	d := array.NewData(c.typ, n, bufs, nil, nulls, 0)
	a := array.MakeFromData(d)
	d.Release()
	for _, b := range bufs {
		if b != nil {
			b.Release() // the array holds them
		}
	}
	return a
}

// spareBuffers is the memory.Allocator of a BinaryColumn's buffers: Free keeps a released
// buffer (up to maxSpares) for get to hand out again. Safe for concurrent use (arrays are
// released on any goroutine).
type spareBuffers struct {
	mu     sync.Mutex
	spares [][]byte
}

// maxSpares bounds the buffers a column keeps: three per batch in flight, two batches.
const maxSpares = 6

// get returns an empty buffer of at least capacity n: the largest spare when it is big enough
// (its old bytes are not cleared: a column only exposes bytes it appended), else a new one.
func (p *spareBuffers) get(n int) []byte {
	p.mu.Lock()
	best := -1
	for i, b := range p.spares {
		if cap(b) >= n && (best < 0 || cap(b) < cap(p.spares[best])) {
			best = i
		}
	}
	if best >= 0 {
		b := p.spares[best]
		last := len(p.spares) - 1
		p.spares[best], p.spares[last] = p.spares[last], nil
		p.spares = p.spares[:last]
		p.mu.Unlock()
		return b[:0]
	}
	p.mu.Unlock()
	return make([]byte, 0, n)
}

// Allocate returns n zeroed bytes (memory.Allocator; the column itself uses get).
func (p *spareBuffers) Allocate(n int) []byte { return make([]byte, n) }

// Reallocate returns b resized to n bytes (memory.Allocator).
func (p *spareBuffers) Reallocate(n int, b []byte) []byte {
	if n <= cap(b) {
		return b[:n]
	}
	nb := make([]byte, n)
	copy(nb, b)
	return nb
}

// Free keeps b for get unless maxSpares buffers are kept already (memory.Allocator).
func (p *spareBuffers) Free(b []byte) {
	if cap(b) == 0 {
		return
	}
	p.mu.Lock()
	if len(p.spares) < maxSpares {
		p.spares = append(p.spares, b[:0])
	}
	p.mu.Unlock()
}
