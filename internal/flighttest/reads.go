package flighttest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"google.golang.org/protobuf/proto"

	"github.com/setats/setats/proto/setatspb"
)

// Reads of the merged table (SPEC section 13, proto/README.md "Snapshot reads" and "Lookups").

// SnapshotPart is one endpoint of a planned snapshot read: one bucket's merged rows at one view.
type SnapshotPart struct {
	Partition string
	Bucket    int32
	// EndOffset is the view's offset E (schema metadata setats.snapshot.end_offset): the rows
	// are the fold of the bucket's changelog [0, E).
	EndOffset int64
	// Columns are the stream's columns after `_key`.
	Columns []string
	// Keys are the rows' `_key` values (encoded primary keys), Rows their column values (Go
	// types of ChangeRow), in stream order.
	Keys [][]byte
	Rows [][]any
}

// ReadSnapshot plans a snapshot read (GetFlightInfo with a CMD descriptor holding cmd, whose
// snapshot must be set) and reads every endpoint's ticket to its end with DoGet.
func (c *Client) ReadSnapshot(ctx context.Context, cmd *setatspb.ReadCommand) ([]SnapshotPart, error) {
	b, err := proto.Marshal(cmd)
	if err != nil {
		return nil, err
	}
	fi, err := c.FC.GetFlightInfo(ctx, &flight.FlightDescriptor{Type: flight.DescriptorCMD, Cmd: b})
	if err != nil {
		return nil, err
	}
	var out []SnapshotPart
	for i, ep := range fi.GetEndpoint() {
		part, err := c.readSnapshotTicket(ctx, ep.GetTicket().GetTicket())
		if err != nil {
			return nil, fmt.Errorf("snapshot DoGet of endpoint %d: %w", i, err)
		}
		out = append(out, part)
	}
	return out, nil
}

func (c *Client) readSnapshotTicket(ctx context.Context, ticket []byte) (SnapshotPart, error) {
	var part SnapshotPart
	rd, err := c.OpenGet(ctx, ticket)
	if err != nil {
		return part, err
	}
	defer rd.Release()
	if err := part.readSchema(rd.Schema()); err != nil {
		return part, err
	}
	for rd.Next() {
		if err := part.append(rd.RecordBatch()); err != nil {
			return part, err
		}
	}
	if err := rd.Err(); err != nil && !errors.Is(err, io.EOF) {
		return part, err
	}
	return part, nil
}

func (p *SnapshotPart) readSchema(s *arrow.Schema) error {
	md := s.Metadata()
	p.Partition, _ = metaValue(md, "setats.partition")
	bs, _ := metaValue(md, "setats.bucket")
	es, _ := metaValue(md, "setats.snapshot.end_offset")
	b, err1 := strconv.ParseInt(bs, 10, 32)
	e, err2 := strconv.ParseInt(es, 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return fmt.Errorf("snapshot schema metadata %v: %w", md, err)
	}
	p.Bucket, p.EndOffset = int32(b), e
	if s.NumFields() == 0 || s.Field(0).Name != "_key" {
		return fmt.Errorf("snapshot schema %v does not start with _key", s)
	}
	for _, f := range s.Fields()[1:] {
		p.Columns = append(p.Columns, f.Name)
	}
	return nil
}

func (p *SnapshotPart) append(rec arrow.RecordBatch) error {
	keys, ok := rec.Column(0).(*array.Binary)
	if !ok {
		return fmt.Errorf("snapshot column 0 is %s, want binary _key", rec.Column(0).DataType())
	}
	for i := 0; i < int(rec.NumRows()); i++ {
		p.Keys = append(p.Keys, bytes.Clone(keys.Value(i)))
		vals, err := rowValues(rec, 1, i)
		if err != nil {
			return err
		}
		p.Rows = append(p.Rows, vals)
	}
	return nil
}

// rowValues returns row i's cells of columns from..end.
func rowValues(rec arrow.RecordBatch, from, i int) ([]any, error) {
	vals := make([]any, int(rec.NumCols())-from)
	for c := from; c < int(rec.NumCols()); c++ {
		v, err := CellValue(rec.Column(c), i)
		if err != nil {
			return nil, fmt.Errorf("column %s: %w", rec.ColumnName(c), err)
		}
		vals[c-from] = v
	}
	return vals, nil
}

// LookupRow is one row of a lookup answer: `_index` (the key's row in its request) and the
// requested columns.
type LookupRow struct {
	Index  int32
	Values []any
}

// Lookup runs one DoExchange lookup stream (a CMD descriptor holding cmd) and sends each
// request as one record batch of keyCols (the key rows' values aligned with keyCols); it
// returns one answer per request. A refused request ends the stream: its gRPC status is
// returned with the answers received before it.
func (c *Client) Lookup(ctx context.Context, cmd *setatspb.LookupCommand, keyCols []Col, requests ...[][]any) ([][]LookupRow, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	b, err := proto.Marshal(cmd)
	if err != nil {
		return nil, err
	}
	ex, err := c.FC.DoExchange(ctx)
	if err != nil {
		return nil, err
	}
	schema, err := WriteSchema(keyCols, false)
	if err != nil {
		return nil, err
	}
	w := flight.NewRecordWriter(ex, ipc.WithSchema(schema), ipc.WithAllocator(c.alloc))
	defer w.Close()
	w.SetFlightDescriptor(&flight.FlightDescriptor{Type: flight.DescriptorCMD, Cmd: b})
	var rdr *flight.Reader
	defer func() {
		if rdr != nil {
			rdr.Release()
		}
	}()
	// recvErr is the stream's status once the server ended it.
	recvErr := func(err error) error {
		if rdr == nil {
			if _, rerr := ex.Recv(); rerr != nil && !errors.Is(rerr, io.EOF) {
				return rerr
			}
			return err
		}
		if rerr := rdr.Err(); rerr != nil && !errors.Is(rerr, io.EOF) {
			return rerr
		}
		return err
	}
	var out [][]LookupRow
	for ri, keys := range requests {
		rows := make([]WriteRow, len(keys))
		for i, k := range keys {
			rows[i] = WriteRow{Values: k}
		}
		rec, err := BuildBatch(c.alloc, keyCols, false, rows)
		if err != nil {
			return out, err
		}
		err = w.Write(rec)
		rec.Release()
		if err != nil {
			return out, recvErr(fmt.Errorf("lookup request %d: %w", ri, err))
		}
		if rdr == nil {
			if rdr, err = flight.NewRecordReader(ex, ipc.WithAllocator(c.alloc)); err != nil {
				return out, err
			}
		}
		if !rdr.Next() {
			return out, recvErr(fmt.Errorf("lookup request %d: no answer", ri))
		}
		ans := rdr.RecordBatch()
		idx, ok := ans.Column(0).(*array.Int32)
		if !ok || ans.ColumnName(0) != "_index" {
			return out, fmt.Errorf("lookup answer column 0 is %s %s, want _index int32", ans.ColumnName(0), ans.Column(0).DataType())
		}
		var got []LookupRow
		for i := 0; i < int(ans.NumRows()); i++ {
			vals, err := rowValues(ans, 1, i)
			if err != nil {
				return out, err
			}
			got = append(got, LookupRow{Index: idx.Value(i), Values: vals})
		}
		out = append(out, got)
	}
	if err := ex.CloseSend(); err != nil {
		return out, err
	}
	return out, nil
}
