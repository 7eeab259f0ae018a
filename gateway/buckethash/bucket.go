package buckethash

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/setats/setats/catalog"
	"github.com/setats/setats/merge"
	"github.com/twmb/murmur3"
)

// KeyBytes returns the bytes the bucket hash is computed over: the concatenation, over the
// bucket-key columns in bucket-key order, of each value's encoding in proto/README.md
// ("Bucket hash"). These bytes are wire format shared with the Java connector: never change them.
// Values must be non-null and of their columns' Go types; otherwise BucketKeyBytes panics.
func KeyBytes(tbl *catalog.Table, row merge.Row) []byte {
	return AppendKey(nil, tbl, row)
}

// AppendKey appends KeyBytes(tbl, row) to dst and returns the extended slice.
func AppendKey(dst []byte, tbl *catalog.Table, row merge.Row) []byte {
	for _, c := range tbl.BucketKey {
		t := tbl.Columns[c].Type
		switch x := row[c].(type) {
		case bool:
			if x {
				dst = append(dst, 1)
			} else {
				dst = append(dst, 0)
			}
		case int8:
			dst = binary.LittleEndian.AppendUint64(dst, uint64(int64(x)))
		case int16:
			dst = binary.LittleEndian.AppendUint64(dst, uint64(int64(x)))
		case int32:
			dst = binary.LittleEndian.AppendUint64(dst, uint64(int64(x)))
		case int64:
			dst = binary.LittleEndian.AppendUint64(dst, uint64(x))
		case arrow.Date32:
			dst = binary.LittleEndian.AppendUint64(dst, uint64(int64(x)))
		case arrow.Time32:
			dst = binary.LittleEndian.AppendUint64(dst, uint64(int64(x)))
		case float32:
			dst = appendHashDouble(dst, float64(x))
		case float64:
			dst = appendHashDouble(dst, x)
		case decimal128.Num:
			dst = binary.LittleEndian.AppendUint64(dst, x.LowBits())
			dst = binary.LittleEndian.AppendUint64(dst, uint64(x.HighBits()))
		case string:
			dst = binary.LittleEndian.AppendUint32(dst, uint32(len(x)))
			dst = append(dst, x...)
		case []byte:
			dst = binary.LittleEndian.AppendUint32(dst, uint32(len(x)))
			dst = append(dst, x...)
		case arrow.Timestamp:
			ms, nanos := splitTimestamp(int64(x), catalog.TimestampUnit(t.Precision))
			dst = binary.LittleEndian.AppendUint64(dst, uint64(ms))
			dst = binary.LittleEndian.AppendUint32(dst, uint32(nanos))
		default:
			mismatch(t, row[c])
		}
	}
	return dst
}

// appendHashDouble appends the binary64 bits of v, little-endian, with -0.0 written as 0.0 and
// every NaN as 0x7ff8000000000000.
func appendHashDouble(dst []byte, v float64) []byte {
	bits := math.Float64bits(v)
	switch {
	case v != v:
		bits = 0x7ff8000000000000
	case v == 0:
		bits = 0
	}
	return binary.LittleEndian.AppendUint64(dst, bits)
}

// Hash returns murmur3_x86_32(KeyBytes(tbl, row), seed 0) (proto/README.md).
func Hash(tbl *catalog.Table, row merge.Row) uint32 {
	var buf [64]byte
	return murmur3.Sum32(AppendKey(buf[:0], tbl, row))
}

// BucketOf returns the bucket of a hash for a bucket count n > 0:
// (hash & 0x7fffffff) % n (proto/README.md, SPEC section 3).
func BucketOf(hash uint32, n int32) int32 {
	return int32((hash & 0x7fffffff) % uint32(n))
}

// Bucket returns the bucket of row in its partition: BucketOf(Hash(tbl, row),
// tbl.BucketCount). A table whose BucketCount is below 1 has the single bucket 0.
func Bucket(tbl *catalog.Table, row merge.Row) int32 {
	if tbl.BucketCount <= 1 {
		return 0
	}
	return BucketOf(Hash(tbl, row), tbl.BucketCount)
}

// mismatch panics for a value whose Go type does not fit its column: rows reaching the encoders
// are validated (Decode, Batch.Validate), so this is a programming error.
func mismatch(t catalog.Type, v any) {
	panic(fmt.Sprintf("buckethash: value of Go type %T does not fit column type %s", v, t))
}
