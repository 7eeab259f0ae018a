package catalog

import (
	"errors"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
)

func TestParseType(t *testing.T) {
	for _, tc := range []struct {
		in      string
		want    Type
		str     string // canonical String()
		notNull bool
	}{
		{"BOOLEAN", Type{Kind: Boolean}, "BOOLEAN", false},
		{"tinyint", Type{Kind: TinyInt}, "TINYINT", false},
		{"SmallInt", Type{Kind: SmallInt}, "SMALLINT", false},
		{"INT", Type{Kind: Int}, "INT", false},
		{"integer", Type{Kind: Int}, "INT", false},
		{"BIGINT NOT NULL", Type{Kind: BigInt}, "BIGINT", true},
		{"bigint  not   null", Type{Kind: BigInt}, "BIGINT", true},
		{"INT NULL", Type{Kind: Int}, "INT", false},
		{"FLOAT", Type{Kind: Float}, "FLOAT", false},
		{"DOUBLE", Type{Kind: Double}, "DOUBLE", false},
		{"double precision", Type{Kind: Double}, "DOUBLE", false},
		{"DECIMAL", Type{Kind: Decimal, Precision: 10, Scale: 0}, "DECIMAL(10, 0)", false},
		{"DECIMAL(7)", Type{Kind: Decimal, Precision: 7, Scale: 0}, "DECIMAL(7, 0)", false},
		{"DECIMAL(10,2)", Type{Kind: Decimal, Precision: 10, Scale: 2}, "DECIMAL(10, 2)", false},
		{"decimal( 38 , 38 )", Type{Kind: Decimal, Precision: 38, Scale: 38}, "DECIMAL(38, 38)", false},
		{"NUMERIC(5, 1)", Type{Kind: Decimal, Precision: 5, Scale: 1}, "DECIMAL(5, 1)", false},
		{"DEC(1,0)", Type{Kind: Decimal, Precision: 1, Scale: 0}, "DECIMAL(1, 0)", false},
		{"CHAR", Type{Kind: Char, Length: 1}, "CHAR(1)", false},
		{"CHAR(3)", Type{Kind: Char, Length: 3}, "CHAR(3)", false},
		{"VARCHAR(20)", Type{Kind: VarChar, Length: 20}, "VARCHAR(20)", false},
		{"VARCHAR", Type{Kind: VarChar, Length: 1}, "VARCHAR(1)", false},
		{"VARCHAR(2147483647)", Type{Kind: VarChar, Length: MaxLength}, "STRING", false},
		{"STRING", Type{Kind: VarChar, Length: MaxLength}, "STRING", false},
		{"string not null", Type{Kind: VarChar, Length: MaxLength}, "STRING", true},
		{"BINARY(16)", Type{Kind: Binary, Length: 16}, "BINARY(16)", false},
		{"VARBINARY(100)", Type{Kind: VarBinary, Length: 100}, "VARBINARY(100)", false},
		{"VARBINARY(2147483647)", Type{Kind: VarBinary, Length: MaxLength}, "BYTES", false},
		{"BYTES", Type{Kind: VarBinary, Length: MaxLength}, "BYTES", false},
		{"DATE", Type{Kind: Date}, "DATE", false},
		{"TIME", Type{Kind: Time, Precision: 0}, "TIME(0)", false},
		{"TIME(3)", Type{Kind: Time, Precision: 3}, "TIME(3)", false},
		{"TIME(3) WITHOUT TIME ZONE", Type{Kind: Time, Precision: 3}, "TIME(3)", false},
		{"TIMESTAMP", Type{Kind: Timestamp, Precision: 6}, "TIMESTAMP(6)", false},
		{"TIMESTAMP(3)", Type{Kind: Timestamp, Precision: 3}, "TIMESTAMP(3)", false},
		{"TIMESTAMP(3) WITHOUT TIME ZONE", Type{Kind: Timestamp, Precision: 3}, "TIMESTAMP(3)", false},
		{"timestamp without time zone", Type{Kind: Timestamp, Precision: 6}, "TIMESTAMP(6)", false},
		{"TIMESTAMP(9)", Type{Kind: Timestamp, Precision: 9}, "TIMESTAMP(9)", false},
		{"TIMESTAMP(0)", Type{Kind: Timestamp, Precision: 0}, "TIMESTAMP(0)", false},
		{"TIMESTAMP(3) WITH LOCAL TIME ZONE", Type{Kind: TimestampLTZ, Precision: 3}, "TIMESTAMP_LTZ(3)", false},
		{"TIMESTAMP WITH LOCAL TIME ZONE NOT NULL", Type{Kind: TimestampLTZ, Precision: 6}, "TIMESTAMP_LTZ(6)", true},
		{"TIMESTAMP_LTZ", Type{Kind: TimestampLTZ, Precision: 6}, "TIMESTAMP_LTZ(6)", false},
		{"timestamp_ltz(3)", Type{Kind: TimestampLTZ, Precision: 3}, "TIMESTAMP_LTZ(3)", false},
	} {
		got, notNull, err := ParseColumnType(tc.in)
		if err != nil {
			t.Errorf("ParseColumnType(%q): %v", tc.in, err)
			continue
		}
		if got != tc.want || notNull != tc.notNull {
			t.Errorf("ParseColumnType(%q) = %+v, %v; want %+v, %v", tc.in, got, notNull, tc.want, tc.notNull)
		}
		if s := got.String(); s != tc.str {
			t.Errorf("ParseType(%q).String() = %q, want %q", tc.in, s, tc.str)
		}
		// Round trip: the canonical string parses back to the same type.
		if again, err := ParseType(got.String()); err != nil || again != got {
			t.Errorf("ParseType(%q) = %+v, %v; want %+v", got.String(), again, err, got)
		}
		if err := got.Validate(); err != nil {
			t.Errorf("%q: Validate: %v", tc.in, err)
		}
		if plain, err := ParseType(tc.in); err != nil || plain != tc.want {
			t.Errorf("ParseType(%q) = %+v, %v", tc.in, plain, err)
		}
	}
}

func TestParseTypeErrors(t *testing.T) {
	for _, tc := range []struct {
		in      string
		mention string
	}{
		{"", "empty type"},
		{"NOT NULL", "empty type"},
		{"INTERVAL DAY", "unknown type"},
		{"ARRAY<INT>", `unexpected "<"`},
		{"MAP", "unknown type"},
		{"INT(3)", "INT takes no parameters"},
		{"STRING(3)", "STRING takes no parameters"},
		{"DECIMAL(39, 0)", "precision must be between 1 and 38"},
		{"DECIMAL(0)", "precision must be between 1 and 38"},
		{"DECIMAL(5, 6)", "scale must be between 0 and the precision 5"},
		{"DECIMAL(5, 2, 1)", "at most 2 parameter"},
		{"DECIMAL(5,", "missing )"},
		{"DECIMAL(5 2)", "want , or )"},
		{"DECIMAL(a)", "want a number"},
		{"CHAR(0)", "length must be between 1 and 2147483647"},
		{"VARCHAR(2147483648)", "length must be between 1 and 2147483647"},
		{"VARCHAR(-1)", `unexpected "-"`},
		{"TIME(10)", "precision must be between 0 and 9"},
		{"TIMESTAMP(10)", "precision must be between 0 and 9"},
		{"TIMESTAMP WITH TIME ZONE", "TIMESTAMP WITH TIME ZONE is not supported"},
		{"TIMESTAMP(3) WITH", `unexpected "WITH"`},
		{"TIMESTAMP_LTZ(3) WITH LOCAL TIME ZONE", `unexpected "WITH LOCAL TIME ZONE"`},
		{"INT INT", `unexpected "INT"`},
		{"DOUBLE PRECISION(3)", "DOUBLE takes no parameters"},
	} {
		_, err := ParseType(tc.in)
		if !errors.Is(err, ErrInvalid) {
			t.Errorf("ParseType(%q): err %v, want InvalidArgument", tc.in, err)
			continue
		}
		if msg := err.Error(); !strings.Contains(msg, tc.mention) || !strings.Contains(msg, tc.in) {
			t.Errorf("ParseType(%q): error %q should quote the input and mention %q", tc.in, msg, tc.mention)
		}
	}
}

func TestArrowType(t *testing.T) {
	ts := func(u arrow.TimeUnit, tz string) arrow.DataType { return &arrow.TimestampType{Unit: u, TimeZone: tz} }
	for _, tc := range []struct {
		typ  string
		want arrow.DataType
	}{
		{"BOOLEAN", arrow.FixedWidthTypes.Boolean},
		{"TINYINT", arrow.PrimitiveTypes.Int8},
		{"SMALLINT", arrow.PrimitiveTypes.Int16},
		{"INT", arrow.PrimitiveTypes.Int32},
		{"BIGINT", arrow.PrimitiveTypes.Int64},
		{"FLOAT", arrow.PrimitiveTypes.Float32},
		{"DOUBLE", arrow.PrimitiveTypes.Float64},
		{"DECIMAL(10, 2)", &arrow.Decimal128Type{Precision: 10, Scale: 2}},
		{"DECIMAL(38, 0)", &arrow.Decimal128Type{Precision: 38, Scale: 0}},
		{"CHAR(3)", arrow.BinaryTypes.String},
		{"VARCHAR(20)", arrow.BinaryTypes.String},
		{"STRING", arrow.BinaryTypes.String},
		{"BINARY(4)", arrow.BinaryTypes.Binary},
		{"VARBINARY(4)", arrow.BinaryTypes.Binary},
		{"BYTES", arrow.BinaryTypes.Binary},
		{"DATE", arrow.FixedWidthTypes.Date32},
		{"TIME(0)", arrow.FixedWidthTypes.Time32ms},
		{"TIME(3)", arrow.FixedWidthTypes.Time32ms},
		{"TIMESTAMP(0)", ts(arrow.Second, "")},
		{"TIMESTAMP(1)", ts(arrow.Millisecond, "")},
		{"TIMESTAMP(3)", ts(arrow.Millisecond, "")},
		{"TIMESTAMP(4)", ts(arrow.Microsecond, "")},
		{"TIMESTAMP(6)", ts(arrow.Microsecond, "")},
		{"TIMESTAMP(7)", ts(arrow.Nanosecond, "")},
		{"TIMESTAMP(9)", ts(arrow.Nanosecond, "")},
		{"TIMESTAMP_LTZ(0)", ts(arrow.Second, "UTC")},
		{"TIMESTAMP_LTZ(3)", ts(arrow.Millisecond, "UTC")},
		{"TIMESTAMP_LTZ(6)", ts(arrow.Microsecond, "UTC")},
		{"TIMESTAMP_LTZ(9)", ts(arrow.Nanosecond, "UTC")},
	} {
		typ, err := ParseType(tc.typ)
		if err != nil {
			t.Fatal(err)
		}
		if got := typ.ArrowType(); !arrow.TypeEqual(got, tc.want) {
			t.Errorf("%s.ArrowType() = %v, want %v", tc.typ, got, tc.want)
		}
	}
	// Every kind has an Arrow type, and a name.
	for k := Boolean; k <= TimestampLTZ; k++ {
		typ := Type{Kind: k}
		switch k {
		case Decimal:
			typ.Precision = 10
		case Char, VarChar, Binary, VarBinary:
			typ.Length = 1
		}
		if typ.ArrowType() == nil || strings.HasPrefix(k.String(), "TypeKind(") {
			t.Errorf("kind %d has no Arrow type or name", int(k))
		}
	}
	if (Type{}).ArrowType() != nil || (Type{}).Validate() == nil {
		t.Errorf("the zero Type must be invalid")
	}
}

func TestTypeValidate(t *testing.T) {
	for _, bad := range []Type{
		{Kind: Int, Length: 3},
		{Kind: Decimal, Precision: 0},
		{Kind: Decimal, Precision: 3, Scale: 4},
		{Kind: VarChar},
		{Kind: Timestamp, Precision: 12},
		{Kind: TypeKind(99)},
	} {
		if err := bad.Validate(); !errors.Is(err, ErrInvalid) {
			t.Errorf("%+v.Validate() = %v, want InvalidArgument", bad, err)
		}
	}
}
