package ipcguard

import (
	"encoding/binary"
	"fmt"
)

// table is a bounds-checked view of one flatbuffer table in buf: every read checks that it lies
// inside buf (and, for inline fields, inside the table as its vtable declares it), so a forged
// buffer yields an error, never an out-of-range read. The generated accessors of flatbuffers (and
// of arrow-go's internal flatbuf package) check nothing.
type table struct {
	buf    []byte
	pos    uint64 // start of the table (its soffset to the vtable)
	vt     uint64 // start of the vtable
	vtLen  uint64 // vtable bytes, 4 + 2 per field slot
	tblLen uint64 // table bytes, from pos
}

func le16(b []byte, at uint64) uint64 { return uint64(binary.LittleEndian.Uint16(b[at:])) }
func le32(b []byte, at uint64) uint64 { return uint64(binary.LittleEndian.Uint32(b[at:])) }
func le64(b []byte, at uint64) int64  { return int64(binary.LittleEndian.Uint64(b[at:])) }

// within reports whether [at, at+n) lies inside a buffer of size size (no overflow: both are below
// 2^40 in practice, and n is checked against size first).
func within(at, n, size uint64) bool { return n <= size && at <= size-n }

// rootTable returns the root table of buf (its first 4 bytes are the offset of the root table).
func rootTable(buf []byte) (table, error) {
	if len(buf) < 4 {
		return table{}, fmt.Errorf("flatbuffer of %d bytes is too short for a root table offset", len(buf))
	}
	return tableAt(buf, le32(buf, 0))
}

// tableAt checks the table at pos: its soffset, its vtable (size even, >= 4, inside buf) and its
// inline size (>= 4, inside buf).
func tableAt(buf []byte, pos uint64) (table, error) {
	size := uint64(len(buf))
	if !within(pos, 4, size) {
		return table{}, fmt.Errorf("table at byte %d lies outside the %d-byte flatbuffer", pos, size)
	}
	vt := int64(pos) - int64(int32(binary.LittleEndian.Uint32(buf[pos:])))
	if vt < 0 || !within(uint64(vt), 4, size) {
		return table{}, fmt.Errorf("vtable of the table at byte %d lies outside the %d-byte flatbuffer", pos, size)
	}
	t := table{buf: buf, pos: pos, vt: uint64(vt)}
	t.vtLen = le16(buf, t.vt)
	t.tblLen = le16(buf, t.vt+2)
	if t.vtLen < 4 || t.vtLen%2 != 0 || !within(t.vt, t.vtLen, size) {
		return table{}, fmt.Errorf("vtable of %d bytes at byte %d is malformed or outside the %d-byte flatbuffer", t.vtLen, t.vt, size)
	}
	if t.tblLen < 4 || !within(pos, t.tblLen, size) {
		return table{}, fmt.Errorf("table of %d bytes at byte %d lies outside the %d-byte flatbuffer", t.tblLen, pos, size)
	}
	return t, nil
}

// field returns the position of the inline value of field slot (0-based), which takes n bytes, or
// ok false when the field is absent (its default applies).
func (t table) field(slot int, n uint64) (at uint64, ok bool, err error) {
	vo := 4 + 2*uint64(slot)
	if vo+2 > t.vtLen {
		return 0, false, nil
	}
	fo := le16(t.buf, t.vt+vo)
	if fo == 0 {
		return 0, false, nil
	}
	if fo < 4 || !within(fo, n, t.tblLen) {
		return 0, false, fmt.Errorf("field %d (%d bytes at table offset %d) lies outside its %d-byte table", slot, n, fo, t.tblLen)
	}
	return t.pos + fo, true, nil
}

func (t table) uint8(slot int, def uint8) (uint8, error) {
	at, ok, err := t.field(slot, 1)
	if !ok || err != nil {
		return def, err
	}
	return t.buf[at], nil
}

func (t table) int16(slot int, def int16) (int16, error) {
	at, ok, err := t.field(slot, 2)
	if !ok || err != nil {
		return def, err
	}
	return int16(le16(t.buf, at)), nil
}

func (t table) int32(slot int, def int32) (int32, error) {
	at, ok, err := t.field(slot, 4)
	if !ok || err != nil {
		return def, err
	}
	return int32(le32(t.buf, at)), nil
}

func (t table) int64(slot int, def int64) (int64, error) {
	at, ok, err := t.field(slot, 8)
	if !ok || err != nil {
		return def, err
	}
	return le64(t.buf, at), nil
}

// ref follows the uoffset stored in field slot and returns its target.
func (t table) ref(slot int) (target uint64, ok bool, err error) {
	at, ok, err := t.field(slot, 4)
	if !ok || err != nil {
		return 0, false, err
	}
	target = at + le32(t.buf, at)
	if !within(target, 4, uint64(len(t.buf))) {
		return 0, false, fmt.Errorf("field %d points to byte %d, outside the %d-byte flatbuffer", slot, target, len(t.buf))
	}
	return target, true, nil
}

// sub returns the table field slot points to.
func (t table) sub(slot int) (table, bool, error) {
	target, ok, err := t.ref(slot)
	if !ok || err != nil {
		return table{}, false, err
	}
	s, err := tableAt(t.buf, target)
	return s, err == nil, err
}

// vector returns the start of the elements and the length of the vector field slot points to,
// checked to fit in the buffer with elements of elem bytes.
func (t table) vector(slot int, elem uint64) (start, n uint64, err error) {
	target, ok, err := t.ref(slot)
	if !ok || err != nil {
		return 0, 0, err
	}
	n = le32(t.buf, target)
	start = target + 4
	if !within(start, n*elem, uint64(len(t.buf))) {
		return 0, 0, fmt.Errorf("field %d: vector of %d elements of %d bytes at byte %d does not fit in the %d-byte flatbuffer",
			slot, n, elem, start, len(t.buf))
	}
	return start, n, nil
}

// vectorLen returns the element count the vector of field slot claims, before vector checks that
// the elements fit (so that a count limit can be reported as such).
func (t table) vectorLen(slot int) (uint64, error) {
	target, ok, err := t.ref(slot)
	if !ok || err != nil {
		return 0, err
	}
	return le32(t.buf, target), nil
}

// tableElem returns element i of a vector of tables starting at start.
func (t table) tableElem(start, i uint64) (table, error) {
	at := start + 4*i
	return tableAt(t.buf, at+le32(t.buf, at))
}

// bytes returns the string field slot points to (nil when absent).
func (t table) bytes(slot int) ([]byte, error) {
	start, n, err := t.vector(slot, 1)
	if err != nil || n == 0 {
		return nil, err
	}
	return t.buf[start : start+n], nil
}
