// Package flighttest is the one Go Flight client of Setats' tests: the gateway's in-process
// tests and benchmarks (gateway/*_test.go), the end-to-end tests of the built binary and the load
// generator (e2e/gatewaytest, e2e/cmd/setats-loadgen). It speaks only the wire contract
// (proto/setats.proto, proto/README.md) with the arrow-go Flight client:
//
//   - actions: Action (binary protobuf request and result), RawAction (any body, every result),
//     CreateTable, GetTable, ListBuckets;
//   - writes: OpenPut / OpenPutDescriptor give a PutStream (Send batches, WriteAcks on Acks in
//     order); Put and PutRecords write batches on one DoPut and return the acks;
//   - changelog reads: OpenGet (a record reader over one DoGet), DoGet / DoGetTicket (a callback
//     per record batch), ReadChangelog (a bounded read of one bucket decoded into ChangeRows).
//
// Arrow memory for IPC comes from the allocator given with WithAllocator (tests pass a
// memory.CheckedAllocator and assert zero bytes at the end), else from a Go allocator.
package flighttest

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"math"
	"strings"
	"sync"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/proto"

	"github.com/setats/setats/proto/setatspb"
)

// Reserved column names of the wire contract (proto/README.md, "Reserved columns").
const (
	ColRowKind   = "_row_kind"
	ColOffset    = "_offset"
	ColCommitTS  = "_commit_timestamp"
	maxGRPCBytes = 256 << 20
)

// RowKind byte values (Flink RowKind#toByteValue, SPEC section 0).
const (
	KindInsert       int8 = 0
	KindUpdateBefore int8 = 1
	KindUpdateAfter  int8 = 2
	KindDelete       int8 = 3
)

// KindString returns "+I", "-U", "+U", "-D" or "kind(n)".
func KindString(k int8) string {
	switch k {
	case KindInsert:
		return "+I"
	case KindUpdateBefore:
		return "-U"
	case KindUpdateAfter:
		return "+U"
	case KindDelete:
		return "-D"
	}
	return fmt.Sprintf("kind(%d)", k)
}

// ArrowType maps the Flink SQL types these tests use to their Arrow types (proto/README.md):
// BOOLEAN, INT, BIGINT, DOUBLE, STRING. Other types are an error.
func ArrowType(flinkType string) (arrow.DataType, error) {
	switch strings.ToUpper(strings.TrimSpace(flinkType)) {
	case "BOOLEAN":
		return arrow.FixedWidthTypes.Boolean, nil
	case "INT", "INTEGER":
		return arrow.PrimitiveTypes.Int32, nil
	case "BIGINT":
		return arrow.PrimitiveTypes.Int64, nil
	case "DOUBLE":
		return arrow.PrimitiveTypes.Float64, nil
	case "STRING":
		return arrow.BinaryTypes.String, nil
	}
	return nil, fmt.Errorf("flighttest: unsupported column type %q", flinkType)
}

// Client is a Flight client for one gateway. FC is the underlying arrow-go client, for tests
// of the protocol itself (malformed streams, raw descriptors).
type Client struct {
	FC    flight.Client
	alloc memory.Allocator
}

// Option configures Dial.
type Option func(*Client)

// WithAllocator makes the client take the Arrow memory of its IPC readers and writers from mem.
func WithAllocator(mem memory.Allocator) Option { return func(c *Client) { c.alloc = mem } }

// Dial connects to a gateway's Flight address ("host:port") without TLS, with 256 MiB message
// limits both ways.
func Dial(addr string, opts ...Option) (*Client, error) {
	return dial(addr, insecure.NewCredentials(), opts...)
}

// DialTLS is Dial over TLS with cfg (RootCAs: the CA of the gateway's --tls-cert).
func DialTLS(addr string, cfg *tls.Config, opts ...Option) (*Client, error) {
	return dial(addr, credentials.NewTLS(cfg), opts...)
}

func dial(addr string, creds credentials.TransportCredentials, opts ...Option) (*Client, error) {
	fc, err := flight.NewClientWithMiddleware(addr, nil, nil,
		grpc.WithTransportCredentials(creds),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(maxGRPCBytes), grpc.MaxCallSendMsgSize(maxGRPCBytes)))
	if err != nil {
		return nil, err
	}
	c := &Client{FC: fc, alloc: memory.NewGoAllocator()}
	for _, o := range opts {
		o(c)
	}
	return c, nil
}

// Close closes the connection.
func (c *Client) Close() error { return c.FC.Close() }

// Allocator returns the allocator of the client's IPC readers and writers.
func (c *Client) Allocator() memory.Allocator { return c.alloc }

// RawAction runs DoAction typ with body and returns the bodies of all its results, in order.
func (c *Client) RawAction(ctx context.Context, typ string, body []byte) ([][]byte, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	st, err := c.FC.DoAction(ctx, &flight.Action{Type: typ, Body: body})
	if err != nil {
		return nil, err
	}
	var out [][]byte
	for {
		r, err := st.Recv()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return out, err
		}
		out = append(out, r.GetBody())
	}
}

// Action runs DoAction typ with a binary protobuf body and decodes the first result into resp
// (resp may be nil). Further results are drained.
func (c *Client) Action(ctx context.Context, typ string, req, resp proto.Message) error {
	var body []byte
	if req != nil {
		var err error
		if body, err = proto.Marshal(req); err != nil {
			return err
		}
	}
	res, err := c.RawAction(ctx, typ, body)
	if err != nil {
		return err
	}
	if resp == nil {
		return nil
	}
	if len(res) == 0 {
		return fmt.Errorf("action %s: no result", typ)
	}
	if err := proto.Unmarshal(res[0], resp); err != nil {
		return fmt.Errorf("action %s: decode result: %w", typ, err)
	}
	return nil
}

// CreateTable runs the create-table action (creating the database too) and returns the TableInfo.
func (c *Client) CreateTable(ctx context.Context, spec *setatspb.TableSpec) (*setatspb.TableInfo, error) {
	info := &setatspb.TableInfo{}
	err := c.Action(ctx, "create-table", &setatspb.CreateTableRequest{Spec: spec, CreateDatabase: true}, info)
	return info, err
}

// GetTable runs the get-table action.
func (c *Client) GetTable(ctx context.Context, db, table string) (*setatspb.TableInfo, error) {
	info := &setatspb.TableInfo{}
	err := c.Action(ctx, "get-table", &setatspb.TableRequest{Database: db, Table: table}, info)
	return info, err
}

// ListBuckets runs the list-buckets action: every (partition, bucket) that has received a row.
func (c *Client) ListBuckets(ctx context.Context, db, table string) ([]*setatspb.BucketOffsets, error) {
	resp := &setatspb.ListBucketsResponse{}
	if err := c.Action(ctx, "list-buckets", &setatspb.TableRequest{Database: db, Table: table}, resp); err != nil {
		return nil, err
	}
	return resp.GetBuckets(), nil
}

// OpenGet runs DoGet with a ticket (normally a binary ChangelogTicket) and returns a reader of
// its record batches; the caller releases it. A batch is valid until the next call to Next.
func (c *Client) OpenGet(ctx context.Context, ticket []byte) (*flight.Reader, error) {
	st, err := c.FC.DoGet(ctx, &flight.Ticket{Ticket: ticket})
	if err != nil {
		return nil, err
	}
	return flight.NewRecordReader(st, ipc.WithAllocator(c.alloc))
}

// DoGetTicket runs DoGet with a raw ticket and calls fn for every record batch (valid only during
// the call) with the stream's schema. It returns when the stream ends, fn fails or ctx ends.
func (c *Client) DoGetTicket(ctx context.Context, ticket []byte, fn func(*arrow.Schema, arrow.RecordBatch) error) error {
	rd, err := c.OpenGet(ctx, ticket)
	if err != nil {
		return err
	}
	defer rd.Release()
	for rd.Next() {
		if err := fn(rd.Schema(), rd.RecordBatch()); err != nil {
			return err
		}
	}
	if err := rd.Err(); err != nil && !errors.Is(err, io.EOF) {
		return err
	}
	return nil
}

// DoGet is DoGetTicket with a ChangelogTicket.
func (c *Client) DoGet(ctx context.Context, t *setatspb.ChangelogTicket, fn func(*arrow.Schema, arrow.RecordBatch) error) error {
	b, err := proto.Marshal(t)
	if err != nil {
		return err
	}
	return c.DoGetTicket(ctx, b, fn)
}

// ChangeRow is one changelog row as read by DoGet. Values are in table column order: int32 (INT),
// int64 (BIGINT), float64 (DOUBLE), bool (BOOLEAN), string (STRING), nil for null.
type ChangeRow struct {
	Kind     int8
	Offset   int64
	CommitMs int64
	Values   []any
}

// String renders the row as in the cases files, e.g. `+I(1,'a',null)@3`.
func (r ChangeRow) String() string {
	return fmt.Sprintf("%s%s@%d", KindString(r.Kind), FormatValues(r.Values), r.Offset)
}

// Changelog is one bucket's changelog as read by DoGet.
type Changelog struct {
	Partition string
	Bucket    int32
	// Schema metadata setats.partition / setats.bucket of the stream ("" when absent).
	MetaPartition, MetaBucket string
	Columns                   []string
	Rows                      []ChangeRow
}

// ReadChangelog reads one bucket's changelog from earliest, bounded (follow=false).
func (c *Client) ReadChangelog(ctx context.Context, db, table, partition string, bucket int32) (*Changelog, error) {
	t := &setatspb.ChangelogTicket{Database: db, Table: table, Partition: partition, Bucket: bucket,
		Start: &setatspb.ChangelogTicket_Position{Position: setatspb.StartPosition_EARLIEST}}
	out := &Changelog{Partition: partition, Bucket: bucket}
	err := c.DoGet(ctx, t, func(s *arrow.Schema, rec arrow.RecordBatch) error {
		if out.Columns == nil {
			md := s.Metadata()
			out.MetaPartition, _ = metaValue(md, "setats.partition")
			out.MetaBucket, _ = metaValue(md, "setats.bucket")
			for _, f := range s.Fields()[3:] {
				out.Columns = append(out.Columns, f.Name)
			}
		}
		rows, err := DecodeChangelog(rec)
		if err != nil {
			return err
		}
		out.Rows = append(out.Rows, rows...)
		return nil
	})
	return out, err
}

func metaValue(md arrow.Metadata, key string) (string, bool) {
	i := md.FindKey(key)
	if i < 0 {
		return "", false
	}
	return md.Values()[i], true
}

// DecodeChangelog converts a DoGet record batch to rows. The first three columns must be
// `_row_kind`, `_offset`, `_commit_timestamp` with their contract types.
func DecodeChangelog(rec arrow.RecordBatch) ([]ChangeRow, error) {
	s := rec.Schema()
	if s.NumFields() < 3 || s.Field(0).Name != ColRowKind || s.Field(1).Name != ColOffset || s.Field(2).Name != ColCommitTS {
		return nil, fmt.Errorf("changelog schema starts %v, want %s, %s, %s", s.Fields()[:min(3, s.NumFields())], ColRowKind, ColOffset, ColCommitTS)
	}
	kinds, ok1 := rec.Column(0).(*array.Int8)
	offs, ok2 := rec.Column(1).(*array.Int64)
	ts, ok3 := rec.Column(2).(*array.Timestamp)
	if !ok1 || !ok2 || !ok3 {
		return nil, fmt.Errorf("changelog reserved column types %s, %s, %s", rec.Column(0).DataType(), rec.Column(1).DataType(), rec.Column(2).DataType())
	}
	if tt := ts.DataType().(*arrow.TimestampType); tt.Unit != arrow.Millisecond || tt.TimeZone != "UTC" {
		return nil, fmt.Errorf("%s type %s, want timestamp[ms, tz=UTC]", ColCommitTS, tt)
	}
	n := int(rec.NumRows())
	rows := make([]ChangeRow, n)
	for i := 0; i < n; i++ {
		vals := make([]any, rec.NumCols()-3)
		for c := 3; c < int(rec.NumCols()); c++ {
			v, err := CellValue(rec.Column(c), i)
			if err != nil {
				return nil, fmt.Errorf("column %s: %w", s.Field(c).Name, err)
			}
			vals[c-3] = v
		}
		rows[i] = ChangeRow{Kind: kinds.Value(i), Offset: offs.Value(i), CommitMs: int64(ts.Value(i)), Values: vals}
	}
	return rows, nil
}

// CellValue returns a cell as a Go value (see ChangeRow), copying strings.
func CellValue(a arrow.Array, i int) (any, error) {
	if a.IsNull(i) {
		return nil, nil
	}
	switch a := a.(type) {
	case *array.Int32:
		return a.Value(i), nil
	case *array.Int64:
		return a.Value(i), nil
	case *array.Float64:
		return a.Value(i), nil
	case *array.Boolean:
		return a.Value(i), nil
	case *array.String:
		return strings.Clone(a.Value(i)), nil
	case *array.Int8:
		return a.Value(i), nil
	}
	return nil, fmt.Errorf("unsupported arrow type %s", a.DataType())
}

// Col is a column of a write: name and Flink type.
type Col struct {
	Name, Type string
	// Key marks primary-key columns (written as non-nullable Arrow fields).
	Key bool
}

// WriteRow is one row of a DoPut batch: its RowKind (ignored when the stream has no `_row_kind`
// column) and its values aligned with the stream's declared columns.
type WriteRow struct {
	Kind   int8
	Values []any
}

// BuildBatch builds an Arrow record batch of the declared columns, plus `_row_kind` first when
// withKind. Values use the Go types of ChangeRow.
func BuildBatch(alloc memory.Allocator, cols []Col, withKind bool, rows []WriteRow) (arrow.RecordBatch, error) {
	schema, err := WriteSchema(cols, withKind)
	if err != nil {
		return nil, err
	}
	b := array.NewRecordBuilder(alloc, schema)
	defer b.Release()
	off := 0
	if withKind {
		kb := b.Field(0).(*array.Int8Builder)
		for _, r := range rows {
			kb.Append(r.Kind)
		}
		off = 1
	}
	for ci := range cols {
		fb := b.Field(ci + off)
		for _, r := range rows {
			if err := appendValue(fb, r.Values[ci]); err != nil {
				return nil, fmt.Errorf("column %s: %w", cols[ci].Name, err)
			}
		}
	}
	return b.NewRecordBatch(), nil
}

// WriteSchema is the Arrow schema of a DoPut stream with the declared columns.
func WriteSchema(cols []Col, withKind bool) (*arrow.Schema, error) {
	var fields []arrow.Field
	if withKind {
		fields = append(fields, arrow.Field{Name: ColRowKind, Type: arrow.PrimitiveTypes.Int8})
	}
	for _, c := range cols {
		t, err := ArrowType(c.Type)
		if err != nil {
			return nil, err
		}
		fields = append(fields, arrow.Field{Name: c.Name, Type: t, Nullable: !c.Key})
	}
	return arrow.NewSchema(fields, nil), nil
}

func appendValue(b array.Builder, v any) error {
	if v == nil {
		b.AppendNull()
		return nil
	}
	switch b := b.(type) {
	case *array.Int32Builder:
		x, ok := v.(int32)
		if !ok {
			return fmt.Errorf("value %T for int32", v)
		}
		b.Append(x)
	case *array.Int64Builder:
		x, ok := v.(int64)
		if !ok {
			return fmt.Errorf("value %T for int64", v)
		}
		b.Append(x)
	case *array.Float64Builder:
		x, ok := v.(float64)
		if !ok {
			return fmt.Errorf("value %T for float64", v)
		}
		b.Append(x)
	case *array.BooleanBuilder:
		x, ok := v.(bool)
		if !ok {
			return fmt.Errorf("value %T for bool", v)
		}
		b.Append(x)
	case *array.StringBuilder:
		x, ok := v.(string)
		if !ok {
			return fmt.Errorf("value %T for string", v)
		}
		b.Append(x)
	default:
		return fmt.Errorf("unsupported builder %T", b)
	}
	return nil
}

// PutStream is an open DoPut: Send record batches, receive WriteAcks on Acks in order.
type PutStream struct {
	stream flight.FlightService_DoPutClient
	w      *flight.Writer
	cancel context.CancelFunc
	// Acks receives one WriteAck per acknowledged batch, in order; it is closed when the server
	// ends the stream (Err then holds the final error, nil for a clean end).
	Acks chan *setatspb.WriteAck
	mu   sync.Mutex
	err  error
	done chan struct{}
}

// OpenPut opens a DoPut on db.table (WriteCommand descriptor) whose batches have the schema.
func (c *Client) OpenPut(ctx context.Context, db, table string, schema *arrow.Schema) (*PutStream, error) {
	return c.OpenPutCmd(ctx, &setatspb.WriteCommand{Database: db, Table: table}, schema)
}

// OpenPutCmd opens a DoPut with the given WriteCommand (writer sequences, staging: SPEC section
// 10) whose batches have the schema.
func (c *Client) OpenPutCmd(ctx context.Context, wc *setatspb.WriteCommand, schema *arrow.Schema) (*PutStream, error) {
	cmd, err := proto.Marshal(wc)
	if err != nil {
		return nil, err
	}
	return c.OpenPutDescriptor(ctx, &flight.FlightDescriptor{Type: flight.DescriptorCMD, Cmd: cmd}, schema)
}

// OpenPutDescriptor opens a DoPut with any descriptor (tests of malformed commands) whose batches
// have the schema.
func (c *Client) OpenPutDescriptor(ctx context.Context, desc *flight.FlightDescriptor, schema *arrow.Schema) (*PutStream, error) {
	ctx, cancel := context.WithCancel(ctx)
	st, err := c.FC.DoPut(ctx)
	if err != nil {
		cancel()
		return nil, err
	}
	w := flight.NewRecordWriter(st, ipc.WithSchema(schema), ipc.WithAllocator(c.alloc))
	w.SetFlightDescriptor(desc)
	ps := &PutStream{stream: st, w: w, cancel: cancel, Acks: make(chan *setatspb.WriteAck, 1<<16), done: make(chan struct{})}
	go ps.recvLoop()
	return ps, nil
}

// PutRecords sends recs (at least one, all of one schema) on one DoPut with descriptor desc,
// ends the client side and returns the WriteAcks received until the server ended the call,
// with the call's error (a failed send is reported unless the server's error explains it).
func (c *Client) PutRecords(ctx context.Context, desc *flight.FlightDescriptor, recs ...arrow.RecordBatch) ([]*setatspb.WriteAck, error) {
	ps, err := c.OpenPutDescriptor(ctx, desc, recs[0].Schema())
	if err != nil {
		return nil, err
	}
	defer ps.Abort()
	var acks []*setatspb.WriteAck
	collected := make(chan struct{})
	go func() {
		defer close(collected)
		for a := range ps.Acks {
			acks = append(acks, a)
		}
	}()
	var sendErr error
	for _, rec := range recs {
		if sendErr = ps.Send(rec); sendErr != nil {
			break
		}
	}
	_ = ps.CloseSend()
	err = ps.Wait()
	<-collected
	if err != nil {
		return acks, err
	}
	if sendErr != nil && !errors.Is(sendErr, io.EOF) {
		return acks, sendErr
	}
	return acks, nil
}

func (ps *PutStream) recvLoop() {
	defer close(ps.done)
	defer close(ps.Acks)
	for {
		r, err := ps.stream.Recv()
		if errors.Is(err, io.EOF) {
			return
		}
		if err != nil {
			ps.setErr(err)
			return
		}
		ack := &setatspb.WriteAck{}
		if err := proto.Unmarshal(r.AppMetadata, ack); err != nil {
			ps.setErr(fmt.Errorf("decode WriteAck: %w", err))
			return
		}
		ps.Acks <- ack
	}
}

func (ps *PutStream) setErr(err error) {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if ps.err == nil {
		ps.err = err
	}
}

// Err is the error that ended the ack stream (nil while open or after a clean end).
func (ps *PutStream) Err() error {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	return ps.err
}

// Send writes one record batch.
func (ps *PutStream) Send(rec arrow.RecordBatch) error { return ps.w.Write(rec) }

// CloseSend ends the client side of the stream; acks keep arriving on Acks.
func (ps *PutStream) CloseSend() error {
	err := ps.w.Close()
	if err2 := ps.stream.CloseSend(); err == nil {
		err = err2
	}
	return err
}

// Wait waits for the server to end the stream and returns Err.
func (ps *PutStream) Wait() error {
	<-ps.done
	return ps.Err()
}

// Abort cancels the stream.
func (ps *PutStream) Abort() { ps.cancel() }

// Put sends the batches on one DoPut stream and returns their acks in order. It fails when the
// gateway does not answer every batch with a WriteAck whose batch_seq matches.
func (c *Client) Put(ctx context.Context, db, table string, cols []Col, withKind bool, batches [][]WriteRow) ([]*setatspb.WriteAck, error) {
	return c.PutCmd(ctx, &setatspb.WriteCommand{Database: db, Table: table}, cols, withKind, batches)
}

// PutCmd is Put with a WriteCommand of its own (writer sequences, staging: SPEC section 10).
func (c *Client) PutCmd(ctx context.Context, cmd *setatspb.WriteCommand, cols []Col, withKind bool, batches [][]WriteRow) ([]*setatspb.WriteAck, error) {
	db, table := cmd.GetDatabase(), cmd.GetTable()
	schema, err := WriteSchema(cols, withKind)
	if err != nil {
		return nil, err
	}
	ps, err := c.OpenPutCmd(ctx, cmd, schema)
	if err != nil {
		return nil, err
	}
	defer ps.Abort()
	var acks []*setatspb.WriteAck
	collected := make(chan struct{})
	go func() {
		defer close(collected)
		for a := range ps.Acks {
			acks = append(acks, a)
		}
	}()
	var sendErr error
	for _, rows := range batches {
		rec, err := BuildBatch(c.alloc, cols, withKind, rows)
		if err != nil {
			return nil, err
		}
		sendErr = ps.Send(rec)
		rec.Release()
		if sendErr != nil {
			break
		}
	}
	if sendErr == nil {
		sendErr = ps.CloseSend()
	}
	err = ps.Wait()
	<-collected
	if err != nil {
		return acks, err
	}
	if sendErr != nil && !errors.Is(sendErr, io.EOF) {
		return acks, sendErr
	}
	if len(acks) != len(batches) {
		return acks, fmt.Errorf("DoPut %s.%s: %d acks for %d batches", db, table, len(acks), len(batches))
	}
	for i, a := range acks {
		if a.GetBatchSeq() != int64(i) {
			return acks, fmt.Errorf("DoPut %s.%s: ack %d has batch_seq %d", db, table, i, a.GetBatchSeq())
		}
	}
	return acks, nil
}

// FormatValues renders values as in the cases files: (1,'a',null).
func FormatValues(vals []any) string {
	var sb strings.Builder
	sb.WriteByte('(')
	for i, v := range vals {
		if i > 0 {
			sb.WriteByte(',')
		}
		sb.WriteString(FormatValue(v))
	}
	sb.WriteByte(')')
	return sb.String()
}

// FormatValue renders one value: null, 'str', numbers in Go syntax.
func FormatValue(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case string:
		return "'" + x + "'"
	case float64:
		if math.IsNaN(x) {
			return "NaN"
		}
		return fmt.Sprintf("%g", x)
	}
	return fmt.Sprint(v)
}
