package gateway

import (
	"sync"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/setats/setats/catalog"
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

	mu     sync.RWMutex
	closed bool
	// gone is closed when the table's store is closed (drop-table or shutdown).
	gone chan struct{}
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

// close closes the store once no call uses it. Safe to call twice.
func (ot *openTable) close() error {
	ot.mu.Lock()
	defer ot.mu.Unlock()
	if ot.closed {
		return nil
	}
	ot.closed = true
	close(ot.gone)
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
}

func newTableRegistry(s *Server) *tableRegistry {
	return &tableRegistry{s: s, byID: map[string]*openTable{}, dropped: map[string]bool{}}
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
	st, err := store.Open(tbl, r.s.storeOptions())
	if err != nil {
		return nil, statusOr(err, codes.Internal, "open store of table %s", label)
	}
	ot := &openTable{tbl: tbl, st: st, label: label, gone: make(chan struct{})}
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

// storeOptions are the options every table store is opened with.
func (s *Server) storeOptions() store.Options {
	return store.Options{
		Clock:              s.opts.Clock,
		DefaultRetentionMs: s.opts.ChangelogRetention.Milliseconds(),
		Cache:              s.cache,
		Logger:             s.log.With("component", "store"),
	}
}
