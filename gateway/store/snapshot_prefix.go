package store

import (
	"github.com/cockroachdb/pebble/v2"
	"github.com/setats/setats/gateway/rowcodec"
	"github.com/setats/setats/merge"
)

// GetPrefix looks up key prefixes in the view: for every prefixes[i] (the encoding of the first
// k primary-key columns, rowcodec.AppendKey of a table whose key is cut to those k columns; the
// key encoding is prefix-free per column, so these are exactly the rows whose first k key
// values equal the prefix's) it calls found(i, row) for each row of the view whose encoded key
// starts with it, in key order, prefixes in order. It is the prefix lookup of lookup joins on a
// primary-key prefix that covers the bucket key (SPEC section 13): one bounded Pebble iteration
// per prefix inside the bucket. At most maxRows rows are passed to found over all prefixes
// (maxRows > 0); the next one makes GetPrefix fail with ErrResourceExhausted naming the prefix's
// index, before found sees it. Each call renews the lease. Errors: ErrAborted (the view was
// released), ErrResourceExhausted, ErrInternal; an error from found stops the lookup and is
// returned as is.
func (v *SnapshotView) GetPrefix(prefixes [][]byte, maxRows int, found func(i int, r merge.Row) error) error {
	v.mu.Lock()
	defer v.mu.Unlock()
	if err := v.renewLocked(); err != nil {
		return err
	}
	t := v.t
	dec := rowcodec.ValueDecoder{Table: t.tbl}
	lower := make([]byte, 0, len(v.prefix)+32)
	n := 0
	for i, p := range prefixes {
		lower = append(append(lower[:0], v.prefix...), p...)
		it, err := v.snap.NewIter(&pebble.IterOptions{LowerBound: lower, UpperBound: prefixEnd(lower)})
		if err != nil {
			return t.internal(err)
		}
		for ok := it.First(); ok; ok = it.Next() {
			if n >= maxRows {
				it.Close()
				return errorf(ErrResourceExhausted, "table %s bucket %d: the lookup keys match more than %d rows (at key %d of the request); send fewer keys per request",
					t.tbl.QualifiedName(), v.id.Bucket, maxRows, i)
			}
			val, err := it.ValueAndErr()
			if err != nil {
				it.Close()
				return t.internal(err)
			}
			r, err := dec.Decode(val)
			if err != nil {
				it.Close()
				return t.internal(err)
			}
			n++
			if err := found(i, r); err != nil {
				it.Close()
				return err
			}
		}
		if err := it.Close(); err != nil {
			return t.internal(err)
		}
	}
	return nil
}
