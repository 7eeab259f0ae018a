package store

import (
	"bytes"
	"context"
	"runtime"
	"slices"
	"sync"

	"github.com/cockroachdb/pebble/v2"
	"github.com/setats/setats/gateway/buckethash"
	"github.com/setats/setats/gateway/partname"
	"github.com/setats/setats/gateway/row"
	"github.com/setats/setats/gateway/rowcodec"
	"github.com/setats/setats/merge"
)

// group is the part of a write batch that falls into one bucket.
type group struct {
	b     *bucket
	rows  []int32 // indexes into the batch, in batch order
	isNew bool
	fold  bool // writeExtra.fold
	// keepTail: the bucket has followers, keep copies of its changelog chunks (tail.go).
	keepTail bool

	// Results of prepare.
	batch     *pebble.Batch
	m         meta     // metadata after the write
	changelog int64    // changelog rows emitted
	kinds     [4]int64 // changelog rows emitted per RowKind
	newKeys   []uint64 // key index hashes of keys stored by this write that were not stored before
	chunks    []chunk  // the changelog chunks written, when keepTail
	err       error
	errRow    int32 // batch row of a merge error; -1 for other errors
}

// slot is one distinct primary key of a group.
type slot struct {
	key   []byte    // state key: "s" P B pk
	orig  merge.Row // the stored row (fold)
	hash  uint64    // key index hash of key
	cur   merge.Row // current row (nil = absent)
	found bool      // a stored row existed before the batch
	dirty bool      // cur differs from the stored row
}

// Write applies a batch of written rows (SPEC sections 3, 4 and 7) and returns once it is
// durable: Apply, then Pending.Wait.
func (t *Table) Write(ctx context.Context, b *row.Batch) (Commit, error) {
	p, err := t.Apply(ctx, b)
	if err != nil {
		return Commit{}, err
	}
	return p.Wait()
}

// Apply applies a batch of written rows (SPEC sections 3, 4 and 7) and returns before its fsync
// finishes; the returned Pending reports when the batch is durable (Pending.Wait). Writes
// applied later, of this or another caller, already see its state (pipelining, pending.go);
// readers see its changelog rows only once it is durable, and nothing may be acknowledged to a
// client before Wait returns.
//
// For every row, in batch order per key, the merge engine folds it into the stored row of its
// key; a key written twice in a batch sees its own earlier write. The changelog rows the merge
// emits get dense offsets per bucket (+1 per row) and one commit time: max(clock, newest commit
// time of every touched bucket), so commit times never decrease within a bucket. State rows,
// changelog rows and bucket metadata of all touched buckets go into one Pebble batch committed
// with fsync. The batch is atomic: when any row fails (a bad row: ErrInvalid; a merge
// error such as a delete on a PARTIAL_UPDATE table without a delete option, SPEC case M7)
// nothing of it is applied and Apply returns the error.
//
// Rows of different buckets are merged in parallel. Writes touching disjoint buckets run in
// parallel; writes sharing a bucket are prepared one after the other, in the order their Apply
// calls took the bucket locks. Errors: ErrInvalid (bad batch, merge errors),
// context.Canceled or DeadlineExceeded kinds (ctx done before the commit), ErrClosed (table
// closed), ErrInternal (storage).
func (t *Table) Apply(ctx context.Context, b *row.Batch) (*Pending, error) {
	if err := t.beginWrite(); err != nil {
		return nil, err
	}
	// The operation lock goes with the Pending to its sync goroutine; on any other way out,
	// including a panic, it is released here.
	handedOff := false
	defer func() {
		if !handedOff {
			t.end()
		}
	}()
	if err := b.Validate(t.tbl); err != nil {
		return nil, &Error{Kind: ErrInvalid, Err: err}
	}
	if len(b.Rows) == 0 {
		return donePending(Commit{Table: t.tbl, CommitMs: t.clock()}), nil
	}
	p, err := t.apply(ctx, b, nil)
	if err != nil {
		return nil, err
	}
	handedOff = true
	go p.sync() // ends the operation
	return p, nil
}

// writeExtra adds keys to a write's Pebble batch: writer sequences (writerseq.go), commit
// records of staged rows (staging.go). keys is called with the write's Commit (offsets after
// the write) once the merge is done, before the batch is applied.
type writeExtra struct {
	keys func(batch *pebble.Batch, c *Commit) error
	// fold: merge each key's rows of the write silently and emit one changelog change per key,
	// from the stored row to the merge result (an exactly-once commit, staging.go).
	fold bool
}

// apply prepares b under the bucket locks and applies it to Pebble without waiting for the
// fsync; on success the caller owns the returned Pending's batch and operation lock.
func (t *Table) apply(ctx context.Context, b *row.Batch, extra *writeExtra) (*Pending, error) {
	groups := t.groupRows(b)
	for _, g := range groups {
		g.b.wmu.Lock()
		g.fold = extra != nil && extra.fold
	}
	defer func() {
		for _, g := range groups {
			g.b.wmu.Unlock()
		}
		t.mu.Lock()
		for _, g := range groups {
			t.releaseBucket(g.b) // a failed write to a new bucket leaves nothing behind
		}
		t.mu.Unlock()
	}()
	if err := ctx.Err(); err != nil {
		return nil, contextError(err)
	}

	// Commit time and starting metadata (stable: we hold the writer locks).
	commitMs := t.clock()
	t.mu.Lock()
	for _, g := range groups {
		g.m, g.isNew = g.b.writerMeta()
		g.keepTail = g.b.followers > 0
		commitMs = max(commitMs, g.m.lastCommitMs)
	}
	t.mu.Unlock()

	// Look up and merge each bucket's rows, in parallel across buckets.
	workers := min(len(groups), runtime.GOMAXPROCS(0))
	if workers <= 1 {
		for _, g := range groups {
			t.prepare(g, b, commitMs)
		}
	} else {
		var wg sync.WaitGroup
		next := make(chan *group, len(groups))
		for _, g := range groups {
			next <- g
		}
		close(next)
		for range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for g := range next {
					t.prepare(g, b, commitMs)
				}
			}()
		}
		wg.Wait()
	}
	defer func() {
		for _, g := range groups {
			if g.batch != nil {
				_ = g.batch.Close()
			}
		}
	}()
	// Report the merge error of the earliest row (other errors first).
	var failed *group
	for _, g := range groups {
		if g.err != nil && (failed == nil || g.errRow < failed.errRow) {
			failed = g
		}
	}
	if failed != nil {
		return nil, failed.err
	}
	if err := ctx.Err(); err != nil {
		return nil, contextError(err)
	}

	// The write's commit, known before it is applied (extra keys record it).
	p := &Pending{t: t, seq: 0, done: make(chan struct{}),
		buckets: make([]*bucket, 0, len(groups)),
		c:       Commit{Table: t.tbl, Rows: int64(len(b.Rows)), CommitMs: commitMs, Buckets: make([]BucketOffsets, 0, len(groups))}}
	c := &p.c
	for _, g := range groups {
		c.ChangelogRows += g.changelog
		for k, n := range g.kinds {
			c.ChangelogKinds[k] += n
		}
		c.Buckets = append(c.Buckets, BucketOffsets{BucketID: g.b.id, StartOffset: g.m.start, EndOffset: g.m.end, LastCommitMs: g.m.lastCommitMs})
		if g.isNew {
			c.NewBuckets = append(c.NewBuckets, g.b.id)
		}
	}

	// One batch, one fsync (waited for by Pending.sync). The groups' batches are appended to one
	// allocated at their total size: appended to the first group's, it grew by doubling, copying
	// the bytes appended so far each time (3-4% of the gateway's CPU in SetatsSinkBenchmark
	// profiles, docs/PERF-NOTES.md).
	var batch *pebble.Batch
	switch len(groups) {
	case 0:
		batch = t.db.NewBatch()
	case 1:
		batch, groups[0].batch = groups[0].batch, nil
	default:
		size := 0
		for _, g := range groups {
			size += g.batch.Len()
		}
		batch = t.db.NewBatchWithSize(size)
		for _, g := range groups {
			if err := batch.Apply(g.batch, nil); err != nil {
				_ = batch.Close()
				return nil, t.internal(err)
			}
		}
	}
	if extra != nil && extra.keys != nil {
		if err := extra.keys(batch, c); err != nil {
			_ = batch.Close()
			return nil, err
		}
	}
	if err := t.pebbleCall("commit", func() error { return t.db.ApplyNoSyncWait(batch, pebble.Sync) }); err != nil {
		if t.Err() == nil {
			_ = batch.Close()
		}
		return nil, err
	}

	// Applied: later writes must see it (key index, queued metadata) before the locks go.
	p.seq, p.batch = t.applySeq.Add(1), batch
	for _, g := range groups {
		t.keys.add(g.newKeys)
	}
	t.mu.Lock()
	for _, g := range groups {
		g.b.queue = append(g.b.queue, applied{seq: p.seq, m: g.m, changelog: g.changelog > 0, chunks: g.chunks})
		p.buckets = append(p.buckets, g.b)
	}
	t.mu.Unlock()
	return p, nil
}

// groupRows assigns every row to its bucket and returns the groups sorted by bucket (the lock
// order), holding a reference to each bucket (holdBucket) that apply releases.
func (t *Table) groupRows(b *row.Batch) []*group {
	tbl := t.tbl
	type gkey struct {
		part   string
		bucket int32
	}
	byKey := map[gkey]*group{}
	var groups []*group
	// The names of the batch's first partitions, with a row of each: rows of a few partitions
	// often alternate (a key's partition is part of it), and the name is built once per
	// partition instead of once per change of partition between rows.
	type partName struct {
		row  merge.Row
		name string
	}
	var parts [maxCachedPartitions]partName
	nparts := 0
	var prevPart merge.Row
	part := ""
	partitioned := len(tbl.PartitionKeys) > 0
	t.mu.Lock()
	for i, r := range b.Rows {
		if partitioned && (prevPart == nil || !samePartition(tbl.PartitionKeys, prevPart, r)) {
			j := 0
			for j < nparts && !samePartition(tbl.PartitionKeys, parts[j].row, r) {
				j++
			}
			if j < nparts {
				part = parts[j].name
			} else {
				part = partname.Of(tbl, r)
				if nparts < len(parts) {
					parts[nparts] = partName{r, part}
					nparts++
				}
			}
			prevPart = r
		}
		k := gkey{part, buckethash.Bucket(tbl, r)}
		g := byKey[k]
		if g == nil {
			g = &group{b: t.holdBucket(BucketID{Partition: k.part, Bucket: k.bucket})}
			byKey[k] = g
			groups = append(groups, g)
		}
		g.rows = append(g.rows, int32(i))
	}
	t.mu.Unlock()
	slices.SortFunc(groups, func(a, b *group) int { return bytes.Compare(a.b.prefix, b.b.prefix) })
	return groups
}

// maxCachedPartitions is how many partition names groupRows keeps per batch.
const maxCachedPartitions = 8

func samePartition(cols []int, a, b merge.Row) bool {
	for _, c := range cols {
		if !merge.ValueEqual(a[c], b[c]) {
			return false
		}
	}
	return true
}

// prepare looks up the stored rows of a group's keys, merges the group's rows in batch order and
// fills g.batch with the state and changelog writes and the new bucket metadata.
func (t *Table) prepare(g *group, b *row.Batch, commitMs int64) {
	tbl := t.tbl
	prefix := g.b.prefix
	g.errRow = -1

	// Distinct keys.
	slotOf := make([]int32, len(g.rows))
	index := make(map[string]int32, len(g.rows))
	slots := make([]slot, 0, len(g.rows))
	keyBuf := make([]byte, 0, len(g.rows)*(len(prefix)+24))
	for i, r := range g.rows {
		start := len(keyBuf)
		keyBuf = appendStateKey(keyBuf, prefix)
		keyBuf = rowcodec.AppendKey(keyBuf, tbl, b.Rows[r])
		k := keyBuf[start:len(keyBuf):len(keyBuf)]
		s, ok := index[string(k)]
		if !ok {
			s = int32(len(slots))
			index[string(k)] = s
			slots = append(slots, slot{key: k})
		} else {
			keyBuf = keyBuf[:start]
		}
		slotOf[i] = s
	}

	// Stored rows, looked up in key order with one iterator (bloom filters skip most files), for
	// the keys the key index does not rule out.
	if err := t.lookup(slots); err != nil {
		g.err = err
		return
	}

	// Merge in batch order.
	g.batch = t.db.NewBatch()
	var out []merge.Change
	end := g.m.end
	cw := chunkWriter{tbl: tbl, prefix: prefix, commitMs: commitMs, batch: g.batch, keep: g.keepTail}
	for i, r := range g.rows {
		s := &slots[slotOf[i]]
		next, changes, err := t.engine.Merge(out[:0], s.cur, b.Kinds[r], b.Rows[r], b.Declared)
		if err != nil {
			g.err, g.errRow = t.mergeError(err, r), r
			return
		}
		out = changes
		if len(changes) == 0 {
			continue
		}
		if next != nil {
			if err := t.checkNotNull(next, r); err != nil {
				g.err, g.errRow = err, r
				return
			}
			if err := t.checkRowSize(next, r); err != nil {
				g.err, g.errRow = err, r
				return
			}
		}
		if g.fold && !s.dirty {
			s.orig = s.cur
		}
		s.cur = next
		s.dirty = true
		if g.fold {
			continue
		}
		if !tbl.ChangelogEnabled {
			continue // changelog.enabled = false: state only (SPEC section 8)
		}
		for _, ch := range changes {
			if err := cw.add(end, ch.Kind, ch.Row); err != nil {
				g.err = t.internal(err)
				return
			}
			g.kinds[ch.Kind&3]++
			end++
		}
	}
	if g.fold {
		// One change per key, in the order of the keys' first rows: the stored row to the result.
		for i := range slots {
			s := &slots[i]
			if !s.dirty {
				continue
			}
			var chs [2]merge.Change
			n := 0
			switch {
			case s.orig == nil && s.cur == nil, s.orig != nil && s.cur != nil && merge.RowEqual(s.orig, s.cur):
				s.dirty = false
			case s.orig == nil:
				chs[0], n = merge.Change{Kind: merge.Insert, Row: s.cur}, 1
			case s.cur == nil:
				chs[0], n = merge.Change{Kind: merge.Delete, Row: s.orig}, 1
			default:
				chs[0], chs[1], n = merge.Change{Kind: merge.UpdateBefore, Row: s.orig}, merge.Change{Kind: merge.UpdateAfter, Row: s.cur}, 2
			}
			if !tbl.ChangelogEnabled {
				continue // changelog.enabled = false: state only (SPEC section 8)
			}
			for _, ch := range chs[:n] {
				if err := cw.add(end, ch.Kind, ch.Row); err != nil {
					g.err = t.internal(err)
					return
				}
				g.kinds[ch.Kind&3]++
				end++
			}
		}
	}
	if err := cw.flush(); err != nil {
		g.err = t.internal(err)
		return
	}
	g.chunks = cw.kept
	buf := cw.buf
	for i := range slots {
		s := &slots[i]
		if !s.dirty {
			continue
		}
		if s.cur != nil && !s.found {
			g.newKeys = append(g.newKeys, s.hash)
		}
		var err error
		switch {
		case s.cur != nil:
			buf = rowcodec.AppendValue(buf[:0], tbl, s.cur)
			err = g.batch.Set(s.key, buf, nil)
		case s.found:
			err = g.batch.Delete(s.key, nil)
		}
		if err != nil {
			g.err = t.internal(err)
			return
		}
	}
	g.changelog = end - g.m.end
	if g.changelog > 0 || g.isNew {
		g.m.end = end
		if g.changelog > 0 {
			g.m.lastCommitMs = commitMs
		}
		if err := g.batch.Set(metaKey(prefix), g.m.encode(), nil); err != nil {
			g.err = t.internal(err)
		}
	}
}

// lookup fills cur and found of every slot from the stored state.
func (t *Table) lookup(slots []slot) error {
	hs := make([]uint64, len(slots))
	for i := range slots {
		slots[i].hash = t.keys.hash(slots[i].key)
		hs[i] = slots[i].hash
	}
	maybe := make([]bool, len(slots))
	t.keys.filter(hs, maybe)
	order := make([]int32, 0, len(slots))
	for i := range slots {
		if maybe[i] {
			order = append(order, int32(i))
		}
	}
	if len(order) == 0 {
		return nil
	}
	slices.SortFunc(order, func(a, b int32) int { return bytes.Compare(slots[a].key, slots[b].key) })
	it, err := t.db.NewIter(nil)
	if err != nil {
		return t.internal(err)
	}
	defer it.Close()
	for _, i := range order {
		s := &slots[i]
		if !it.SeekPrefixGE(s.key) || !bytes.Equal(it.Key(), s.key) {
			continue
		}
		v, err := it.ValueAndErr()
		if err != nil {
			return t.internal(err)
		}
		r, err := rowcodec.DecodeValue(t.tbl, v)
		if err != nil {
			return t.internal(err)
		}
		s.cur, s.found = r, true
	}
	return t.internalOrNil(it.Error())
}

// mergeError names the table and the row in a merge engine's error: an ErrInvalid error that
// wraps it.
func (t *Table) mergeError(err error, r int32) error {
	return errorf(ErrInvalid, "table %s: row %d: %w", t.tbl.QualifiedName(), r, err)
}
