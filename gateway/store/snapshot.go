package store

import (
	"bytes"
	"context"
	"sync"

	"github.com/cockroachdb/pebble/v2"
	"github.com/setats/setats/gateway/rowcodec"
	"github.com/setats/setats/merge"
)

// Snapshot views (SPEC sections 9 and 13)
//
// A snapshot view is one consistent view of one bucket: its merged rows exactly as they were at
// the bucket's end offset E, read in primary-key order (row.EncodeKey order) from any resume key.
// It is the one mechanism behind startup.mode = initial (the rows as +I, then the changelog from
// E), snapshot reads over Flight and lookups.
//
// OpenSnapshot takes the bucket's writer lock, takes a Pebble snapshot and reads E from the
// bucket's writer metadata (which includes applied writes whose fsync is in flight, pending.go),
// then releases the lock: every write of the bucket holds that lock from its lookup to its
// ApplyNoSyncWait, so the Pebble snapshot holds exactly the state rows of the writes below E.
// State and E are written by one atomic batch per write, so this pair is what a crash would keep
// too. OpenSnapshot returns only once E is durable (published), so no row of a write that could
// still be lost is ever served.
//
// Memory: the Pebble snapshot only pins a sequence number (compactions keep the versions it
// sees); each Scan opens its own short-lived iterator on it and closes it before returning, so
// a view does not pin memtables while its reader is slow. A view has a lease: every Scan renews
// it, and ReleaseExpiredViews (run by the gateway's retention loop) releases views whose lease
// ran out, so an abandoned reader cannot pin old versions forever. A released view's Scan fails
// with ErrAborted; the reader resumes after its last key with a new view.

// DefaultViewLeaseMs is how long a snapshot view lives without a Scan when
// Options.ViewLeaseMs is 0: 10 minutes.
const DefaultViewLeaseMs = 10 * 60 * 1000

// MaxOpenViews bounds the snapshot views open at once per table; OpenSnapshot beyond it is
// ErrResourceExhausted.
const MaxOpenViews = 1024

// SnapshotRow is one merged row of a snapshot view: Key is its primary key as row.EncodeKey
// encodes it (memcomparable; the resume key of Scan), Row the full row (table column order).
type SnapshotRow struct {
	Key []byte
	Row merge.Row
}

// SnapshotView is a consistent view of one bucket's merged rows at end offset EndOffset. Safe
// for concurrent use; Release frees it.
type SnapshotView struct {
	t      *Table
	id     BucketID
	prefix []byte // "s" P B
	end    int64

	mu       sync.Mutex
	snap     *pebble.Snapshot // nil once released
	leaseEnd int64            // ms
	why      string           // why it was released, for Scan's error
}

// OpenSnapshot opens a snapshot view of bucket id (SPEC section 9: one consistent view of state
// and its end offset E) and waits until E is durable. A bucket that never got a row gives an
// empty view at offset 0. The caller must Release the view. Errors (store kinds): the context's
// error (ctx), ErrResourceExhausted (MaxOpenViews views open), ErrClosed, ErrInternal.
func (t *Table) OpenSnapshot(ctx context.Context, id BucketID) (*SnapshotView, error) {
	if err := t.begin(); err != nil {
		return nil, err
	}
	t.viewMu.Lock()
	n := len(t.views)
	t.viewMu.Unlock()
	if n >= MaxOpenViews {
		t.end()
		return nil, errorf(ErrResourceExhausted, "table %s: %d snapshot views are open, the most a table serves at once; retry later",
			t.tbl.QualifiedName(), n)
	}
	t.mu.Lock()
	b := t.holdBucket(id)
	t.mu.Unlock()
	b.wmu.Lock()
	snap := t.db.NewSnapshot()
	t.mu.Lock()
	m, _ := b.writerMeta()
	t.mu.Unlock()
	b.wmu.Unlock()
	t.mu.Lock()
	t.releaseBucket(b)
	t.mu.Unlock()
	v := &SnapshotView{t: t, id: id, prefix: appendStateKey(nil, b.prefix), end: m.end, snap: snap,
		leaseEnd: t.clock() + t.viewLeaseMs()}
	t.viewMu.Lock()
	if t.views == nil {
		t.views = map[*SnapshotView]struct{}{}
	}
	t.views[v] = struct{}{}
	t.viewMu.Unlock()
	t.end()
	// Serve only durable rows: wait until every write below E is published.
	if m.end > 0 {
		select {
		case <-t.Wait(id, m.end-1):
		case <-ctx.Done():
			v.Release()
			return nil, contextError(ctx.Err())
		}
		// Published metadata, not Offsets: a bucket of a dropped partition (partition_drop.go)
		// does not exist but has an empty view at its dropped end offset.
		if pm, _ := t.published(id); pm.end < m.end {
			v.Release()
			return nil, errorf(ErrClosed, "table %s: closed while opening a snapshot view", t.tbl.QualifiedName())
		}
	}
	return v, nil
}

func (t *Table) viewLeaseMs() int64 {
	if t.opts.ViewLeaseMs > 0 {
		return t.opts.ViewLeaseMs
	}
	return DefaultViewLeaseMs
}

// Bucket returns the bucket of the view.
func (v *SnapshotView) Bucket() BucketID { return v.id }

// EndOffset returns E: the view holds the fold of the changelog rows [0, E).
func (v *SnapshotView) EndOffset() int64 { return v.end }

// Scan appends to dst[:0] the view's rows whose key is greater than after (from the first row
// when after is nil), in key order, until maxRows rows (<= 0: 4096) or about maxBytes bytes of
// row data (<= 0: no byte bound; at least one row) are reached, and returns them with more =
// true when rows remain after the last one. Each call renews the lease. Errors: ErrAborted (the
// view was released: lease expired or table closed; resume after the last key with a new view),
// ErrInternal.
func (v *SnapshotView) Scan(after []byte, maxRows, maxBytes int, dst []SnapshotRow) (rows []SnapshotRow, more bool, err error) {
	dst = dst[:0]
	dec := rowcodec.ValueDecoder{Table: v.t.tbl}
	more, err = v.ScanEncoded(after, maxRows, maxBytes, func(key, val []byte) error {
		r, err := dec.Decode(val)
		if err != nil {
			return err
		}
		dst = append(dst, SnapshotRow{Key: bytes.Clone(key), Row: r})
		return nil
	})
	return dst, more, err
}

// ScanEncoded is Scan without decoding: it calls fn with each row's key (as in SnapshotRow.Key)
// and its stored value (rowcodec.EncodeValue of the full row), both valid only during the call
// (copy what you keep), for the same rows Scan would return. An error of fn is returned as an
// ErrInternal error (a malformed stored value) and ends the scan. Errors: as Scan.
func (v *SnapshotView) ScanEncoded(after []byte, maxRows, maxBytes int, fn func(key, val []byte) error) (more bool, err error) {
	if maxRows <= 0 {
		maxRows = 4096
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	t := v.t
	if v.snap == nil {
		return false, errorf(ErrAborted, "table %s: snapshot view of bucket %d at offset %d was released (%s); resume after the last key with a new view",
			t.tbl.QualifiedName(), v.id.Bucket, v.end, v.why)
	}
	v.leaseEnd = t.clock() + t.viewLeaseMs()
	it, err := v.snap.NewIter(&pebble.IterOptions{LowerBound: v.prefix, UpperBound: prefixEnd(v.prefix)})
	if err != nil {
		return false, t.internal(err)
	}
	defer it.Close()
	var ok bool
	if after == nil {
		ok = it.First()
	} else {
		seek := append(bytes.Clone(v.prefix), after...)
		ok = it.SeekGE(seek)
		if ok && bytes.Equal(it.Key(), seek) {
			ok = it.Next()
		}
	}
	size, n := 0, 0
	for ; ok; ok = it.Next() {
		if n >= maxRows || (maxBytes > 0 && size >= maxBytes && n > 0) {
			return true, nil
		}
		val, err := it.ValueAndErr()
		if err != nil {
			return false, t.internal(err)
		}
		if err := fn(it.Key()[len(v.prefix):], val); err != nil {
			return false, t.internal(err)
		}
		n++
		size += len(val)
	}
	return false, t.internalOrNil(it.Error())
}

// Release frees the view (its Pebble snapshot). Safe to call more than once.
func (v *SnapshotView) Release() { v.release("released by its reader") }

func (v *SnapshotView) release(why string) {
	v.mu.Lock()
	snap := v.snap
	v.snap, v.why = nil, why
	v.mu.Unlock()
	if snap == nil {
		return
	}
	_ = snap.Close()
	v.t.viewMu.Lock()
	delete(v.t.views, v)
	v.t.viewMu.Unlock()
}

// OpenViews returns the number of snapshot views open.
func (t *Table) OpenViews() int {
	t.viewMu.Lock()
	defer t.viewMu.Unlock()
	return len(t.views)
}

// ReleaseExpiredViews releases the snapshot views whose lease ended before nowMs and returns how
// many it released.
func (t *Table) ReleaseExpiredViews(nowMs int64) int {
	t.viewMu.Lock()
	var expired []*SnapshotView
	for v := range t.views {
		v.mu.Lock()
		if v.leaseEnd < nowMs {
			expired = append(expired, v)
		}
		v.mu.Unlock()
	}
	t.viewMu.Unlock()
	for _, v := range expired {
		v.release("its lease expired: no read for the view lease")
	}
	return len(expired)
}

// releaseViews releases every view (Close).
func (t *Table) releaseViews() {
	t.viewMu.Lock()
	all := make([]*SnapshotView, 0, len(t.views))
	for v := range t.views {
		all = append(all, v)
	}
	t.viewMu.Unlock()
	for _, v := range all {
		v.release("the table was closed")
	}
}
