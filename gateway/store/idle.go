package store

// Idle reports whether nothing uses the table at this moment: no operation running (a write
// waiting for its fsync counts), no follower (Follow), no open snapshot view. A table whose
// storage failed is never idle (its DB cannot be closed: failure.go). The gateway closes idle
// tables to bound the open ones (an LRU of open tables); the caller must keep new operations
// from starting while it decides and closes.
func (t *Table) Idle() bool {
	if t.failed.Load() != nil {
		return false
	}
	if !t.ops.TryLock() {
		return false
	}
	t.ops.Unlock()
	t.mu.Lock()
	for _, b := range t.buckets {
		if b.followers > 0 || len(b.queue) > 0 {
			t.mu.Unlock()
			return false
		}
	}
	t.mu.Unlock()
	t.viewMu.Lock()
	defer t.viewMu.Unlock()
	return len(t.views) == 0
}

// OldestCommitMs returns the commit time (ms) of the oldest retained changelog row over all
// buckets, and false when the table retains no changelog row. Changelog retention has nothing to
// remove before OldestCommitMs + RetentionMs. Errors: ErrClosed, ErrInternal.
func (t *Table) OldestCommitMs() (int64, bool, error) {
	var oldest int64
	found := false
	for _, b := range t.Buckets() {
		if b.StartOffset >= b.EndOffset {
			continue
		}
		ts, err := t.CommitTimes(b.BucketID, []int64{b.StartOffset})
		if err != nil {
			return 0, false, err
		}
		if ts[0] > 0 && (!found || ts[0] < oldest) {
			oldest, found = ts[0], true
		}
	}
	return oldest, found, nil
}
