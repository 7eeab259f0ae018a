package store

import (
	"math"

	"github.com/cockroachdb/pebble/v2"
)

// ApplyRetention removes the changelog rows whose commit time is older than nowMs minus the
// retention (the table's changelog.retention.ms, else Options.DefaultRetentionMs; SPEC section 4)
// and returns how many it removed. Per bucket, the removal and the new oldest retained offset are
// committed together with fsync; state rows are never touched. A bucket keeps its end offset and
// newest commit time even when all its rows are gone. Readers of removed offsets get
// ErrOutOfRange (Read). Errors: ErrClosed, ErrInternal.
func (t *Table) ApplyRetention(nowMs int64) (removed int64, err error) {
	if err := t.beginWrite(); err != nil {
		return 0, err
	}
	defer t.end()
	cutoff := nowMs - t.retentionMs
	t.mu.Lock()
	bs := make([]*bucket, 0, len(t.buckets))
	for _, b := range t.buckets {
		if b.exists && b.m.start < b.m.end {
			bs = append(bs, b)
		}
	}
	t.mu.Unlock()
	sortBuckets(bs)
	for _, b := range bs {
		n, err := t.retainBucket(b, cutoff)
		removed += n
		if err != nil {
			return removed, err
		}
	}
	return removed, nil
}

// retainBucket removes the rows of b committed before cutoffMs.
func (t *Table) retainBucket(b *bucket, cutoffMs int64) (int64, error) {
	b.wmu.Lock()
	defer b.wmu.Unlock()
	t.mu.Lock()
	m, _ := b.writerMeta() // includes applied writes whose fsync is in flight (pending.go)
	t.mu.Unlock()
	if m.start == m.end {
		return 0, nil
	}
	x, _, err := t.offsetForTimestamp(b.id, cutoffMs)
	if err != nil {
		return 0, err
	}
	if x <= m.start {
		return 0, nil
	}
	nm := m
	nm.start = x
	batch := t.db.NewBatch()
	defer batch.Close()
	if err := batch.DeleteRange(appendChangelogKey(nil, b.prefix, m.start), appendChangelogKey(nil, b.prefix, x), nil); err != nil {
		return 0, t.internal(err)
	}
	if err := batch.Set(metaKey(b.prefix), nm.encode(), nil); err != nil {
		return 0, t.internal(err)
	}
	if err := t.pebbleCall("retention commit", func() error { return batch.Commit(pebble.Sync) }); err != nil {
		return 0, err
	}
	t.mu.Lock()
	// Every queued write is in the WAL before this batch, whose fsync made it durable too.
	b.publishUpTo(math.MaxUint64)
	b.publish(nm)
	b.trimTail(x)
	t.mu.Unlock()
	t.log.Debug("changelog retention", "partition", b.id.Partition, "bucket", b.id.Bucket, "removed", x-m.start, "start", x)
	return x - m.start, nil
}
