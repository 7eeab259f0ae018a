// Package row holds the gateway's row values and their encodings (proto/README.md, SPEC
// sections 3 and 4):
//
//   - Decode turns a DoPut Arrow record batch into a Batch of merge.Row values, validating it
//     whole first (unknown, duplicate or reserved columns, Arrow types, null primary keys,
//     NOT NULL columns, `_row_kind` values).
//   - ChangelogSchema and ChangelogBuilder produce the DoGet Arrow stream of a bucket's changelog.
//   - EncodeKey, EncodeValue and DecodeValue are the binary codecs the store keeps in Pebble.
//   - BucketKeyBytes, BucketHash and Bucket compute a row's bucket exactly as proto/README.md
//     says (shared with the Java connector through proto/testdata/bucket_hash.json).
//   - PartitionName and ValidatePartitionName implement Hive-style partition names.
//
// A merge.Row holds one value per table column in table order, nil for SQL NULL, with the Go
// types of the table in proto/README.md: bool, int8, int16, int32, int64, float32, float64,
// decimal128.Num (unscaled), string, []byte, arrow.Date32 (days), arrow.Time32 (ms of day) and
// arrow.Timestamp (in the unit of the column's precision).
//
// The package is pure: no I/O, no global state.
package row
