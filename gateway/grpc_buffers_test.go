package gateway

import (
	"testing"

	"google.golang.org/grpc/mem"
)

// TestMessageBufferPool checks that a gRPC message of a DoGet record batch or DoPut batch
// (64 KiB to 2 MiB) gets a buffer of at most twice its size, zeroed (gRPC's default pool hands
// a 1 MiB buffer to every message above 32 KiB and clears all of it); smaller ones keep gRPC's
// tiers (256 B, 4, 16, 32 KiB).
func TestMessageBufferPool(t *testing.T) {
	for _, n := range []int{1, 300, 5000, 20 << 10, 40 << 10, 64 << 10, 64<<10 + 1, 300 << 10, 430 << 10, 1 << 20, 1<<20 + 100, 2 << 20} {
		b := messageBufferPool.Get(n)
		if len(*b) != n {
			t.Fatalf("Get(%d): length %d", n, len(*b))
		}
		if limit := 2 * n; n >= 64<<10 && cap(*b) > limit {
			t.Errorf("Get(%d): capacity %d, more than %d", n, cap(*b), limit)
		}
		for i, x := range *b {
			if x != 0 {
				t.Fatalf("Get(%d): byte %d is %d, not zeroed", n, i, x)
			}
		}
		for i := range *b {
			(*b)[i] = 0xff // dirty it for the next Get of this tier
		}
		messageBufferPool.Put(b)
	}
	var _ mem.BufferPool = messageBufferPool
}
