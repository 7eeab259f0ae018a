package store

import (
	"hash/maphash"
	"sync"

	"github.com/cockroachdb/pebble/v2"
)

// DefaultKeyIndexMaxKeys is the largest number of keys a table's key index holds when
// Options.KeyIndexMaxKeys is 0 (about 12 bytes of memory per key).
const DefaultKeyIndexMaxKeys = 8 << 20

// keyIndex is an in-memory set of 64-bit hashes of the table's stored state keys. It may hold
// more (keys deleted since Open stay in it) but never less: a key whose hash is absent is not
// stored, so Write skips its Pebble lookup. In a CDC stream most written keys are new, and for
// them this saves the lookup that otherwise dominates the write path (a memtable seek and a
// bloom-filter probe per level).
//
// It is built at Open by a background scan of the state keys; every Write adds the keys it
// stores whether or not the scan has finished, so the union is complete once it has. Until then
// (and when the table has more than the limit of keys, which drops the index) every key counts
// as possibly stored.
type keyIndex struct {
	seed   maphash.Seed
	max    int
	budget *MemBudget // shared with other tables; nil: only max bounds the index

	charged int64 // bytes of budget this index holds; guarded by mu

	mu       sync.RWMutex
	set      *hashSet
	ready    bool // the scan finished
	disabled bool // over the limit: every key may be stored
}

// keyIndexBytesPerKey is what one key costs in a key index, charged against the MemBudget (a
// hashSet slot of 8 bytes at a load factor between 3/8 and 3/4: 10.7 to 21.3 bytes).
const keyIndexBytesPerKey = 16

func newKeyIndex(max int, budget *MemBudget) *keyIndex {
	x := &keyIndex{seed: maphash.MakeSeed(), max: max, budget: budget, set: &hashSet{}}
	if max < 0 {
		x.disabled, x.set = true, nil
	}
	return x
}

func (x *keyIndex) hash(key []byte) uint64 { return maphash.Bytes(x.seed, key) }

// filter sets maybe[i] to whether the key with hash hs[i] may be stored.
func (x *keyIndex) filter(hs []uint64, maybe []bool) {
	x.mu.RLock()
	defer x.mu.RUnlock()
	all := !x.ready || x.disabled
	for i, h := range hs {
		if all {
			maybe[i] = true
			continue
		}
		maybe[i] = x.set.has(h)
	}
}

// add records stored keys by hash.
func (x *keyIndex) add(hs []uint64) {
	if len(hs) == 0 {
		return
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.disabled {
		return
	}
	for _, h := range hs {
		x.set.add(h)
	}
	x.checkSize()
}

// checkSize drops the index when it grew over its limit or the shared budget has no room for
// its growth; x.mu held.
func (x *keyIndex) checkSize() {
	if x.set.len() > x.max {
		x.dropLocked()
		return
	}
	if x.budget == nil {
		return
	}
	if need := int64(x.set.len())*keyIndexBytesPerKey - x.charged; need > 0 {
		if !x.budget.reserve(need) {
			x.dropLocked()
			return
		}
		x.charged += need
	}
}

// dropLocked turns the index off (every key may be stored) and gives its memory back; x.mu held.
func (x *keyIndex) dropLocked() {
	x.disabled, x.set = true, nil
	if x.budget != nil {
		x.budget.release(x.charged)
	}
	x.charged = 0
}

// close gives the index's memory back (the table closes).
func (x *keyIndex) close() {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.dropLocked()
}

// build scans the state keys of db (from a snapshot) into the index, stopping early when stop
// is closed. It runs in its own goroutine.
func (x *keyIndex) build(db *pebble.DB, stop <-chan struct{}) error {
	it, err := db.NewIter(&pebble.IterOptions{LowerBound: []byte{tagState}, UpperBound: []byte{tagState + 1}})
	if err != nil {
		return err
	}
	defer it.Close()
	const chunk = 4096
	hs := make([]uint64, 0, chunk)
	flush := func() bool {
		x.mu.Lock()
		defer x.mu.Unlock()
		if x.disabled {
			return false
		}
		for _, h := range hs {
			x.set.add(h)
		}
		hs = hs[:0]
		x.checkSize()
		return !x.disabled
	}
	for it.First(); it.Valid(); it.Next() {
		hs = append(hs, x.hash(it.Key()))
		if len(hs) == chunk {
			select {
			case <-stop:
				return nil
			default:
			}
			if !flush() {
				return nil
			}
		}
	}
	if err := it.Error(); err != nil {
		return err
	}
	if flush() {
		x.mu.Lock()
		x.ready = true
		x.mu.Unlock()
	}
	return nil
}
