package gateway

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/setats/setats/catalog"
	"github.com/setats/setats/gateway/binlog"
)

// Retention of idle tables
//
// Retention must not open every table of the catalog each pass (issue 7 item 4: the tables it
// opened stayed open, 8 file descriptors each). When a table's store closes (the LRU of open
// tables, shutdown), the gateway records when retention next has work in it (retentionDue): the
// oldest retained changelog row's commit time plus the retention, or the earliest slot.ttl
// expiry, or the earliest staging expiry or writer retention (SPEC section 10), whichever
// comes first. It keeps that time in memory and in the file dueFileName in the
// table's data directory, which a store open removes first, so that after a crash an absent or
// torn file means "not known": retention then opens the table once. A retention pass opens a
// closed table only once its due time has come.

// dueFileName is the file in <location>/data holding a closed table's retention due time (ms,
// decimal). Pebble ignores files it does not know.
const dueFileName = "setats-retention-due"

func dueFile(tbl *catalog.Table) string { return filepath.Join(tbl.Location, "data", dueFileName) }

// retentionDue returns when retention next has work in the table of st (ms; dueNever when
// never, 0 when at once), nothing else happening to it.
func (s *Server) retentionDue(st *storeTable, slots *binlog.Slots) int64 {
	due := dueNever
	oldest, ok, err := st.OldestCommitMs()
	if err != nil {
		return 0
	}
	if ok {
		due = oldest + st.RetentionMs() + 1
	}
	if slots != nil {
		if at := slots.NextCleanMs(); at >= 0 && at < due {
			due = at
		}
	}
	// Staging expiry and writer retention (SPEC section 10).
	at, err := st.NextExpiryMs()
	if err != nil {
		return 0
	}
	if at >= 0 && at < due {
		due = at
	}
	return max(due, 0)
}

// writeDueFile records due in the table's due file (temporary file, then rename; not fsynced:
// a torn or lost file reads as not known, which is safe).
func writeDueFile(tbl *catalog.Table, due int64) {
	path := dueFile(tbl)
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(strconv.FormatInt(due, 10)+"\n"), 0o644); err != nil {
		return
	}
	if err := os.Rename(tmp, path); err != nil {
		_ = os.Remove(tmp)
	}
}

// readDueFile returns the due time recorded for tbl; false when there is none or it cannot be
// read.
func readDueFile(tbl *catalog.Table) (int64, bool) {
	b, err := os.ReadFile(dueFile(tbl))
	if err != nil {
		return 0, false
	}
	due, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	if err != nil || due < 0 {
		return 0, false
	}
	return due, true
}

// removeDue removes the due file of tbl durably (fsyncing the directory) before its store
// opens: from then on writes and slots may make retention due earlier than recorded.
func removeDue(tbl *catalog.Table) {
	err := os.Remove(dueFile(tbl))
	if err != nil {
		return
	}
	if d, err := os.Open(filepath.Dir(dueFile(tbl))); err == nil {
		_ = d.Sync()
		_ = d.Close()
	}
}

// dueOf returns when retention next has work in the closed table of ot: the time recorded in
// memory, else in its due file, else 0 (not known: open it once).
func (r *tableRegistry) dueOf(ot *openTable) int64 {
	r.mu.Lock()
	due := ot.dueMs
	r.mu.Unlock()
	if due != dueUnknown {
		return due
	}
	if d, ok := readDueFile(ot.tbl); ok {
		due = d
	} else {
		due = 0
	}
	r.mu.Lock()
	if ot.dueMs == dueUnknown {
		ot.dueMs = due
	}
	r.mu.Unlock()
	return due
}
