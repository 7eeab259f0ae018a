package subscribe

import (
	"encoding/binary"
	"fmt"
	"strings"
)

// Op is the operation of a channel record (SPEC section 11). The numeric values are stored in
// the channel log: never renumber them.
type Op uint8

const (
	OpInsert    Op = 0
	OpUpdate    Op = 1
	OpDelete    Op = 2
	OpDDL       Op = 3
	OpBegin     Op = 4
	OpCommit    Op = 5
	OpHeartbeat Op = 6
)

var opNames = [...]string{"INSERT", "UPDATE", "DELETE", "DDL", "BEGIN", "COMMIT", "HEARTBEAT"}

// String returns the operation's name as the seed prints it: INSERT, UPDATE, DELETE, DDL, BEGIN,
// COMMIT or HEARTBEAT.
func (o Op) String() string {
	if int(o) < len(opNames) {
		return opNames[o]
	}
	return fmt.Sprintf("Op(%d)", uint8(o))
}

// ParseOp is the inverse of Op.String (case-insensitive).
func ParseOp(s string) (Op, bool) {
	for i, n := range opNames {
		if strings.EqualFold(n, s) {
			return Op(i), true
		}
	}
	return 0, false
}

// Field names and types one column of a record's images. Type is the record field type of the
// source's type mapping (gateway/README.md "Data subscription: types"), a Flink SQL type string
// such as BIGINT, STRING, DECIMAL(10,2) or TIMESTAMP(6).
type Field struct {
	Name string
	Type string
}

// Record is one entry of a channel (SPEC section 11).
//
// Values of Before and After are in Fields order; a nil slice means the record has no such image
// (INSERT has no before image, DELETE no after image), a nil element is SQL NULL. A value is the
// column's canonical text (see the type tables) except for BYTES, which holds the raw bytes. A DDL
// record has one field "ddl" STRING whose after value is the statement or change the source
// reported.
type Record struct {
	// ID is dense per channel, assigned by Channel.Append starting at 0.
	ID int64
	Op Op
	// Object is "db.table" (schema.table for PostgreSQL); "" for BEGIN, COMMIT and HEARTBEAT.
	Object string
	// Position is the source position of the record (PostgreSQL LSN, MariaDB GTID position).
	Position string
	// TimestampMs is the source timestamp in ms since the epoch (commit time of the transaction;
	// the gateway clock for HEARTBEAT).
	TimestampMs int64
	// TxID is the source's transaction id ("" for HEARTBEAT).
	TxID   string
	Fields []Field
	Before [][]byte
	After  [][]byte
}

// Checkpoint returns the record's checkpoint string (SPEC section 11).
func (r *Record) Checkpoint() string { return FormatCheckpoint(r.ID, r.Position, r.TimestampMs) }

// recordVersion is the first byte of an encoded record.
const recordVersion = 1

// maxRecordFields bounds the fields of a decoded record (hostile or corrupt input).
const maxRecordFields = 1 << 14

// AppendEncoded appends the binary encoding of r (without its ID, which is the key) to b.
//
// Layout: version byte 1, op byte, then uvarint-length-prefixed object, position, txid, a varint
// timestamp, uvarint field count and each field's name and type, a flags byte (bit 0 before
// image, bit 1 after image) and each present image as one uvarint per value (0 = NULL, else
// length+1) followed by the bytes.
func AppendEncoded(b []byte, r *Record) []byte {
	b = append(b, recordVersion, byte(r.Op))
	b = appendString(b, r.Object)
	b = appendString(b, r.Position)
	b = appendString(b, r.TxID)
	b = binary.AppendVarint(b, r.TimestampMs)
	b = binary.AppendUvarint(b, uint64(len(r.Fields)))
	for _, f := range r.Fields {
		b = appendString(b, f.Name)
		b = appendString(b, f.Type)
	}
	var flags byte
	if r.Before != nil {
		flags |= 1
	}
	if r.After != nil {
		flags |= 2
	}
	b = append(b, flags)
	for _, img := range [][][]byte{r.Before, r.After} {
		if img == nil {
			continue
		}
		for i := range r.Fields {
			var v []byte
			if i < len(img) {
				v = img[i]
			}
			if v == nil {
				b = append(b, 0)
				continue
			}
			b = binary.AppendUvarint(b, uint64(len(v))+1)
			b = append(b, v...)
		}
	}
	return b
}

func appendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

// DecodeRecord decodes what AppendEncoded wrote into a new Record with the given id. Every
// length is checked against the remaining input before anything is allocated; a malformed
// encoding is a *Error of kind InvalidArgument... (Corrupt).
func DecodeRecord(id int64, b []byte) (Record, error) {
	d := decoder{b: b}
	r := Record{ID: id}
	if v := d.byte(); v != recordVersion {
		return r, corrupt(id, fmt.Sprintf("unknown version %d", v))
	}
	r.Op = Op(d.byte())
	r.Object = d.string()
	r.Position = d.string()
	r.TxID = d.string()
	r.TimestampMs = d.varint()
	n := d.uvarint()
	if d.err == nil && (n > maxRecordFields || n > uint64(len(d.b))) {
		return r, corrupt(id, fmt.Sprintf("%d fields", n))
	}
	if n > 0 {
		r.Fields = make([]Field, n)
	}
	for i := range r.Fields {
		r.Fields[i].Name = d.string()
		r.Fields[i].Type = d.string()
	}
	flags := d.byte()
	if flags&1 != 0 {
		r.Before = d.image(len(r.Fields))
	}
	if flags&2 != 0 {
		r.After = d.image(len(r.Fields))
	}
	if d.err == nil && len(d.b) != 0 {
		d.err = fmt.Errorf("%d trailing bytes", len(d.b))
	}
	if d.err != nil {
		return r, corrupt(id, d.err.Error())
	}
	return r, nil
}

func corrupt(id int64, why string) error {
	return Errorf(Internal, "channel record %d is corrupt: %s", id, why)
}

type decoder struct {
	b   []byte
	err error
}

func (d *decoder) fail(what string) {
	if d.err == nil {
		d.err = fmt.Errorf("truncated %s", what)
	}
	d.b = nil
}

func (d *decoder) byte() byte {
	if len(d.b) < 1 {
		d.fail("byte")
		return 0
	}
	v := d.b[0]
	d.b = d.b[1:]
	return v
}

func (d *decoder) uvarint() uint64 {
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.fail("uvarint")
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) varint() int64 {
	v, n := binary.Varint(d.b)
	if n <= 0 {
		d.fail("varint")
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) bytes(n uint64) []byte {
	if n > uint64(len(d.b)) {
		d.fail("value")
		return nil
	}
	v := d.b[:n:n]
	d.b = d.b[n:]
	return v
}

func (d *decoder) string() string { return string(d.bytes(d.uvarint())) }

func (d *decoder) image(n int) [][]byte {
	img := make([][]byte, n)
	for i := range img {
		l := d.uvarint()
		if d.err != nil {
			return img
		}
		if l == 0 {
			continue
		}
		v := d.bytes(l - 1)
		img[i] = append([]byte{}, v...)
	}
	return img
}
