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

// Schema metadata keys of the DoGet changelog stream (proto/README.md).
const (
	// MetaPartition holds the partition name of the stream's bucket.
	MetaPartition = "setats.partition"
	// MetaBucket holds the bucket number, in decimal.
	MetaBucket = "setats.bucket"
)

// CommitTimestampType is the Arrow type of `_commit_timestamp`: timestamp[ms, tz=UTC].
var CommitTimestampType = &arrow.TimestampType{Unit: arrow.Millisecond, TimeZone: "UTC"}

// ChangelogSchema returns the Arrow schema of one bucket's changelog stream (DoGet,
// proto/README.md): `_row_kind` int8, `_offset` int64, `_commit_timestamp` timestamp[ms, UTC]
// (all not null), then the table's columns in table order as in tbl.Schema (with their
// `setats.flink_type` field metadata), and schema metadata `setats.partition` = partition and
// `setats.bucket` = bucket in decimal.
func ChangelogSchema(tbl *catalog.Table, partition string, bucket int32) *arrow.Schema {
	fields := make([]arrow.Field, 0, 3+len(tbl.Columns))
	fields = append(fields,
		arrow.Field{Name: ColRowKind, Type: arrow.PrimitiveTypes.Int8},
		arrow.Field{Name: ColOffset, Type: arrow.PrimitiveTypes.Int64},
		arrow.Field{Name: ColCommitTimestamp, Type: CommitTimestampType},
	)
	if tbl.Schema != nil {
		fields = append(fields, tbl.Schema.Fields()...)
	} else {
		isKey := make(map[int]bool, len(tbl.PrimaryKey))
		for _, c := range tbl.PrimaryKey {
			isKey[c] = true
		}
		for c, col := range tbl.Columns {
			fields = append(fields, arrow.Field{Name: col.Name, Type: col.Type.ArrowType(), Nullable: !col.NotNull && !isKey[c]})
		}
	}
	md := arrow.NewMetadata([]string{MetaPartition, MetaBucket}, []string{partition, strconv.Itoa(int(bucket))})
	return arrow.NewSchema(fields, &md)
}

// ChangelogBuilder accumulates changelog rows of one bucket and turns them into Arrow record
// batches of ChangelogSchema. It is not safe for concurrent use. Call Release when done.
type ChangelogBuilder struct {
	tbl *catalog.Table
	rb  *array.RecordBuilder // the table's columns other than bin's (its first 3 fields stay empty)
	// The reserved columns, in raw Arrow buffers (one value per row; rowcodec.FixedColumn).
	kind, offset, commit *rowcodec.FixedColumn
	cols                 []func(v any) bool // appends one non-null value; false when its Go type does not fit
	bytes                int                // Arrow buffer bytes appended since the last NewRecordBatch, about
	// enc decodes stored values straight into the column builders (AppendEncoded); nil when the
	// schema's column types are not the table's (encErr says why): AppendEncoded then decodes
	// into a row with dec and appends it.
	enc    *rowcodec.ArrowAppender
	encErr error
	dec    rowcodec.ValueDecoder
	// bin[c] holds table column c when it is a string or binary column (nil otherwise): its
	// values go into raw Arrow buffers instead of the RecordBuilder's field builder, which stays
	// empty (the changelog read appends millions of strings per second; rowcodec.BinaryColumn).
	// Each starts a new batch with the capacity of the last one (no regrowth per batch).
	bin []*rowcodec.BinaryColumn
}

// NewChangelogBuilder returns a builder for schema, which must be ChangelogSchema(tbl, ...).
// Arrow memory comes from mem.
func NewChangelogBuilder(mem memory.Allocator, tbl *catalog.Table, schema *arrow.Schema) *ChangelogBuilder {
	rb := array.NewRecordBuilder(mem, schema)
	b := &ChangelogBuilder{
		tbl:    tbl,
		rb:     rb,
		kind:   mustFixedColumn(arrow.PrimitiveTypes.Int8),
		offset: mustFixedColumn(arrow.PrimitiveTypes.Int64),
		commit: mustFixedColumn(CommitTimestampType),
		cols:   make([]func(any) bool, len(tbl.Columns)),
	}
	out := make([]array.Builder, len(tbl.Columns))
	b.bin = make([]*rowcodec.BinaryColumn, len(tbl.Columns))
	for c := range tbl.Columns {
		out[c] = rb.Field(3 + c)
		b.bin[c], b.cols[c] = columnAppender(rb.Field(3 + c))
	}
	b.enc, b.encErr = rowcodec.NewArrowAppender(tbl, out)
	for c, bc := range b.bin {
		if bc != nil && b.enc != nil {
			if err := b.enc.UseBinaryColumn(c, bc); err != nil {
				b.enc, b.encErr = nil, err
			}
		}
	}
	b.dec.Table = tbl
	return b
}

// mustFixedColumn returns a rowcodec.FixedColumn of typ, one of the reserved columns' types (all
// of a width it takes).
func mustFixedColumn(typ arrow.DataType) *rowcodec.FixedColumn {
	c, err := rowcodec.NewFixedColumn(typ)
	if err != nil {
		panic(err)
	}
	return c
}

// columnAppender returns the appender of one data column whose Arrow field builder is fb, for
// ChangelogBuilder and SnapshotBuilder alike: string and binary values go to a new
// rowcodec.BinaryColumn, which it returns; values of any other type go to fb itself (nil column).
func columnAppender(fb array.Builder) (*rowcodec.BinaryColumn, func(any) bool) {
	switch fb.(type) {
	case *array.StringBuilder:
		col := rowcodec.NewBinaryColumn(arrow.BinaryTypes.String)
		return col, binaryAppender(col)
	case *array.BinaryBuilder:
		col := rowcodec.NewBinaryColumn(arrow.BinaryTypes.Binary)
		return col, binaryAppender(col)
	default:
		return nil, valueAppender(fb)
	}
}

// binaryAppender returns a function appending one non-null string or []byte row value to col;
// false for another Go type (or a value past the column's 2 GiB).
func binaryAppender(col *rowcodec.BinaryColumn) func(any) bool {
	return func(v any) bool {
		switch x := v.(type) {
		case string:
			return col.AppendString(x) == nil
		case []byte:
			return col.Append(x) == nil
		}
		return false
	}
}

// valueAppender returns a function appending one non-null row value to fb.
func valueAppender(fb array.Builder) func(any) bool {
	switch b := fb.(type) {
	case *array.BooleanBuilder:
		return appender(b.Append)
	case *array.Int8Builder:
		return appender(b.Append)
	case *array.Int16Builder:
		return appender(b.Append)
	case *array.Int32Builder:
		return appender(b.Append)
	case *array.Int64Builder:
		return appender(b.Append)
	case *array.Float32Builder:
		return appender(b.Append)
	case *array.Float64Builder:
		return appender(b.Append)
	case *array.Decimal128Builder:
		return appender[decimal128.Num](b.Append)
	case *array.StringBuilder:
		return appender(b.Append)
	case *array.BinaryBuilder:
		return appender(b.Append)
	case *array.Date32Builder:
		return appender(b.Append)
	case *array.Time32Builder:
		return appender(b.Append)
	case *array.TimestampBuilder:
		return appender(b.Append)
	}
	return func(any) bool { return false }
}

func appender[T any](app func(T)) func(any) bool {
	return func(v any) bool {
		x, ok := v.(T)
		if ok {
			app(x)
		}
		return ok
	}
}

// Append adds one changelog row: its kind, offset, commit time (ms since epoch) and the full
// row (table column order, nil = null). A value whose Go type does not fit its column is a
// ErrInternal error; the builder is then unusable (Release it).
func (b *ChangelogBuilder) Append(kind merge.RowKind, offset, commitMs int64, r merge.Row) error {
	if len(r) != len(b.cols) {
		return errorf(ErrInternal, "table %s: changelog row at offset %d has %d values, the table %d columns", b.tbl.QualifiedName(), offset, len(r), len(b.cols))
	}
	b.kind.Append(int64(kind))
	b.offset.Append(offset)
	b.commit.Append(commitMs)
	b.bytes += RowBytes(r)
	for c, v := range r {
		if v == nil {
			if b.bin[c] != nil {
				b.bin[c].AppendNull()
			} else {
				b.rb.Field(3 + c).AppendNull()
			}
			continue
		}
		if !b.cols[c](v) {
			return errorf(ErrInternal, "table %s: changelog row at offset %d: column %q: %v", b.tbl.QualifiedName(), offset, b.tbl.Columns[c].Name,
				fmt.Errorf("value of Go type %T does not fit type %s", v, b.tbl.Columns[c].Type))
		}
	}
	return nil
}

// EncodedRowBytes returns RowBytes of the row whose stored value (rowcodec.EncodeValue of the
// full row) is val, without decoding it into a row: what AppendEncoded will add to Bytes. A
// malformed value is ErrInternal.
func (b *ChangelogBuilder) EncodedRowBytes(val []byte) (int, error) {
	if b.enc == nil {
		r, err := b.dec.Decode(val)
		if err != nil {
			return 0, errorf(ErrInternal, "table %s: changelog row: %v", b.tbl.QualifiedName(), err)
		}
		return RowBytes(r), nil
	}
	n, err := b.enc.Size(val)
	if err != nil {
		return 0, errorf(ErrInternal, "table %s: changelog row: %v", b.tbl.QualifiedName(), err)
	}
	return 17 + n, nil
}

// MaxEncodedRowBytes returns an upper bound of EncodedRowBytes(val) from the value's length alone,
// without reading it: 17 + len(val) + 16 per table column. (Per column the Arrow estimate exceeds
// the encoded bytes by at most 16: 8 for a null, which takes no value bytes, at most 14 for a
// DECIMAL, which takes at least 2, at most 7 for the others, rowcodec.EncodeValue.) A caller
// bounding a record batch needs EncodedRowBytes only when this bound does not fit, so most
// values are parsed once, by AppendEncoded.
func (b *ChangelogBuilder) MaxEncodedRowBytes(val []byte) int {
	return 17 + len(val) + 16*len(b.tbl.Columns)
}

// AppendEncoded adds one changelog row like Append, given as its stored value (rowcodec.EncodeValue
// of the full row, as store.Table.ReadFunc passes it), decoded straight into the column
// builders: no merge.Row, no boxed values, no copy of strings other than the one into the
// batch's buffers. val may be reused after the call. A malformed value is ErrInternal; the
// builder is then unusable (Release it).
func (b *ChangelogBuilder) AppendEncoded(kind merge.RowKind, offset, commitMs int64, val []byte) error {
	if b.enc == nil {
		r, err := b.dec.Decode(val)
		if err != nil {
			return errorf(ErrInternal, "table %s: changelog row at offset %d: %v", b.tbl.QualifiedName(), offset, err)
		}
		return b.Append(kind, offset, commitMs, r)
	}
	b.kind.Append(int64(kind))
	b.offset.Append(offset)
	b.commit.Append(commitMs)
	n, err := b.enc.Append(val)
	if err != nil {
		return errorf(ErrInternal, "table %s: changelog row at offset %d: %v", b.tbl.QualifiedName(), offset, err)
	}
	b.bytes += 17 + n
	return nil
}

// Len returns the number of rows appended since the last NewRecordBatch.
func (b *ChangelogBuilder) Len() int { return b.kind.Len() }

// Bytes returns about how many bytes of Arrow buffers the rows appended since the last
// NewRecordBatch take (the sum of their RowBytes).
func (b *ChangelogBuilder) Bytes() int { return b.bytes }

// RowBytes returns about how many bytes of Arrow buffers a changelog row of r takes: 17 for the
// reserved columns, 8 per column value (16 for a DECIMAL), plus the length of every string and
// byte value.
func RowBytes(r merge.Row) int {
	n := 17 + 8*len(r)
	for _, v := range r {
		switch x := v.(type) {
		case string:
			n += len(x)
		case []byte:
			n += len(x)
		case decimal128.Num:
			n += 8
		}
	}
	return n
}

// NewRecordBatch returns the rows appended so far as a record batch (the caller releases it) and
// resets the builder for the next batch, reserving room for as many rows and string bytes as
// this one had (a stream's batches are mostly alike; memory per builder stays one batch).
func (b *ChangelogBuilder) NewRecordBatch() arrow.RecordBatch {
	b.bytes = 0
	rows := b.Len()
	cols := make([]arrow.Array, 3+len(b.bin))
	cols[0], cols[1], cols[2] = b.kind.NewArray(), b.offset.NewArray(), b.commit.NewArray()
	for i := 3; i < len(cols); i++ {
		if b.bin[i-3] != nil {
			cols[i] = b.bin[i-3].NewArray()
		} else {
			cols[i] = b.rb.Field(i).NewArray()
			if rows > 0 {
				b.rb.Field(i).Reserve(rows)
			}
		}
	}
	rec := array.NewRecordBatch(b.rb.Schema(), cols, int64(rows))
	for _, a := range cols {
		a.Release()
	}
	return rec
}

// Discard drops the rows appended since the last NewRecordBatch (a read that turned out not to
// be a result, store.Table.ReadFunc).
func (b *ChangelogBuilder) Discard() { b.NewRecordBatch().Release() }

// Release frees the builder's memory.
func (b *ChangelogBuilder) Release() { b.rb.Release() }
