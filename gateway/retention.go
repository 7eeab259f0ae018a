package gateway

import (
	"time"

	"google.golang.org/grpc/codes"
)

// retentionLoop runs RunRetention every Options.RetentionInterval until Shutdown.
func (s *Server) retentionLoop() {
	t := time.NewTicker(s.opts.RetentionInterval)
	defer t.Stop()
	for {
		select {
		case <-s.quit:
			return
		case <-t.C:
			s.RunRetention()
		}
	}
}

// RunRetention removes, in every table of the catalog, the changelog rows older than the table's
// changelog.retention.ms (else --changelog-retention) as of Options.Clock (SPEC section 4), applies
// the binlog rules (slot TTL, lost slots, consume-then-clean: binlog.Slots.Clean, SPEC section 8),
// releases snapshot views whose lease ran out and refreshes the slot gauges, and returns the
// number of rows removed. A table whose store is closed (not used since the gateway started, or
// closed by the LRU of open tables) is opened only once retention has work in it
// (retention_due.go), so that idle tables stay closed. Staged exactly-once rows past their
// transaction timeout and forgotten sequenced writers expire here too (SPEC section 10). The
// retention loop calls it; tests call it directly with a fake clock.
func (s *Server) RunRetention() int64 {
	if s.tables == nil {
		return 0
	}
	now := s.opts.Clock()
	var total int64
	for _, ot := range s.catalogTables(now) {
		s.expireStaging(ot, now)
		var removed int64
		err := ot.run(s, false, func(st *storeTable) error {
			// Retention, slot TTL, lost slots and consume-then-clean (SPEC sections 4 and 8).
			res, err := ot.slots.Clean()
			removed = res.Removed
			if err != nil {
				return err
			}
			for _, name := range res.Expired {
				s.log.Warn("binlog slot expired (slot.ttl)", "table", ot.label, "slot", name)
			}
			for _, name := range res.Lost {
				s.log.Warn("binlog slot lost: changelog retention removed rows it needed", "table", ot.label, "slot", name)
			}
			st.ReleaseExpiredViews(now)
			s.updateSlotMetrics(ot)
			for _, b := range st.Buckets() {
				s.metrics.setBucketOffsets(ot.label, b.Partition, b.Bucket, b.StartOffset, b.EndOffset)
			}
			return nil
		})
		if err != nil {
			if codeOf(err) != codes.NotFound { // dropped meanwhile
				s.log.Warn("retention failed", "table", ot.label, "err", err)
			}
			continue
		}
		if removed > 0 {
			s.metrics.retentionRows.WithLabelValues(ot.label).Add(float64(removed))
			s.log.Debug("retention removed changelog rows", "table", ot.label, "rows", removed)
		}
		total += removed
	}
	s.removeDroppedData()
	return total
}

// catalogTables returns the handles of the tables that retention visits as of now: the tables of
// the hadoop catalog whose store is open, or closed with its retention due time come (RunRetention
// opens them), plus every other open store (tables of a Hive Metastore catalog are not listed
// from the metastore on each pass: those a request opened are served). Tables dropped meanwhile
// are left out; other failures are logged and the table skipped.
func (s *Server) catalogTables(now int64) []*openTable {
	dbs, err := s.cat.ListDatabases()
	if err != nil {
		s.log.Warn("retention: list databases", "err", err)
		return nil
	}
	var out []*openTable
	for _, db := range dbs {
		names, err := s.cat.ListTables(db)
		if err != nil {
			if codeOf(err) != codes.NotFound { // dropped meanwhile
				s.log.Warn("retention: list tables", "database", db, "err", err)
			}
			continue
		}
		for _, name := range names {
			ot, err := s.tableHandle(s.cat, db, name)
			if err == nil && ot.cur.Load() == nil && s.tables.dueOf(ot) > now {
				continue // idle: nothing to do before its due time
			}
			if err != nil {
				if codeOf(err) != codes.NotFound && !s.shuttingDown.Load() {
					s.log.Warn("retention: open table store", "table", tableLabel(db, name), "err", err)
				}
				continue
			}
			out = append(out, ot)
		}
	}
	seen := map[*openTable]bool{}
	for _, ot := range out {
		seen[ot] = true
	}
	for _, ot := range s.tables.openHandles() {
		if !seen[ot] {
			out = append(out, ot)
		}
	}
	return out
}

// removeDroppedData retries RemoveData for dropped tables whose data is still there (drop-table
// logs when RemoveData fails; a crash between drop and removal is finished by catalog.Open).
func (s *Server) removeDroppedData() {
	s.removeMu.Lock()
	defer s.removeMu.Unlock()
	for _, cat := range s.allCatalogs() {
		for _, t := range cat.DroppedTables() {
			if s.tables.isOpen(t.Info.GetTableId()) { // drop-table is closing it and removes it next
				continue
			}
			if err := cat.RemoveData(t); err != nil {
				s.log.Warn("remove data of dropped table", "table", tableLabel(t.Database, t.Name), "location", t.Location, "err", err)
			}
		}
	}
}
