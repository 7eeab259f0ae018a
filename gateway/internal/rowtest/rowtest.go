// Package rowtest holds the table shapes and rows that the tests of the gateway's row packages
// (row, rowcodec, buckethash, partname) share. It is test support: no product code imports it.
package rowtest

import (
	"math"
	"strconv"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/setats/setats/catalog"
	"github.com/setats/setats/merge"
)

// Column types used by the tests.
var (
	Bool    = catalog.Type{Kind: catalog.Boolean}
	Tiny    = catalog.Type{Kind: catalog.TinyInt}
	Small   = catalog.Type{Kind: catalog.SmallInt}
	Int     = catalog.Type{Kind: catalog.Int}
	Big     = catalog.Type{Kind: catalog.BigInt}
	Float   = catalog.Type{Kind: catalog.Float}
	Double  = catalog.Type{Kind: catalog.Double}
	Dec     = catalog.Type{Kind: catalog.Decimal, Precision: 10, Scale: 2}
	Char3   = catalog.Type{Kind: catalog.Char, Length: 3}
	String  = catalog.Type{Kind: catalog.VarChar, Length: 2147483647}
	Bytes   = catalog.Type{Kind: catalog.VarBinary, Length: 2147483647}
	Date    = catalog.Type{Kind: catalog.Date}
	Time    = catalog.Type{Kind: catalog.Time, Precision: 3}
	Ts9     = catalog.Type{Kind: catalog.Timestamp, Precision: 9}
	Ts3     = catalog.Type{Kind: catalog.Timestamp, Precision: 3}
	Ltz6    = catalog.Type{Kind: catalog.TimestampLTZ, Precision: 6}
	Ts0     = catalog.Type{Kind: catalog.Timestamp, Precision: 0}
	Varchar = catalog.Type{Kind: catalog.VarChar, Length: 20}
)

// Table builds a deduplicate table in database "db" with the given columns; pk, part and bkey
// are column indexes (bkey nil: primary key minus partition keys). Primary-key columns are made
// NOT NULL and the Arrow schema is filled in.
func Table(name string, cols []catalog.Column, pk, part, bkey []int, buckets int32) *catalog.Table {
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

// AllTypes is a table with one column of every type: pk (id, k), c_big NOT NULL, 4 buckets.
func AllTypes() *catalog.Table {
	return Table("all_types", []catalog.Column{
		{Name: "id", Type: Int},
		{Name: "k", Type: String},
		{Name: "c_bool", Type: Bool},
		{Name: "c_tiny", Type: Tiny},
		{Name: "c_small", Type: Small},
		{Name: "c_big", Type: Big, NotNull: true},
		{Name: "c_float", Type: Float},
		{Name: "c_double", Type: Double},
		{Name: "c_dec", Type: Dec},
		{Name: "c_char", Type: Char3},
		{Name: "c_str", Type: String},
		{Name: "c_bin", Type: Bytes},
		{Name: "c_date", Type: Date},
		{Name: "c_time", Type: Time},
		{Name: "c_ts", Type: Ts9},
		{Name: "c_ts3", Type: Ts3},
		{Name: "c_ltz", Type: Ltz6},
	}, []int{0, 1}, nil, nil, 4)
}

// FullRow is a row of AllTypes with every column set.
func FullRow(id int32, k string) merge.Row {
	return merge.Row{
		id, k, true, int8(-3), int16(300), int64(1) << 40, float32(1.5), -2.25,
		decimal128.FromI64(-1234), "abc", "héllo", []byte{0, 1, 2}, arrow.Date32(20786), arrow.Time32(36000123),
		arrow.Timestamp(1_795_946_400_123_456_789), arrow.Timestamp(1_795_946_400_123), arrow.Timestamp(-1),
	}
}

// NullsRow is a row of AllTypes with every nullable column null (the key columns and c_big set
// to their zero values).
func NullsRow() merge.Row {
	r := make(merge.Row, 17)
	r[0], r[1], r[5] = int32(0), "", int64(0)
	return r
}

// ExtremesRow is a row of AllTypes with extreme values: minimums, infinities, NaN, empty and
// zero-byte strings, multi-byte UTF-8.
func ExtremesRow() merge.Row {
	return merge.Row{
		int32(math.MinInt32), "\x00\xff", false, int8(math.MinInt8), int16(math.MinInt16), int64(math.MinInt64),
		float32(math.Inf(-1)), math.NaN(), decimal128.New(math.MinInt64, 0), "", "日本語🙂", []byte{},
		arrow.Date32(math.MinInt32), arrow.Time32(86399999), arrow.Timestamp(math.MaxInt64), arrow.Timestamp(math.MinInt64), arrow.Timestamp(0),
	}
}

// SeedsTable is the seeds' table shape: id, dt, name, address STRING, pk (id, dt), partitioned
// by dt, 4 buckets.
func SeedsTable() *catalog.Table {
	return Table("seeds", []catalog.Column{
		{Name: "id", Type: String}, {Name: "dt", Type: String}, {Name: "name", Type: String}, {Name: "address", Type: String},
	}, []int{0, 1}, []int{1}, nil, 4)
}

// SeedsRows returns n rows of SeedsTable's shape, all in partition dt=2026-11-29.
func SeedsRows(n int) [][]any {
	rows := make([][]any, n)
	for i := range rows {
		rows[i] = []any{"user-" + strconv.Itoa(i*7919), "2026-11-29", "name-" + strconv.Itoa(i), "No. " + strconv.Itoa(i) + " Zhongguancun Street, Haidian, Beijing"}
	}
	return rows
}
