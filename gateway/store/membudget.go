package store

import "sync/atomic"

// MemBudget is a memory budget in bytes shared by several tables (the key indexes of all the
// gateway's open tables: Options.KeyIndexBudget). Safe for concurrent use.
type MemBudget struct {
	max  int64
	used atomic.Int64
}

// NewMemBudget returns a budget of max bytes.
func NewMemBudget(max int64) *MemBudget { return &MemBudget{max: max} }

// Used returns the bytes reserved now.
func (b *MemBudget) Used() int64 { return b.used.Load() }

// reserve takes n bytes and reports whether they fitted; on false nothing is taken.
func (b *MemBudget) reserve(n int64) bool {
	for {
		u := b.used.Load()
		if u+n > b.max {
			return false
		}
		if b.used.CompareAndSwap(u, u+n) {
			return true
		}
	}
}

// release gives back n bytes.
func (b *MemBudget) release(n int64) { b.used.Add(-n) }
