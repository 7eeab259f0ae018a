package ipcguard

import (
	"errors"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow/flight"
)

// Limits bound what one client IPC stream may make the decoder allocate. The zero value of a
// field means its default (DefaultLimits); MaxBodyBytes has no default and must be set (the
// gateway sets it to --max-message-bytes).
type Limits struct {
	// MaxFields bounds the fields of a schema, nested fields included. Default 4096.
	MaxFields int
	// MaxDepth bounds the nesting depth of a schema's fields (a top-level field is at depth 1).
	// Default 32. Nested types are refused anyway (Check), but only after the walk, which this
	// bounds.
	MaxDepth int
	// MaxNameBytes bounds the name of one field, in bytes. Default 1024.
	MaxNameBytes int
	// MaxMetadataEntries bounds the custom-metadata key/value pairs of one message (the
	// message's, the schema's and every field's together). Default 1024.
	MaxMetadataEntries int
	// MaxMetadataBytes bounds the bytes of those keys and values together. Default 1 MiB.
	MaxMetadataBytes int
	// MaxBodyBytes bounds the body of a record batch, in bytes, and, for a compressed body, the
	// sum of its buffers' uncompressed sizes.
	MaxBodyBytes int64
}

// Default limits (Limits fields left at zero).
const (
	DefaultMaxFields          = 4096
	DefaultMaxDepth           = 32
	DefaultMaxNameBytes       = 1024
	DefaultMaxMetadataEntries = 1024
	DefaultMaxMetadataBytes   = 1 << 20
)

func (l Limits) withDefaults() Limits {
	def := func(v *int, d int) {
		if *v <= 0 {
			*v = d
		}
	}
	def(&l.MaxFields, DefaultMaxFields)
	def(&l.MaxDepth, DefaultMaxDepth)
	def(&l.MaxNameBytes, DefaultMaxNameBytes)
	def(&l.MaxMetadataEntries, DefaultMaxMetadataEntries)
	def(&l.MaxMetadataBytes, DefaultMaxMetadataBytes)
	return l
}

// Error is a refused IPC message: Message is its 0-based index in the stream (0 is the schema
// message), Reason says what was wrong, naming the field, buffer or count and the limit. Callers
// map it to InvalidArgument.
type Error struct {
	Message int
	Kind    string // "schema", "record batch", ...; empty when the header could not be read
	Reason  string
}

func (e *Error) Error() string {
	if e.Kind == "" {
		return fmt.Sprintf("Arrow IPC message %d: %s", e.Message, e.Reason)
	}
	return fmt.Sprintf("Arrow IPC %s message %d: %s", e.Kind, e.Message, e.Reason)
}

// AsError returns the *Error inside err, if any (arrow-go wraps the errors of the stream it reads).
func AsError(err error) (*Error, bool) {
	var e *Error
	ok := errors.As(err, &e)
	return e, ok
}

// Guard checks the messages of one client IPC stream, in order. It is not safe for concurrent
// use; one Guard per stream.
type Guard struct {
	limits Limits
	n      int     // messages checked
	fields []field // top-level fields of the schema, once checked
	failed error
}

// New returns a Guard for one stream.
func New(l Limits) *Guard { return &Guard{limits: l.withDefaults()} }

// Check verifies one IPC message (header = the flatbuffer Message, body = its body) before any
// decoder reads it. The first message of a stream must be a schema, every later one a record
// batch of that schema. After the first refusal every call returns the same error.
func (g *Guard) Check(header, body []byte) error {
	if g.failed != nil {
		return g.failed
	}
	idx := g.n
	g.n++
	kind, err := g.check(header, body)
	if err != nil {
		g.failed = &Error{Message: idx, Kind: kind, Reason: err.Error()}
		return g.failed
	}
	return nil
}

// Reader wraps the FlightData stream of a DoPut (or any stream of client IPC) so that every
// message goes through a Guard before flight.NewRecordReader decodes it: Recv returns the
// Guard's *Error instead of a message it refuses. Errors of the underlying stream pass through.
//
// What it covers, upstream (arrow-go v18, left unpatched): the ipc package reads the flatbuffer
// Message with generated accessors that check no bounds and allocates from the counts it claims
// before reading the elements (schemaFromFB makes []arrow.Field of the fields vector's length:
// ~2^31 claimed fields in a 284-byte message asked for ~187 GB and killed the process; the same
// for children and custom metadata), trusts buffer offsets and lengths against the body (slice
// panics), allocates the uncompressed size a compressed buffer claims, and turns the panics into
// errors carrying Go runtime text. The Guard verifies every offset and length, bounds every count,
// and accepts only flat column types whose buffers it checks against the node lengths, so the
// decoder only ever sees messages it reads within bounds.
type Reader struct {
	r flight.DataStreamReader
	g *Guard
}

// NewReader wraps r with a new Guard of limits l.
func NewReader(r flight.DataStreamReader, l Limits) *Reader { return &Reader{r: r, g: New(l)} }

// Recv receives the next FlightData and checks its IPC message. A FlightData without a data
// header (app_metadata alone) is refused: the decoder would read an empty flatbuffer.
func (r *Reader) Recv() (*flight.FlightData, error) {
	fd, err := r.r.Recv()
	if err != nil {
		return nil, err
	}
	if err := r.g.Check(fd.GetDataHeader(), fd.GetDataBody()); err != nil {
		return nil, err
	}
	return fd, nil
}

// Message header types (Arrow format Message.fbs, union MessageHeader; wire values, fixed).
const (
	hdrSchema          = 1
	hdrDictionaryBatch = 2
	hdrRecordBatch     = 3
	hdrTensor          = 4
	hdrSparseTensor    = 5
)

// Message table slots (Message.fbs): version, header_type, header, bodyLength, custom_metadata.
const (
	msgVersion        = 0
	msgHeaderType     = 1
	msgHeader         = 2
	msgBodyLength     = 3
	msgCustomMetadata = 4
)

// Metadata versions accepted: V4 (3) and V5 (4), what Arrow 0.8 and later write.
const (
	versionV4 = 3
	versionV5 = 4
)

func (g *Guard) check(header, body []byte) (string, error) {
	if len(header) == 0 {
		return "", errors.New("no IPC data header (a FlightData message without an Arrow IPC message)")
	}
	msg, err := rootTable(header)
	if err != nil {
		return "", fmt.Errorf("malformed flatbuffer: %v", err)
	}
	version, err := msg.int16(msgVersion, 0)
	if err != nil {
		return "", fmt.Errorf("malformed flatbuffer: %v", err)
	}
	if version != versionV4 && version != versionV5 {
		return "", fmt.Errorf("metadata version %d is not accepted (want V4 or V5, Arrow >= 0.8)", int(version)+1)
	}
	ht, err := msg.uint8(msgHeaderType, 0)
	if err != nil {
		return "", fmt.Errorf("malformed flatbuffer: %v", err)
	}
	kind := ""
	switch ht {
	case hdrSchema:
		kind = "schema"
	case hdrRecordBatch:
		kind = "record batch"
	case hdrDictionaryBatch:
		return "dictionary batch", errors.New("dictionary batches are not accepted (dictionary-encoded fields are refused)")
	case hdrTensor, hdrSparseTensor:
		return "tensor", errors.New("tensor messages are not accepted")
	default:
		return "", fmt.Errorf("unknown message header type %d", ht)
	}
	hdr, ok, err := msg.sub(msgHeader)
	if err != nil {
		return kind, fmt.Errorf("malformed flatbuffer: %v", err)
	}
	if !ok {
		return kind, errors.New("the message has no header table")
	}
	bodyLen, err := msg.int64(msgBodyLength, 0)
	if err != nil {
		return kind, fmt.Errorf("malformed flatbuffer: %v", err)
	}
	if bodyLen < 0 || bodyLen > int64(len(body)) {
		return kind, fmt.Errorf("body length %d does not match the %d-byte body", bodyLen, len(body))
	}
	meta := &metaBudget{l: g.limits}
	if err := meta.add(msg, msgCustomMetadata, "message"); err != nil {
		return kind, err
	}
	if ht == hdrSchema {
		if g.fields != nil {
			return kind, errors.New("a second schema message in the stream (the schema comes once, first)")
		}
		g.fields, err = g.checkSchema(hdr, meta)
		return kind, err
	}
	if g.fields == nil {
		return kind, errors.New("a record batch before the schema message")
	}
	return kind, g.checkBatch(hdr, body[:bodyLen])
}

// metaBudget counts the custom metadata of one message against the limits.
type metaBudget struct {
	l       Limits
	entries int
	bytes   int
}

// add checks the custom_metadata vector (of KeyValue tables) in field slot of t. what names its
// owner in errors.
func (m *metaBudget) add(t table, slot int, what string) error {
	if n, err := t.vectorLen(slot); err != nil {
		return fmt.Errorf("%s custom metadata: malformed flatbuffer: %v", what, err)
	} else if uint64(m.entries)+n > uint64(m.l.MaxMetadataEntries) {
		return fmt.Errorf("%s custom metadata: %d key/value pairs in the message > limit %d", what, uint64(m.entries)+n, m.l.MaxMetadataEntries)
	}
	start, n, err := t.vector(slot, 4)
	if err != nil {
		return fmt.Errorf("%s custom metadata: malformed flatbuffer: %v", what, err)
	}
	m.entries += int(n)
	for i := uint64(0); i < n; i++ {
		kv, err := t.tableElem(start, i)
		if err != nil {
			return fmt.Errorf("%s custom metadata %d: malformed flatbuffer: %v", what, i, err)
		}
		k, err := kv.bytes(0)
		if err != nil {
			return fmt.Errorf("%s custom metadata %d key: malformed flatbuffer: %v", what, i, err)
		}
		v, err := kv.bytes(1)
		if err != nil {
			return fmt.Errorf("%s custom metadata %d value: malformed flatbuffer: %v", what, i, err)
		}
		m.bytes += len(k) + len(v)
		if m.bytes > m.l.MaxMetadataBytes {
			return fmt.Errorf("%s custom metadata: %d bytes of keys and values in the message > limit %d", what, m.bytes, m.l.MaxMetadataBytes)
		}
	}
	return nil
}
