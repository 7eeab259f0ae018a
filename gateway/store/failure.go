package store

import (
	"fmt"
	"strings"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// Storage failures
//
// A failed write to the WAL (ENOSPC, EIO) or a failed WAL fsync leaves a table's Pebble DB
// unusable, for two reasons:
//
//   - Pebble itself cannot go on: the log writer keeps the error, and the next commit panics in
//     Pebble's commit pipeline while it holds the pipeline's mutex, so every later commit of that
//     DB blocks forever and DB.Close with them (the lock of the directory is never released).
//   - After a failed fsync the state of the file in the page cache is unknown (PostgreSQL's
//     "fsyncgate": Linux may mark the dirty pages clean and drop the error), so retrying the fsync
//     could report durable what is not. A failed fsync is never retried.
//
// So the first such failure makes the table failed, for good in this process: the writes whose
// fsync failed get the error, every later write and retention pass is refused at once with it
// (never entering Pebble again), Options.OnFailure is called once, and Close returns without
// touching the DB. The gateway then exits non-zero (gateway/README.md); at the next Open Pebble
// replays the WAL, which holds exactly the writes that were durable (a write was acknowledged
// only after its fsync). Reads of published rows keep working until then.
//
// The panic of Pebble's commit pipeline is recovered at the one call that can raise it (apply,
// retention): only to turn it into that failure, never to go on using the DB.

// ErrFailed is the failure of a table whose storage failed (Table.Err); it wraps the I/O error.
type ErrFailed struct {
	Table string // qualified table name "db.table"
	Op    string // what failed: "WAL write", "WAL fsync", "commit"
	Err   error
}

func (e *ErrFailed) Error() string {
	return fmt.Sprintf("table %s: storage failed (%s: %v); the gateway must restart to recover the table", e.Table, e.Op, e.Err)
}

func (e *ErrFailed) Unwrap() error { return e.Err }

// ErrorKind returns ErrTableFailed (gRPC Unavailable at the gateway edge: the data is intact on
// disk up to the last acknowledged write, and the table serves again after a restart).
func (e *ErrFailed) ErrorKind() error { return ErrTableFailed }

// Is reports whether target is ErrTableFailed, for errors.Is.
func (e *ErrFailed) Is(target error) bool { return target == ErrTableFailed }

// Err returns the table's storage failure (*ErrFailed), or nil while the table is healthy.
func (t *Table) Err() error {
	if f := t.failed.Load(); f != nil {
		return f
	}
	return nil
}

// fail records the table's first storage failure and reports it (Options.OnFailure, once); it
// returns the recorded failure.
func (t *Table) fail(op string, err error) *ErrFailed {
	f := &ErrFailed{Table: t.tbl.QualifiedName(), Op: op, Err: err}
	if !t.failed.CompareAndSwap(nil, f) {
		return t.failed.Load()
	}
	t.log.Error("table storage failed; refusing its writes until the gateway restarts", "op", op, "err", err)
	if t.opts.OnFailure != nil {
		t.opts.OnFailure(f)
	}
	return f
}

// pebbleCall runs fn, a call that commits to Pebble, turning a panic of Pebble's commit pipeline
// (which it raises when its WAL failed, directly or through Logger.Fatalf) into the table's
// failure; an error fn returns is an ErrInternal error.
func (t *Table) pebbleCall(op string, fn func() error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			e, ok := r.(error)
			if !ok {
				e = fmt.Errorf("%v", r)
			}
			err = t.fail(op, e)
		}
	}()
	if err := fn(); err != nil {
		return t.internal(err)
	}
	return nil
}

// walFS is the filesystem of a table's Pebble DB: fs with WAL preallocation turned off. Pebble
// preallocates 110% of the memtable size (35 MiB here) as soon as a WAL holds more than one
// record, and every Close writes one, so each table, even one written once, held 35 MiB of disk
// (on tmpfs: of memory). Without preallocation a WAL takes only the bytes written to it.
type walFS struct{ vfs.FS }

func (fs walFS) Create(name string, cat vfs.DiskWriteCategory) (vfs.File, error) {
	f, err := fs.FS.Create(name, cat)
	if err != nil || !strings.HasSuffix(name, ".log") {
		return f, err
	}
	return noPreallocFile{f}, nil
}

func (fs walFS) ReuseForWrite(oldname, newname string, cat vfs.DiskWriteCategory) (vfs.File, error) {
	f, err := fs.FS.ReuseForWrite(oldname, newname, cat)
	if err != nil || !strings.HasSuffix(newname, ".log") {
		return f, err
	}
	return noPreallocFile{f}, nil
}

type noPreallocFile struct{ vfs.File }

func (noPreallocFile) Preallocate(offset, length int64) error { return nil }
