package store

import (
	"encoding/binary"
	"errors"
	"math"

	"github.com/cockroachdb/pebble/v2"
)

// Dropping a partition
//
// DropPartition removes everything the store keeps for one partition in ONE Pebble batch
// committed with fsync: per bucket of the partition, its state rows ("s" P B ...) and changelog
// chunks ("c" P B ...) with two range deletions (P B is prefix-free, doc.go), its metadata
// ("m" P B), the slots' sync points of the bucket, and a drop record:
//
//	key                          value
//	"d" P B                      uvarint end offset of the bucket when it was dropped, varint
//	                             drop time (ms)
//
// Offsets rule: offsets are never reused. A bucket of a dropped partition that is written
// again continues at the end offset it had when it was dropped (its start offset is that end
// offset), so a reader holding a position of the old partition never reads a new row at an old
// offset. Reads use the drop record to end readers of the old partition: Read of an offset
// below the dropped end offset, or at it while the bucket has not been written again, fails
// with ErrPartitionDropped (the gateway ends the DoGet with a PARTITION_DROPPED marker,
// proto/README.md). A reader positioned exactly at the dropped end offset of a bucket that was
// written again reads the new rows (they come after everything it read). Drop records stay
// (a few bytes per dropped bucket) so that the rule survives restarts; a later drop of the same
// partition replaces them.
//
// The in-memory key index keeps the dropped keys' hashes (it may hold more keys than are stored,
// keyindex.go): they only cost a lookup when written again. Staged exactly-once rows of the
// partition are kept: committing them writes the partition again. Snapshot views pinned before
// the drop keep reading the rows as of before it (a consistent view).

// tagDropped keys hold the drop records of dropped partitions' buckets (partition_drop.go).
const tagDropped = 'd'

func droppedKey(prefix []byte) []byte {
	return append(append(make([]byte, 0, 1+len(prefix)), tagDropped), prefix...)
}

func encodeDropped(end, ms int64) []byte {
	return binary.AppendVarint(binary.AppendUvarint(nil, uint64(end)), ms)
}

func decodeDropped(b []byte) (end int64, err error) {
	e, n := binary.Uvarint(b)
	if n <= 0 || e > math.MaxInt64 {
		return 0, errors.New("store: malformed drop record")
	}
	if _, m := binary.Varint(b[n:]); m <= 0 {
		return 0, errors.New("store: malformed drop record")
	}
	return int64(e), nil
}

// DroppedBucket is one bucket of a dropped partition: EndOffset is its end offset when it was
// dropped (the first offset a later write of the bucket gets), Rows the changelog rows removed
// ([StartOffset, EndOffset) before the drop).
type DroppedBucket struct {
	BucketID
	EndOffset, Rows int64
}

// DropResult reports a DropPartition: the buckets the partition had (sorted by bucket), the
// state rows removed and the drop time (ms).
type DropResult struct {
	Partition string
	Buckets   []DroppedBucket
	StateRows int64
	DroppedMs int64
}

// DropPartition removes partition (its name, proto/README.md "Partition names") from the table:
// state rows, changelog, bucket metadata and the slots' sync points of its buckets, in one
// Pebble batch with fsync (see above: all or nothing after a crash), and writes its buckets'
// drop records. Writes of the partition wait for the drop (the bucket locks are held); writes
// applied before it are published first. Readers following its buckets are woken and their next
// Read fails with ErrPartitionDropped.
// Errors: ErrNotFound when no bucket of the partition exists (the message names it), ErrClosed,
// the *ErrFailed of a failed table, ErrInternal (storage).
func (t *Table) DropPartition(partition string) (DropResult, error) {
	res := DropResult{Partition: partition}
	if err := t.beginWrite(); err != nil {
		return res, err
	}
	defer t.end()
	var bs []*bucket
	t.mu.Lock()
	for id, b := range t.buckets {
		if id.Partition == partition && (b.exists || len(b.queue) > 0) {
			b.refs++
			bs = append(bs, b)
		}
	}
	t.mu.Unlock()
	defer func() {
		t.mu.Lock()
		for _, b := range bs {
			t.releaseBucket(b)
		}
		t.mu.Unlock()
	}()
	if len(bs) == 0 {
		return res, errorf(ErrNotFound, "table %s has no partition %q", t.tbl.QualifiedName(), partition)
	}
	sortBuckets(bs)
	for _, b := range bs {
		b.wmu.Lock()
	}
	defer func() {
		for _, b := range bs {
			b.wmu.Unlock()
		}
	}()
	// Let the writes applied before the drop be published first (their fsync is in flight), so
	// that no commit of the partition is announced after its drop.
	for _, b := range bs {
		t.mu.Lock()
		var wait <-chan struct{}
		if n := len(b.queue); n > 0 && b.queue[n-1].m.end > b.m.end {
			wait = t.waitLocked(b, b.queue[n-1].m.end-1)
		}
		t.mu.Unlock()
		if wait != nil {
			<-wait
		}
	}
	if f := t.failed.Load(); f != nil {
		return res, f
	}
	nowMs := t.clock()
	res.DroppedMs = nowMs
	batch := t.db.NewBatch()
	defer batch.Close()
	t.slotMu.Lock()
	slotNames := make([]string, 0, len(t.slots))
	for name := range t.slots {
		slotNames = append(slotNames, name)
	}
	t.slotMu.Unlock()
	ms := make([]meta, len(bs))
	t.mu.Lock()
	for i, b := range bs {
		ms[i], _ = b.writerMeta()
	}
	t.mu.Unlock()
	for i, b := range bs {
		// Only the buckets held: a bucket of the partition that a concurrent write creates after
		// the drop is the partition written again.
		for _, tag := range []byte{tagState, tagChangelog} {
			lo := append([]byte{tag}, b.prefix...)
			if err := batch.DeleteRange(lo, prefixEnd(lo), nil); err != nil {
				return res, t.internal(err)
			}
		}
		if err := batch.Delete(metaKey(b.prefix), nil); err != nil {
			return res, t.internal(err)
		}
		for _, name := range slotNames {
			if err := batch.Delete(slotPointKey(name, b.id), nil); err != nil {
				return res, t.internal(err)
			}
		}
		if err := batch.Set(droppedKey(b.prefix), encodeDropped(ms[i].end, nowMs), nil); err != nil {
			return res, t.internal(err)
		}
		rows, err := t.countState(b.prefix)
		if err != nil {
			return res, err
		}
		res.StateRows += rows
		res.Buckets = append(res.Buckets, DroppedBucket{BucketID: b.id, EndOffset: ms[i].end, Rows: ms[i].end - ms[i].start})
	}
	if err := t.pebbleCall("drop partition commit", func() error { return batch.Commit(pebble.Sync) }); err != nil {
		return res, err
	}
	t.mu.Lock()
	for i, b := range bs {
		// Every queued write is in the WAL before this batch, whose fsync made it durable too.
		b.publishUpTo(math.MaxUint64)
		b.m = meta{start: ms[i].end, end: ms[i].end}
		b.exists = false
		b.dropped, b.droppedEnd = true, ms[i].end
		b.tail, b.tailBytes = nil, 0
		for off, ch := range b.waiters {
			close(ch)
			delete(b.waiters, off)
		}
	}
	t.mu.Unlock()
	t.slotMu.Lock()
	for _, r := range t.slots {
		for _, b := range bs {
			delete(r.Points, b.id)
		}
	}
	t.slotMu.Unlock()
	t.log.Info("partition dropped", "partition", partition, "buckets", len(bs), "state_rows", res.StateRows)
	return res, nil
}

// countState counts the state rows of the bucket with key prefix P B (for DropResult).
func (t *Table) countState(prefix []byte) (int64, error) {
	lo := append([]byte{tagState}, prefix...)
	it, err := t.db.NewIter(&pebble.IterOptions{LowerBound: lo, UpperBound: prefixEnd(lo)})
	if err != nil {
		return 0, t.internal(err)
	}
	defer it.Close()
	var n int64
	for it.First(); it.Valid(); it.Next() {
		n++
	}
	return n, t.internalOrNil(it.Error())
}

// loadDropped reads the drop records into the buckets (Open): a bucket written again after its
// drop keeps its metadata, one that was not becomes a placeholder at its dropped end offset.
func (t *Table) loadDropped() error {
	return t.scanBucketRecords(tagDropped, "drop record", func(id BucketID, v []byte) error {
		end, err := decodeDropped(v)
		if err != nil {
			return err
		}
		b := t.buckets[id]
		if b == nil {
			b = &bucket{id: id, prefix: bucketPrefix(id), m: meta{start: end, end: end}}
			t.buckets[id] = b
		}
		b.dropped, b.droppedEnd = true, end
		return nil
	})
}

// scanBucketRecords calls fn with the bucket id and value of every record whose key is tag
// followed by a bucket prefix and nothing else (bucket metadata, drop records), in key order, at
// Open. Errors: ErrInternal for a key of another shape (what names the record kind), for fn's
// error (a value that does not decode) and for Pebble's.
func (t *Table) scanBucketRecords(tag byte, what string, fn func(id BucketID, value []byte) error) error {
	it, err := t.db.NewIter(&pebble.IterOptions{LowerBound: []byte{tag}, UpperBound: []byte{tag + 1}})
	if err != nil {
		return t.internal(err)
	}
	defer it.Close()
	for it.First(); it.Valid(); it.Next() {
		id, rest, err := parseBucketPrefix(it.Key()[1:])
		if err != nil || len(rest) != 0 {
			return t.internal(errors.New("malformed " + what + " key"))
		}
		if err := fn(id, it.Value()); err != nil {
			return t.internal(err)
		}
	}
	return t.internalOrNil(it.Error())
}

// droppedAt reports whether a read of bucket b from offset from belongs to a dropped incarnation
// of its partition (the offsets rule above). Called with t.mu held.
func (b *bucket) droppedAt(from int64) bool {
	return b != nil && b.dropped && (from < b.droppedEnd || (from == b.droppedEnd && !b.exists && len(b.queue) == 0))
}

// PartitionDropped reports whether a read of bucket id from offset from ends because the
// bucket's partition was dropped (Read then fails with ErrPartitionDropped), and the bucket's
// end offset at the drop.
func (t *Table) PartitionDropped(id BucketID, from int64) (droppedEnd int64, dropped bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	b := t.buckets[id]
	if !b.droppedAt(from) {
		return 0, false
	}
	return b.droppedEnd, true
}

// droppedError is the ErrPartitionDropped error of a read of a dropped partition's bucket.
func (t *Table) droppedError(id BucketID, from, end int64) error {
	return errorf(ErrPartitionDropped,
		"table %s partition %q bucket %d: the partition was dropped at end offset %d; offset %d belongs to the dropped partition",
		t.tbl.QualifiedName(), id.Partition, id.Bucket, end, from)
}
