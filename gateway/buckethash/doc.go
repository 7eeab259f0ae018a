// Package buckethash computes the bucket of a row exactly as proto/README.md ("Bucket hash",
// SPEC section 3) says: KeyBytes encodes the bucket-key values, Hash is murmur3_x86_32 of those
// bytes with seed 0, and Bucket is (hash & 0x7fffffff) % bucket count.
//
// The Java connector computes the same buckets (io.setats.flink.utils.BucketHasher); both sides
// are checked against the shared vectors in proto/testdata/bucket_hash.json, which
// `go test ./gateway/buckethash/ -run TestBucketHashVectors -update` regenerates. The encoding is
// wire format: never change it.
//
// The package is pure: no I/O, no global state.
package buckethash
