package store

import (
	"math/rand/v2"
	"testing"
)

// BenchmarkKeyIndex adds 1M random hashes in 4096-hash batches and filters as many, the key
// index's share of a 1M-key ingest.
func BenchmarkKeyIndex(b *testing.B) {
	r := rand.New(rand.NewPCG(3, 4))
	hs := make([]uint64, 1<<20)
	for i := range hs {
		hs[i] = r.Uint64()
	}
	maybe := make([]bool, 4096)
	b.ReportAllocs()
	for b.Loop() {
		x := newKeyIndex(DefaultKeyIndexMaxKeys, nil)
		x.ready = true
		for i := 0; i < len(hs); i += 4096 {
			x.filter(hs[i:i+4096], maybe)
			x.add(hs[i : i+4096])
		}
	}
}
