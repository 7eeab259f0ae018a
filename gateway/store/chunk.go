package store

import (
	"bytes"
	"encoding/binary"
	"errors"

	"github.com/cockroachdb/pebble/v2"
	"github.com/setats/setats/catalog"
	"github.com/setats/setats/gateway/rowcodec"
	"github.com/setats/setats/merge"
)

// Changelog chunks
//
// The changelog rows one write appends to one bucket are stored in chunks of consecutive
// offsets, one Pebble key per chunk (at most maxChunkRows rows and about maxChunkBytes bytes):
// key "c" P B first-offset, value
//
//	8 bytes   commit ms, big-endian (every row of a chunk has the same commit time)
//	4 bytes   number of rows n, big-endian
//	n times   1 byte RowKind, uvarint length, rowcodec.EncodeValue of the full row
//
// One key per chunk instead of one per row makes writes cheaper (fewer memtable inserts and
// compaction keys) and reads sequential; offsets stay dense per row.
const (
	maxChunkRows  = 256
	maxChunkBytes = 32 << 10
	chunkHeader   = 12
)

var errMalformedChunk = errors.New("store: malformed changelog chunk")

// chunkWriter appends changelog rows of one bucket to a Pebble batch as chunks.
type chunkWriter struct {
	tbl      *catalog.Table
	prefix   []byte // P B
	commitMs int64
	batch    *pebble.Batch
	keep     bool    // also keep a copy of every chunk in kept (for the tail, tail.go)
	kept     []chunk // the chunks written, when keep

	key   []byte
	buf   []byte
	first int64
	n     uint32
}

// add appends the changelog row at offset (offsets must be consecutive).
func (w *chunkWriter) add(offset int64, kind merge.RowKind, r merge.Row) error {
	if w.n == 0 {
		w.first = offset
		w.buf = binary.BigEndian.AppendUint64(w.buf[:0], uint64(w.commitMs))
		w.buf = append(w.buf, 0, 0, 0, 0)
	}
	w.buf = append(w.buf, byte(kind))
	// Reserve one length byte; move the value when its length needs more.
	at := len(w.buf)
	w.buf = append(w.buf, 0)
	w.buf = rowcodec.AppendValue(w.buf, w.tbl, r)
	l := len(w.buf) - at - 1
	if l < 0x80 {
		w.buf[at] = byte(l)
	} else {
		var lb [binary.MaxVarintLen64]byte
		k := binary.PutUvarint(lb[:], uint64(l))
		w.buf = append(w.buf, lb[:k-1]...)
		copy(w.buf[at+k:], w.buf[at+1:at+1+l])
		copy(w.buf[at:], lb[:k])
	}
	w.n++
	if w.n >= maxChunkRows || len(w.buf) >= maxChunkBytes {
		return w.flush()
	}
	return nil
}

// flush writes the pending chunk, if any.
func (w *chunkWriter) flush() error {
	if w.n == 0 {
		return nil
	}
	binary.BigEndian.PutUint32(w.buf[8:12], w.n)
	w.key = appendChangelogKey(w.key[:0], w.prefix, w.first)
	if w.keep {
		w.kept = append(w.kept, chunk{first: w.first, commitMs: w.commitMs, n: int64(w.n), rows: bytes.Clone(w.buf[chunkHeader:])})
	}
	w.n = 0
	return w.batch.Set(w.key, w.buf, nil)
}

// chunk is a parsed chunk value.
type chunk struct {
	first    int64
	commitMs int64
	n        int64
	rows     []byte // the n entries
}

func parseChunk(key, value []byte) (chunk, error) {
	if len(value) < chunkHeader || len(key) < 8 {
		return chunk{}, errMalformedChunk
	}
	return chunk{
		first:    changelogKeyOffset(key),
		commitMs: int64(binary.BigEndian.Uint64(value)),
		n:        int64(binary.BigEndian.Uint32(value[8:12])),
		rows:     value[chunkHeader:],
	}, nil
}

// end returns the offset after the chunk's last row.
func (c chunk) end() int64 { return c.first + c.n }

// next returns the kind and encoded value of the first remaining entry of c.rows and advances
// past it.
func (c *chunk) next() (merge.RowKind, []byte, error) {
	if len(c.rows) < 2 || c.rows[0] > byte(merge.Delete) {
		return 0, nil, errMalformedChunk
	}
	kind := merge.RowKind(c.rows[0])
	l, k := binary.Uvarint(c.rows[1:])
	if k <= 0 || uint64(len(c.rows)-1-k) < l {
		return 0, nil, errMalformedChunk
	}
	v := c.rows[1+k : 1+k+int(l)]
	c.rows = c.rows[1+k+int(l):]
	return kind, v, nil
}
