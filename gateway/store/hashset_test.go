package store

import (
	"math/rand/v2"
	"testing"
)

// TestHashSet checks the set against a Go map over random and adversarial hashes: 0 (kept apart),
// hashes that collide in the low bits (one long probe run that wraps around the table's end), and
// enough keys to grow the table several times.
func TestHashSet(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, tc := range []struct {
		name string
		gen  func(i int) uint64
		n    int
	}{
		{"random", func(int) uint64 { return r.Uint64() }, 20000},
		{"zero and small", func(i int) uint64 { return uint64(i % 7) }, 100},
		{"same low bits", func(i int) uint64 { return uint64(i)<<40 | 1023 }, 3000},
		{"wrap at the end", func(i int) uint64 { return uint64(i)<<32 | uint64(hashSetMinSlots-1) }, 700},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var s hashSet
			model := map[uint64]bool{}
			var added []uint64
			for i := 0; i < tc.n; i++ {
				h := tc.gen(i)
				if s.has(h) != model[h] {
					t.Fatalf("step %d: has(%#x) = %v before add, model %v", i, h, s.has(h), model[h])
				}
				s.add(h)
				model[h] = true
				added = append(added, h)
				if s.len() != len(model) {
					t.Fatalf("step %d: len %d, model %d", i, s.len(), len(model))
				}
			}
			for _, h := range added {
				if !s.has(h) {
					t.Fatalf("lost %#x", h)
				}
			}
			for i := 0; i < 1000; i++ {
				h := r.Uint64()
				if s.has(h) != model[h] {
					t.Fatalf("has(%#x) = %v, model %v", h, s.has(h), model[h])
				}
			}
			if s.n > 0 && s.n*4 > len(s.slots)*3 {
				t.Fatalf("table over 3/4 full: %d of %d", s.n, len(s.slots))
			}
		})
	}
	var nilSet *hashSet
	if nilSet.len() != 0 {
		t.Fatal("nil set has a length")
	}
}
