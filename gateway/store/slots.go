package store

import (
	"bytes"
	"encoding/binary"
	"errors"
	"maps"
	"slices"

	"github.com/cockroachdb/pebble/v2"
)

// Slots (SPEC section 8)
//
// A slot is a named, durable consumer position of the table. The store keeps slot records in
// the table's Pebble DB, beside the state and the changelog, under the keyspace tag "b" (binlog):
//
//	key                          value
//	"b" name 0x00 0x00           slot header: varint created ms, varint updated ms, varint owner
//	                             lease end ms, 1 byte status, uvarint length + owner, uvarint
//	                             length + reason
//	"b" name 0x00 0x01 P B       sync points of one bucket: uvarint checkpoint offset, uvarint
//	                             running offset, varint checkpoint ms, varint running ms
//
// Slot names are identifiers (no 0x00 byte), so one slot's keys are contiguous. Every change of a
// slot is one Pebble batch committed with fsync; TruncateChangelog removes changelog rows and
// updates slots in one batch, so a slot never claims rows that are gone without saying so. The
// rules (who may move a point, TTL, lost) live in package gateway/binlog; the store only keeps
// the records and applies them atomically.

// SlotStatus is the status of a slot. Values are on-disk format: never change them.
type SlotStatus uint8

const (
	// SlotActive: the slot holds the changelog rows at and above its checkpoint points.
	SlotActive SlotStatus = 0
	// SlotExpired: the checkpoint points did not move for slot.ttl; the slot holds nothing.
	SlotExpired SlotStatus = 1
	// SlotLost: changelog retention removed rows the slot still needed (Reason names them).
	SlotLost SlotStatus = 2
)

func (s SlotStatus) String() string {
	switch s {
	case SlotActive:
		return "active"
	case SlotExpired:
		return "expired"
	case SlotLost:
		return "lost"
	}
	return "unknown"
}

// SyncPoints are a slot's positions in one bucket: Checkpoint is the next offset to read as of
// the last completed Flink checkpoint, Running the next offset as of the latest running sync
// point (monitoring only; Running >= Checkpoint); CheckpointMs and RunningMs are when each was
// last registered (ms).
type SyncPoints struct {
	Checkpoint, Running     int64
	CheckpointMs, RunningMs int64
}

// SlotRecord is the durable record of one slot. Points holds the buckets the slot registered
// sync points for; a bucket without an entry has not been consumed through this slot yet.
type SlotRecord struct {
	Name string
	// Owner is the job id that owns the slot ("" when none); the ownership lapses at
	// OwnerLeaseMs (ms) unless renewed.
	Owner        string
	OwnerLeaseMs int64
	// CreatedMs is when the slot was created; UpdatedMs when a checkpoint sync point was last
	// registered (the base of slot.ttl).
	CreatedMs, UpdatedMs int64
	Status               SlotStatus
	// Reason says why the slot is expired or lost ("" while active).
	Reason string
	Points map[BucketID]SyncPoints
}

// Clone returns a deep copy of r.
func (r SlotRecord) Clone() SlotRecord {
	r.Points = maps.Clone(r.Points)
	if r.Points == nil {
		r.Points = map[BucketID]SyncPoints{}
	}
	return r
}

// SortedBuckets returns the buckets of r.Points sorted by partition, then bucket.
func (r SlotRecord) SortedBuckets() []BucketID {
	ids := slices.Collect(maps.Keys(r.Points))
	slices.SortFunc(ids, BucketID.Compare)
	return ids
}

const tagSlot = 'b'

func slotPrefix(name string) []byte {
	return append(append([]byte{tagSlot}, name...), 0)
}

func slotHeaderKey(name string) []byte { return append(slotPrefix(name), 0) }

func slotPointKey(name string, id BucketID) []byte {
	return append(append(slotPrefix(name), 1), bucketPrefix(id)...)
}

func (r *SlotRecord) encodeHeader() []byte {
	b := binary.AppendVarint(nil, r.CreatedMs)
	b = binary.AppendVarint(b, r.UpdatedMs)
	b = binary.AppendVarint(b, r.OwnerLeaseMs)
	b = append(b, byte(r.Status))
	b = binary.AppendUvarint(b, uint64(len(r.Owner)))
	b = append(b, r.Owner...)
	b = binary.AppendUvarint(b, uint64(len(r.Reason)))
	return append(b, r.Reason...)
}

var errMalformedSlot = errors.New("store: malformed slot record")

func decodeSlotHeader(r *SlotRecord, b []byte) error {
	var vals [3]int64
	for i := range vals {
		v, n := binary.Varint(b)
		if n <= 0 {
			return errMalformedSlot
		}
		vals[i], b = v, b[n:]
	}
	r.CreatedMs, r.UpdatedMs, r.OwnerLeaseMs = vals[0], vals[1], vals[2]
	if len(b) < 1 {
		return errMalformedSlot
	}
	r.Status, b = SlotStatus(b[0]), b[1:]
	var strs [2]string
	for i := range strs {
		l, n := binary.Uvarint(b)
		if n <= 0 || l > uint64(len(b)-n) {
			return errMalformedSlot
		}
		strs[i], b = string(b[n:n+int(l)]), b[n+int(l):]
	}
	r.Owner, r.Reason = strs[0], strs[1]
	return nil
}

func encodePoints(p SyncPoints) []byte {
	b := binary.AppendUvarint(nil, uint64(p.Checkpoint))
	b = binary.AppendUvarint(b, uint64(p.Running))
	b = binary.AppendVarint(b, p.CheckpointMs)
	return binary.AppendVarint(b, p.RunningMs)
}

func decodePoints(b []byte) (SyncPoints, error) {
	var u [2]uint64
	for i := range u {
		v, n := binary.Uvarint(b)
		if n <= 0 {
			return SyncPoints{}, errMalformedSlot
		}
		u[i], b = v, b[n:]
	}
	var s [2]int64
	for i := range s {
		v, n := binary.Varint(b)
		if n <= 0 {
			return SyncPoints{}, errMalformedSlot
		}
		s[i], b = v, b[n:]
	}
	return SyncPoints{Checkpoint: int64(u[0]), Running: int64(u[1]), CheckpointMs: s[0], RunningMs: s[1]}, nil
}

// loadSlots reads every slot record (called by Open).
func (t *Table) loadSlots() error {
	t.slots = map[string]*SlotRecord{}
	it, err := t.db.NewIter(&pebble.IterOptions{LowerBound: []byte{tagSlot}, UpperBound: []byte{tagSlot + 1}})
	if err != nil {
		return t.internal(err)
	}
	defer it.Close()
	for it.First(); it.Valid(); it.Next() {
		k := it.Key()[1:]
		i := bytes.IndexByte(k, 0)
		if i <= 0 || i+1 >= len(k) {
			return t.internal(errMalformedSlot)
		}
		name := string(k[:i])
		r := t.slots[name]
		if r == nil {
			r = &SlotRecord{Name: name, Points: map[BucketID]SyncPoints{}}
			t.slots[name] = r
		}
		v, err := it.ValueAndErr()
		if err != nil {
			return t.internal(err)
		}
		switch k[i+1] {
		case 0:
			err = decodeSlotHeader(r, v)
		case 1:
			var id BucketID
			var rest []byte
			if id, rest, err = parseBucketPrefix(k[i+2:]); err == nil && len(rest) == 0 {
				r.Points[id], err = decodePoints(v)
			} else if err == nil {
				err = errMalformedSlot
			}
		default:
			err = errMalformedSlot
		}
		if err != nil {
			return t.internal(err)
		}
	}
	return t.internalOrNil(it.Error())
}

// Slots returns copies of every slot record, sorted by name.
func (t *Table) Slots() []SlotRecord {
	t.slotMu.Lock()
	defer t.slotMu.Unlock()
	out := make([]SlotRecord, 0, len(t.slots))
	for _, r := range t.slots {
		out = append(out, r.Clone())
	}
	slices.SortFunc(out, func(a, b SlotRecord) int { return bytes.Compare([]byte(a.Name), []byte(b.Name)) })
	return out
}

// Slot returns a copy of the record of slot name; ok is false when there is none.
func (t *Table) Slot(name string) (SlotRecord, bool) {
	t.slotMu.Lock()
	defer t.slotMu.Unlock()
	r := t.slots[name]
	if r == nil {
		return SlotRecord{}, false
	}
	return r.Clone(), true
}

// appendSlot adds r's header and the points of buckets (every bucket of r.Points when buckets
// is nil) to batch.
func appendSlot(batch *pebble.Batch, r *SlotRecord, buckets []BucketID) error {
	if err := batch.Set(slotHeaderKey(r.Name), r.encodeHeader(), nil); err != nil {
		return err
	}
	if buckets == nil {
		buckets = r.SortedBuckets()
	}
	for _, id := range buckets {
		p, ok := r.Points[id]
		if !ok {
			continue
		}
		if err := batch.Set(slotPointKey(r.Name, id), encodePoints(p), nil); err != nil {
			return err
		}
	}
	return nil
}

// PutSlots stores the records recs (creating or replacing each) in one batch committed with
// fsync, and then makes them what Slots returns. For each record only the header and the points
// of the buckets in changed[i] are written (all of its points when changed is nil or changed[i]
// is nil); points are never deleted except by DeleteSlot. The caller (package gateway/binlog)
// serialises slot changes and enforces the rules of SPEC section 8.
// Errors: ErrClosed, ErrInternal (storage).
func (t *Table) PutSlots(recs []SlotRecord, changed [][]BucketID) error {
	if err := t.begin(); err != nil {
		return err
	}
	defer t.end()
	batch := t.db.NewBatch()
	defer batch.Close()
	for i := range recs {
		var ids []BucketID
		if changed != nil {
			ids = changed[i]
		}
		if err := appendSlot(batch, &recs[i], ids); err != nil {
			return t.internal(err)
		}
	}
	if err := batch.Commit(pebble.Sync); err != nil {
		return t.internal(err)
	}
	t.slotMu.Lock()
	for i := range recs {
		r := recs[i].Clone()
		if old := t.slots[r.Name]; old != nil {
			for id, p := range old.Points {
				if _, ok := r.Points[id]; !ok {
					r.Points[id] = p
				}
			}
		}
		t.slots[r.Name] = &r
	}
	t.slotMu.Unlock()
	return nil
}

// DeleteSlot removes slot name and all of its sync points (one batch, fsync); ok is false when
// it did not exist. Errors: ErrClosed, ErrInternal.
func (t *Table) DeleteSlot(name string) (ok bool, err error) {
	if err := t.begin(); err != nil {
		return false, err
	}
	defer t.end()
	t.slotMu.Lock()
	_, ok = t.slots[name]
	t.slotMu.Unlock()
	if !ok {
		return false, nil
	}
	p := slotPrefix(name)
	if err := t.db.DeleteRange(p, prefixEnd(p), pebble.Sync); err != nil {
		return false, t.internal(err)
	}
	t.slotMu.Lock()
	delete(t.slots, name)
	t.slotMu.Unlock()
	return true, nil
}
