// Package binlog holds the rules of a table's binlog (SPEC section 8, seed dws-binlog-flink.txt):
// slots with their checkpoint and running sync points, one owner per slot, the slot TTL, the
// hard retention cap that turns a lagging slot lost, consume-then-clean, and consume progress.
//
// The records live in the table's store (gateway/store, slots.go), written in atomic batches;
// this package decides what to write. One Slots serves one open table and serialises every
// change of its slots, so a rule checked is still true when its batch commits.
//
// Errors are *Error values (error.go) whose message names the table, the slot and (for positions)
// the bucket: ErrNotFound (no such slot), ErrFailedPrecondition (owned by another job, expired,
// changelog disabled, a point moving backwards), ErrOutOfRange (past the end; lost rows),
// ErrInvalid; store errors pass through as they are.
package binlog

import (
	"fmt"
	"strings"
	"sync"
	"time"
	"unicode"

	"github.com/setats/setats/catalog"
	"github.com/setats/setats/gateway/partname"
	"github.com/setats/setats/gateway/store"
	"github.com/setats/setats/internal/culprit"
)

// DefaultOwnerLeaseMs is how long a job owns a slot after its last acquire or registration when
// the request names no lease: 60 s. The connector renews it about every 10 s; a job that stops
// without releasing its slot (a crashed JobManager) frees it after the lease.
const DefaultOwnerLeaseMs = 60_000

// MaxSlotsPerTable bounds the slots of one table; creating more is ResourceExhausted.
const MaxSlotsPerTable = 1024

// Options configures Slots.
type Options struct {
	// Clock returns the current time in ms; nil means time.Now().UnixMilli.
	Clock func() int64
}

// Slots applies the slot rules of SPEC section 8 to one table. Safe for concurrent use.
type Slots struct {
	st    *store.Table
	tbl   *catalog.Table
	clock func() int64
	label string

	mu sync.Mutex // serialises slot changes and cleaning
}

// New returns the slot rules of the table whose store is st.
func New(st *store.Table, opts Options) *Slots {
	c := opts.Clock
	if c == nil {
		c = func() int64 { return time.Now().UnixMilli() }
	}
	return &Slots{st: st, tbl: st.Catalog(), clock: c, label: st.Catalog().QualifiedName()}
}

// Point is a sync point to register: the next offset to read in one bucket.
type Point struct {
	Bucket store.BucketID
	Offset int64
}

// TTLMs returns the table's slot.ttl in ms.
func (s *Slots) TTLMs() int64 {
	if s.tbl.SlotTTLMs > 0 {
		return s.tbl.SlotTTLMs
	}
	return catalog.DefaultSlotTTLMs
}

func (s *Slots) slotName(name string) string {
	return fmt.Sprintf("slot %q of table %s", name, s.label)
}

// checkEnabled fails with FailedPrecondition when the table has no changelog.
func (s *Slots) checkEnabled(name string) error {
	if !s.tbl.ChangelogEnabled {
		return errorf(ErrFailedPrecondition,
			"%s: table %s has changelog.enabled = false (DWS enable_binlog off), so it has no changelog to consume; "+
				"re-create the table with changelog.enabled = true", s.slotName(name), s.label)
	}
	return nil
}

// refresh expires r when its checkpoint sync point was not registered for slot.ttl; it reports
// whether r changed.
func (s *Slots) refresh(r *store.SlotRecord, now int64) bool {
	if r.Status != store.SlotActive {
		return false
	}
	ttl := s.TTLMs()
	if now-r.UpdatedMs <= ttl {
		return false
	}
	r.Status = store.SlotExpired
	r.Reason = fmt.Sprintf("no checkpoint sync point was registered for %s (slot.ttl) since %s",
		time.Duration(ttl)*time.Millisecond, time.UnixMilli(r.UpdatedMs).UTC().Format(time.RFC3339))
	r.Owner, r.OwnerLeaseMs = "", 0
	return true
}

// unusable returns the error of using an expired or lost slot, nil for an active one.
func (s *Slots) unusable(r *store.SlotRecord) error {
	switch r.Status {
	case store.SlotExpired:
		return errorf(ErrFailedPrecondition,
			"%s expired: %s; its rows are no longer held (DWS \"Slot not found\"). Use startup.mode = 'initial' to start over "+
				"(it resets the slot), or drop it with `setats binlog drop-slot` or pick another slot.name", s.slotName(r.Name), r.Reason)
	case store.SlotLost:
		return errorf(ErrOutOfRange,
			"%s is lost: %s. Use startup.mode = 'initial' to start over (it resets the slot), or drop it with "+
				"`setats binlog drop-slot`; raise changelog.retention.ms to keep rows longer", s.slotName(r.Name), r.Reason)
	}
	return nil
}

// load returns the record of slot name refreshed (and stored when the refresh changed it).
func (s *Slots) load(name string, now int64) (store.SlotRecord, bool, error) {
	r, ok := s.st.Slot(name)
	if !ok {
		return r, false, nil
	}
	if s.refresh(&r, now) {
		if err := s.st.PutSlots([]store.SlotRecord{r}, [][]store.BucketID{{}}); err != nil {
			return r, true, err
		}
	}
	return r, true, nil
}

func (s *Slots) ownedByOther(r *store.SlotRecord, owner string, now int64) bool {
	return r.Owner != "" && r.Owner != owner && r.OwnerLeaseMs >= now
}

func (s *Slots) ownedError(r *store.SlotRecord, owner string, now int64) error {
	return errorf(ErrFailedPrecondition,
		"%s is owned by job %s (lease until %s), so job %s cannot use it: one running job per slot (DWS binlogSlotName). "+
			"Stop job %s, or give this job another slot.name",
		s.slotName(r.Name), r.Owner, time.UnixMilli(r.OwnerLeaseMs).UTC().Format(time.RFC3339), owner, r.Owner)
}

// MaxOwnerBytes is the longest owner (job id) a slot takes, in bytes: a Flink job id is 32 hex
// digits; the owner is stored in the slot's record and named in errors and in `setats binlog`
// tables.
const MaxOwnerBytes = 256

// ValidateOwner checks a non-empty owner (job id) a client sent: at most MaxOwnerBytes bytes and
// no control characters (it is printed in tables and messages as it is). Error: ErrInvalid, saying
// what is wrong and leaving naming the owner to the caller (ownerError, the CLI's --owner).
func ValidateOwner(owner string) error {
	if len(owner) > MaxOwnerBytes {
		return errorf(ErrInvalid, "a job id has at most %d bytes, not %d", MaxOwnerBytes, len(owner))
	}
	if strings.IndexFunc(owner, unicode.IsControl) >= 0 {
		return errorf(ErrInvalid, "a job id has no control characters")
	}
	return nil
}

// ownerError is ValidateOwner's refusal of owner for slot name, naming both (owner quoted and
// truncated); nil when owner is valid.
func (s *Slots) ownerError(name, owner string) error {
	if err := ValidateOwner(owner); err != nil {
		return fmt.Errorf("%s: owner (job id) %s: %w", s.slotName(name), culprit.Quote(owner), err)
	}
	return nil
}

// Acquire makes job owner the owner of slot name for leaseMs (<= 0: DefaultOwnerLeaseMs),
// creating the slot when it does not exist, and returns its record: the checkpoint sync points
// it holds are where a job without Flink state starts (SPEC section 9). Calling it again renews
// the lease (the connector's heartbeat). With reset, an expired or lost slot starts over: active,
// no sync points (startup.mode = initial). Errors: FailedPrecondition (owned by another running
// job, naming it; expired; changelog disabled), OutOfRange (lost), InvalidArgument (bad name or
// owner), ResourceExhausted (too many slots).
func (s *Slots) Acquire(name, owner string, reset bool, leaseMs int64) (store.SlotRecord, bool, error) {
	if err := catalog.ValidateIdentifier("slot", name); err != nil {
		return store.SlotRecord{}, false, err
	}
	if owner == "" {
		return store.SlotRecord{}, false, errorf(ErrInvalid, "%s: the owner (job id) is empty", s.slotName(name))
	}
	if err := s.ownerError(name, owner); err != nil {
		return store.SlotRecord{}, false, err
	}
	if err := s.checkEnabled(name); err != nil {
		return store.SlotRecord{}, false, err
	}
	if leaseMs <= 0 {
		leaseMs = DefaultOwnerLeaseMs
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.clock()
	r, ok, err := s.load(name, now)
	if err != nil {
		return r, false, err
	}
	created := false
	switch {
	case !ok:
		if n := len(s.st.Slots()); n >= MaxSlotsPerTable {
			return r, false, errorf(ErrResourceExhausted, "table %s has %d slots, the most it may have; drop unused ones with `setats binlog drop-slot`", s.label, n)
		}
		r = store.SlotRecord{Name: name, CreatedMs: now, UpdatedMs: now, Points: map[store.BucketID]store.SyncPoints{}}
		created = true
	case s.ownedByOther(&r, owner, now):
		return r, false, s.ownedError(&r, owner, now)
	case r.Status != store.SlotActive && reset:
		_, _ = s.st.DeleteSlot(name)
		r = store.SlotRecord{Name: name, CreatedMs: now, UpdatedMs: now, Points: map[store.BucketID]store.SyncPoints{}}
		created = true
	case r.Status != store.SlotActive:
		return r, false, s.unusable(&r)
	}
	r.Owner, r.OwnerLeaseMs = owner, now+leaseMs
	if err := s.st.PutSlots([]store.SlotRecord{r}, [][]store.BucketID{{}}); err != nil {
		return r, false, err
	}
	return r, created, nil
}

// Release ends owner's ownership of slot name (the job stopped); the slot and its points stay.
// Releasing a slot owned by another job, or not owned, changes nothing. Errors: NotFound.
func (s *Slots) Release(name, owner string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.st.Slot(name)
	if !ok {
		return errorf(ErrNotFound, "%s does not exist", s.slotName(name))
	}
	if r.Owner != owner || owner == "" {
		return nil
	}
	r.Owner, r.OwnerLeaseMs = "", 0
	return s.st.PutSlots([]store.SlotRecord{r}, [][]store.BucketID{{}})
}

// Register registers sync points of slot name for job owner (SPEC section 8): with checkpoint,
// the checkpoint points (the next offsets as of a completed Flink checkpoint; this also renews
// the TTL and the running points follow them), else the running points (monitoring only).
// Rules: the slot must exist and be active; owner must own it (or nobody else may hold it: a
// lapsed lease is taken over); each point lies in the table's buckets and in [0, end offset]; a
// checkpoint point never moves backwards (FailedPrecondition naming slot, bucket and both
// offsets); a running point below the current one is ignored (it is raised to the checkpoint
// point). Either all points are registered or none. It returns the record after the change.
func (s *Slots) Register(name, owner string, points []Point, checkpoint bool) (store.SlotRecord, error) {
	if owner != "" {
		if err := s.ownerError(name, owner); err != nil {
			return store.SlotRecord{}, err
		}
	}
	if err := s.checkEnabled(name); err != nil {
		return store.SlotRecord{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.clock()
	r, ok, err := s.load(name, now)
	if err != nil {
		return r, err
	}
	if !ok {
		return r, errorf(ErrNotFound, "%s does not exist (a setats-cdc job with slot.name creates it)", s.slotName(name))
	}
	if err := s.unusable(&r); err != nil {
		return r, err
	}
	if owner != "" && s.ownedByOther(&r, owner, now) {
		return r, s.ownedError(&r, owner, now)
	}
	changed := make([]store.BucketID, 0, len(points))
	for _, p := range points {
		id := p.Bucket
		if err := s.checkBucket(name, id); err != nil {
			return r, err
		}
		if _, dropped := s.st.PartitionDropped(id, p.Offset); dropped {
			continue // a position in a dropped partition: its points were removed with it
		}
		o, _ := s.st.Offsets(id)
		if p.Offset < 0 || p.Offset > o.EndOffset {
			return r, errorf(ErrOutOfRange, "%s %s: sync point %d is beyond the end offset %d (a sync point never moves past the end)",
				s.slotName(name), bucketWords(id), p.Offset, o.EndOffset)
		}
		cur, had := r.Points[id]
		if checkpoint {
			if had && p.Offset < cur.Checkpoint {
				return r, errorf(ErrFailedPrecondition, "%s %s: checkpoint sync point %d is below the registered %d (a sync point never moves backwards; the job restored an older checkpoint?)",
					s.slotName(name), bucketWords(id), p.Offset, cur.Checkpoint)
			}
			if had && p.Offset == cur.Checkpoint && cur.CheckpointMs == now {
				continue
			}
			cur.Checkpoint, cur.CheckpointMs = p.Offset, now
			if cur.Running < p.Offset {
				cur.Running, cur.RunningMs = p.Offset, now
			}
		} else {
			if had && p.Offset < cur.Running {
				continue
			}
			if !had {
				cur.Checkpoint = s.startOf(id)
			}
			cur.Running, cur.RunningMs = max(p.Offset, cur.Checkpoint), now
		}
		r.Points[id] = cur
		changed = append(changed, id)
	}
	if checkpoint {
		r.UpdatedMs = now
	}
	if owner != "" {
		r.Owner, r.OwnerLeaseMs = owner, max(r.OwnerLeaseMs, now+DefaultOwnerLeaseMs)
	}
	if err := s.st.PutSlots([]store.SlotRecord{r}, [][]store.BucketID{changed}); err != nil {
		return r, err
	}
	return r, nil
}

// DropPartition drops partition from the table's store (store.Table.DropPartition, which also
// removes every slot's sync points of its buckets), serialised with the slot changes of this
// Slots so that no registration racing with the drop writes a point of it back.
func (s *Slots) DropPartition(partition string) (store.DropResult, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.st.DropPartition(partition)
}

// startOf returns the oldest retained offset of a bucket (0 when it has no row).
func (s *Slots) startOf(id store.BucketID) int64 {
	o, _ := s.st.Offsets(id)
	return o.StartOffset
}

// checkBucket checks that id names a bucket of the table (InvalidArgument otherwise).
func (s *Slots) checkBucket(name string, id store.BucketID) error {
	if id.Bucket < 0 || id.Bucket >= s.tbl.BucketCount {
		return errorf(ErrInvalid, "%s: bucket %d is out of range: the table has %d buckets", s.slotName(name), id.Bucket, s.tbl.BucketCount)
	}
	if err := partname.Validate(s.tbl, id.Partition); err != nil {
		return errorf(ErrInvalid, "%s: %v", s.slotName(name), err)
	}
	return nil
}

// Drop removes slot name; ok is false when it did not exist.
func (s *Slots) Drop(name string) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.st.DeleteSlot(name)
}

// List returns every slot (TTL applied), sorted by name.
func (s *Slots) List() ([]store.SlotRecord, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.clock()
	recs := s.st.Slots()
	for i := range recs {
		if s.refresh(&recs[i], now) {
			if err := s.st.PutSlots(recs[i:i+1], [][]store.BucketID{{}}); err != nil {
				return recs, err
			}
		}
	}
	return recs, nil
}

// Get returns slot name (TTL applied). Errors: NotFound.
func (s *Slots) Get(name string) (store.SlotRecord, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok, err := s.load(name, s.clock())
	if err != nil {
		return r, err
	}
	if !ok {
		return r, errorf(ErrNotFound, "%s does not exist", s.slotName(name))
	}
	return r, nil
}

// bucketWords names a bucket in messages: `bucket 3` or `partition "dt=1" bucket 3`.
func bucketWords(id store.BucketID) string {
	if id.Partition == "" {
		return fmt.Sprintf("bucket %d", id.Bucket)
	}
	return fmt.Sprintf("partition %q bucket %d", id.Partition, id.Bucket)
}

// Table returns the table's name, "db.table".
func (s *Slots) Table() string { return s.label }
