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

// RetentionCutoff returns the oldest offset of bucket id that changelog retention keeps as of
// nowMs (the first row committed at or after nowMs minus the retention; the end offset when every
// row is older). Package gateway/binlog compares it with the slots' sync points before calling
// TruncateChangelog. Errors: ErrClosed, ErrInternal.
func (t *Table) RetentionCutoff(id BucketID, nowMs int64) (int64, error) {
	if err := t.begin(); err != nil {
		return 0, err
	}
	defer t.end()
	x, _, err := t.offsetForTimestamp(id, nowMs-t.retentionMs)
	return x, err
}

// TruncateChangelog removes the changelog rows of bucket id below upto, in whole chunks: a chunk
// goes only when all of its rows are below upto, so no row at or above upto is ever removed
// (SPEC section 8: never a row a live slot still needs). In the same batch (fsync) it stores the
// slot records slots (headers and all points), so that a slot marked lost because of this
// removal is durable together with it. It returns the rows removed (0 when nothing was below
// upto; the slots are stored all the same). State rows are never touched.
// Errors: ErrClosed, ErrInternal.
func (t *Table) TruncateChangelog(id BucketID, upto int64, slots []SlotRecord) (int64, error) {
	if err := t.begin(); err != nil {
		return 0, err
	}
	defer t.end()
	t.mu.Lock()
	b := t.buckets[id]
	t.mu.Unlock()
	var removed int64
	batch := t.db.NewBatch()
	defer batch.Close()
	var nm meta
	if b != nil {
		b.wmu.Lock()
		defer b.wmu.Unlock()
		t.mu.Lock()
		m, _ := b.writerMeta()
		t.mu.Unlock()
		x, err := t.chunkStartAtOrBelow(b, m, upto)
		if err != nil {
			return 0, err
		}
		if x > m.start {
			nm = m
			nm.start = x
			removed = x - m.start
			if err := batch.DeleteRange(appendChangelogKey(nil, b.prefix, m.start), appendChangelogKey(nil, b.prefix, x), nil); err != nil {
				return 0, t.internal(err)
			}
			if err := batch.Set(metaKey(b.prefix), nm.encode(), nil); err != nil {
				return 0, t.internal(err)
			}
		}
	}
	for i := range slots {
		if err := appendSlot(batch, &slots[i], nil); err != nil {
			return 0, t.internal(err)
		}
	}
	if batch.Empty() {
		return 0, nil
	}
	if err := batch.Commit(pebble.Sync); err != nil {
		return 0, t.internal(err)
	}
	if removed > 0 {
		t.mu.Lock()
		b.publishUpTo(math.MaxUint64)
		b.publish(nm)
		b.trimTail(nm.start)
		t.mu.Unlock()
		t.log.Debug("changelog truncated", "partition", id.Partition, "bucket", id.Bucket, "removed", removed, "start", nm.start)
	}
	if len(slots) > 0 {
		t.slotMu.Lock()
		for i := range slots {
			r := slots[i].Clone()
			t.slots[r.Name] = &r
		}
		t.slotMu.Unlock()
	}
	return removed, nil
}

// chunkStartAtOrBelow returns the largest offset x <= upto such that [m.start, x) are whole
// chunks: the first offset of the chunk holding upto, or upto itself when it is the end offset
// m.end (or beyond). Called with b.wmu held.
func (t *Table) chunkStartAtOrBelow(b *bucket, m meta, upto int64) (int64, error) {
	if upto <= m.start {
		return m.start, nil
	}
	if upto >= m.end {
		return m.end, nil
	}
	it, err := t.db.NewIter(&pebble.IterOptions{
		LowerBound: appendChangelogKey(nil, b.prefix, 0),
		UpperBound: appendChangelogKey(nil, b.prefix, m.end),
	})
	if err != nil {
		return 0, t.internal(err)
	}
	defer it.Close()
	if !it.SeekLT(appendChangelogKey(nil, b.prefix, upto+1)) {
		if err := it.Error(); err != nil {
			return 0, t.internal(err)
		}
		return m.start, nil
	}
	return max(changelogKeyOffset(it.Key()), m.start), nil
}

// CommitTimes returns, for each offset in offsets, the commit time (ms) of the changelog row at
// that offset of bucket id, or 0 when it is not retained or not written yet. One iterator serves
// all offsets (consume progress reads two per sync point). Errors: ErrClosed,
// ErrInternal.
func (t *Table) CommitTimes(id BucketID, offsets []int64) ([]int64, error) {
	out := make([]int64, len(offsets))
	if err := t.begin(); err != nil {
		return out, err
	}
	defer t.end()
	m, prefix := t.published(id)
	if m.start == m.end {
		return out, nil
	}
	it, err := t.db.NewIter(&pebble.IterOptions{
		LowerBound: appendChangelogKey(nil, prefix, 0),
		UpperBound: appendChangelogKey(nil, prefix, m.end),
	})
	if err != nil {
		return out, t.internal(err)
	}
	defer it.Close()
	for i, off := range offsets {
		if off < m.start || off >= m.end {
			continue
		}
		if !it.SeekLT(appendChangelogKey(nil, prefix, off+1)) {
			continue
		}
		v, err := it.ValueAndErr()
		if err != nil {
			return out, t.internal(err)
		}
		c, err := parseChunk(it.Key(), v)
		if err != nil {
			return out, t.internal(err)
		}
		if c.first <= off && off < c.end() {
			out[i] = c.commitMs
		}
	}
	return out, t.internalOrNil(it.Error())
}
