package store

// hashSet is a set of 64-bit key hashes for keyIndex: open addressing with linear probing over a
// power-of-two table kept at most 3/4 full, the hash itself as the slot's content. A probe is one
// or two adjacent cache lines, where a Go map[uint64]struct{} of the same keys spent ~8% of the
// gateway's ingest CPU in its group matching (docs/PERF-NOTES.md, Gateway). 0 marks an empty slot,
// so the hash 0 is kept apart in hasZero. Memory: 8 bytes per slot, 10.7-21.3 bytes per key; the
// peak during growth holds the old table too. Not safe for concurrent use (keyIndex.mu guards it).
type hashSet struct {
	slots   []uint64
	n       int // non-zero hashes stored
	hasZero bool
}

// hashSetMinSlots is the table size of the first insert.
const hashSetMinSlots = 1024

// len returns the number of distinct hashes stored (0 for a nil set: a dropped index).
func (s *hashSet) len() int {
	if s == nil {
		return 0
	}
	if s.hasZero {
		return s.n + 1
	}
	return s.n
}

// has reports whether h is in the set.
func (s *hashSet) has(h uint64) bool {
	if h == 0 {
		return s.hasZero
	}
	if len(s.slots) == 0 {
		return false
	}
	mask := uint64(len(s.slots) - 1)
	for i := h & mask; ; i = (i + 1) & mask {
		switch s.slots[i] {
		case h:
			return true
		case 0:
			return false
		}
	}
}

// add inserts h (a no-op when present).
func (s *hashSet) add(h uint64) {
	if h == 0 {
		s.hasZero = true
		return
	}
	if (s.n+1)*4 > len(s.slots)*3 {
		s.grow()
	}
	if s.insert(h) {
		s.n++
	}
}

// insert puts h into its slot and reports whether it was new; the table has a free slot.
func (s *hashSet) insert(h uint64) bool {
	mask := uint64(len(s.slots) - 1)
	for i := h & mask; ; i = (i + 1) & mask {
		switch s.slots[i] {
		case h:
			return false
		case 0:
			s.slots[i] = h
			return true
		}
	}
}

// grow doubles the table (hashSetMinSlots for the first insert) and reinserts every hash.
func (s *hashSet) grow() {
	old := s.slots
	size := 2 * len(old)
	if size < hashSetMinSlots {
		size = hashSetMinSlots
	}
	s.slots = make([]uint64, size)
	for _, h := range old {
		if h != 0 {
			s.insert(h)
		}
	}
}
