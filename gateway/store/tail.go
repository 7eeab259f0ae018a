package store

import (
	"slices"
	"sync"
)

// In-memory changelog tail
//
// A reader that follows a bucket (DoGet follow=true) reads the few rows each commit appends as
// soon as they are published. Reading them from Pebble costs an iterator over the whole LSM per
// wake-up. Instead, while a bucket has followers (Table.Follow), every write keeps a copy of the
// changelog chunks it appended to the bucket, and publication appends them to the bucket's tail:
// the newest published chunks, contiguous up to the published end offset, at most tailMaxBytes.
// Read serves offsets the tail holds from memory and falls back to Pebble for older ones. The
// tail only ever holds durable rows (it grows at publication) and is dropped when the last
// follower leaves.

// tailMaxBytes bounds the changelog tail of one followed bucket (chunk bytes).
const tailMaxBytes = 128 << 10

func chunkSize(c chunk) int { return chunkHeader + len(c.rows) }

// Follow registers a reader that follows the end of bucket id (the bucket need not exist yet)
// and returns the function that unregisters it (safe to call more than once). While a bucket
// has followers the store keeps its newest published changelog rows (up to 128 KiB of chunks) in
// memory, and Read serves them without a Pebble iterator. When the last follower of a bucket
// that was never written leaves, the bucket is forgotten (Table.forgetIfUnused).
func (t *Table) Follow(id BucketID) (unfollow func()) {
	t.mu.Lock()
	b := t.bucketFor(id)
	b.followers++
	t.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			t.mu.Lock()
			b.followers--
			if b.followers == 0 {
				b.tail, b.tailBytes = nil, 0
				t.forgetIfUnused(b)
			}
			t.mu.Unlock()
		})
	}
}

// addTail appends the chunks of a published entry to the tail, keeping it contiguous and within
// tailMaxBytes. Called with t.mu held, in offset order.
func (b *bucket) addTail(a applied) {
	if b.followers == 0 || !a.changelog {
		return
	}
	if len(a.chunks) == 0 || (len(b.tail) > 0 && b.tail[len(b.tail)-1].end() != a.chunks[0].first) {
		// The write kept no chunks (nobody followed when it was prepared): a gap.
		b.tail, b.tailBytes = b.tail[:0], 0
		if len(a.chunks) == 0 {
			return
		}
	}
	for _, c := range a.chunks {
		b.tail = append(b.tail, c)
		b.tailBytes += chunkSize(c)
	}
	n := 0
	for n < len(b.tail) && b.tailBytes > tailMaxBytes {
		b.tailBytes -= chunkSize(b.tail[n])
		n++
	}
	b.tail = slices.Delete(b.tail, 0, n)
}

// trimTail drops the tail chunks that end at or below offset (removed by retention). Called with
// t.mu held.
func (b *bucket) trimTail(offset int64) {
	n := 0
	for n < len(b.tail) && b.tail[n].end() <= offset {
		b.tailBytes -= chunkSize(b.tail[n])
		n++
	}
	b.tail = slices.Delete(b.tail, 0, n)
}

// readView returns the published metadata and key prefix of bucket id and, when the tail holds
// offset from, copies of the tail chunks from the one holding from on (nil otherwise), and
// whether from belongs to a dropped partition (partition_drop.go) with the dropped end offset.
func (t *Table) readView(id BucketID, from int64) (m meta, prefix []byte, tail []chunk, droppedEnd int64, dropped bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	b := t.buckets[id]
	if b == nil {
		return meta{}, nil, nil, 0, false
	}
	if b.droppedAt(from) {
		return b.m, b.prefix, nil, b.droppedEnd, true
	}
	if len(b.tail) == 0 || b.tail[0].first > from || from >= b.m.end {
		return b.m, b.prefix, nil, 0, false
	}
	i, _ := slices.BinarySearchFunc(b.tail, from, func(c chunk, off int64) int {
		switch {
		case c.end() <= off:
			return -1
		case c.first > off:
			return 1
		}
		return 0
	})
	return b.m, b.prefix, slices.Clone(b.tail[i:]), 0, false
}
