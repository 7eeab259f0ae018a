package store

import (
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"syscall"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/bloom"
	"github.com/cockroachdb/pebble/v2/sstable"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// DefaultCacheBytes is the Pebble block cache size of a table when Options.CacheBytes is 0:
// 192 MiB. Pebble charges the memtables of every DB using the cache against it (memTableBytes
// each, up to two per DB once the first has been flushed: the mutable one and one kept for
// reuse), so the room left for blocks is the size minus those; see PebbleOptions.
const DefaultCacheBytes = 192 << 20

// memTableBytes is the size of a table's Pebble memtable (bytes).
const memTableBytes = 32 << 20

// blobMinValueBytes is the smallest value Pebble separates into a blob file (bytes): changelog
// chunks of more than a few rows, and state rows of 1 KiB or more; smaller state rows stay in
// the sstables.
const blobMinValueBytes = 1 << 10

// l0CompactionSublevels and l0StopWritesSublevels are a table DB's L0 compaction trigger and
// write stop, in L0 sublevels (Pebble's L0CompactionThreshold and L0StopWritesThreshold); see
// PebbleOptions.
const (
	l0CompactionSublevels = 16
	l0StopWritesSublevels = 48
)

// PebbleOptions returns the Pebble options of a table's DB (and of its staging DB), with cache as
// its block cache and Pebble's log lines on logger (info at debug level, errors at error level).
// The raw Pebble baseline of the load generator (e2e/gatewaytest) opens its DB with them too, so
// that (a)/(b) compares the gateway with Pebble under the same options.
//
// Writes look up the stored row of every written key, mostly keys that do not exist yet, so
// every level has a bloom filter (10 bits per key, ~1% false positives) over whole keys, and
// lookups use SeekPrefixGE, which consults them.
//
// Memtables are 32 MiB: Pebble reserves the memory of each memtable (and of the one it keeps for
// reuse) in the block cache, so with 64 MiB memtables a 64 MiB (or even 128 MiB) cache held no
// block at all once the first memtable had filled, and every lookup read and decompressed its
// filter, index and data blocks from the file (measured in docs/PERF-NOTES.md). With 32 MiB
// memtables and the default 192 MiB cache, 128 MiB are left for blocks while one table is written,
// enough for the state of about 1M rows of the benchmark's shape.
//
// L0 is compacted into Lbase once it holds l0CompactionSublevels sublevels (16; Pebble's and
// RocksDB's default is 4), and writes stop at l0StopWritesSublevels (48). Upserts update keys
// spread over the whole table, so every flushed L0 file overlaps all of Lbase, and each L0 ->
// Lbase compaction rewrites Lbase whole: the bytes compacted per flushed byte fall with the
// number of L0 files compacted together. A lookup pays for the deeper L0 with one bloom probe per
// sublevel that does not hold the key. In the load generator's ingest (1M keys + 20% updates)
// the gateway spent ~0.9x the CPU per row; at 3M keys it ingested ~1.4x the rows/s; the reads
// after it (DoGet from earliest, a bucket's snapshot scan) did not get slower
// (docs/PERF-NOTES.md). Pebble runs one compaction at a time, more when compactions fall behind,
// but never on more than half of GOMAXPROCS, and never more than 2 per table DB (a gateway holds
// one DB per table, so many tables on many cores would otherwise run many compactions each): the
// compaction of 16 L0 files is long, and two of them on a 2-core machine left the writes and the
// changelog readers no core (write-to-reader latency p99 66-110 ms against 5-15 ms).
//
// Values of blobMinValueBytes or more (changelog chunks, up to about 32 KiB each; state rows of
// typical tables are far smaller, a state row that large goes there too) are separated into blob
// files (Pebble's value separation): a flush writes each chunk once, and compactions move the
// chunk keys with a reference instead of rewriting and recompressing the chunk at every level. A
// blob file is deleted once no sstable references it (retention's range deletion of whole
// chunks, compacted); one whose unreferenced part exceeds 20% is rewritten once it is 5 minutes
// old, so space of partly retained files comes back too.
// In the loadgen ingest of 1M keys it cut the gateway's CPU by about a tenth (docs/PERF-NOTES.md).
//
// Blocks are compressed with Pebble's FastestCompression (MinLZ on amd64, Snappy on arm64, where
// MinLZ has no assembly) instead of Snappy: flushes and compactions compress every block they
// write and lookups decompress the blocks they miss in the cache, on the ingest's CPU (another
// tenth of the gateway's CPU in the same benchmark, at the same size on disk). Tables written
// with Snappy stay readable; their files are rewritten with MinLZ as compactions reach them.
func PebbleOptions(cache *pebble.Cache, logger *slog.Logger) *pebble.Options {
	o := &pebble.Options{
		Cache:                       cache,
		FormatMajorVersion:          pebble.FormatNewest,
		MemTableSize:                memTableBytes,
		MemTableStopWritesThreshold: 4,
		L0CompactionThreshold:       l0CompactionSublevels,
		L0StopWritesThreshold:       l0StopWritesSublevels,
		LBaseMaxBytes:               128 << 20,
		MaxOpenFiles:                1000,
		Logger:                      slogLogger{logger},
	}
	for i := range o.Levels {
		o.Levels[i].FilterPolicy = bloom.FilterPolicy(10)
		o.Levels[i].BlockSize = 16 << 10
		o.Levels[i].Compression = func() *sstable.CompressionProfile { return sstable.FastestCompression }
	}
	o.CompactionConcurrencyRange = func() (int, int) { return 1, min(2, max(1, runtime.GOMAXPROCS(0)/2)) }
	o.Experimental.ValueSeparationPolicy = func() pebble.ValueSeparationPolicy {
		return pebble.ValueSeparationPolicy{
			Enabled:               true,
			MinimumSize:           blobMinValueBytes,
			MaxBlobReferenceDepth: 10,
			RewriteMinimumAge:     5 * time.Minute,
			TargetGarbageRatio:    0.2,
		}
	}
	return o
}

// slogLogger routes Pebble's log lines to slog: Infof at debug level, Errorf at error level.
type slogLogger struct{ l *slog.Logger }

func (s slogLogger) Infof(format string, args ...any) {
	s.l.Debug(fmt.Sprintf(format, args...), "component", "pebble")
}

func (s slogLogger) Errorf(format string, args ...any) {
	s.l.Error(fmt.Sprintf(format, args...), "component", "pebble")
}

func (s slogLogger) Fatalf(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	s.l.Error(msg, "component", "pebble")
	panic(msg)
}

// openPebble opens the table's Pebble DB. A panic of Pebble (its logger's Fatalf, slogLogger)
// becomes an error. When a flush fails for lack of space or an I/O error while Pebble opens (it
// replays the WAL into a memtable and flushes it, retrying for good), the open fails at once with
// that error instead of blocking the caller: the open goes on in the background, and when it
// completes (space is back) it closes the DB again, releasing the directory lock, so that a later
// Open succeeds. It releases the cache reference on failure.
func (t *Table) openPebble(dir string, o *pebble.Options) (*pebble.DB, error) {
	type result struct {
		db  *pebble.DB
		err error
	}
	res := make(chan result, 1)
	abandoned := make(chan struct{})
	go func() {
		var r result
		func() {
			defer func() {
				if p := recover(); p != nil {
					r = result{err: fmt.Errorf("%v", p)}
				}
			}()
			r.db, r.err = pebble.Open(dir, o)
		}()
		select {
		case <-abandoned:
			if r.err == nil {
				_ = r.db.Close()
			}
			t.cache.Unref()
			t.log.Info("an open abandoned after a storage error completed; the table can be opened again")
		case res <- r:
		}
	}()
	select {
	case r := <-res:
		if r.err != nil {
			t.cache.Unref()
		}
		return r.db, r.err
	case err := <-t.bgErr:
		close(abandoned)
		select {
		case r := <-res: // it completed meanwhile
			if r.err == nil {
				_ = r.db.Close()
			}
			t.cache.Unref()
		default:
		}
		return nil, fmt.Errorf("storage error while opening (the open goes on in the background): %w", err)
	}
}

// backgroundError is Pebble's BackgroundError event: a flush or compaction failed. Pebble
// retries them, but a failure from the disk (full, I/O error) means the memtables will fill and
// writes block inside Pebble for good, so it makes an open table failed (failure.go) and fails
// an open in progress (openPebble). Other background errors are only logged by Pebble.
func (t *Table) backgroundError(err error) {
	if !isDiskError(err) {
		return
	}
	if !t.opened.Load() {
		select {
		case t.bgErr <- err:
		default:
		}
		return
	}
	t.fail("flush or compaction", err)
}

// isDiskError reports whether err comes from the disk: no space, I/O error, read-only
// filesystem, quota.
func isDiskError(err error) bool {
	return errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EIO) || errors.Is(err, syscall.EROFS) ||
		errors.Is(err, syscall.EDQUOT)
}

// mkdirAllSynced creates dir and its missing parents and fsyncs the parent of every directory it
// created, so that the directories of a new table survive a crash (Pebble syncs only the
// directory of its own files).
func mkdirAllSynced(fs vfs.FS, dir string) error {
	var missing []string
	for d := dir; ; {
		if _, err := fs.Stat(d); err == nil {
			break
		}
		missing = append(missing, d)
		p := fs.PathDir(d)
		if p == d {
			break
		}
		d = p
	}
	if len(missing) == 0 {
		return nil
	}
	if err := fs.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for i := len(missing) - 1; i >= 0; i-- {
		d, err := fs.OpenDir(fs.PathDir(missing[i]))
		if err != nil {
			return err
		}
		err = d.Sync()
		if cerr := d.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return err
		}
	}
	return nil
}
