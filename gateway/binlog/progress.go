package binlog

import (
	"slices"

	"github.com/setats/setats/gateway/store"
)

// ProgressRow is one row of consume progress (SPEC section 8, DWS
// pgxc_get_binlog_consume_progress): one per (slot, partition, bucket, kind).
type ProgressRow struct {
	Slot   string
	Bucket store.BucketID
	// Checkpoint: the row is about the checkpoint sync point, else the running one.
	Checkpoint bool
	// Registered is false when the slot has no point for the bucket yet: ConsumedOffset is then
	// the bucket's oldest retained offset (the slot will read the bucket from there).
	Registered bool
	// ConsumedOffset is the next offset to read; EndOffset the bucket's end offset; Unconsumed
	// their difference (rows).
	ConsumedOffset, EndOffset, Unconsumed int64
	// ConsumedCommitMs is the commit time of the last consumed row (0 when none is retained or
	// none was consumed); LatestCommitMs that of the newest row (0 when none).
	ConsumedCommitMs, LatestCommitMs int64
	// LagMs is how long the oldest unconsumed row has waited: now minus its commit time, 0 when
	// everything is consumed.
	LagMs int64
	// UpdatedMs is when the point was last registered (0 when never); ExpiresMs when the slot
	// expires unless a checkpoint point is registered (0 unless active).
	UpdatedMs, ExpiresMs int64
	Status               store.SlotStatus
}

// Progress returns the consume progress of slot name (every slot when name is ""), ordered by
// slot, partition, bucket, then checkpoint before running. Every bucket of the table that has a
// row appears, including buckets the slot never registered (new buckets are covered as they
// appear). Errors: NotFound (no such slot).
func (s *Slots) Progress(name string) ([]ProgressRow, error) {
	recs, err := s.List()
	if err != nil {
		return nil, err
	}
	if name != "" {
		var one []store.SlotRecord
		for _, r := range recs {
			if r.Name == name {
				one = append(one, r)
			}
		}
		if len(one) == 0 {
			return nil, errorf(ErrNotFound, "%s does not exist", s.slotName(name))
		}
		recs = one
	}
	now := s.clock()
	buckets := s.st.Buckets()
	ttl := s.TTLMs()
	// Commit times of the rows just below and at every point, per bucket: each distinct offset
	// is looked up once, in offset order (slots often share points: the caught-up ones all sit at
	// the end offset, and a running point often equals the checkpoint point).
	times := make([][]int64, len(buckets)) // [bucket][slot*4 + j]
	var uniq []int64
	for bi, b := range buckets {
		offs := make([]int64, 0, len(recs)*4)
		for _, r := range recs {
			p, _ := pointOf(r, b)
			offs = append(offs, p.Checkpoint-1, p.Checkpoint, p.Running-1, p.Running)
		}
		uniq = append(uniq[:0], offs...)
		slices.Sort(uniq)
		uniq = slices.Compact(uniq)
		found, err := s.st.CommitTimes(b.BucketID, uniq)
		if err != nil {
			return nil, err
		}
		for i, o := range offs {
			j, _ := slices.BinarySearch(uniq, o)
			offs[i] = found[j]
		}
		times[bi] = offs
	}
	// Slots come sorted by name and buckets by partition and bucket, so the rows are built in
	// their order.
	out := make([]ProgressRow, 0, len(recs)*len(buckets)*2)
	for i, r := range recs {
		for bi, b := range buckets {
			p, ok := pointOf(r, b)
			t := times[bi][i*4 : i*4+4]
			for k, cp := range []bool{true, false} {
				pr := ProgressRow{Slot: r.Name, Bucket: b.BucketID, Checkpoint: cp, Registered: ok,
					EndOffset: b.EndOffset, LatestCommitMs: b.LastCommitMs, Status: r.Status}
				pr.ConsumedOffset, pr.UpdatedMs = p.Checkpoint, p.CheckpointMs
				if !cp {
					pr.ConsumedOffset, pr.UpdatedMs = p.Running, p.RunningMs
				}
				pr.Unconsumed = max(0, b.EndOffset-pr.ConsumedOffset)
				pr.ConsumedCommitMs = t[k*2]
				if pr.Unconsumed > 0 {
					first := t[k*2+1]
					if first == 0 { // below the oldest retained row (lost)
						first = b.LastCommitMs
					}
					pr.LagMs = max(0, now-first)
				}
				if r.Status == store.SlotActive {
					pr.ExpiresMs = r.UpdatedMs + ttl
				}
				out = append(out, pr)
			}
		}
	}
	return out, nil
}

// pointOf returns the sync points of slot r in bucket b; without any (ok false), both are the
// bucket's oldest retained offset (where the slot will read it from).
func pointOf(r store.SlotRecord, b store.BucketOffsets) (p store.SyncPoints, ok bool) {
	p, ok = r.Points[b.BucketID]
	if !ok {
		p.Checkpoint, p.Running = b.StartOffset, b.StartOffset
	}
	return p, ok
}

// Summary is the per-slot roll-up of progress that the gateway exports as Prometheus gauges
// (per table and slot, never per bucket).
type Summary struct {
	Slot   string
	Status store.SlotStatus
	// Unconsumed sums the checkpoint rows' unconsumed rows over the buckets; LagMs is their
	// largest lag.
	Unconsumed, LagMs int64
	// SinceProgressMs is how long ago a checkpoint point was last registered; ExpiresInMs how
	// long until the slot expires (0 unless active).
	SinceProgressMs, ExpiresInMs int64
}

// Summaries returns one Summary per slot, sorted by name.
func (s *Slots) Summaries() ([]Summary, error) {
	rows, err := s.Progress("")
	if err != nil {
		return nil, err
	}
	recs, err := s.List()
	if err != nil {
		return nil, err
	}
	now := s.clock()
	idx := map[string]int{}
	out := make([]Summary, len(recs))
	for i, r := range recs {
		idx[r.Name] = i
		out[i] = Summary{Slot: r.Name, Status: r.Status, SinceProgressMs: max(0, now-r.UpdatedMs)}
		if r.Status == store.SlotActive {
			out[i].ExpiresInMs = max(0, r.UpdatedMs+s.TTLMs()-now)
		}
	}
	for _, pr := range rows {
		if !pr.Checkpoint {
			continue
		}
		i, ok := idx[pr.Slot]
		if !ok {
			continue
		}
		out[i].Unconsumed += pr.Unconsumed
		out[i].LagMs = max(out[i].LagMs, pr.LagMs)
	}
	return out, nil
}

// BucketConsumed is one bucket's answer of Consumed.
type BucketConsumed struct {
	Bucket store.BucketID
	// EndOffset is the bucket's end offset; LowestPoint the lowest checkpoint point of the active
	// slots (-1 when there is none).
	EndOffset, LowestPoint int64
	Consumed               bool
}

// Consumed reports whether every active slot consumed every changelog row (DWS
// pgxc_consumed_binlog_records: max offset <= min sync point), per bucket and overall. A bucket
// an active slot has no point for counts as consumed only when it has no retained row. With no
// active slot nothing counts as consumed.
func (s *Slots) Consumed() (all bool, per []BucketConsumed, err error) {
	recs, err := s.List()
	if err != nil {
		return false, nil, err
	}
	all = true
	live := 0
	for _, r := range recs {
		if r.Status == store.SlotActive {
			live++
		}
	}
	for _, b := range s.st.Buckets() {
		bc := BucketConsumed{Bucket: b.BucketID, EndOffset: b.EndOffset, LowestPoint: -1}
		for _, r := range recs {
			if r.Status != store.SlotActive {
				continue
			}
			at := b.StartOffset
			if p, ok := r.Points[b.BucketID]; ok {
				at = p.Checkpoint
			}
			if bc.LowestPoint < 0 || at < bc.LowestPoint {
				bc.LowestPoint = at
			}
		}
		bc.Consumed = live > 0 && bc.LowestPoint >= b.EndOffset
		all = all && bc.Consumed
		per = append(per, bc)
	}
	return all && live > 0, per, nil
}
