package row

import (
	"errors"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/setats/setats/catalog"
	"github.com/setats/setats/gateway/internal/rowtest"
	"github.com/setats/setats/gateway/rowcodec"
	"github.com/setats/setats/merge"
)

// buildRecord builds a record of schema from rows (one value per field, nil = null); a field
// named _row_kind takes merge.RowKind or int8 values.
func buildRecord(t testing.TB, mem memory.Allocator, schema *arrow.Schema, rows [][]any) arrow.RecordBatch {
	t.Helper()
	rb := array.NewRecordBuilder(mem, schema)
	defer rb.Release()
	apps := make([]func(any) bool, schema.NumFields())
	for f := range apps {
		apps[f] = valueAppender(rb.Field(f))
	}
	for _, r := range rows {
		for f, v := range r {
			if k, ok := v.(merge.RowKind); ok {
				v = int8(k)
			}
			if v == nil {
				rb.Field(f).AppendNull()
			} else if !apps[f](v) {
				t.Fatalf("field %s: cannot append %T", schema.Field(f).Name, v)
			}
		}
	}
	return rb.NewRecordBatch()
}

// field returns the table column c as an Arrow field (for building DoPut schemas).
func field(tbl *catalog.Table, name string) arrow.Field {
	return tbl.Schema.Field(tbl.ColumnIndex(name))
}

// wantKind fails unless err is an *Error of the kind.
func wantKind(t testing.TB, err error, kind error) {
	t.Helper()
	var typed *Error
	if !errors.Is(err, kind) || !errors.As(err, &typed) {
		t.Fatalf("want an error of kind %v, got %v", kind, err)
	}
}

// encodedTestRows returns rows of tbl (rowtest.AllTypes) covering every column type, nulls,
// extreme values and a negative DECIMAL, and their stored values (rowcodec.EncodeValue); the last
// value was written when the table had three columns, so its row has nulls for the others.
func encodedTestRows(tbl *catalog.Table) ([]merge.Row, [][]byte) {
	neg := rowtest.FullRow(3, "neg")
	neg[8] = decimal128.GetMaxValue(38).Negate()
	short := *tbl
	short.Columns = tbl.Columns[:3]
	rows := []merge.Row{rowtest.FullRow(1, "a"), rowtest.NullsRow(), rowtest.ExtremesRow(), neg}
	vals := make([][]byte, 0, len(rows)+1)
	for _, r := range rows {
		vals = append(vals, rowcodec.EncodeValue(tbl, r))
	}
	vals = append(vals, rowcodec.EncodeValue(&short, merge.Row{int32(4), "old", true}))
	old := make(merge.Row, len(tbl.Columns))
	old[0], old[1], old[2] = int32(4), "old", true
	return append(rows, old), vals
}
