package row

import (
	"fmt"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/setats/setats/catalog"
	"github.com/setats/setats/gateway/partname"
	"github.com/setats/setats/internal/culprit"
	"github.com/setats/setats/merge"
)

// Reserved column names (proto/README.md "Reserved columns").
const (
	// ColRowKind is the int8 Flink RowKind byte column: optional in DoPut, first in DoGet.
	ColRowKind = "_row_kind"
	// ColOffset is the int64 changelog offset column of DoGet.
	ColOffset = "_offset"
	// ColCommitTimestamp is the timestamp[ms, UTC] commit time column of DoGet.
	ColCommitTimestamp = "_commit_timestamp"
)

// Batch is one decoded write batch (SPEC section 3): rows in the order they were sent.
//
// Declared has one flag per table column: whether the writer sent that column. Rows[i] has one
// value per table column (table order); undeclared columns are nil and ignored by the merge.
// Kinds[i] is the RowKind of Rows[i]. len(Kinds) == len(Rows).
type Batch struct {
	Declared []bool
	Kinds    []merge.RowKind
	Rows     []merge.Row
}

// Len returns the number of rows.
func (b *Batch) Len() int { return len(b.Rows) }

// Decode validates an Arrow record batch sent by DoPut and converts it into a Batch.
//
// The record's columns are a subset of the table's, by name, that includes the whole primary key,
// plus optionally `_row_kind` (int8, values 0..3). Without `_row_kind` every row is an upsert
// (+U). The whole record is checked before anything is returned, so a bad record yields no rows.
// Errors are ErrInvalid errors naming the table (db.table) and the column, and
// the row index where one is at fault: an unknown, duplicate or reserved (`_`-prefixed) column, a
// column whose Arrow type differs from its table type (expected and actual type named), a missing
// primary-key column, a null in a primary-key or NOT NULL column, a null or out-of-range
// `_row_kind` (SPEC sections 3 and 6, proto/README.md), and malformed Arrow data from the wire
// (string and binary arrays must pass the array's ValidateFull: offsets within the data and
// non-decreasing, strings valid UTF-8; any other inconsistency that makes reading the record
// panic is reported as well, so that a malicious record cannot take the gateway down).
//
// The returned rows do not point into the record's buffers: the caller may release rec at once.
func Decode(tbl *catalog.Table, rec arrow.RecordBatch) (b *Batch, err error) {
	defer func() {
		if r := recover(); r != nil {
			b, err = nil, invalidf(tbl, "malformed Arrow record batch: %v", r)
		}
	}()
	ncols := len(tbl.Columns)
	schema := rec.Schema()
	nrows := int(rec.NumRows())
	colOf := make([]int, schema.NumFields()) // record field -> table column, -1 for _row_kind
	declared := make([]bool, ncols)
	kindField := -1
	for f, field := range schema.Fields() {
		name := field.Name
		if name == ColRowKind {
			if kindField >= 0 {
				return nil, invalidf(tbl, "duplicate column %q", name)
			}
			if field.Type.ID() != arrow.INT8 {
				return nil, invalidf(tbl, "column %q: expected Arrow type int8, got %s", name, field.Type)
			}
			kindField = f
			colOf[f] = -1
			continue
		}
		if strings.HasPrefix(name, "_") {
			return nil, invalidf(tbl, "column %q: names starting with '_' are reserved (only %q may be written)", name, ColRowKind)
		}
		c := tbl.ColumnIndex(name)
		if c < 0 {
			return nil, invalidf(tbl, "unknown column %s", culprit.Quote(name))
		}
		if declared[c] {
			return nil, invalidf(tbl, "duplicate column %q", name)
		}
		want := tbl.Columns[c].Type.ArrowType()
		if !arrow.TypeEqual(field.Type, want) {
			return nil, invalidf(tbl, "column %q (%s): expected Arrow type %s, got %s", name, tbl.Columns[c].Type, want, field.Type)
		}
		declared[c] = true
		colOf[f] = c
	}
	isKey := make([]bool, ncols)
	for _, c := range tbl.PrimaryKey {
		isKey[c] = true
		if !declared[c] {
			return nil, invalidf(tbl, "missing primary-key column %q", tbl.Columns[c].Name)
		}
	}
	// Nulls and row kinds, before anything is converted.
	for f, c := range colOf {
		arr := rec.Column(f)
		if arr.Len() != nrows {
			return nil, invalidf(tbl, "column %q has %d values, the record %d rows", schema.Field(f).Name, arr.Len(), nrows)
		}
		if v, ok := arr.(fullValidator); ok { // *array.String, *array.Binary
			if err := validateFull(v); err != nil {
				return nil, invalidf(tbl, "column %q: malformed Arrow array: %v", schema.Field(f).Name, err)
			}
		}
		if c < 0 {
			kinds := arr.(*array.Int8)
			for i := 0; i < nrows; i++ {
				if kinds.IsNull(i) {
					return nil, invalidf(tbl, "column %q row %d: null row kind", ColRowKind, i)
				}
				if v := kinds.Value(i); v < 0 || v > int8(merge.Delete) {
					return nil, invalidf(tbl, "column %q row %d: invalid row kind %d (want 0 +I, 1 -U, 2 +U or 3 -D)", ColRowKind, i, v)
				}
			}
			continue
		}
		if arr.NullN() == 0 {
			continue
		}
		col := tbl.Columns[c]
		if !isKey[c] && !col.NotNull {
			continue
		}
		for i := 0; i < nrows; i++ {
			if arr.IsNull(i) {
				if isKey[c] {
					return nil, invalidf(tbl, "column %q row %d: null value in primary-key column", col.Name, i)
				}
				return nil, invalidf(tbl, "column %q row %d: null value in NOT NULL column", col.Name, i)
			}
		}
	}

	b = &Batch{Declared: declared, Kinds: make([]merge.RowKind, nrows), Rows: make([]merge.Row, nrows)}
	backing := make([]any, nrows*ncols)
	for i := range b.Rows {
		b.Rows[i] = merge.Row(backing[i*ncols : (i+1)*ncols : (i+1)*ncols])
	}
	for f, c := range colOf {
		arr := rec.Column(f)
		if c < 0 {
			for i, v := range arr.(*array.Int8).Int8Values() {
				b.Kinds[i] = merge.RowKind(v)
			}
			continue
		}
		if err := fillColumn(tbl, c, arr, b.Rows); err != nil {
			return nil, err
		}
	}
	if kindField < 0 {
		for i := range b.Kinds {
			b.Kinds[i] = merge.UpdateAfter
		}
	}
	return b, nil
}

// fullValidator is an Arrow array with a full (O(n)) consistency check.
type fullValidator interface{ ValidateFull() error }

// validateFull runs v's ValidateFull and turns a panic into an error: arrow-go's check of a
// string array slices the values by each offset before it checks the next one, so offsets such
// as [0, 5, 3] over 3 bytes make the check itself panic.
func validateFull(v fullValidator) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%v", r)
		}
	}()
	return v.ValidateFull()
}

// fillColumn sets column c of every row from arr. Strings and byte slices are copied out of the
// Arrow buffers with one allocation per column.
func fillColumn(tbl *catalog.Table, c int, arr arrow.Array, rows []merge.Row) error {
	switch a := arr.(type) {
	case *array.Boolean:
		fill(a, rows, c, a.Value)
	case *array.Int8:
		fill(a, rows, c, a.Value)
	case *array.Int16:
		fill(a, rows, c, a.Value)
	case *array.Int32:
		fill(a, rows, c, a.Value)
	case *array.Int64:
		fill(a, rows, c, a.Value)
	case *array.Float32:
		fill(a, rows, c, a.Value)
	case *array.Float64:
		fill(a, rows, c, a.Value)
	case *array.Decimal128:
		fill(a, rows, c, a.Value)
	case *array.Date32:
		fill(a, rows, c, a.Value)
	case *array.Time32:
		fill(a, rows, c, a.Value)
	case *array.Timestamp:
		fill(a, rows, c, a.Value)
	case *array.String:
		data := string(a.ValueBytes()) // one copy; values are substrings of it
		offs := a.ValueOffsets()
		base := offs[0]
		for i := range rows {
			if a.IsValid(i) {
				rows[i][c] = data[offs[i]-base : offs[i+1]-base]
			}
		}
	case *array.Binary:
		data := append([]byte(nil), a.ValueBytes()...)
		offs := a.ValueOffsets()
		base := offs[0]
		for i := range rows {
			if a.IsValid(i) {
				lo, hi := offs[i]-base, offs[i+1]-base
				rows[i][c] = data[lo:hi:hi]
			}
		}
	default:
		return invalidf(tbl, "column %q: unsupported Arrow array %s", tbl.Columns[c].Name, arr.DataType())
	}
	return nil
}

// fill sets column c of every row to value(i), nil where arr is null.
func fill[T any](arr arrow.Array, rows []merge.Row, c int, value func(int) T) {
	if arr.NullN() == 0 {
		for i := range rows {
			rows[i][c] = value(i)
		}
		return
	}
	for i := range rows {
		if arr.IsValid(i) {
			rows[i][c] = value(i)
		}
	}
}

// Validate checks a Batch (store.Table.Write calls it for every batch, decoded or built in code):
// shapes (len(Declared) == number of table columns, one kind per row, every row full table
// width), valid kinds, declared primary-key columns, non-null primary-key values, values of their
// columns' types (Go type, valid UTF-8 strings, decimals within their precision) and partition-key
// values that have a partition name (DATE and TIMESTAMP in the years 0000..9999, TIME within a
// day). Errors are ErrInvalid errors naming the table, column and row.
func (b *Batch) Validate(tbl *catalog.Table) error {
	ncols := len(tbl.Columns)
	if b.Declared != nil && len(b.Declared) != ncols {
		return invalidf(tbl, "batch declares %d columns, the table has %d", len(b.Declared), ncols)
	}
	if len(b.Kinds) != len(b.Rows) {
		return invalidf(tbl, "batch has %d row kinds for %d rows", len(b.Kinds), len(b.Rows))
	}
	for _, c := range tbl.PrimaryKey {
		if b.Declared != nil && !b.Declared[c] {
			return invalidf(tbl, "missing primary-key column %q", tbl.Columns[c].Name)
		}
	}
	isKey := make([]bool, ncols)
	for _, c := range tbl.PrimaryKey {
		isKey[c] = true
	}
	isPart := make([]bool, ncols)
	for _, c := range tbl.PartitionKeys {
		isPart[c] = true
	}
	for i, r := range b.Rows {
		if !b.Kinds[i].Valid() {
			return invalidf(tbl, "column %q row %d: invalid row kind %d (want 0 +I, 1 -U, 2 +U or 3 -D)", ColRowKind, i, uint8(b.Kinds[i]))
		}
		if len(r) != ncols {
			return invalidf(tbl, "row %d has %d values, the table %d columns", i, len(r), ncols)
		}
		for c, v := range r {
			if b.Declared != nil && !b.Declared[c] {
				continue
			}
			col := &tbl.Columns[c]
			if v == nil {
				if isKey[c] {
					return invalidf(tbl, "column %q row %d: null value in primary-key column", col.Name, i)
				}
				if col.NotNull {
					return invalidf(tbl, "column %q row %d: null value in NOT NULL column", col.Name, i)
				}
				continue
			}
			if err := checkValue(col.Type, v); err != nil {
				return invalidf(tbl, "column %q row %d: %v", col.Name, i, err)
			}
			if isPart[c] {
				if err := partname.CheckValue(col.Type, v); err != nil {
					return invalidf(tbl, "column %q row %d: %v", col.Name, i, err)
				}
			}
		}
	}
	return nil
}
