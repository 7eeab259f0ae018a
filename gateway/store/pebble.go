package store

import (
	"fmt"
	"log/slog"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/bloom"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// DefaultCacheBytes is the Pebble block cache size of a table when Options.CacheBytes is 0:
// 192 MiB. Pebble charges the memtables of every DB using the cache against it (memTableBytes
// each, up to two per DB once the first has been flushed: the mutable one and one kept for
// reuse), so the room left for blocks is the size minus those; see pebbleOptions.
const DefaultCacheBytes = 192 << 20

// memTableBytes is the size of a table's Pebble memtable (bytes).
const memTableBytes = 32 << 20

// pebbleOptions returns the Pebble options of a table's DB.
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
func pebbleOptions(cache *pebble.Cache, logger *slog.Logger) *pebble.Options {
	o := &pebble.Options{
		Cache:                       cache,
		FormatMajorVersion:          pebble.FormatNewest,
		MemTableSize:                memTableBytes,
		MemTableStopWritesThreshold: 4,
		L0CompactionThreshold:       4,
		L0StopWritesThreshold:       24,
		LBaseMaxBytes:               128 << 20,
		MaxOpenFiles:                1000,
		Logger:                      slogLogger{logger},
	}
	for i := range o.Levels {
		o.Levels[i].FilterPolicy = bloom.FilterPolicy(10)
		o.Levels[i].BlockSize = 16 << 10
	}
	o.CompactionConcurrencyRange = func() (int, int) { return 1, 2 }
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

// openPebble opens a Pebble DB, turning a panic of Pebble (its logger's Fatalf, slogLogger)
// into an error: a failing disk at open fails the open, it does not take the process down.
func openPebble(dir string, o *pebble.Options) (db *pebble.DB, err error) {
	defer func() {
		if r := recover(); r != nil {
			db, err = nil, fmt.Errorf("%v", r)
		}
	}()
	return pebble.Open(dir, o)
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
