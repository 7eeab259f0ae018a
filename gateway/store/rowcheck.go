package store

import (
	"github.com/setats/setats/gateway/row"
	"github.com/setats/setats/merge"
)

// DefaultMaxRowBytes is the largest row a table stores when Options.MaxRowBytes is 0: 16 MiB,
// a quarter of the gateway's default message limit (64 MiB), so that a row that is stored can
// always be sent back alone in one DoGet record batch (SPEC section 14).
const DefaultMaxRowBytes = 16 << 20

// maxRowBytes returns the row size cap in force (bytes as row.RowBytes counts them).
func (t *Table) maxRowBytes() int {
	if t.opts.MaxRowBytes > 0 {
		return t.opts.MaxRowBytes
	}
	return DefaultMaxRowBytes
}

// checkNotNull fails with ErrInvalid when the row r (the merged row a write would store, batch
// row index i) has no value in a NOT NULL column: a new key written without that column (a sink
// that declares a subset of the columns), with no stored row to supply it (SPEC section 3; the
// read schema marks the column non-nullable). Nulls written explicitly are refused earlier, by
// row.Batch.Validate.
func (t *Table) checkNotNull(r merge.Row, i int32) error {
	for c := range t.tbl.Columns {
		if t.tbl.Columns[c].NotNull && r[c] == nil {
			return errorf(ErrInvalid,
				"table %s: row %d: column %s is NOT NULL and the row has no value for it: the write does not declare it "+
					"and no stored row of the key supplies it; nothing of the batch was applied",
				t.tbl.QualifiedName(), i, t.tbl.Columns[c].Name)
		}
	}
	return nil
}

// checkRowSize fails with ErrInvalid when the row r (the merged row a write would store, batch
// row index i) is larger than the cap, naming the table, the batch row, its largest column and
// the sizes.
func (t *Table) checkRowSize(r merge.Row, i int32) error {
	n, limit := row.RowBytes(r), t.maxRowBytes()
	if n <= limit {
		return nil
	}
	big, bigBytes := -1, 0
	for c, v := range r {
		var m int
		switch x := v.(type) {
		case string:
			m = len(x)
		case []byte:
			m = len(x)
		}
		if m > bigBytes {
			big, bigBytes = c, m
		}
	}
	col := "(no variable-length column)"
	if big >= 0 {
		col = t.tbl.Columns[big].Name
	}
	return errorf(ErrInvalid,
		"table %s: row %d: column %s holds %d bytes and the row %d bytes, above the largest row a table stores, %d bytes "+
			"(a quarter of --max-message-bytes, so that every stored row can be read back); nothing of the batch was applied",
		t.tbl.QualifiedName(), i, col, bigBytes, n, limit)
}
