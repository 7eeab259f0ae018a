package binlog

import "github.com/setats/setats/gateway/store"

// NextCleanMs returns the earliest time (ms) at which Clean may change a slot when nothing else
// happens to the table: the slot.ttl expiry of its active slots (Clean also removes changelog
// rows by retention, which the caller bounds with store.Table.OldestCommitMs). With
// changelog.clean-on-consume and an active slot it returns 0: consumption can free rows at any
// time. It returns -1 when no slot rule is due ever (no active slot).
func (s *Slots) NextCleanMs() int64 {
	next := int64(-1)
	ttl := s.TTLMs()
	for _, r := range s.st.Slots() {
		if r.Status != store.SlotActive {
			continue
		}
		if s.tbl.CleanOnConsume {
			return 0
		}
		if at := r.UpdatedMs + ttl + 1; next < 0 || at < next {
			next = at
		}
	}
	return next
}
