package store

import (
	"github.com/cockroachdb/pebble/v2"
)

// Pipelined writes
//
// Apply commits a write's Pebble batch with DB.ApplyNoSyncWait: the batch is in the WAL and the
// memtable (so later writes look its state rows up) when Apply returns, and its fsync is still in
// flight. Apply then releases the bucket locks, so the next write of the same buckets prepares
// (lookup, merge) while the previous fsync runs, and one fsync covers all writes that were
// written to the WAL before it (Pebble syncs the WAL in order).
//
// Readers never see a write before it is durable: each write appends one applied entry (the
// bucket metadata after the write, the changelog chunks for the tail) to the queue of every
// bucket it touched, and the goroutine waiting for the write's fsync publishes the queued entries
// up to and including its own. Entries earlier in a bucket's queue were written to the WAL
// earlier, so they are durable too, and publication stays in offset order. A later write of the
// bucket starts from the queue's last metadata (bucket.writerMeta), not from the published one.

// applied is one write's entry in a bucket's queue.
type applied struct {
	seq       uint64  // Table.applySeq of the write
	m         meta    // bucket metadata after the write
	changelog bool    // the write appended changelog rows to the bucket
	chunks    []chunk // those rows as chunks, kept for the tail (nil when nobody followed)
}

// writerMeta returns the bucket's metadata including the applied but unpublished writes, and
// whether the bucket neither exists on disk nor has an applied write. Called with t.mu and the
// bucket's wmu held.
func (b *bucket) writerMeta() (m meta, isNew bool) {
	if n := len(b.queue); n > 0 {
		return b.queue[n-1].m, false
	}
	return b.m, !b.exists
}

// publishUpTo publishes the queued entries with seq <= upTo (durable: a later write's fsync or
// the write's own covered them), in queue order. Called with t.mu held.
func (b *bucket) publishUpTo(upTo uint64) {
	n := 0
	for n < len(b.queue) && b.queue[n].seq <= upTo {
		b.addTail(b.queue[n])
		n++
	}
	if n == 0 {
		return
	}
	b.publish(b.queue[n-1].m)
	k := copy(b.queue, b.queue[n:])
	clear(b.queue[k:])
	b.queue = b.queue[:k]
}

// Pending is a write that Table.Apply applied: later writes see its state, readers do not yet.
// Its changelog rows become readable, its Commit final, and Done closed once its fsync finished
// (or failed). A Pending need not be waited for: the table publishes it on its own.
type Pending struct {
	t       *Table
	seq     uint64
	batch   *pebble.Batch
	buckets []*bucket
	c       Commit
	err     error
	done    chan struct{}
	// afterSync, when set, runs once the batch is durable, before Done closes and before the
	// operation lock is released (a commit's delete of its staged rows, staging.go).
	afterSync func()
}

// donePending returns a finished Pending with commit c (an empty batch).
func donePending(c Commit) *Pending {
	return &Pending{c: c, done: closedChan}
}

// Done returns a channel closed when the write is durable and readable, or failed.
func (p *Pending) Done() <-chan struct{} { return p.done }

// Wait waits until the write is durable (its Pebble batch fsynced, SPEC section 7) and its
// changelog rows are readable, and returns its Commit. Safe to call more than once and from any
// goroutine. Errors: *ErrFailed (kind ErrTableFailed) when the WAL write or fsync failed: nothing
// of the write may be assumed durable, and the table refuses writes from then on (failure.go).
func (p *Pending) Wait() (Commit, error) {
	<-p.done
	if p.err != nil {
		return Commit{}, p.err
	}
	return p.c, nil
}

// sync waits for the fsync of p's batch, publishes the buckets' entries up to p, calls
// Options.OnCommit and releases the operation lock Apply took. It runs in its own goroutine.
func (p *Pending) sync() {
	t := p.t
	err := p.batch.SyncWait()
	_ = p.batch.Close()
	p.batch = nil
	if err != nil {
		// The WAL write or its fsync failed: the entries stay unpublished and the table fails
		// for good (failure.go).
		p.err = t.fail("WAL write or fsync", err)
	} else {
		t.mu.Lock()
		for _, b := range p.buckets {
			b.publishUpTo(p.seq)
		}
		t.mu.Unlock()
		if t.opts.OnCommit != nil && !p.c.Staged {
			t.opts.OnCommit(p.c)
		}
		if p.afterSync != nil {
			p.afterSync()
		}
	}
	t.end()
	close(p.done)
}
