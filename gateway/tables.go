package gateway

import (
	"slices"
	"strings"
	"sync"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/setats/setats/catalog"
	"github.com/setats/setats/gateway/binlog"
	"github.com/setats/setats/gateway/store"
)

// openTable is a table whose store is open. Calls that use the store hold mu for reading for the
// duration of one store call (a write, one batch of reads); closing takes mu for writing, so a
// store is never closed under a running call. Following DoGet streams wait outside mu, on the
// store's Wait channel, on gone and on the server's quit channel.
type openTable struct {
	tbl   *catalog.Table
	st    *store.Table
	label string // metrics label "db.table"
	// slots applies the binlog rules (SPEC section 8) to the table's slots.
	slots *binlog.Slots

	mu     sync.RWMutex
	closed bool
	// gone is closed when the table's store is closed (drop-table or shutdown).
	gone     chan struct{}
	goneOnce sync.Once
}

// use runs fn with the store while holding the table open. A closed table is NotFound (dropped)
// or Unavailable (gateway shutting down).
func (ot *openTable) use(s *Server, fn func(st *storeTable) error) error {
	ot.mu.RLock()
	defer ot.mu.RUnlock()
	if ot.closed {
		if s.shuttingDown.Load() {
			return status.Errorf(codes.Unavailable, "table %s: gateway is shutting down", ot.label)
		}
		return status.Errorf(codes.NotFound, "table %s was dropped", ot.label)
	}
	return fn(ot.st)
}

// close closes the store once no call uses it. Safe to call twice. A store whose storage failed
// is closed at once: calls blocked in it may never return (store/failure.go).
func (ot *openTable) close() error {
	if err := ot.st.Err(); err != nil {
		ot.goneOnce.Do(func() { close(ot.gone) })
		return ot.st.Close()
	}
	ot.mu.Lock()
	defer ot.mu.Unlock()
	if ot.closed {
		return nil
	}
	ot.closed = true
	ot.goneOnce.Do(func() { close(ot.gone) })
	return ot.st.Close()
}

// tableRegistry holds the open stores, keyed by table id (TableInfo.table_id): a table dropped
// and created again under the same name gets a new id and so a new store. Stores are opened
// lazily, on the first call that needs one.
type tableRegistry struct {
	s    *Server
	mu   sync.Mutex
	byID map[string]*openTable
	// dropped holds the ids of tables dropped while this gateway runs: a call that looked the
	// table up before the drop must not open its store again.
	dropped map[string]bool
	done    bool
	// failed holds, by table label, the tables whose store failed (storage failure, or an open
	// that failed for another reason than a drop or shutdown), with the error; /readyz is 503
	// while it is not empty. A failed open is cleared by the next successful open.
	failed map[string]string
}

func newTableRegistry(s *Server) *tableRegistry {
	return &tableRegistry{s: s, byID: map[string]*openTable{}, dropped: map[string]bool{}, failed: map[string]string{}}
}

// setFailed records (err != nil) or clears (err == nil) the failure of table label.
func (r *tableRegistry) setFailed(label string, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err == nil {
		delete(r.failed, label)
	} else {
		r.failed[label] = truncate(err.Error(), 512)
	}
	r.s.metrics.failedTables.Set(float64(len(r.failed)))
}

// failedTables returns the failed tables, sorted by label.
func (r *tableRegistry) failedTables() []failedTable {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]failedTable, 0, len(r.failed))
	for label, err := range r.failed {
		out = append(out, failedTable{Table: label, Error: err})
	}
	slices.SortFunc(out, func(a, b failedTable) int { return strings.Compare(a.Table, b.Table) })
	return out
}

// truncate cuts s to at most n bytes, marking the cut.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "...(truncated)"
}

// open returns the open store of tbl, opening it when needed.
func (r *tableRegistry) open(tbl *catalog.Table) (*openTable, error) {
	id := tbl.Info.GetTableId()
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.done {
		return nil, status.Errorf(codes.Unavailable, "table %s.%s: gateway is shutting down", tbl.Database, tbl.Name)
	}
	if ot, ok := r.byID[id]; ok {
		return ot, nil
	}
	label := tableLabel(tbl.Database, tbl.Name)
	if r.dropped[id] {
		return nil, status.Errorf(codes.NotFound, "table %s was dropped", label)
	}
	st, err := store.Open(tbl, r.s.storeOptions(tbl, label))
	if err != nil {
		err = statusOr(err, codes.Internal, "open store of table %s", label)
		r.failed[label] = truncate(err.Error(), 512)
		r.s.metrics.failedTables.Set(float64(len(r.failed)))
		r.s.log.Error("table store did not open; the next call that needs it tries again", "table", label, "err", err)
		return nil, err
	}
	if _, ok := r.failed[label]; ok {
		delete(r.failed, label)
		r.s.metrics.failedTables.Set(float64(len(r.failed)))
		r.s.log.Info("table store opened after an earlier failure", "table", label)
	}
	ot := &openTable{tbl: tbl, st: st, label: label, gone: make(chan struct{}),
		slots: binlog.New(st, binlog.Options{Clock: r.s.opts.Clock})}
	r.byID[id] = ot
	r.s.metrics.openTables.Inc()
	for _, b := range st.Buckets() {
		r.s.metrics.setBucketOffsets(label, b.Partition, b.Bucket, b.StartOffset, b.EndOffset)
	}
	r.s.log.Debug("table store opened", "table", label, "table_id", id, "location", tbl.Location)
	return ot, nil
}

// remove marks table id dropped, and closes and forgets its store if open; it returns the closed
// table or nil.
func (r *tableRegistry) remove(id string) (*openTable, error) {
	r.mu.Lock()
	ot, ok := r.byID[id]
	delete(r.byID, id)
	r.dropped[id] = true
	if ok {
		delete(r.failed, ot.label)
		r.s.metrics.failedTables.Set(float64(len(r.failed)))
	}
	r.mu.Unlock()
	if !ok {
		return nil, nil
	}
	r.s.metrics.openTables.Dec()
	r.s.metrics.forgetTable(ot.label)
	return ot, ot.close()
}

// isOpen reports whether the store of table id is open.
func (r *tableRegistry) isOpen(id string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	_, ok := r.byID[id]
	return ok
}

// closeAll closes every store and refuses to open more (shutdown).
func (r *tableRegistry) closeAll() {
	r.mu.Lock()
	r.done = true
	all := r.byID
	r.byID = map[string]*openTable{}
	r.mu.Unlock()
	for _, ot := range all {
		if err := ot.close(); err != nil {
			r.s.log.Error("close table store", "table", ot.label, "err", err)
		}
		r.s.metrics.openTables.Dec()
	}
}

// storeTable is the per-table store the gateway drives.
type storeTable = store.Table

// storeOptions are the options the store of table tbl (metrics label label) is opened with. Its
// commit hook records every durable commit (metrics, offset gauges, NATS notifications), whether
// or not the writing client is still there to get the acknowledgement; its failure hook makes
// the table failed and the gateway exit (Server.Failed).
func (s *Server) storeOptions(tbl *catalog.Table, label string) store.Options {
	return store.Options{
		Clock:              s.opts.Clock,
		DefaultRetentionMs: s.opts.ChangelogRetention.Milliseconds(),
		Cache:              s.cache,
		Logger:             s.log.With("component", "store"),
		FS:                 s.opts.StoreFS,
		MaxRowBytes:        s.maxRowBytes(),
		OnCommit:           func(c store.Commit) { s.committed(tbl, label, c) },
		OnFailure:          func(err error) { s.storageFailed(label, err) },
		ViewLeaseMs:        s.opts.SnapshotLease.Milliseconds(),
	}
}
