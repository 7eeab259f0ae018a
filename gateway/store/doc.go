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
// order-preserving escaped form (rowcodec.AppendEscaped: bytes, 0x00 as 0x00 0xFF, then 0x00 0x01) and
// B is the bucket as 4 bytes big-endian, so keys of one bucket are contiguous and buckets sort by
// partition, then bucket:
//
//	key                          value
//	"v"                          format version, the string "setats-store-1"
//	"m" P B                      bucket metadata: uvarint start offset (oldest retained),
//	                             uvarint end offset (next offset), varint commit ms of the newest
//	                             changelog row (0 when none)
//	"s" P B pk                   state row: rowcodec.EncodeValue of the full row; pk is
//	                             rowcodec.EncodeKey (memcomparable primary-key values)
//	"c" P B offset               changelog chunk: the rows [offset, offset+n) that one write
//	                             appended to the bucket (at most 256 rows / about 32 KiB per
//	                             chunk); offset as 8 bytes big-endian; value = 8 bytes
//	                             big-endian commit ms (shared by the chunk's rows), 4 bytes
//	                             big-endian n, then per row: 1 byte RowKind, uvarint length,
//	                             rowcodec.EncodeValue of the full row (chunk.go)
//	"d" P B                      drop record of a bucket of a dropped partition: uvarint end
//	                             offset at the drop, varint drop ms (partition_drop.go)
//
// Chunk values of 1 KiB or more live in Pebble blob files (value separation, PebbleOptions), so
// compactions move chunk keys by reference; that changes where Pebble puts the bytes, not the
// keys or values above.
//
// A bucket's metadata key exists once a write touched it; offsets are dense: the changelog rows
// of a bucket are exactly the offsets [start, end), and start is always the first offset of a
// chunk. Retention deletes whole chunks (all rows of a chunk share one commit time) with a range
// deletion and raises start in the same batch; it never touches state rows.
//
// # Write path
//
// Apply (and Write, which is Apply then Pending.Wait) groups the batch's rows by bucket and, for
// each bucket in parallel: encodes the keys, drops those the in-memory key index proves absent
// (keyindex.go: new keys, most of a CDC stream, cost no read), looks the others up in key order
// with one iterator (SeekPrefixGE, which consults the bloom filters of every level but L6), merges
// the rows in batch order and appends state writes and changelog chunks to a per-bucket Pebble
// batch. The per-bucket batches are joined into one, which goes to the WAL and the memtable with
// DB.ApplyNoSyncWait; the fsync (pebble.Sync) is waited for by a goroutine of the returned
// Pending (pending.go).
//
// # Concurrency
//
// Writers lock the buckets they touch (in partition, bucket order), so writes to different
// buckets proceed in parallel. A writer releases the locks once its batch is in the memtable,
// before the fsync: the next write of the same buckets already looks up the rows it wrote and
// continues its offsets (the bucket's queue of applied writes), and Pebble's WAL fsyncs in write
// order, so one fsync makes every earlier write durable too. End offsets held in memory are
// published only after the fsync, in order, and readers never read past them, so no reader sees
// part of a batch nor a batch that is not durable; a write is acknowledged (Pending.Wait) only
// after its own fsync (SPEC section 7).
//
// # Followers
//
// While a reader follows a bucket (Follow), publication keeps the bucket's newest changelog
// chunks in memory (tail.go, at most 128 KiB per bucket), and Read serves offsets they hold
// without a Pebble iterator.
package store
