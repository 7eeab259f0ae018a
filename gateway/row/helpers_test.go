package row

import (
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/setats/setats/catalog"
	"github.com/setats/setats/merge"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Column types used by the tests.
var (
	tBool    = catalog.Type{Kind: catalog.Boolean}
	tTiny    = catalog.Type{Kind: catalog.TinyInt}
	tSmall   = catalog.Type{Kind: catalog.SmallInt}
	tInt     = catalog.Type{Kind: catalog.Int}
	tBig     = catalog.Type{Kind: catalog.BigInt}
	tFloat   = catalog.Type{Kind: catalog.Float}
	tDouble  = catalog.Type{Kind: catalog.Double}
	tDec     = catalog.Type{Kind: catalog.Decimal, Precision: 10, Scale: 2}
	tChar3   = catalog.Type{Kind: catalog.Char, Length: 3}
	tString  = catalog.Type{Kind: catalog.VarChar, Length: 2147483647}
	tBytes   = catalog.Type{Kind: catalog.VarBinary, Length: 2147483647}
	tDate    = catalog.Type{Kind: catalog.Date}
	tTime    = catalog.Type{Kind: catalog.Time, Precision: 3}
	tTs9     = catalog.Type{Kind: catalog.Timestamp, Precision: 9}
	tTs3     = catalog.Type{Kind: catalog.Timestamp, Precision: 3}
	tLtz6    = catalog.Type{Kind: catalog.TimestampLTZ, Precision: 6}
	tTs0     = catalog.Type{Kind: catalog.Timestamp, Precision: 0}
	tVarchar = catalog.Type{Kind: catalog.VarChar, Length: 20}
)

// mkTable builds a table in database "db" with the given columns; pk, part and bkey are column
// indexes (bkey nil: primary key minus partition keys).
func mkTable(name string, cols []catalog.Column, pk, part, bkey []int, buckets int32) *catalog.Table {
	if bkey == nil {
		inPart := map[int]bool{}
		for _, c := range part {
			inPart[c] = true
		}
		for _, c := range pk {
			if !inPart[c] {
				bkey = append(bkey, c)
			}
		}
	}
	tbl := &catalog.Table{
		Database: "db", Name: name, Columns: cols,
		PrimaryKey: pk, PartitionKeys: part, BucketKey: bkey, BucketCount: buckets,
		MergeEngine: merge.Deduplicate,
	}
	for _, c := range pk {
		cols[c].NotNull = true
	}
	tbl.Schema = catalog.ArrowSchema(tbl)
	return tbl
}

// allTypes is a table with one column of every type: pk (id, k), c_big NOT NULL.
func allTypes() *catalog.Table {
	return mkTable("all_types", []catalog.Column{
		{Name: "id", Type: tInt},
		{Name: "k", Type: tString},
		{Name: "c_bool", Type: tBool},
		{Name: "c_tiny", Type: tTiny},
		{Name: "c_small", Type: tSmall},
		{Name: "c_big", Type: tBig, NotNull: true},
		{Name: "c_float", Type: tFloat},
		{Name: "c_double", Type: tDouble},
		{Name: "c_dec", Type: tDec},
		{Name: "c_char", Type: tChar3},
		{Name: "c_str", Type: tString},
		{Name: "c_bin", Type: tBytes},
		{Name: "c_date", Type: tDate},
		{Name: "c_time", Type: tTime},
		{Name: "c_ts", Type: tTs9},
		{Name: "c_ts3", Type: tTs3},
		{Name: "c_ltz", Type: tLtz6},
	}, []int{0, 1}, nil, nil, 4)
}

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

// wantCode fails unless err is a status error with code c.
func wantCode(t testing.TB, err error, c codes.Code) {
	t.Helper()
	if status.Code(err) != c {
		t.Fatalf("want %s error, got %v", c, err)
	}
}
