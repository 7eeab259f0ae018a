package gateway

import (
	"google.golang.org/grpc/mem"
)

// messageBufferPool is the gRPC server's buffer pool (grpc/experimental.BufferPool): gRPC's
// default tiers jump from 32 KiB to 1 MiB, so every DoGet record batch (4096 seed-shaped rows:
// about 430 KiB) and DoPut batch took a 1 MiB buffer and cleared all of it (the pool zeroes a
// buffer before handing it out; this one does too). Power-of-two tiers from 256 B to 2 MiB (a
// record batch of MaxBatchBytes plus its IPC framing) give every message a buffer at most twice
// its size. Larger messages come from gRPC's fallback pool as before.
var messageBufferPool = func() mem.BufferPool {
	p, err := mem.NewBinaryTieredBufferPool(8, 12, 14, 15, 16, 17, 18, 19, 20, 21)
	if err != nil {
		panic(err) // the exponents are constants a 64-bit machine allocates
	}
	return p
}()
