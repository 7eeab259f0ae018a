// Package row converts between the gateway's rows and Arrow (proto/README.md, SPEC sections 3
// and 4):
//
//   - Decode turns a DoPut Arrow record batch into a Batch of merge.Row values, validating it
//     whole first (unknown, duplicate or reserved columns, Arrow types, null primary keys,
//     NOT NULL columns, `_row_kind` values); Batch.Validate checks a Batch built in code the
//     same way.
//   - ChangelogSchema and ChangelogBuilder produce the DoGet Arrow stream of a bucket's changelog.
//
// Its siblings hold the other encodings of a row: gateway/rowcodec (the key and value bytes the
// store keeps in Pebble), gateway/buckethash (a row's bucket) and gateway/partname (a row's
// partition name).
//
// A merge.Row holds one value per table column in table order, nil for SQL NULL, with the Go
// types of the table in proto/README.md: bool, int8, int16, int32, int64, float32, float64,
// decimal128.Num (unscaled), string, []byte, arrow.Date32 (days), arrow.Time32 (ms of day) and
// arrow.Timestamp (in the unit of the column's precision).
//
// The package is pure: no I/O, no global state.
package row
