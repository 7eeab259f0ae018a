// Package store keeps one table's data: the state (the current row of every primary key) and,
// per (partition, bucket), the changelog the merge engine produced (SPEC sections 4, 5 and 7).
//
// Both live in one Pebble DB per table, at <table location>/data. A write batch is applied in
// one Pebble batch, committed with fsync (pebble.Sync) before Write returns: state rows,
// changelog rows and bucket metadata of every bucket the batch touched become durable together
// or not at all, so after a crash (kill -9) the changelog still folds to the state.
//
// # On-disk layout
//
// Keys start with a one-byte keyspace tag. P is the partition name in the row package's
// order-preserving escaped form (row.AppendEscaped: bytes, 0x00 as 0x00 0xFF, then 0x00 0x01) and
// B is the bucket as 4 bytes big-endian, so keys of one bucket are contiguous and buckets sort by
// partition, then bucket:
//
//	key                          value
//	"v"                          format version, the string "setats-store-1"
//	"m" P B                      bucket metadata: uvarint start offset (oldest retained),
//	                             uvarint end offset (next offset), varint commit ms of the newest
//	                             changelog row (0 when none)
//	"s" P B pk                   state row: row.EncodeValue of the full row; pk is
//	                             row.EncodeKey (memcomparable primary-key values)
//	"c" P B offset               changelog chunk: the rows [offset, offset+n) that one write
//	                             appended to the bucket (at most 256 rows / about 32 KiB per
//	                             chunk); offset as 8 bytes big-endian; value = 8 bytes
//	                             big-endian commit ms (shared by the chunk's rows), 4 bytes
//	                             big-endian n, then per row: 1 byte RowKind, uvarint length,
//	                             row.EncodeValue of the full row (chunk.go)
//
// A bucket's metadata key exists once a write touched it; offsets are dense: the changelog rows
// of a bucket are exactly the offsets [start, end), and start is always the first offset of a
// chunk. Retention deletes whole chunks (all rows of a chunk share one commit time) with a range
// deletion and raises start in the same batch; it never touches state rows.
//
// # Write path
//
// Write groups the batch's rows by bucket and, for each bucket in parallel: encodes the keys,
// drops those the in-memory key index proves absent (keyindex.go: new keys, most of a CDC
// stream, cost no read), looks the others up in key order with one iterator (SeekPrefixGE, which
// consults every level's bloom filter), merges the rows in batch order and appends state writes
// and changelog chunks to a per-bucket Pebble batch. The per-bucket batches are joined into one
// and committed with fsync.
//
// # Concurrency
//
// Writers lock the buckets they touch (in partition, bucket order), so writes to different
// buckets proceed in parallel. End offsets held in memory are published only after the Pebble
// batch is durable, and readers never read past them, so no reader sees part of a batch.
package store
