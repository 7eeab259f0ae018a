package partname

import (
	"encoding/hex"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/setats/setats/catalog"
	"github.com/setats/setats/merge"
)

// Of returns the partition name of row (proto/README.md "Partition names"): "" for an
// unpartitioned table, else "k1=v1/k2=v2" in partition-key order, where each value is
// ValueString of the value and names and values have '%', '/', '=' and control
// characters escaped as %XX (upper-case hex), as Hive does. Partition-key values must be
// non-null and of their columns' Go types; otherwise Of panics.
func Of(tbl *catalog.Table, row merge.Row) string {
	if len(tbl.PartitionKeys) == 0 {
		return ""
	}
	return string(Append(nil, tbl, row))
}

// Append appends Of(tbl, row) to dst and returns the extended slice.
func Append(dst []byte, tbl *catalog.Table, row merge.Row) []byte {
	for i, c := range tbl.PartitionKeys {
		if i > 0 {
			dst = append(dst, '/')
		}
		col := &tbl.Columns[c]
		dst = appendPartitionEscaped(dst, col.Name)
		dst = append(dst, '=')
		if s, ok := row[c].(string); ok {
			dst = appendPartitionEscaped(dst, s)
		} else {
			dst = appendPartitionEscaped(dst, ValueString(col.Type, row[c]))
		}
	}
	return dst
}

// ValueString returns the string form of a partition-key value (before escaping):
//
//	BOOLEAN            true, false
//	TINYINT..BIGINT    decimal
//	FLOAT, DOUBLE      shortest decimal that reads back as the same value (Go 'g' format:
//	                   1.5, 1e+21, NaN, +Inf, -Inf)
//	DECIMAL(p, s)      plain decimal with exactly s fraction digits, e.g. -12.30
//	strings            as they are
//	bytes              lower-case hex
//	DATE               yyyy-MM-dd
//	TIME               HH:mm:ss, or HH:mm:ss.SSS when the milliseconds are not 0
//	TIMESTAMP(p)       yyyy-MM-dd HH:mm:ss, then '.' and p fraction digits when p > 0
//	TIMESTAMP_LTZ(p)   the same, of the UTC time
//
// It panics when v does not have the Go type of t.
func ValueString(t catalog.Type, v any) string {
	switch x := v.(type) {
	case bool:
		return strconv.FormatBool(x)
	case int8:
		return strconv.FormatInt(int64(x), 10)
	case int16:
		return strconv.FormatInt(int64(x), 10)
	case int32:
		return strconv.FormatInt(int64(x), 10)
	case int64:
		return strconv.FormatInt(x, 10)
	case float32:
		return strconv.FormatFloat(float64(x), 'g', -1, 32)
	case float64:
		return strconv.FormatFloat(x, 'g', -1, 64)
	case decimal128.Num:
		return x.ToString(int32(t.Scale))
	case string:
		return x
	case []byte:
		return hex.EncodeToString(x)
	case arrow.Date32:
		return x.ToTime().Format(time.DateOnly)
	case arrow.Time32:
		tm := x.ToTime(arrow.Millisecond)
		if x%1000 != 0 {
			return tm.Format("15:04:05.000")
		}
		return tm.Format(time.TimeOnly)
	case arrow.Timestamp:
		tm := x.ToTime(catalog.TimestampUnit(t.Precision)).UTC()
		layout := time.DateTime
		if p := min(t.Precision, 9); p > 0 {
			layout += "." + strings.Repeat("0", p)
		}
		return tm.Format(layout)
	}
	mismatch(t, v)
	return ""
}

// appendPartitionEscaped appends s with '%', '/', '=' and control characters (0x00-0x1F, 0x7F)
// written as %XX, upper-case hex.
func appendPartitionEscaped(dst []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		ch := s[i]
		if needsPartitionEscape(ch) {
			const hexDigits = "0123456789ABCDEF"
			dst = append(dst, '%', hexDigits[ch>>4], hexDigits[ch&15])
			continue
		}
		dst = append(dst, ch)
	}
	return dst
}

func needsPartitionEscape(ch byte) bool {
	return ch == '%' || ch == '/' || ch == '=' || ch < 0x20 || ch == 0x7f
}

// unescapePartition reverses appendPartitionEscaped, accepting only its output: every '%' starts
// an escape of a character that needs one, in upper-case hex, and no such character is raw.
func unescapePartition(s string) (string, bool) {
	if !strings.ContainsRune(s, '%') {
		for i := 0; i < len(s); i++ {
			if needsPartitionEscape(s[i]) {
				return "", false
			}
		}
		return s, true
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		ch := s[i]
		if ch != '%' {
			if needsPartitionEscape(ch) {
				return "", false
			}
			b.WriteByte(ch)
			continue
		}
		if i+2 >= len(s) || !isUpperHex(s[i+1]) || !isUpperHex(s[i+2]) {
			return "", false
		}
		v, _ := strconv.ParseUint(s[i+1:i+3], 16, 8)
		if !needsPartitionEscape(byte(v)) {
			return "", false
		}
		b.WriteByte(byte(v))
		i += 2
	}
	return b.String(), true
}

func isUpperHex(ch byte) bool { return ch >= '0' && ch <= '9' || ch >= 'A' && ch <= 'F' }

// Validate checks that name is a partition name Of can produce for tbl:
// "" for an unpartitioned table; else one "key=value" segment per partition key, in
// partition-key order, with the columns' names, escapes exactly where Of puts them,
// and each value in the canonical string form of its column type (ValueString). Errors
// are ErrInvalid errors naming the table and the partition.
func Validate(tbl *catalog.Table, name string) error {
	if len(tbl.PartitionKeys) == 0 {
		if name != "" {
			return invalidf(tbl, "partition %q: the table is not partitioned (its only partition is \"\")", name)
		}
		return nil
	}
	segs := strings.Split(name, "/")
	if len(segs) != len(tbl.PartitionKeys) {
		return invalidf(tbl, "partition %q: want %d segments key=value joined by '/', got %d", name, len(tbl.PartitionKeys), len(segs))
	}
	for i, seg := range segs {
		col := &tbl.Columns[tbl.PartitionKeys[i]]
		k, v, ok := strings.Cut(seg, "=")
		key, okK := unescapePartition(k)
		if !ok || !okK || key != col.Name {
			return invalidf(tbl, "partition %q: segment %d must start with %q", name, i+1, string(appendPartitionEscaped(nil, col.Name))+"=")
		}
		val, okV := unescapePartition(v)
		if !okV {
			return invalidf(tbl, "partition %q: column %q: bad escaping in value %q (only %%, /, = and control characters are escaped, as %%XX in upper-case hex)", name, col.Name, v)
		}
		if !canonicalPartitionValue(col.Type, val) {
			return invalidf(tbl, "partition %q: column %q: %q is not a canonical %s value", name, col.Name, val, col.Type)
		}
	}
	return nil
}

// canonicalPartitionValue reports whether s is ValueString of some value of type t.
func canonicalPartitionValue(t catalog.Type, s string) bool {
	var v any
	switch t.Kind {
	case catalog.Char, catalog.VarChar:
		return utf8.ValidString(s)
	case catalog.Boolean:
		b, err := strconv.ParseBool(s)
		if err != nil {
			return false
		}
		v = b
	case catalog.TinyInt, catalog.SmallInt, catalog.Int, catalog.BigInt:
		bits := map[catalog.TypeKind]int{catalog.TinyInt: 8, catalog.SmallInt: 16, catalog.Int: 32, catalog.BigInt: 64}[t.Kind]
		n, err := strconv.ParseInt(s, 10, bits)
		if err != nil {
			return false
		}
		v = map[catalog.TypeKind]any{catalog.TinyInt: int8(n), catalog.SmallInt: int16(n), catalog.Int: int32(n), catalog.BigInt: n}[t.Kind]
	case catalog.Float:
		f, err := strconv.ParseFloat(s, 32)
		if err != nil {
			return false
		}
		v = float32(f)
	case catalog.Double:
		f, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return false
		}
		v = f
	case catalog.Decimal:
		n, err := parseDecimal(s, max(t.Precision, 1), t.Scale)
		if err != nil {
			return false
		}
		v = n
	case catalog.Binary, catalog.VarBinary:
		b, err := hex.DecodeString(s)
		if err != nil {
			return false
		}
		v = b
	case catalog.Date:
		tm, err := time.Parse(time.DateOnly, s)
		if err != nil {
			return false
		}
		v = arrow.Date32FromTime(tm)
	case catalog.Time:
		layout := time.TimeOnly
		if len(s) > len(layout) {
			layout = "15:04:05.000"
		}
		tm, err := time.Parse(layout, s)
		if err != nil {
			return false
		}
		v = arrow.Time32((tm.Hour()*3600+tm.Minute()*60+tm.Second())*1000 + tm.Nanosecond()/1e6)
	case catalog.Timestamp, catalog.TimestampLTZ:
		tm, err := time.Parse("2006-01-02 15:04:05.999999999", s)
		if err != nil {
			return false
		}
		unit := catalog.TimestampUnit(t.Precision)
		ts, err := arrow.TimestampFromTime(tm, unit)
		if err != nil {
			return false
		}
		v = ts
	default:
		return false
	}
	if f, ok := v.(float64); ok && math.IsNaN(f) {
		return s == "NaN"
	}
	return ValueString(t, v) == s
}
