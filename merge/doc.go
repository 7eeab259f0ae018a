// Package merge holds Setats' merge engines (SPEC section 4): pure functions that fold one written
// row into the stored row of its primary key and say which changelog rows that produces.
//
// The package does no I/O and keeps no state between calls. The gateway's write path reads the
// stored row of a key, calls Engine.Merge, then writes the returned row and appends the returned
// changelog rows to the bucket's changelog in one atomic batch.
//
// Rows are []any in table column order; a nil value is SQL NULL. The Go type of a value follows
// the type table of proto/README.md (bool, int8, int16, int32, int64, float32, float64,
// decimal128.Num, string, []byte, arrow.Date32, arrow.Time32, arrow.Timestamp).
//
// Validation that needs the table's key (a null primary-key value, SPEC section 3) belongs to the
// layer that validates a whole write batch before any row of it is merged; an Engine does not know
// which columns form the key.
package merge
