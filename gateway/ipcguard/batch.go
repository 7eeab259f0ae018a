package ipcguard

import (
	"encoding/binary"
	"fmt"
)

// RecordBatch and BodyCompression table slots (Message.fbs).
const (
	batchLength      = 0
	batchNodes       = 1
	batchBuffers     = 2
	batchCompression = 3
	batchVariadic    = 4

	compressionCodec  = 0
	compressionMethod = 1
)

// buf is one buffer of a record batch: where it lies in the body and its size once decompressed.
type buf struct {
	off, length uint64 // in the body
	size        uint64 // decoded bytes (length, or the uncompressed size a compressed buffer claims)
	raw         bool   // the decoded bytes are body[off+skip : off+length] as they are
	skip        uint64 // 8 for a buffer of a compressed body stored uncompressed
	data        []byte // the decompressed bytes of a compressed offsets buffer
}

// checkBatch verifies a RecordBatch against the schema's fields: exactly one node per field and
// the buffers of each field's layout, every buffer inside the body, node lengths equal to the
// batch length with null counts within it, each buffer large enough for its node's length, and
// string offsets (of an uncompressed body) non-decreasing within their data buffer. A compressed
// body must claim uncompressed sizes that add up to at most MaxBodyBytes.
func (g *Guard) checkBatch(rb table, body []byte) error {
	l := g.limits
	if int64(len(body)) > l.MaxBodyBytes {
		return fmt.Errorf("body of %d bytes > limit %d", len(body), l.MaxBodyBytes)
	}
	rows, err := rb.int64(batchLength, 0)
	if err != nil {
		return fmt.Errorf("malformed flatbuffer: %v", err)
	}
	maxRows := 8 * l.MaxBodyBytes // a value takes at least one bit of some buffer
	if rows < 0 || rows > maxRows {
		return fmt.Errorf("length %d rows is negative or > limit %d", rows, maxRows)
	}
	if _, _, err := rb.vector(batchVariadic, 8); err != nil {
		return fmt.Errorf("variadic buffer counts: malformed flatbuffer: %v", err)
	}
	nstart, nn, err := rb.vector(batchNodes, 16)
	if err != nil {
		return fmt.Errorf("nodes: malformed flatbuffer: %v", err)
	}
	if nn != uint64(len(g.fields)) {
		return fmt.Errorf("%d field nodes for a schema of %d fields", nn, len(g.fields))
	}
	wantBufs := 0
	for _, f := range g.fields {
		wantBufs += f.buffers()
	}
	bstart, nb, err := rb.vector(batchBuffers, 16)
	if err != nil {
		return fmt.Errorf("buffers: malformed flatbuffer: %v", err)
	}
	if nb != uint64(wantBufs) {
		return fmt.Errorf("%d buffers for a schema whose fields have %d", nb, wantBufs)
	}
	compressed, codec := false, uint8(0)
	if ct, ok, err := rb.sub(batchCompression); err != nil {
		return fmt.Errorf("compression: malformed flatbuffer: %v", err)
	} else if ok {
		codec, err = ct.uint8(compressionCodec, 0)
		if err != nil {
			return fmt.Errorf("compression: malformed flatbuffer: %v", err)
		}
		method, err := ct.uint8(compressionMethod, 0)
		if err != nil {
			return fmt.Errorf("compression: malformed flatbuffer: %v", err)
		}
		if codec > 1 || method != 0 { // LZ4_FRAME or ZSTD, per BUFFER
			return fmt.Errorf("compression codec %d method %d not accepted (want LZ4_FRAME or ZSTD per buffer)", codec, method)
		}
		compressed = true
	}
	hb := rb.buf
	bodyLen := uint64(len(body))
	bufs := make([]buf, nb)
	var decoded uint64
	for i := range bufs {
		at := bstart + 16*uint64(i)
		off, length := le64(hb, at), le64(hb, at+8)
		if off < 0 || length < 0 || !within(uint64(off), uint64(length), bodyLen) {
			return fmt.Errorf("buffer %d (offset %d, length %d) lies outside the %d-byte body", i, off, length, bodyLen)
		}
		b := buf{off: uint64(off), length: uint64(length), size: uint64(length), raw: true}
		if compressed && length > 0 {
			if length < 8 {
				return fmt.Errorf("buffer %d of a compressed body has %d bytes, fewer than its 8-byte size prefix", i, length)
			}
			claim := int64(binary.LittleEndian.Uint64(body[off:]))
			switch {
			case claim == -1:
				b.skip, b.size = 8, uint64(length-8)
			case claim < 0 || claim > l.MaxBodyBytes:
				return fmt.Errorf("buffer %d claims an uncompressed size of %d bytes (limit %d)", i, claim, l.MaxBodyBytes)
			default:
				b.size, b.raw = uint64(claim), false
			}
		}
		decoded += b.size
		if decoded > uint64(l.MaxBodyBytes) {
			return fmt.Errorf("buffers decode to more than %d bytes", l.MaxBodyBytes)
		}
		bufs[i] = b
	}
	// Compressed buffers are decompressed (bounded: their claims add up to at most MaxBodyBytes):
	// offsets buffers are kept for the offsets check, the others only counted.
	if compressed {
		bi := 0
		for _, f := range g.fields {
			for j := 0; j < f.buffers(); j++ {
				b := &bufs[bi+j]
				if b.raw {
					continue
				}
				keep := j == 1 && (f.layout == layoutOffsets32 || f.layout == layoutOffsets64)
				b.data, err = checkDecompress(codec, body[b.off+8:b.off+b.length], b.size, keep, l.MaxBodyBytes)
				if err != nil {
					return fmt.Errorf("%s: buffer %d %v", f.name, bi+j, err)
				}
			}
			bi += f.buffers()
		}
	}
	bi := 0
	for i, f := range g.fields {
		at := nstart + 16*uint64(i)
		n, nulls := le64(hb, at), le64(hb, at+8)
		if n != rows {
			return fmt.Errorf("%s: node length %d differs from the batch length %d", f.name, n, rows)
		}
		if nulls < 0 || nulls > n {
			return fmt.Errorf("%s: null count %d outside [0, %d]", f.name, nulls, n)
		}
		fb := bufs[bi : bi+f.buffers()]
		bi += f.buffers()
		if err := checkNode(f, uint64(n), nulls > 0, fb, body); err != nil {
			return fmt.Errorf("%s (buffers %d..%d): %v", f.name, bi-f.buffers(), bi-1, err)
		}
	}
	return nil
}

// checkNode checks the buffers of one field node of n values against its layout.
func checkNode(f field, n uint64, hasNulls bool, b []buf, body []byte) error {
	if n == 0 {
		return nil // the decoder reads no buffer of an empty node
	}
	bits := (n + 7) / 8
	if hasNulls && b[0].size < bits {
		return fmt.Errorf("validity bitmap of %d bytes for %d values (want >= %d)", b[0].size, n, bits)
	}
	switch f.layout {
	case layoutBits:
		if b[1].size < bits {
			return fmt.Errorf("values of %d bytes for %d bit-packed values (want >= %d)", b[1].size, n, bits)
		}
	case layoutFixed:
		if b[1].size/f.width < n {
			return fmt.Errorf("values of %d bytes for %d values of %d bytes", b[1].size, n, f.width)
		}
	case layoutOffsets32, layoutOffsets64:
		w := uint64(4)
		if f.layout == layoutOffsets64 {
			w = 8
		}
		if b[1].size/w < n+1 {
			return fmt.Errorf("offsets of %d bytes for %d values (want >= %d)", b[1].size, n, (n+1)*w)
		}
		offs := b[1].data
		if b[1].raw {
			offs = body[b[1].off+b[1].skip : b[1].off+b[1].length]
		}
		data := b[2].size
		prev := int64(0)
		for i := uint64(0); i <= n; i++ {
			var o int64
			if w == 4 {
				o = int64(int32(binary.LittleEndian.Uint32(offs[i*4:])))
			} else {
				o = int64(binary.LittleEndian.Uint64(offs[i*8:]))
			}
			if o < prev || uint64(o) > data {
				return fmt.Errorf("offset %d of value %d is decreasing or beyond the %d-byte data buffer", o, i, data)
			}
			prev = o
		}
	}
	return nil
}
