package row

import (
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/setats/setats/catalog"
	"github.com/setats/setats/merge"
)

// Lookup answers (DoExchange "lookup", proto LookupCommand, SPEC section 13).

// ColIndex is the first column of a lookup answer: the row index (int32) of the key in the
// request batch.
const ColIndex = "_index"

// LookupSchema returns the schema of a lookup answer: `_index` int32 (not null), then the table
// columns at the indexes cols in that order (nil: every column in table order).
func LookupSchema(tbl *catalog.Table, cols []int) *arrow.Schema {
	fields := ProjectedSnapshotSchema(tbl, cols, "", 0, 0).Fields()
	fields[0] = arrow.Field{Name: ColIndex, Type: arrow.PrimitiveTypes.Int32}
	return arrow.NewSchema(fields, nil)
}

// LookupBuilder accumulates found rows and turns them into record batches of LookupSchema. Not
// safe for concurrent use; Release when done.
type LookupBuilder struct {
	tbl  *catalog.Table
	rb   *array.RecordBuilder
	idx  *array.Int32Builder
	proj []int
	cols []func(v any) bool
}

// NewLookupBuilder returns a builder for LookupSchema(tbl, cols).
func NewLookupBuilder(mem memory.Allocator, tbl *catalog.Table, cols []int) *LookupBuilder {
	if cols == nil {
		cols = make([]int, len(tbl.Columns))
		for c := range cols {
			cols[c] = c
		}
	}
	rb := array.NewRecordBuilder(mem, LookupSchema(tbl, cols))
	b := &LookupBuilder{tbl: tbl, rb: rb, idx: rb.Field(0).(*array.Int32Builder), proj: cols, cols: make([]func(any) bool, len(cols))}
	for i := range cols {
		b.cols[i] = valueAppender(rb.Field(1 + i))
	}
	return b
}

// Append adds the full row r found for the key at index i of the request. A value whose Go type
// does not fit its column is ErrInternal; the builder is then unusable.
func (b *LookupBuilder) Append(i int32, r merge.Row) error {
	if len(r) != len(b.tbl.Columns) {
		return errorf(ErrInternal, "table %s: lookup row has %d values, the table %d columns", b.tbl.QualifiedName(), len(r), len(b.tbl.Columns))
	}
	b.idx.Append(i)
	for j, c := range b.proj {
		v := r[c]
		if v == nil {
			b.rb.Field(1 + j).AppendNull()
			continue
		}
		if !b.cols[j](v) {
			return errorf(ErrInternal, "table %s: lookup row: column %q: %v", b.tbl.QualifiedName(), b.tbl.Columns[c].Name,
				fmt.Errorf("value of Go type %T does not fit type %s", v, b.tbl.Columns[c].Type))
		}
	}
	return nil
}

// NewRecordBatch returns the rows appended so far (the caller releases it) and resets.
func (b *LookupBuilder) NewRecordBatch() arrow.RecordBatch { return b.rb.NewRecordBatch() }

// Release frees the builder's memory.
func (b *LookupBuilder) Release() { b.rb.Release() }
