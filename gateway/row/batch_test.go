package row

import (
	"github.com/setats/setats/gateway/internal/rowtest"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/setats/setats/catalog"
	"github.com/setats/setats/gateway/partname"
	"github.com/setats/setats/merge"
)

func TestDecodeAllTypes(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	tbl := rowtest.AllTypes()
	fields := append([]arrow.Field{{Name: ColRowKind, Type: arrow.PrimitiveTypes.Int8}}, tbl.Schema.Fields()...)
	schema := arrow.NewSchema(fields, nil)
	want := []merge.Row{rowtest.FullRow(1, "a"), rowtest.FullRow(2, ""), {int32(3), "z", nil, nil, nil, int64(7), nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil}}
	kinds := []merge.RowKind{merge.Insert, merge.Delete, merge.UpdateBefore}
	var rows [][]any
	for i, r := range want {
		rows = append(rows, append([]any{kinds[i]}, r...))
	}
	rec := buildRecord(t, mem, schema, rows)
	b, err := Decode(tbl, rec)
	rec.Release() // the batch must not point into Arrow memory
	if err != nil {
		t.Fatal(err)
	}
	for c, d := range b.Declared {
		if !d {
			t.Errorf("column %d not declared", c)
		}
	}
	if err := b.Validate(tbl); err != nil {
		t.Fatal(err)
	}
	for i := range want {
		if b.Kinds[i] != kinds[i] {
			t.Errorf("row %d: kind %s, want %s", i, b.Kinds[i], kinds[i])
		}
		if !merge.RowEqual(b.Rows[i], want[i]) {
			t.Errorf("row %d:\n got %v\nwant %v", i, b.Rows[i], want[i])
		}
	}
}

func TestDecodeSubsetWithoutRowKind(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	tbl := rowtest.AllTypes()
	// Columns in another order than the table's, and a slice of a larger record.
	schema := arrow.NewSchema([]arrow.Field{field(tbl, "c_str"), field(tbl, "k"), field(tbl, "id"), field(tbl, "c_bin")}, nil)
	rec := buildRecord(t, mem, schema, [][]any{
		{"skip", "x", int32(0), nil},
		{"s1", "k1", int32(1), []byte("b1")},
		{nil, "k2", int32(2), []byte{}},
	})
	sliced := rec.NewSlice(1, 3)
	rec.Release()
	b, err := Decode(tbl, sliced)
	sliced.Release()
	if err != nil {
		t.Fatal(err)
	}
	wantDeclared := map[string]bool{"c_str": true, "k": true, "id": true, "c_bin": true}
	for c, col := range tbl.Columns {
		if b.Declared[c] != wantDeclared[col.Name] {
			t.Errorf("declared[%s] = %v", col.Name, b.Declared[c])
		}
	}
	if len(b.Rows) != 2 {
		t.Fatalf("got %d rows", len(b.Rows))
	}
	for i, k := range b.Kinds {
		if k != merge.UpdateAfter {
			t.Errorf("row %d kind %s, want +U", i, k)
		}
	}
	r0, r1 := b.Rows[0], b.Rows[1]
	if r0[0] != int32(1) || r0[1] != "k1" || r0[10] != "s1" || string(r0[11].([]byte)) != "b1" || r0[2] != nil || r0[5] != nil {
		t.Errorf("row 0 = %v", r0)
	}
	if r1[10] != nil || r1[11] == nil || len(r1[11].([]byte)) != 0 {
		t.Errorf("row 1 = %v", r1)
	}
	// Byte values must not share capacity: appending to one must not clobber the next.
	_ = append(r0[11].([]byte), 'X')
	if got := r1[11].([]byte); len(got) != 0 {
		t.Errorf("append clobbered next value")
	}
}

func TestDecodeErrors(t *testing.T) {
	tbl := rowtest.AllTypes()
	kindF := arrow.Field{Name: ColRowKind, Type: arrow.PrimitiveTypes.Int8}
	id, k, big := field(tbl, "id"), field(tbl, "k"), field(tbl, "c_big")
	str := field(tbl, "c_str")
	tests := []struct {
		name   string
		fields []arrow.Field
		rows   [][]any
		want   []string // substrings of the message
	}{
		{"unknown column", []arrow.Field{id, k, {Name: "nope", Type: arrow.BinaryTypes.String}}, [][]any{{int32(1), "a", "x"}}, []string{"db.all_types", `"nope"`, "unknown"}},
		{"duplicate column", []arrow.Field{id, k, str, str}, [][]any{{int32(1), "a", "x", "y"}}, []string{`"c_str"`, "duplicate"}},
		{"duplicate row kind", []arrow.Field{kindF, id, k, kindF}, [][]any{{int8(0), int32(1), "a", int8(0)}}, []string{`"_row_kind"`, "duplicate"}},
		{"reserved column", []arrow.Field{id, k, {Name: "_offset", Type: arrow.PrimitiveTypes.Int64}}, [][]any{{int32(1), "a", int64(0)}}, []string{`"_offset"`, "reserved"}},
		{"wrong type", []arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}, k}, [][]any{{int64(1), "a"}}, []string{`"id"`, "int32", "int64"}},
		{"wrong timestamp unit", []arrow.Field{id, k, {Name: "c_ts", Type: &arrow.TimestampType{Unit: arrow.Microsecond}}}, [][]any{{int32(1), "a", arrow.Timestamp(1)}}, []string{`"c_ts"`, "timestamp[ns]"}},
		{"ltz without zone", []arrow.Field{id, k, {Name: "c_ltz", Type: &arrow.TimestampType{Unit: arrow.Microsecond}}}, [][]any{{int32(1), "a", arrow.Timestamp(1)}}, []string{`"c_ltz"`, "UTC"}},
		{"missing key column", []arrow.Field{id, str}, [][]any{{int32(1), "x"}}, []string{`"k"`, "missing primary-key"}},
		{"null key", []arrow.Field{id, k}, [][]any{{int32(1), "a"}, {int32(2), "b"}, {nil, "c"}}, []string{`"id"`, "row 2", "primary-key"}},
		{"null not-null column", []arrow.Field{id, k, big}, [][]any{{int32(1), "a", int64(1)}, {int32(2), "b", nil}}, []string{`"c_big"`, "row 1", "NOT NULL"}},
		{"row kind not int8", []arrow.Field{{Name: ColRowKind, Type: arrow.PrimitiveTypes.Int32}, id, k}, [][]any{{int32(0), int32(1), "a"}}, []string{`"_row_kind"`, "int8"}},
		{"row kind out of range", []arrow.Field{kindF, id, k}, [][]any{{int8(0), int32(1), "a"}, {int8(4), int32(2), "b"}}, []string{`"_row_kind"`, "row 1", "4"}},
		{"negative row kind", []arrow.Field{kindF, id, k}, [][]any{{int8(-1), int32(1), "a"}}, []string{"row 0", "-1"}},
		{"null row kind", []arrow.Field{kindF, id, k}, [][]any{{nil, int32(1), "a"}}, []string{`"_row_kind"`, "row 0", "null"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
			defer mem.AssertSize(t, 0)
			rec := buildRecord(t, mem, arrow.NewSchema(tc.fields, nil), tc.rows)
			defer rec.Release()
			b, err := Decode(tbl, rec)
			if b != nil {
				t.Errorf("got a batch with an error")
			}
			wantKind(t, err, ErrInvalid)
			for _, s := range tc.want {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q does not contain %q", err, s)
				}
			}
		})
	}
}

func TestValidate(t *testing.T) {
	tbl := rowtest.AllTypes()
	ok := rowtest.FullRow(1, "a")
	tests := []struct {
		name  string
		batch Batch
		want  string // "" = valid
	}{
		{"valid", Batch{Kinds: []merge.RowKind{merge.Insert}, Rows: []merge.Row{ok}}, ""},
		{"short row", Batch{Kinds: []merge.RowKind{merge.Insert}, Rows: []merge.Row{ok[:3]}}, "row 0 has 3 values"},
		{"kinds mismatch", Batch{Kinds: nil, Rows: []merge.Row{ok}}, "row kinds"},
		{"bad kind", Batch{Kinds: []merge.RowKind{9}, Rows: []merge.Row{ok}}, "invalid row kind 9"},
		{"wrong go type", Batch{Kinds: []merge.RowKind{merge.Insert}, Rows: []merge.Row{append(merge.Row{int64(1)}, ok[1:]...)}}, `column "id" row 0`},
		{"null key", Batch{Kinds: []merge.RowKind{merge.Insert}, Rows: []merge.Row{append(merge.Row{nil}, ok[1:]...)}}, "primary-key"},
		{"undeclared key", Batch{Declared: make([]bool, len(tbl.Columns)), Kinds: []merge.RowKind{merge.Insert}, Rows: []merge.Row{ok}}, "missing primary-key"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.batch.Validate(tbl)
			if tc.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			wantKind(t, err, ErrInvalid)
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q does not contain %q", err, tc.want)
			}
		})
	}
}

// TestDecodeMalformedArrays: arrays whose buffers contradict each other (as a malicious DoPut can
// send: the IPC reader checks only the last offset of a string array) are InvalidArgument naming
// the table and the column; Decode used to panic on them (slice bounds out of range), which in a
// goroutine of its own took the whole gateway down.
func TestDecodeMalformedArrays(t *testing.T) {
	tbl := rowtest.AllTypes()
	offsets := func(os ...int32) *memory.Buffer {
		return memory.NewBufferBytes(arrow.Int32Traits.CastToBytes(os))
	}
	strs := func(n int, offs *memory.Buffer, data string) arrow.Array {
		return array.MakeFromData(array.NewData(arrow.BinaryTypes.String, n, []*memory.Buffer{nil, offs, memory.NewBufferBytes([]byte(data))}, nil, 0, 0))
	}
	bins := func(n int, offs *memory.Buffer, data string) arrow.Array {
		return array.MakeFromData(array.NewData(arrow.BinaryTypes.Binary, n, []*memory.Buffer{nil, offs, memory.NewBufferBytes([]byte(data))}, nil, 0, 0))
	}
	ints := func(vals ...int32) arrow.Array {
		return array.MakeFromData(array.NewData(arrow.PrimitiveTypes.Int32, len(vals), []*memory.Buffer{nil, memory.NewBufferBytes(arrow.Int32Traits.CastToBytes(vals))}, nil, 0, 0))
	}
	tests := []struct {
		name   string
		column string // the malformed column: k, c_str or c_bin
		arr    arrow.Array
		id     arrow.Array
		want   string
	}{
		{"decreasing string offsets", "k", strs(2, offsets(2, 1, 3), "abc"), ints(1, 2), "non-decreasing"},
		{"negative string offset", "k", strs(1, offsets(-2, 3), "abc"), ints(1), "negative"},
		// arrow-go's ValidateFull itself slices [0:5] of 3 bytes here (and panics).
		{"string offset beyond the data mid-array", "k", strs(2, offsets(0, 5, 3), "abc"), ints(1, 2), "malformed Arrow array"},
		{"string not UTF-8", "c_str", strs(2, offsets(0, 1, 3), "a\xff\xfe"), ints(1, 2), "utf8"},
		{"decreasing binary offsets", "c_bin", bins(2, offsets(3, 0, 3), "abc"), ints(1, 2), "non-decreasing"},
		// A null count with a validity bitmap far too short for the rows: reading it panics.
		{"short validity bitmap", "id", nil, array.MakeFromData(array.NewData(arrow.PrimitiveTypes.Int32, 100,
			[]*memory.Buffer{memory.NewBufferBytes([]byte{0xff}), memory.NewBufferBytes(make([]byte, 400))}, nil, 1, 0)), "malformed Arrow record batch"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			n := tc.id.Len()
			k := tc.arr
			if k == nil || tc.column != "k" {
				kb := array.NewStringBuilder(memory.DefaultAllocator)
				for i := 0; i < n; i++ {
					kb.Append("k")
				}
				k = kb.NewArray()
			}
			fields := []arrow.Field{field(tbl, "id"), field(tbl, "k")}
			cols := []arrow.Array{tc.id, k}
			if tc.column == "c_str" || tc.column == "c_bin" {
				fields = append(fields, field(tbl, tc.column))
				cols = append(cols, tc.arr)
			}
			rec := array.NewRecordBatch(arrow.NewSchema(fields, nil), cols, int64(n))
			b, err := Decode(tbl, rec)
			if b != nil {
				t.Errorf("got a batch with an error")
			}
			wantKind(t, err, ErrInvalid)
			for _, s := range []string{"db.all_types", tc.want} {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q does not contain %q", err, s)
				}
			}
			if tc.arr != nil && !strings.Contains(err.Error(), `"`+tc.column+`"`) {
				t.Errorf("error %q does not name column %q", err, tc.column)
			}
		})
	}
}

// TestPartitionValuesReadable: Batch.Validate accepts a partition-key value only when its partition
// name passes partname.Validate (readers name the partition in a ticket), so the edges of the
// ranges are accepted and round-trip, and values beyond them, which used to be written under a
// name no ticket could use, are InvalidArgument naming the column and row. The same values in a
// column that is not a partition key are accepted, except those that are no value of their type
// (invalid UTF-8, too many decimal digits).
func TestPartitionValuesReadable(t *testing.T) {
	tDec38 := catalog.Type{Kind: catalog.Decimal, Precision: 38, Scale: 0}
	tTs6 := catalog.Type{Kind: catalog.Timestamp, Precision: 6}
	max38, _ := decimal128.FromString(strings.Repeat("9", 38), 38, 0)
	min128 := decimal128.New(-1<<63, 0)
	tests := []struct {
		typ       catalog.Type
		val       any
		want      string // "" = valid, else a substring of the partition-key error
		wantOther string // the same for a column that is not a partition key
	}{
		{rowtest.Date, arrow.Date32(-719528), "", ""}, // 0000-01-01
		{rowtest.Date, arrow.Date32(2932896), "", ""}, // 9999-12-31
		{rowtest.Date, arrow.Date32(-719529), "outside the years 0000..9999", ""},
		{rowtest.Date, arrow.Date32(2932897), "outside the years 0000..9999", ""},
		{rowtest.Time, arrow.Time32(0), "", ""},
		{rowtest.Time, arrow.Time32(86399999), "", ""},
		{rowtest.Time, arrow.Time32(-5), "not a time of day", ""},
		{rowtest.Time, arrow.Time32(86400000), "not a time of day", ""},
		{rowtest.Ts0, arrow.Timestamp(-62167219200), "", ""},
		{rowtest.Ts0, arrow.Timestamp(253402300799), "", ""},
		{rowtest.Ts0, arrow.Timestamp(-62167219201), "outside the years 0000..9999", ""},
		{rowtest.Ts3, arrow.Timestamp(253402300799999), "", ""},
		{rowtest.Ts3, arrow.Timestamp(253402300800000), "outside the years 0000..9999", ""},
		{tTs6, arrow.Timestamp(-62167219200000001), "outside the years 0000..9999", ""},
		{rowtest.Ts9, arrow.Timestamp(-1 << 63), "", ""}, // every ns value is within 1677..2262
		{rowtest.Dec, decimal128.FromI64(9999999999), "", ""},
		{rowtest.Dec, decimal128.FromI64(-9999999999), "", ""},
		{rowtest.Dec, decimal128.FromI64(10000000000), "more than 10 digits", "more than 10 digits"},
		{tDec38, max38, "", ""},
		{tDec38, max38.Negate(), "", ""},
		{tDec38, min128, "more than 38 digits", "more than 38 digits"},
		{rowtest.String, "a/b=%\x01日本", "", ""},
		{rowtest.String, "ok\xff", "not valid UTF-8", "not valid UTF-8"},
		{rowtest.Char3, "\xc3", "not valid UTF-8", "not valid UTF-8"},
	}
	for _, tc := range tests {
		for _, part := range []bool{true, false} {
			var partKeys []int
			want := tc.wantOther
			if part {
				partKeys, want = []int{1}, tc.want
			}
			tbl := rowtest.Table("p", []catalog.Column{{Name: "id", Type: rowtest.Int}, {Name: "p", Type: tc.typ}}, []int{0, 1}, partKeys, nil, 1)
			r := merge.Row{int32(1), tc.val}
			err := (&Batch{Kinds: []merge.RowKind{merge.Insert}, Rows: []merge.Row{r}}).Validate(tbl)
			if want == "" {
				if err != nil {
					t.Errorf("%s %v (partition key %v): %v", tc.typ, tc.val, part, err)
				} else if err := partname.Validate(tbl, partname.Of(tbl, r)); err != nil {
					t.Errorf("%s %v: accepted, but its partition name is not: %v", tc.typ, tc.val, err)
				}
				continue
			}
			wantKind(t, err, ErrInvalid)
			if err != nil && (!strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), `column "p" row 0`)) {
				t.Errorf("%s %v (partition key %v): error %q, want %q naming the column and row", tc.typ, tc.val, part, err, want)
			}
		}
	}
}
