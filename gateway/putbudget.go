package gateway

import (
	"context"
	"sync/atomic"

	"github.com/apache/arrow-go/v18/arrow"

	"golang.org/x/sync/semaphore"
)

// putBudget bounds the bytes of DoPut record batches received and not yet acknowledged over all
// streams (Limits.MaxInflightPutBytes; SPEC section 14, issue 7 item 4). A stream takes a batch's
// bytes before applying it and gives them back once the batch is acknowledged (or refused); when
// the budget is spent, the stream waits, it stops reading its client's messages meanwhile, and
// gRPC flow control makes the client wait in turn: back pressure, not failure. A batch larger
// than the whole budget takes all of it.
type putBudget struct {
	sem *semaphore.Weighted
	max int64
	// waiting counts the streams waiting for bytes (tests).
	waiting atomic.Int64
}

func newPutBudget(max int64) *putBudget {
	return &putBudget{sem: semaphore.NewWeighted(max), max: max}
}

// acquire takes n bytes (at most the whole budget) and returns how many it took, to be given
// back with release; it waits until they are free or ctx ends (its error).
func (b *putBudget) acquire(ctx context.Context, n int64) (int64, error) {
	n = min(max(n, 1), b.max)
	if b.sem.TryAcquire(n) {
		return n, nil
	}
	b.waiting.Add(1)
	defer b.waiting.Add(-1)
	if err := b.sem.Acquire(ctx, n); err != nil {
		return 0, err
	}
	return n, nil
}

// release gives back n bytes taken by acquire (0 is a no-op).
func (b *putBudget) release(n int64) {
	if n > 0 {
		b.sem.Release(n)
	}
}

// recordBytes returns the bytes of the Arrow buffers of rec (children and dictionaries included):
// what a received record batch costs until it is acknowledged.
func recordBytes(rec arrow.RecordBatch) int64 {
	var n int64
	for _, c := range rec.Columns() {
		n += dataBytes(c.Data())
	}
	return n
}

func dataBytes(d arrow.ArrayData) int64 {
	if d == nil {
		return 0
	}
	var n int64
	for _, b := range d.Buffers() {
		if b != nil {
			n += int64(b.Len())
		}
	}
	for _, c := range d.Children() {
		n += dataBytes(c)
	}
	if d.DataType().ID() == arrow.DICTIONARY {
		n += dataBytes(d.Dictionary())
	}
	return n
}
