package row

import (
	"fmt"
	"strconv"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/setats/setats/catalog"
	"github.com/setats/setats/gateway/rowcodec"
	"github.com/setats/setats/merge"
)

// Snapshot stream (DoGet with ChangelogTicket.snapshot, proto/README.md "Snapshot reads").
const (
	// ColKey is the reserved column of a snapshot stream holding a row's encoded primary key
	// (EncodeKey): opaque to clients, the resume key of the next read.
	ColKey = "_key"
	// MetaSnapshotEndOffset holds the end offset E of the snapshot view, in decimal: the rows
	// are the fold of the changelog rows [0, E).
	MetaSnapshotEndOffset = "setats.snapshot.end_offset"
)

// SnapshotSchema returns the Arrow schema of one bucket's snapshot stream: `_key` binary (not
// null), then the table's columns in table order as in tbl.Schema, with schema metadata
// setats.partition, setats.bucket and setats.snapshot.end_offset = endOffset.
func SnapshotSchema(tbl *catalog.Table, partition string, bucket int32, endOffset int64) *arrow.Schema {
	return ProjectedSnapshotSchema(tbl, nil, partition, bucket, endOffset)
}

// ProjectedSnapshotSchema is SnapshotSchema with only the table columns at the indexes cols, in
// that order, after `_key` (nil: every column in table order; SnapshotRead.columns).
func ProjectedSnapshotSchema(tbl *catalog.Table, cols []int, partition string, bucket int32, endOffset int64) *arrow.Schema {
	all := ChangelogSchema(tbl, partition, bucket).Fields()[3:]
	fields := make([]arrow.Field, 0, 1+len(tbl.Columns))
	fields = append(fields, arrow.Field{Name: ColKey, Type: arrow.BinaryTypes.Binary})
	if cols == nil {
		fields = append(fields, all...)
	} else {
		for _, c := range cols {
			fields = append(fields, all[c])
		}
	}
	md := arrow.NewMetadata([]string{MetaPartition, MetaBucket, MetaSnapshotEndOffset},
		[]string{partition, strconv.Itoa(int(bucket)), strconv.FormatInt(endOffset, 10)})
	return arrow.NewSchema(fields, &md)
}

// SnapshotBuilder accumulates snapshot rows and turns them into record batches of
// SnapshotSchema (or ProjectedSnapshotSchema). Not safe for concurrent use; Release when done.
type SnapshotBuilder struct {
	tbl *catalog.Table
	rb  *array.RecordBuilder // the output columns other than key's and bin's (which stay empty there)
	key *rowcodec.BinaryColumn
	// bin[i] holds output column i when it is a string or binary column (nil otherwise): raw
	// Arrow buffers reused once a batch is released, as in ChangelogBuilder.
	bin    []*rowcodec.BinaryColumn
	proj   []int // table column of each output column
	cols   []func(v any) bool
	bytes  int
	enc    *rowcodec.ArrowAppender // AppendEncoded's decoder; nil with encErr set when it cannot be made
	encErr error
}

// NewSnapshotBuilder returns a builder for schema, which must be SnapshotSchema(tbl, ...).
func NewSnapshotBuilder(mem memory.Allocator, tbl *catalog.Table, schema *arrow.Schema) *SnapshotBuilder {
	return NewProjectedSnapshotBuilder(mem, tbl, nil, schema)
}

// NewProjectedSnapshotBuilder returns a builder for schema, which must be
// ProjectedSnapshotSchema(tbl, cols, ...); Append still takes full rows.
func NewProjectedSnapshotBuilder(mem memory.Allocator, tbl *catalog.Table, cols []int, schema *arrow.Schema) *SnapshotBuilder {
	if cols == nil {
		cols = make([]int, len(tbl.Columns))
		for c := range cols {
			cols[c] = c
		}
	}
	rb := array.NewRecordBuilder(mem, schema)
	b := &SnapshotBuilder{tbl: tbl, rb: rb, key: rowcodec.NewBinaryColumn(arrow.BinaryTypes.Binary), proj: cols,
		cols: make([]func(any) bool, len(cols)), bin: make([]*rowcodec.BinaryColumn, len(cols))}
	out := make([]array.Builder, len(tbl.Columns))
	for i, c := range cols {
		b.bin[i], b.cols[i] = columnAppender(rb.Field(1 + i))
		if c >= 0 && c < len(out) {
			if out[c] != nil {
				b.encErr = fmt.Errorf("column %q projected twice", tbl.Columns[c].Name)
			}
			out[c] = rb.Field(1 + i)
		}
	}
	if b.encErr == nil {
		b.enc, b.encErr = rowcodec.NewArrowAppender(tbl, out)
	}
	for i, bc := range b.bin {
		if bc != nil && b.enc != nil {
			if err := b.enc.UseBinaryColumn(cols[i], bc); err != nil {
				b.enc, b.encErr = nil, err
			}
		}
	}
	return b
}

// Append adds one row with its encoded key. A value whose Go type does not fit its column is
// ErrInternal; the builder is then unusable.
func (b *SnapshotBuilder) Append(key []byte, r merge.Row) error {
	if len(r) != len(b.tbl.Columns) {
		return errorf(ErrInternal, "table %s: snapshot row has %d values, the table %d columns", b.tbl.QualifiedName(), len(r), len(b.tbl.Columns))
	}
	if err := b.key.Append(key); err != nil {
		return errorf(ErrInternal, "table %s: snapshot row: key: %v", b.tbl.QualifiedName(), err)
	}
	b.bytes += len(key)
	for i, c := range b.proj {
		v := r[c]
		b.bytes += valueBytes(v)
		if v == nil {
			if b.bin[i] != nil {
				b.bin[i].AppendNull()
			} else {
				b.rb.Field(1 + i).AppendNull()
			}
			continue
		}
		if !b.cols[i](v) {
			return errorf(ErrInternal, "table %s: snapshot row: column %q: %v", b.tbl.QualifiedName(), b.tbl.Columns[c].Name,
				fmt.Errorf("value of Go type %T does not fit type %s", v, b.tbl.Columns[c].Type))
		}
	}
	return nil
}

// AppendEncoded adds one row given as its encoded key and its stored value (rowcodec.EncodeValue
// of the full row; store.SnapshotView.ScanEncoded), decoding the value straight into the column
// builders; key and val may be reused after the call. A malformed value is ErrInternal; the
// builder is then unusable.
func (b *SnapshotBuilder) AppendEncoded(key, val []byte) error {
	if b.encErr != nil {
		return errorf(ErrInternal, "table %s: snapshot row: %v", b.tbl.QualifiedName(), b.encErr)
	}
	if err := b.key.Append(key); err != nil {
		return errorf(ErrInternal, "table %s: snapshot row: key: %v", b.tbl.QualifiedName(), err)
	}
	n, err := b.enc.Append(val)
	if err != nil {
		return errorf(ErrInternal, "table %s: snapshot row: %v", b.tbl.QualifiedName(), err)
	}
	b.bytes += len(key) + n
	return nil
}

// LastKey appends the encoded key of the last row appended since the last NewRecordBatch to dst
// and returns it (dst unchanged when there is none): the resume key of the next scan.
func (b *SnapshotBuilder) LastKey(dst []byte) []byte {
	if n := b.key.Len(); n > 0 {
		return append(dst, b.key.Value(n-1)...)
	}
	return dst
}

// Len returns the rows appended since the last NewRecordBatch; Bytes about their Arrow size.
func (b *SnapshotBuilder) Len() int   { return b.key.Len() }
func (b *SnapshotBuilder) Bytes() int { return b.bytes }

// NewRecordBatch returns the rows appended so far (the caller releases it) and resets.
func (b *SnapshotBuilder) NewRecordBatch() arrow.RecordBatch {
	b.bytes = 0
	rows := b.key.Len()
	cols := make([]arrow.Array, 1+len(b.bin))
	cols[0] = b.key.NewArray()
	for i := 1; i < len(cols); i++ {
		if b.bin[i-1] != nil {
			cols[i] = b.bin[i-1].NewArray()
		} else {
			cols[i] = b.rb.Field(i).NewArray()
		}
	}
	rec := array.NewRecordBatch(b.rb.Schema(), cols, int64(rows))
	for _, a := range cols {
		a.Release()
	}
	return rec
}

// Release frees the builder's memory.
func (b *SnapshotBuilder) Release() { b.rb.Release() }

// valueBytes is RowBytes' estimate for one value: 8, 16 for a DECIMAL, plus the length of a
// string or byte value.
func valueBytes(v any) int {
	switch x := v.(type) {
	case string:
		return 8 + len(x)
	case []byte:
		return 8 + len(x)
	case decimal128.Num:
		return 16
	}
	return 8
}
