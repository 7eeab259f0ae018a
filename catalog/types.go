package catalog

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
)

// TypeKind is the kind of a Flink SQL type that a Setats column may have (proto/README.md, type
// table). The zero value InvalidType is no type.
type TypeKind int

const (
	InvalidType  TypeKind = iota // not a type; the zero value
	Boolean                      // BOOLEAN
	TinyInt                      // TINYINT
	SmallInt                     // SMALLINT
	Int                          // INT, INTEGER
	BigInt                       // BIGINT
	Float                        // FLOAT
	Double                       // DOUBLE, DOUBLE PRECISION
	Decimal                      // DECIMAL(p, s), DEC, NUMERIC; uses Precision and Scale
	Char                         // CHAR(n); uses Length
	VarChar                      // VARCHAR(n), STRING (= VARCHAR(MaxLength)); uses Length
	Binary                       // BINARY(n); uses Length
	VarBinary                    // VARBINARY(n), BYTES (= VARBINARY(MaxLength)); uses Length
	Date                         // DATE
	Time                         // TIME(p); uses Precision (0..9, values are kept at ms)
	Timestamp                    // TIMESTAMP(p) [WITHOUT TIME ZONE]; uses Precision
	TimestampLTZ                 // TIMESTAMP_LTZ(p), TIMESTAMP(p) WITH LOCAL TIME ZONE; uses Precision
)

// Type limits and defaults, as in Flink's logical types.
const (
	// MaxLength is the largest CHAR/VARCHAR/BINARY/VARBINARY length; VARCHAR(MaxLength) is STRING
	// and VARBINARY(MaxLength) is BYTES.
	MaxLength = 2147483647
	// MaxDecimalPrecision is the largest DECIMAL precision (decimal128).
	MaxDecimalPrecision = 38
	// DefaultDecimalPrecision and DefaultDecimalScale apply to a bare DECIMAL.
	DefaultDecimalPrecision = 10
	DefaultDecimalScale     = 0
	// MaxTimePrecision is the largest TIME/TIMESTAMP/TIMESTAMP_LTZ precision (nanoseconds).
	MaxTimePrecision = 9
	// DefaultTimestampPrecision applies to a bare TIMESTAMP or TIMESTAMP_LTZ; a bare TIME is TIME(0).
	DefaultTimestampPrecision = 6
)

var kindNames = [...]string{
	InvalidType: "INVALID", Boolean: "BOOLEAN", TinyInt: "TINYINT", SmallInt: "SMALLINT", Int: "INT",
	BigInt: "BIGINT", Float: "FLOAT", Double: "DOUBLE", Decimal: "DECIMAL", Char: "CHAR",
	VarChar: "VARCHAR", Binary: "BINARY", VarBinary: "VARBINARY", Date: "DATE", Time: "TIME",
	Timestamp: "TIMESTAMP", TimestampLTZ: "TIMESTAMP_LTZ",
}

// String returns the Flink SQL name of the kind ("INT", "TIMESTAMP_LTZ", ...).
func (k TypeKind) String() string {
	if k >= 0 && int(k) < len(kindNames) {
		return kindNames[k]
	}
	return fmt.Sprintf("TypeKind(%d)", int(k))
}

// Type is a Flink SQL type of a column. Length is used by Char, VarChar, Binary and VarBinary;
// Precision by Decimal, Time, Timestamp and TimestampLTZ; Scale by Decimal. Other fields are 0.
// Nullability is not part of a Type (see Column.NotNull).
type Type struct {
	Kind      TypeKind
	Length    int
	Precision int
	Scale     int
}

// String returns the canonical Flink form of t: "INT", "DECIMAL(10, 2)", "CHAR(3)",
// "VARCHAR(20)", "STRING" (VARCHAR(2147483647)), "BYTES" (VARBINARY(2147483647)), "TIME(0)",
// "TIMESTAMP(3)", "TIMESTAMP_LTZ(3)". ParseType(t.String()) == t for every valid t.
func (t Type) String() string {
	switch t.Kind {
	case Decimal:
		return fmt.Sprintf("DECIMAL(%d, %d)", t.Precision, t.Scale)
	case VarChar:
		if t.Length == MaxLength {
			return "STRING"
		}
		return fmt.Sprintf("VARCHAR(%d)", t.Length)
	case VarBinary:
		if t.Length == MaxLength {
			return "BYTES"
		}
		return fmt.Sprintf("VARBINARY(%d)", t.Length)
	case Char, Binary:
		return fmt.Sprintf("%s(%d)", t.Kind, t.Length)
	case Time, Timestamp, TimestampLTZ:
		return fmt.Sprintf("%s(%d)", t.Kind, t.Precision)
	}
	return t.Kind.String()
}

// ArrowType returns the Arrow type of a column of type t, exactly as the type table of
// proto/README.md says: bool, int8/16/32/64, float32/64, decimal128(p, s), utf8 (CHAR, VARCHAR,
// STRING), binary (BINARY, VARBINARY, BYTES), date32, time32[ms], timestamp[s|ms|us|ns] (precision
// 0 | 1-3 | 4-6 | 7-9) without time zone for TIMESTAMP and with time zone "UTC" for TIMESTAMP_LTZ.
// It returns nil for an invalid Type.
func (t Type) ArrowType() arrow.DataType {
	switch t.Kind {
	case Boolean:
		return arrow.FixedWidthTypes.Boolean
	case TinyInt:
		return arrow.PrimitiveTypes.Int8
	case SmallInt:
		return arrow.PrimitiveTypes.Int16
	case Int:
		return arrow.PrimitiveTypes.Int32
	case BigInt:
		return arrow.PrimitiveTypes.Int64
	case Float:
		return arrow.PrimitiveTypes.Float32
	case Double:
		return arrow.PrimitiveTypes.Float64
	case Decimal:
		return &arrow.Decimal128Type{Precision: int32(t.Precision), Scale: int32(t.Scale)}
	case Char, VarChar:
		return arrow.BinaryTypes.String
	case Binary, VarBinary:
		return arrow.BinaryTypes.Binary
	case Date:
		return arrow.FixedWidthTypes.Date32
	case Time:
		return arrow.FixedWidthTypes.Time32ms
	case Timestamp:
		return &arrow.TimestampType{Unit: TimestampUnit(t.Precision)}
	case TimestampLTZ:
		return &arrow.TimestampType{Unit: TimestampUnit(t.Precision), TimeZone: "UTC"}
	}
	return nil
}

// TimestampUnit is the Arrow time unit of a TIMESTAMP/TIMESTAMP_LTZ of the given precision:
// Second for 0, Millisecond for 1-3, Microsecond for 4-6, Nanosecond for 7-9.
func TimestampUnit(precision int) arrow.TimeUnit {
	switch {
	case precision <= 0:
		return arrow.Second
	case precision <= 3:
		return arrow.Millisecond
	case precision <= 6:
		return arrow.Microsecond
	}
	return arrow.Nanosecond
}

// Validate checks the fields of t against the limits of its kind (lengths 1..MaxLength, DECIMAL
// precision 1..38 and scale 0..precision, time precisions 0..9, unused fields 0). Errors are
// ErrInvalid errors naming the type.
func (t Type) Validate() error {
	if reason := t.check(); reason != "" {
		return errorf(ErrInvalid, "invalid type %s: %s", t, reason)
	}
	return nil
}

// check returns why t is invalid, or "".
func (t Type) check() string {
	switch t.Kind {
	case Boolean, TinyInt, SmallInt, Int, BigInt, Float, Double, Date:
		if t.Length != 0 || t.Precision != 0 || t.Scale != 0 {
			return fmt.Sprintf("%s takes no length, precision or scale", t.Kind)
		}
	case Decimal:
		if t.Precision < 1 || t.Precision > MaxDecimalPrecision {
			return fmt.Sprintf("DECIMAL precision must be between 1 and %d", MaxDecimalPrecision)
		}
		if t.Scale < 0 || t.Scale > t.Precision {
			return fmt.Sprintf("DECIMAL scale must be between 0 and the precision %d", t.Precision)
		}
		if t.Length != 0 {
			return "DECIMAL takes no length"
		}
	case Char, VarChar, Binary, VarBinary:
		if t.Length < 1 || t.Length > MaxLength {
			return fmt.Sprintf("%s length must be between 1 and %d", t.Kind, MaxLength)
		}
		if t.Precision != 0 || t.Scale != 0 {
			return fmt.Sprintf("%s takes no precision or scale", t.Kind)
		}
	case Time, Timestamp, TimestampLTZ:
		if t.Precision < 0 || t.Precision > MaxTimePrecision {
			return fmt.Sprintf("%s precision must be between 0 and %d", t.Kind, MaxTimePrecision)
		}
		if t.Length != 0 || t.Scale != 0 {
			return fmt.Sprintf("%s takes no length or scale", t.Kind)
		}
	default:
		return fmt.Sprintf("no such type kind %d", int(t.Kind))
	}
	return ""
}

// ParseType parses a Flink SQL type string, case-insensitively and ignoring blanks around
// parentheses and commas. Accepted: BOOLEAN, TINYINT, SMALLINT, INT, INTEGER, BIGINT, FLOAT,
// DOUBLE, DOUBLE PRECISION, DECIMAL/DEC/NUMERIC [(p [, s])] (bare: (10, 0); (p): scale 0),
// CHAR[(n)], VARCHAR[(n)] (bare: length 1, as in Flink), STRING, BINARY[(n)], VARBINARY[(n)],
// BYTES, DATE, TIME[(p)] [WITHOUT TIME ZONE] (bare: 0), TIMESTAMP[(p)] [WITHOUT TIME ZONE]
// (bare: 6), TIMESTAMP[(p)] WITH LOCAL TIME ZONE and TIMESTAMP_LTZ[(p)] (bare: 6).
//
// A trailing "NOT NULL" or "NULL" is accepted and ignored here: nullability is a column property;
// ParseColumnType reports it. Errors are ErrInvalid errors quoting the string.
func ParseType(s string) (Type, error) {
	t, _, err := ParseColumnType(s)
	return t, err
}

// ParseColumnType is ParseType that also reports whether s ends in "NOT NULL".
func ParseColumnType(s string) (t Type, notNull bool, err error) {
	toks, err := lexType(s)
	if err != nil {
		return Type{}, false, err
	}
	bad := func(format string, args ...any) error {
		return errorf(ErrInvalid, "invalid type %q: %s", s, fmt.Sprintf(format, args...))
	}
	// Nullability suffix.
	if n := len(toks); n >= 2 && toks[n-2] == "NOT" && toks[n-1] == "NULL" {
		toks, notNull = toks[:n-2], true
	} else if n >= 1 && toks[n-1] == "NULL" {
		toks = toks[:n-1]
	}
	if len(toks) == 0 {
		return Type{}, false, bad("empty type")
	}
	name, rest := toks[0], toks[1:]
	if name == "DOUBLE" && len(rest) > 0 && rest[0] == "PRECISION" {
		rest = rest[1:]
	}
	// Parameters in parentheses.
	var params []int
	hasParams := false
	if len(rest) > 0 && rest[0] == "(" {
		hasParams = true
		i := 1
		for {
			if i >= len(rest) {
				return Type{}, false, bad("missing )")
			}
			n, err := strconv.Atoi(rest[i])
			if err != nil {
				return Type{}, false, bad("want a number, got %q", rest[i])
			}
			params = append(params, n)
			i++
			if i >= len(rest) {
				return Type{}, false, bad("missing )")
			}
			if rest[i] == ")" {
				i++
				break
			}
			if rest[i] != "," {
				return Type{}, false, bad("want , or ), got %q", rest[i])
			}
			i++
		}
		rest = rest[i:]
	}
	suffix := strings.Join(rest, " ")
	wantParams := func(max int) error {
		if len(params) > max {
			return bad("%s takes at most %d parameter(s)", name, max)
		}
		return nil
	}
	param := func(i, def int) int {
		if i < len(params) {
			return params[i]
		}
		return def
	}

	switch name {
	case "BOOLEAN", "TINYINT", "SMALLINT", "INT", "INTEGER", "BIGINT", "FLOAT", "DOUBLE", "DATE", "STRING", "BYTES":
		if hasParams {
			return Type{}, false, bad("%s takes no parameters", name)
		}
		t = map[string]Type{
			"BOOLEAN": {Kind: Boolean}, "TINYINT": {Kind: TinyInt}, "SMALLINT": {Kind: SmallInt},
			"INT": {Kind: Int}, "INTEGER": {Kind: Int}, "BIGINT": {Kind: BigInt}, "FLOAT": {Kind: Float},
			"DOUBLE": {Kind: Double}, "DATE": {Kind: Date},
			"STRING": {Kind: VarChar, Length: MaxLength}, "BYTES": {Kind: VarBinary, Length: MaxLength},
		}[name]
	case "DECIMAL", "DEC", "NUMERIC":
		if err := wantParams(2); err != nil {
			return Type{}, false, err
		}
		t = Type{Kind: Decimal, Precision: param(0, DefaultDecimalPrecision), Scale: param(1, DefaultDecimalScale)}
	case "CHAR", "VARCHAR", "BINARY", "VARBINARY":
		if err := wantParams(1); err != nil {
			return Type{}, false, err
		}
		kind := map[string]TypeKind{"CHAR": Char, "VARCHAR": VarChar, "BINARY": Binary, "VARBINARY": VarBinary}[name]
		t = Type{Kind: kind, Length: param(0, 1)}
	case "TIME":
		if err := wantParams(1); err != nil {
			return Type{}, false, err
		}
		if suffix == "WITHOUT TIME ZONE" {
			suffix = ""
		}
		t = Type{Kind: Time, Precision: param(0, 0)}
	case "TIMESTAMP":
		if err := wantParams(1); err != nil {
			return Type{}, false, err
		}
		t = Type{Kind: Timestamp, Precision: param(0, DefaultTimestampPrecision)}
		switch suffix {
		case "WITHOUT TIME ZONE":
			suffix = ""
		case "WITH LOCAL TIME ZONE":
			t.Kind, suffix = TimestampLTZ, ""
		case "WITH TIME ZONE":
			return Type{}, false, bad("TIMESTAMP WITH TIME ZONE is not supported; use TIMESTAMP_LTZ")
		}
	case "TIMESTAMP_LTZ":
		if err := wantParams(1); err != nil {
			return Type{}, false, err
		}
		t = Type{Kind: TimestampLTZ, Precision: param(0, DefaultTimestampPrecision)}
	default:
		return Type{}, false, errorf(ErrInvalid, "unknown type %q", s)
	}
	if suffix != "" {
		return Type{}, false, bad("unexpected %q", suffix)
	}
	if reason := t.check(); reason != "" {
		return Type{}, false, bad("%s", reason)
	}
	return t, notNull, nil
}

// lexType splits a type string into upper-cased words, numbers and the punctuation ( ) ,.
func lexType(s string) ([]string, error) {
	var toks []string
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			i++
		case c == '(' || c == ')' || c == ',':
			toks = append(toks, string(c))
			i++
		case isWordByte(c):
			j := i
			for j < len(s) && isWordByte(s[j]) {
				j++
			}
			toks = append(toks, strings.ToUpper(s[i:j]))
			i = j
		default:
			return nil, errorf(ErrInvalid, "invalid type %q: unexpected %q", s, string(c))
		}
	}
	return toks, nil
}

func isWordByte(c byte) bool {
	return c == '_' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}
