package store

import (
	"errors"

	"github.com/cockroachdb/pebble/v2"
	"github.com/setats/setats/gateway/rowcodec"
	"github.com/setats/setats/merge"
)

// Get looks up encoded primary keys (row.EncodeKey form, as Scan returns them) in the view and
// calls found(i, row) for every keys[i] the view holds, in the order of keys; absent keys get no
// call. It is the point read of lookups (SPEC section 13): the rows are the view's, exactly as of
// its end offset, durable. Each call renews the lease. Errors: ErrAborted (the view was
// released), ErrInternal; an error from found stops the lookup and is returned as is.
func (v *SnapshotView) Get(keys [][]byte, found func(i int, r merge.Row) error) error {
	v.mu.Lock()
	defer v.mu.Unlock()
	if err := v.renewLocked(); err != nil {
		return err
	}
	t := v.t
	dec := rowcodec.ValueDecoder{Table: t.tbl}
	key := make([]byte, 0, len(v.prefix)+32)
	for i, k := range keys {
		key = append(append(key[:0], v.prefix...), k...)
		val, closer, err := v.snap.Get(key)
		if errors.Is(err, pebble.ErrNotFound) {
			continue
		}
		if err != nil {
			return t.internal(err)
		}
		r, err := dec.Decode(val)
		closer.Close()
		if err != nil {
			return t.internal(err)
		}
		if err := found(i, r); err != nil {
			return err
		}
	}
	return nil
}

// Released reports whether the view was released (by its reader, its lease or the table's close).
func (v *SnapshotView) Released() bool {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.snap == nil
}

// renewLocked renews the view's lease for a point or prefix read, or returns ErrAborted when the
// view was released. v.mu must be held.
func (v *SnapshotView) renewLocked() error {
	t := v.t
	if v.snap == nil {
		return errorf(ErrAborted, "table %s: snapshot view of bucket %d at offset %d was released (%s)",
			t.tbl.QualifiedName(), v.id.Bucket, v.end, v.why)
	}
	v.leaseEnd = t.clock() + t.viewLeaseMs()
	return nil
}
