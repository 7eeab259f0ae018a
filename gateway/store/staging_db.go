package store

import (
	"errors"
	"os"
	"path/filepath"

	"github.com/cockroachdb/pebble/v2"
)

// The staging DB
//
// Staged rows (and the staging headers, and the records of sequenced writers that stage) live in
// a Pebble DB of their own, Location/data/staging, not in the table's DB: at exactly-once rates
// a checkpoint's staged rows would fill the table's memtables with bytes deleted a second later,
// doubling its flushes and the compactions that rewrite the state and changelog
// (docs/PERF-NOTES.md, "Sink"). In their own memtable most staged rows die with their commit's
// DeleteRange before any flush. The table's DB keeps what must be atomic with a commit's merge:
// the committed checkpoint of each (commit user, subtask) ("x" U "k" S) and of each bucket
// ("x" U "c" P B). A commit merges in the table's DB, and once that is durable it deletes the
// staged rows from the staging DB without fsync; after a crash in between, the rows of
// checkpoints <= the committed one are garbage: loadStaging ignores and deletes them. The
// staging DB is opened at Open when its directory exists, else by the first AbortStaged.

// stagingDirName is the staging DB's directory inside the table's data directory (removed with it).
const stagingDirName = "staging"

// stagingCacheBytes is the block cache of a staging DB (it is read only at load and by a commit
// that reads its rows back): 8 MiB.
const stagingCacheBytes = 8 << 20

// stagingDB returns the staging DB, opening (creating) it on first use.
func (t *Table) stagingDB() (*pebble.DB, error) {
	t.sdbMu.Lock()
	defer t.sdbMu.Unlock()
	if db := t.sdb.Load(); db != nil {
		return db, nil
	}
	return t.openStagingDB()
}

// openStagingDB opens the staging DB (creating it). Called with sdbMu held, or from Open.
func (t *Table) openStagingDB() (*pebble.DB, error) {
	dir := t.stagingDir()
	if err := mkdirAllSynced(t.fs, dir); err != nil {
		return nil, t.internal(err)
	}
	cache := pebble.NewCache(stagingCacheBytes)
	defer cache.Unref() // the DB holds its own reference
	o := PebbleOptions(cache, t.log)
	o.FS = walFS{t.fs}
	o.EventListener = &pebble.EventListener{BackgroundError: t.backgroundError}
	db, err := pebble.Open(dir, o)
	if err != nil {
		return nil, errorf(ErrInternal, "table %s: open %s: %w", t.tbl.QualifiedName(), dir, err)
	}
	t.sdb.Store(db)
	return db, nil
}

func (t *Table) stagingDir() string {
	return filepath.Join(t.tbl.Location, "data", stagingDirName)
}

// openStagingIfPresent opens the staging DB at Open when its directory exists.
func (t *Table) openStagingIfPresent() error {
	if _, err := t.fs.Stat(t.stagingDir()); err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil
		}
		return t.internal(err)
	}
	_, err := t.openStagingDB()
	return err
}

// closeStagingDB closes the staging DB, if open.
func (t *Table) closeStagingDB() error {
	if db := t.sdb.Swap(nil); db != nil {
		return db.Close()
	}
	return nil
}

// writerDBs returns the DBs that hold records of sequenced writers: the table's, and the staging
// DB's (writers that stage) when it is open.
func (t *Table) writerDBs() []*pebble.DB {
	if sdb := t.sdb.Load(); sdb != nil {
		return []*pebble.DB{t.db, sdb}
	}
	return []*pebble.DB{t.db}
}
