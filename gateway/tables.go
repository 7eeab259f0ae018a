package gateway

import (
	"container/list"
	"math"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/setats/setats/catalog"
	"github.com/setats/setats/gateway/binlog"
	"github.com/setats/setats/gateway/store"
)

// openTable is the gateway's handle of one table (by table id) while the table lives: its store
// is open, or closed by the LRU of open tables (st nil) and opened again by the next call that
// needs it. Calls that use the store hold mu for reading for the duration of one store call (a
// write, one batch of reads); closing or opening the store takes mu for writing, so a store is
// never closed under a running call. Following DoGet streams wait outside mu, on the store's Wait
// channel, on gone and on the server's quit channel; a store that is followed is never closed by
// the LRU (store.Table.Idle).
type openTable struct {
	tbl   *catalog.Table
	label string // metrics label "db.table"
	r     *tableRegistry

	mu sync.RWMutex
	// st is the open store, nil while it is closed (not opened yet, or closed by the LRU).
	st *store.Table
	// slots applies the binlog rules (SPEC section 8) to the table's slots; set with st.
	slots *binlog.Slots
	// cur mirrors st for close, which must not wait for mu when the store failed.
	cur    atomic.Pointer[store.Table]
	closed bool
	// gone is closed when the table's handle is closed (drop-table or shutdown).
	gone     chan struct{}
	goneOnce sync.Once

	// Guarded by r.mu: the handle's place in r.lru while st is set, and when st is nil the
	// earliest time (ms) retention has work in the table (dueUnknown: not known, read the due
	// file; dueNever: none).
	elem  *list.Element
	dueMs int64
}

// Retention due times of a table whose store is closed (openTable.dueMs).
const (
	dueUnknown = int64(-1)
	dueNever   = int64(math.MaxInt64)
)

// use runs fn with the store while holding the table open, opening its store when the LRU closed
// it, and marks the table used (LRU order). A closed handle is NotFound (dropped) or Unavailable
// (gateway shutting down); an open beyond --max-open-tables with every open store in use is
// ResourceExhausted.
func (ot *openTable) use(s *Server, fn func(st *storeTable) error) error {
	return ot.run(s, true, fn)
}

// run is use; touch false leaves the LRU order alone (retention).
func (ot *openTable) run(s *Server, touch bool, fn func(st *storeTable) error) error {
	for {
		ot.mu.RLock()
		if ot.closed {
			ot.mu.RUnlock()
			if s.shuttingDown.Load() {
				return status.Errorf(codes.Unavailable, "table %s: gateway is shutting down", ot.label)
			}
			return status.Errorf(codes.NotFound, "table %s was dropped", ot.label)
		}
		if st := ot.st; st != nil {
			if touch {
				ot.r.touch(ot)
			}
			return ot.call(st, fn)
		}
		ot.mu.RUnlock()
		if err := ot.r.load(ot); err != nil {
			return err
		}
	}
}

// call runs fn with st and releases mu (held for reading), also when fn panics.
func (ot *openTable) call(st *store.Table, fn func(st *storeTable) error) error {
	defer ot.mu.RUnlock()
	return fn(st)
}

// close closes the handle and its store once no call uses it. Safe to call twice. A store whose
// storage failed is closed at once: calls blocked in it may never return (store/failure.go).
// writeDue records the table's retention due time (shutdown; not for a dropped table).
func (ot *openTable) close(writeDue bool) error {
	if st := ot.cur.Load(); st != nil && st.Err() != nil {
		ot.goneOnce.Do(func() { close(ot.gone) })
		ot.r.mu.Lock()
		ot.r.forgetOpen(ot)
		ot.r.mu.Unlock()
		if ot.cur.CompareAndSwap(st, nil) {
			ot.r.releaseStaging(ot.label, st)
		}
		return st.Close()
	}
	ot.mu.Lock()
	defer ot.mu.Unlock()
	if ot.closed {
		return nil
	}
	ot.closed = true
	ot.goneOnce.Do(func() { close(ot.gone) })
	return ot.r.closeStore(ot, writeDue)
}

// tableRegistry holds the table handles, keyed by table id (TableInfo.table_id): a table dropped
// and created again under the same name gets a new id and so a new handle and store. Stores are
// opened lazily, on the first call that needs one, and at most Limits.MaxOpenTables are open:
// lru orders the open ones by last use, and opening one more closes the least recently used
// idle one.
type tableRegistry struct {
	s    *Server
	mu   sync.Mutex
	byID map[string]*openTable
	// lru holds the handles whose store is open, most recently used first; nOpen counts them
	// plus the opens in progress.
	lru   *list.List
	nOpen int
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
	return &tableRegistry{s: s, byID: map[string]*openTable{}, lru: list.New(), dropped: map[string]bool{}, failed: map[string]string{}}
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

// handle returns the handle of tbl, creating it (store closed) when needed.
func (r *tableRegistry) handle(tbl *catalog.Table) (*openTable, error) {
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
	ot := &openTable{tbl: tbl, label: label, r: r, gone: make(chan struct{}), dueMs: dueUnknown}
	r.byID[id] = ot
	return ot, nil
}

// open returns the handle of tbl with its store open, opening it when needed.
func (r *tableRegistry) open(tbl *catalog.Table) (*openTable, error) {
	ot, err := r.handle(tbl)
	if err != nil {
		return nil, err
	}
	if err := r.load(ot); err != nil {
		return nil, err
	}
	return ot, nil
}

// touch moves ot to the front of the LRU.
func (r *tableRegistry) touch(ot *openTable) {
	r.mu.Lock()
	if ot.elem != nil {
		r.lru.MoveToFront(ot.elem)
	}
	r.mu.Unlock()
}

// load opens the store of ot unless it is open (or the handle closed), first closing least
// recently used idle stores while Limits.MaxOpenTables are open.
func (r *tableRegistry) load(ot *openTable) error {
	ot.mu.Lock()
	defer ot.mu.Unlock()
	if ot.closed || ot.st != nil {
		return nil
	}
	id := ot.tbl.Info.GetTableId()
	r.mu.Lock()
	if r.done {
		r.mu.Unlock()
		return status.Errorf(codes.Unavailable, "table %s: gateway is shutting down", ot.label)
	}
	if r.dropped[id] {
		r.mu.Unlock()
		return status.Errorf(codes.NotFound, "table %s was dropped", ot.label)
	}
	var victims []*openTable
	for r.nOpen >= r.s.opts.MaxOpenTables {
		v := r.evictLocked(ot)
		if v == nil {
			n := r.nOpen
			r.mu.Unlock()
			r.closeVictims(victims)
			return status.Errorf(codes.ResourceExhausted,
				"table %s: %d table stores are open and in use (following readers, snapshot views, writes in flight), "+
					"the most --max-open-tables allows; retry later or raise --max-open-tables", ot.label, n)
		}
		victims = append(victims, v)
	}
	r.nOpen++
	r.mu.Unlock()
	r.closeVictims(victims)

	removeDue(ot.tbl)
	opts := r.s.storeOptions(ot.tbl, ot.label)
	opts.OnStaging = r.s.onStaging(ot.label)
	st, err := store.Open(ot.tbl, opts)
	r.mu.Lock()
	if err != nil {
		r.nOpen--
		err = statusOr(err, codes.Internal, "open store of table %s", ot.label)
		r.failed[ot.label] = truncate(err.Error(), 512)
		r.s.metrics.failedTables.Set(float64(len(r.failed)))
		r.mu.Unlock()
		r.s.log.Error("table store did not open; the next call that needs it tries again", "table", ot.label, "err", err)
		return err
	}
	if _, ok := r.failed[ot.label]; ok {
		delete(r.failed, ot.label)
		r.s.metrics.failedTables.Set(float64(len(r.failed)))
		r.s.log.Info("table store opened after an earlier failure", "table", ot.label)
	}
	ot.st, ot.slots = st, binlog.New(st, binlog.Options{Clock: r.s.opts.Clock})
	ot.cur.Store(st)
	// The staged rows of the store count against the staging budget while it is open.
	stagedBytes, stagedRows := st.StagingStats()
	r.s.onStaging(ot.label)(stagedBytes, stagedRows)
	ot.elem = r.lru.PushFront(ot)
	ot.dueMs = dueUnknown // known again when the store closes
	r.mu.Unlock()
	r.s.metrics.openTables.Inc()
	for _, b := range st.Buckets() {
		r.s.metrics.setBucketOffsets(ot.label, b.Partition, b.Bucket, b.StartOffset, b.EndOffset)
	}
	r.s.log.Debug("table store opened", "table", ot.label, "table_id", id, "location", ot.tbl.Location)
	return nil
}

// evictLocked takes the least recently used open store that is idle, other than the store of
// except, out of the LRU and returns its handle with its mu held for writing (closeVictims closes
// the store and unlocks); nil when every open store is in use. Called with r.mu held; it never
// waits for a handle's mu.
func (r *tableRegistry) evictLocked(except *openTable) *openTable {
	for e := r.lru.Back(); e != nil; e = e.Prev() {
		v := e.Value.(*openTable)
		if v == except || !v.mu.TryLock() {
			continue
		}
		if v.st != nil && !v.closed && v.st.Idle() {
			r.forgetOpen(v)
			return v
		}
		v.mu.Unlock()
	}
	return nil
}

// forgetOpen takes ot out of the LRU (its store is being closed). Called with r.mu held.
func (r *tableRegistry) forgetOpen(ot *openTable) {
	if ot.elem == nil {
		return
	}
	r.lru.Remove(ot.elem)
	ot.elem = nil
	r.nOpen--
	r.s.metrics.openTables.Dec()
}

// closeVictims closes the stores evictLocked took, recording their retention due times, and
// unlocks their handles.
func (r *tableRegistry) closeVictims(victims []*openTable) {
	for _, v := range victims {
		if err := r.closeStore(v, true); err != nil {
			r.s.log.Error("close idle table store", "table", v.label, "err", err)
		} else {
			r.s.log.Debug("idle table store closed (--max-open-tables)", "table", v.label)
		}
		v.mu.Unlock()
	}
}

// closeStore closes the store of ot, if open; with writeDue it first records when retention has
// work in the table next (retentionDue), in memory and in the table's due file, so that
// retention opens it only then. Called with ot.mu held for writing.
func (r *tableRegistry) closeStore(ot *openTable, writeDue bool) error {
	st := ot.st
	if st == nil {
		return nil
	}
	due := dueUnknown
	if writeDue && st.Err() == nil {
		due = r.s.retentionDue(st, ot.slots)
	}
	ot.st, ot.slots = nil, nil
	release := ot.cur.CompareAndSwap(st, nil) // false: close released it already (failed store)
	r.mu.Lock()
	r.forgetOpen(ot)
	ot.dueMs = due
	r.mu.Unlock()
	if release {
		r.releaseStaging(ot.label, st)
	}
	err := st.Close()
	if err == nil && due != dueUnknown {
		writeDueFile(ot.tbl, due)
	}
	return err
}

// remove marks table id dropped, and closes and forgets its handle; it returns the closed
// handle or nil.
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
	r.s.metrics.forgetTable(ot.label)
	return ot, ot.close(false)
}

// isOpen reports whether the store of table id is open (or opening).
func (r *tableRegistry) isOpen(id string) bool {
	r.mu.Lock()
	ot, ok := r.byID[id]
	r.mu.Unlock()
	return ok && ot.cur.Load() != nil
}

// openHandles returns the handles whose store is open.
func (r *tableRegistry) openHandles() []*openTable {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]*openTable, 0, r.lru.Len())
	for e := r.lru.Front(); e != nil; e = e.Next() {
		out = append(out, e.Value.(*openTable))
	}
	return out
}

// closeAll closes every handle and refuses to open more (shutdown), recording each open table's
// retention due time.
func (r *tableRegistry) closeAll() {
	r.mu.Lock()
	r.done = true
	all := r.byID
	r.byID = map[string]*openTable{}
	r.mu.Unlock()
	for _, ot := range all {
		if err := ot.close(true); err != nil {
			r.s.log.Error("close table store", "table", ot.label, "err", err)
		}
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
		KeyIndexMaxKeys:    s.keyIndexMaxKeys(),
		KeyIndexBudget:     s.limits.keys,
		OnCommit:           func(c store.Commit) { s.committed(tbl, label, c) },
		OnFailure:          func(err error) { s.storageFailed(label, err) },
		ViewLeaseMs:        s.opts.SnapshotLease.Milliseconds(),
	}
}

// releaseStaging gives the staged bytes of st back to the staging budget (its store closes).
func (r *tableRegistry) releaseStaging(label string, st *store.Table) {
	b, rows := st.StagingStats()
	r.s.onStaging(label)(-b, -rows)
}
