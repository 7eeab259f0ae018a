package ipcguard

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"runtime"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"google.golang.org/protobuf/proto"
)

// testLimits are the gateway's limits with a 1 MiB body.
var testLimits = Limits{MaxBodyBytes: 1 << 20}

// capture records the FlightData messages a flight.Writer sends.
type capture struct{ msgs []*flight.FlightData }

func (c *capture) Send(d *flight.FlightData) error {
	c.msgs = append(c.msgs, proto.Clone(d).(*flight.FlightData))
	return nil
}

// encode returns the FlightData messages (schema, then one per record) arrow-go writes.
func encode(t testing.TB, schema *arrow.Schema, recs []arrow.RecordBatch, opts ...ipc.Option) []*flight.FlightData {
	t.Helper()
	c := &capture{}
	w := flight.NewRecordWriter(c, append([]ipc.Option{ipc.WithSchema(schema)}, opts...)...)
	for _, r := range recs {
		if err := w.Write(r); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return c.msgs
}

// sliceStream serves messages to a flight reader.
type sliceStream struct{ msgs []*flight.FlightData }

func (s *sliceStream) Recv() (*flight.FlightData, error) {
	if len(s.msgs) == 0 {
		return nil, io.EOF
	}
	m := s.msgs[0]
	s.msgs = s.msgs[1:]
	return m, nil
}

// decode reads msgs through a guarded flight reader, as DoPut does, and returns the rows read and
// the error; the checked allocator must be back at zero.
func decode(t testing.TB, msgs []*flight.FlightData, l Limits) (int64, error) {
	t.Helper()
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	rdr, err := flight.NewRecordReader(NewReader(&sliceStream{msgs: msgs}, l), ipc.WithAllocator(mem))
	if err != nil {
		return 0, err
	}
	defer rdr.Release()
	var rows int64
	for rdr.Next() {
		rec := rdr.RecordBatch()
		for c := 0; c < int(rec.NumCols()); c++ {
			if v, ok := rec.Column(c).(interface{ ValidateFull() error }); ok {
				if err := v.ValidateFull(); err != nil {
					return rows, fmt.Errorf("accepted by the guard, invalid array: %v", err)
				}
			}
		}
		rows += rec.NumRows()
	}
	return rows, rdr.Err()
}

// sample returns a schema of every column type a Setats table can have, and two records of it
// (the second with nulls in every nullable column).
func sample(mem memory.Allocator) (*arrow.Schema, []arrow.RecordBatch) {
	meta := arrow.NewMetadata([]string{"k"}, []string{"v"})
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "_row_kind", Type: arrow.PrimitiveTypes.Int8},
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "b", Type: arrow.FixedWidthTypes.Boolean, Nullable: true},
		{Name: "i16", Type: arrow.PrimitiveTypes.Int16, Nullable: true},
		{Name: "i32", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
		{Name: "f32", Type: arrow.PrimitiveTypes.Float32, Nullable: true},
		{Name: "f64", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
		{Name: "dec", Type: &arrow.Decimal128Type{Precision: 10, Scale: 2}, Nullable: true},
		{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "bin", Type: arrow.BinaryTypes.Binary, Nullable: true},
		{Name: "d", Type: arrow.FixedWidthTypes.Date32, Nullable: true},
		{Name: "t", Type: arrow.FixedWidthTypes.Time32ms, Nullable: true},
		{Name: "ts", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}, Nullable: true},
		{Name: "ls", Type: arrow.BinaryTypes.LargeString, Nullable: true},
	}, &meta)
	var recs []arrow.RecordBatch
	for r := 0; r < 2; r++ {
		b := array.NewRecordBuilder(mem, schema)
		for i := 0; i < 5; i++ {
			null := r == 1 && i%2 == 1
			b.Field(0).(*array.Int8Builder).Append(int8(i % 4))
			b.Field(1).(*array.Int64Builder).Append(int64(10*r + i))
			for c := 2; c < len(schema.Fields()); c++ {
				if null {
					b.Field(c).AppendNull()
					continue
				}
				switch fb := b.Field(c).(type) {
				case *array.BooleanBuilder:
					fb.Append(i%2 == 0)
				case *array.Int16Builder:
					fb.Append(int16(i))
				case *array.Int32Builder:
					fb.Append(int32(i))
				case *array.Float32Builder:
					fb.Append(float32(i))
				case *array.Float64Builder:
					fb.Append(float64(i))
				case *array.Decimal128Builder:
					fb.Append(decimal128.FromI64(int64(i)))
				case *array.StringBuilder:
					fb.Append(strings.Repeat("x", i))
				case *array.BinaryBuilder:
					fb.Append([]byte{byte(i)})
				case *array.Date32Builder:
					fb.Append(arrow.Date32(i))
				case *array.Time32Builder:
					fb.Append(arrow.Time32(i))
				case *array.TimestampBuilder:
					fb.Append(arrow.Timestamp(i))
				case *array.LargeStringBuilder:
					fb.Append("large")
				}
			}
		}
		recs = append(recs, b.NewRecordBatch())
		b.Release()
	}
	return schema, recs
}

func sampleMessages(t testing.TB, opts ...ipc.Option) []*flight.FlightData {
	mem := memory.NewGoAllocator()
	schema, recs := sample(mem)
	defer func() {
		for _, r := range recs {
			r.Release()
		}
	}()
	return encode(t, schema, recs, opts...)
}

// TestAcceptsValidStreams: what arrow-go writes for every Setats column type, with nulls, empty
// batches and compressed bodies, passes the guard and decodes.
func TestAcceptsValidStreams(t *testing.T) {
	mem := memory.NewGoAllocator()
	schema, recs := sample(mem)
	defer recs[0].Release()
	defer recs[1].Release()
	empty := recs[0].NewSlice(0, 0)
	defer empty.Release()
	for name, opts := range map[string][]ipc.Option{
		"plain": nil,
		"zstd":  {ipc.WithZstd()},
		"lz4":   {ipc.WithLZ4()},
	} {
		t.Run(name, func(t *testing.T) {
			msgs := encode(t, schema, []arrow.RecordBatch{recs[0], empty, recs[1]}, opts...)
			rows, err := decode(t, msgs, testLimits)
			if err != nil || rows != 10 {
				t.Fatalf("rows %d, err %v; want 10 rows", rows, err)
			}
		})
	}
}

// headerTable returns the header table (Schema or RecordBatch) of an IPC message.
func headerTable(t testing.TB, header []byte) table {
	t.Helper()
	msg, err := rootTable(header)
	if err != nil {
		t.Fatal(err)
	}
	h, ok, err := msg.sub(msgHeader)
	if err != nil || !ok {
		t.Fatalf("no header: %v", err)
	}
	return h
}

// vectorLenAt returns the byte position of the length of the vector in slot of tb.
func vectorLenAt(t testing.TB, tb table, slot int) uint64 {
	t.Helper()
	target, ok, err := tb.ref(slot)
	if err != nil || !ok {
		t.Fatalf("no vector in slot %d: %v", slot, err)
	}
	return target
}

func clone(msgs []*flight.FlightData) []*flight.FlightData {
	out := make([]*flight.FlightData, len(msgs))
	for i, m := range msgs {
		out[i] = proto.Clone(m).(*flight.FlightData)
	}
	return out
}

// TestRefusals: forged messages are refused by the guard with an *Error naming what was wrong,
// before arrow-go allocates from them.
func TestRefusals(t *testing.T) {
	base := sampleMessages(t)
	u32 := func(b []byte, at uint64, v uint32) { binary.LittleEndian.PutUint32(b[at:], v) }
	i64 := func(b []byte, at uint64, v int64) { binary.LittleEndian.PutUint64(b[at:], uint64(v)) }
	schemaHdr := func(t *testing.T, m []*flight.FlightData) table { return headerTable(t, m[0].DataHeader) }
	batchHdr := func(t *testing.T, m []*flight.FlightData) table { return headerTable(t, m[1].DataHeader) }
	cases := []struct {
		name   string
		mutate func(t *testing.T, m []*flight.FlightData) []*flight.FlightData
		want   []string
	}{
		{"schema bomb: 2^31 fields", func(t *testing.T, m []*flight.FlightData) []*flight.FlightData {
			u32(m[0].DataHeader, vectorLenAt(t, schemaHdr(t, m), schemaFields), 1<<31)
			return m
		}, []string{"schema message 0", "field count 2147483648 > limit 4096"}},
		{"fields vector past the end", func(t *testing.T, m []*flight.FlightData) []*flight.FlightData {
			u32(m[0].DataHeader, vectorLenAt(t, schemaHdr(t, m), schemaFields), 4000)
			return m
		}, []string{"vector of 4000 elements", "does not fit"}},
		{"schema metadata bomb", func(t *testing.T, m []*flight.FlightData) []*flight.FlightData {
			u32(m[0].DataHeader, vectorLenAt(t, schemaHdr(t, m), schemaCustomMetadata), 1<<30)
			return m
		}, []string{"schema custom metadata", "1073741824 key/value pairs", "limit 1024"}},
		{"children bomb", func(t *testing.T, m []*flight.FlightData) []*flight.FlightData {
			// field 0's children vector (empty, but present as written by arrow-go)
			s := schemaHdr(t, m)
			start, _, _ := s.vector(schemaFields, 4)
			f0, _ := s.tableElem(start, 0)
			u32(m[0].DataHeader, vectorLenAt(t, f0, fieldChildren), 1<<31-1)
			return m
		}, []string{`field 0 "_row_kind"`, "field count 2147483661", "limit 4096"}},
		{"root offset outside", func(t *testing.T, m []*flight.FlightData) []*flight.FlightData {
			u32(m[0].DataHeader, 0, 1<<30)
			return m
		}, []string{"message 0", "malformed flatbuffer", "outside"}},
		{"garbage header", func(t *testing.T, m []*flight.FlightData) []*flight.FlightData {
			m[0].DataHeader = []byte("not an arrow message")
			return m
		}, []string{"message 0", "malformed flatbuffer"}},
		{"empty header", func(t *testing.T, m []*flight.FlightData) []*flight.FlightData {
			m[1].DataHeader = nil
			return m
		}, []string{"message 1", "no IPC data header"}},
		{"batch first", func(t *testing.T, m []*flight.FlightData) []*flight.FlightData {
			return m[1:]
		}, []string{"record batch message 0", "before the schema"}},
		{"second schema", func(t *testing.T, m []*flight.FlightData) []*flight.FlightData {
			return []*flight.FlightData{m[0], m[0]}
		}, []string{"schema message 1", "second schema"}},
		{"node count", func(t *testing.T, m []*flight.FlightData) []*flight.FlightData {
			u32(m[1].DataHeader, vectorLenAt(t, batchHdr(t, m), batchNodes), 3)
			return m
		}, []string{"record batch message 1", "3 field nodes for a schema of 14 fields"}},
		{"node count bomb", func(t *testing.T, m []*flight.FlightData) []*flight.FlightData {
			u32(m[1].DataHeader, vectorLenAt(t, batchHdr(t, m), batchNodes), 1<<31)
			return m
		}, []string{"record batch message 1", "nodes", "does not fit"}},
		{"buffer count", func(t *testing.T, m []*flight.FlightData) []*flight.FlightData {
			u32(m[1].DataHeader, vectorLenAt(t, batchHdr(t, m), batchBuffers), 5)
			return m
		}, []string{"5 buffers", "have 31"}},
		{"buffer offset past the body", func(t *testing.T, m []*flight.FlightData) []*flight.FlightData {
			at := vectorLenAt(t, batchHdr(t, m), batchBuffers) + 4 + 16*3 // buffer 3: offset
			i64(m[1].DataHeader, at, 1<<40)
			return m
		}, []string{"buffer 3 (offset 1099511627776", "outside the"}},
		{"buffer length past the body", func(t *testing.T, m []*flight.FlightData) []*flight.FlightData {
			at := vectorLenAt(t, batchHdr(t, m), batchBuffers) + 4 + 16*3 + 8 // buffer 3: length
			i64(m[1].DataHeader, at, 1<<62)
			return m
		}, []string{"buffer 3", "length 4611686018427387904", "outside the"}},
		{"batch length bomb", func(t *testing.T, m []*flight.FlightData) []*flight.FlightData {
			rb := batchHdr(t, m)
			at, _, _ := rb.field(batchLength, 8)
			i64(m[1].DataHeader, at, 1<<40)
			return m
		}, []string{"length 1099511627776 rows", "limit"}},
		{"node length", func(t *testing.T, m []*flight.FlightData) []*flight.FlightData {
			at := vectorLenAt(t, batchHdr(t, m), batchNodes) + 4 + 16*4 // node 4 (i32): length
			i64(m[1].DataHeader, at, 6)
			return m
		}, []string{`field 4 "i32"`, "node length 6 differs from the batch length 5"}},
		{"null count", func(t *testing.T, m []*flight.FlightData) []*flight.FlightData {
			at := vectorLenAt(t, batchHdr(t, m), batchNodes) + 4 + 16*4 + 8 // node 4: null count
			i64(m[1].DataHeader, at, 9)
			return m
		}, []string{`field 4 "i32"`, "null count 9"}},
		{"values too short", func(t *testing.T, m []*flight.FlightData) []*flight.FlightData {
			at := vectorLenAt(t, batchHdr(t, m), batchBuffers) + 4 + 16*3 + 8 // buffer 3: id values length
			i64(m[1].DataHeader, at, 16)
			return m
		}, []string{`field 1 "id"`, "values of 16 bytes for 5 values of 8 bytes"}},
		{"decreasing string offsets", func(t *testing.T, m []*flight.FlightData) []*flight.FlightData {
			rb := batchHdr(t, m)
			// field 8 "s": buffers 16 (validity), 17 (offsets), 18 (data)
			at := vectorLenAt(t, rb, batchBuffers) + 4 + 16*17
			off := le64(rb.buf, at)
			binary.LittleEndian.PutUint32(m[1].DataBody[off+8:], 100) // offsets [0 1 100 3 4 ...]
			return m
		}, []string{`field 8 "s"`, "offset", "decreasing or beyond"}},
		{"dictionary batch", func(t *testing.T, m []*flight.FlightData) []*flight.FlightData {
			mem := memory.NewGoAllocator()
			dt := &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int8, ValueType: arrow.BinaryTypes.String}
			b := array.NewDictionaryBuilder(mem, dt).(*array.BinaryDictionaryBuilder)
			defer b.Release()
			_ = b.AppendString("a")
			arr := b.NewArray()
			defer arr.Release()
			schema := arrow.NewSchema([]arrow.Field{{Name: "dict", Type: dt}}, nil)
			rec := array.NewRecordBatch(schema, []arrow.Array{arr}, 1)
			defer rec.Release()
			return encode(t, schema, []arrow.RecordBatch{rec})
		}, []string{`field 0 "dict"`, "dictionary-encoded fields are not accepted"}},
		{"nested type", func(t *testing.T, m []*flight.FlightData) []*flight.FlightData {
			schema := arrow.NewSchema([]arrow.Field{{Name: "l", Type: arrow.ListOf(arrow.PrimitiveTypes.Int32)}}, nil)
			b := array.NewRecordBuilder(memory.NewGoAllocator(), schema)
			defer b.Release()
			rec := b.NewRecordBatch()
			defer rec.Release()
			return encode(t, schema, []arrow.RecordBatch{rec})
		}, []string{`field 0 "l"`, "nested Arrow types are not accepted", "List"}},
		{"deep nesting", func(t *testing.T, m []*flight.FlightData) []*flight.FlightData {
			var dt arrow.DataType = arrow.PrimitiveTypes.Int32
			for i := 0; i < 40; i++ {
				dt = arrow.ListOf(dt)
			}
			schema := arrow.NewSchema([]arrow.Field{{Name: "deep", Type: dt}}, nil)
			b := array.NewRecordBuilder(memory.NewGoAllocator(), schema)
			defer b.Release()
			rec := b.NewRecordBatch()
			defer rec.Release()
			return encode(t, schema, []arrow.RecordBatch{rec})
		}, []string{`field 0 "deep"`, "nesting depth 33 > limit 32"}},
		{"compressed size bomb", func(t *testing.T, m []*flight.FlightData) []*flight.FlightData {
			m = sampleMessages(t, ipc.WithZstd())
			rb := batchHdr(t, m)
			at := vectorLenAt(t, rb, batchBuffers) + 4 + 16*3 // buffer 3 (id values): offset
			off := le64(rb.buf, at)
			binary.LittleEndian.PutUint64(m[1].DataBody[off:], 1<<40)
			return m
		}, []string{"buffer 3 claims an uncompressed size of 1099511627776 bytes"}},
		{"long field name", func(t *testing.T, m []*flight.FlightData) []*flight.FlightData {
			schema := arrow.NewSchema([]arrow.Field{{Name: strings.Repeat("n", 5000), Type: arrow.PrimitiveTypes.Int32}}, nil)
			b := array.NewRecordBuilder(memory.NewGoAllocator(), schema)
			defer b.Release()
			rec := b.NewRecordBatch()
			defer rec.Release()
			return encode(t, schema, []arrow.RecordBatch{rec})
		}, []string{"field 0: name of 5000 bytes > limit 1024"}},
		{"too many fields", func(t *testing.T, m []*flight.FlightData) []*flight.FlightData {
			fields := make([]arrow.Field, 5000)
			for i := range fields {
				fields[i] = arrow.Field{Name: fmt.Sprintf("c%d", i), Type: arrow.PrimitiveTypes.Int8}
			}
			schema := arrow.NewSchema(fields, nil)
			b := array.NewRecordBuilder(memory.NewGoAllocator(), schema)
			defer b.Release()
			rec := b.NewRecordBatch()
			defer rec.Release()
			return encode(t, schema, []arrow.RecordBatch{rec})
		}, []string{"field count 5000 > limit 4096"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			msgs := tc.mutate(t, clone(base))
			before := heapAlloc()
			_, err := decode(t, msgs, testLimits)
			if grown := heapAlloc() - before; grown > 16<<20 {
				t.Errorf("decoding allocated %d MiB", grown>>20)
			}
			e, ok := AsError(err)
			if !ok {
				t.Fatalf("error %v: want an *ipcguard.Error", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(e.Error(), w) {
					t.Fatalf("error %q does not say %q", e.Error(), w)
				}
			}
		})
	}
}

// heapAlloc returns the bytes allocated on the Go heap so far.
func heapAlloc() uint64 {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.TotalAlloc
}

// TestOneByteMutations: every byte of the schema and record batch messages set to a few hostile
// values: the guard refuses the message or the decoder reads it within bounds, never with a Go
// runtime panic, never allocating more than 16 MiB.
func TestOneByteMutations(t *testing.T) {
	base := sampleMessages(t)
	for _, part := range []struct {
		name string
		msg  int
		get  func(*flight.FlightData) []byte
	}{
		{"schema header", 0, func(d *flight.FlightData) []byte { return d.DataHeader }},
		{"batch header", 1, func(d *flight.FlightData) []byte { return d.DataHeader }},
		{"batch body", 1, func(d *flight.FlightData) []byte { return d.DataBody }},
	} {
		n := len(part.get(base[part.msg]))
		for i := 0; i < n; i++ {
			for _, v := range []byte{0x00, 0x01, 0x7f, 0x80, 0xff} {
				msgs := clone(base[:2])
				b := part.get(msgs[part.msg])
				if b[i] == v {
					continue
				}
				b[i] = v
				checkDecode(t, fmt.Sprintf("%s byte %d = %#x", part.name, i, v), msgs)
			}
		}
	}
}

// checkDecode decodes msgs and fails on a runtime panic's text or an allocation above 16 MiB.
func checkDecode(t testing.TB, what string, msgs []*flight.FlightData) {
	t.Helper()
	before := heapAlloc()
	_, err := decode(t, msgs, testLimits)
	if grown := heapAlloc() - before; grown > 16<<20 {
		t.Fatalf("%s: decoding allocated %d MiB (err %v)", what, grown>>20, err)
	}
	if err != nil && (strings.Contains(err.Error(), "runtime error") || strings.Contains(err.Error(), "unknown error")) {
		t.Fatalf("%s: decoder error carries panic text: %v", what, err)
	}
	var e *Error
	if err != nil && !errors.As(err, &e) && strings.Contains(err.Error(), "goroutine") {
		t.Fatalf("%s: %v", what, err)
	}
}
