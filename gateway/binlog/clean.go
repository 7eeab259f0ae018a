package binlog

import (
	"fmt"

	"github.com/setats/setats/gateway/store"
)

// CleanResult reports what one Clean did.
type CleanResult struct {
	// Removed is the number of changelog rows removed (retention and consume-then-clean).
	Removed int64
	// Expired and Lost name the slots that became expired or lost.
	Expired, Lost []string
}

// Clean applies, as of now, the rules that free changelog rows (SPEC sections 4 and 8):
//   - slot TTL: an active slot whose checkpoint sync point was not registered for slot.ttl
//     becomes expired and no longer holds rows;
//   - the hard cap changelog.retention.ms: rows older than it are removed whatever the slots;
//     an active slot whose checkpoint point in a bucket lies below the new oldest offset becomes
//     lost, its reason naming the bucket and the lost offsets, in the same batch as the removal;
//   - consume-then-clean (changelog.clean-on-consume = true): rows below the lowest checkpoint
//     point of the active slots are removed, in whole chunks; a bucket an active slot has no
//     point for yet is kept whole (the slot will read it from its oldest offset). With no active
//     slot nothing is removed early.
//
// The gateway's retention loop calls it for every table.
func (s *Slots) Clean() (CleanResult, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var res CleanResult
	now := s.clock()
	recs := s.st.Slots()
	var expired []store.SlotRecord
	for i := range recs {
		if s.refresh(&recs[i], now) {
			expired = append(expired, recs[i])
			res.Expired = append(res.Expired, recs[i].Name)
		}
	}
	if len(expired) > 0 {
		if err := s.st.PutSlots(expired, nil); err != nil {
			return res, err
		}
	}
	for _, b := range s.st.Buckets() {
		x, err := s.st.RetentionCutoff(b.BucketID, now)
		if err != nil {
			return res, err
		}
		target := x
		var lost []store.SlotRecord
		low, live := int64(-1), 0
		for i := range recs {
			r := &recs[i]
			if r.Status != store.SlotActive {
				continue
			}
			p, ok := r.Points[b.BucketID]
			if ok && p.Checkpoint < x {
				r.Status = store.SlotLost
				r.Reason = fmt.Sprintf("%s: offsets [%d, %d) were removed by changelog retention (changelog.retention.ms %d) before the slot consumed them",
					bucketWords(b.BucketID), p.Checkpoint, x, s.st.RetentionMs())
				r.Owner, r.OwnerLeaseMs = "", 0
				lost = append(lost, *r)
				res.Lost = append(res.Lost, r.Name)
				continue
			}
			live++
			at := b.StartOffset
			if ok {
				at = p.Checkpoint
			}
			if low < 0 || at < low {
				low = at
			}
		}
		if s.tbl.CleanOnConsume && live > 0 && low > target {
			target = low
		}
		if target <= b.StartOffset && len(lost) == 0 {
			continue
		}
		n, err := s.st.TruncateChangelog(b.BucketID, target, lost)
		res.Removed += n
		if err != nil {
			return res, err
		}
	}
	return res, nil
}
