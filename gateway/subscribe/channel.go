package subscribe

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"

	"github.com/cockroachdb/pebble/v2"
)

// Keys of a channel's Pebble database. Records are "r" + big-endian id; "s" holds the channel
// state (next id, first id, source position), written in the same batch as the records it
// covers; "x" + big-endian ms -> id indexes the first record whose running maximum source
// timestamp reached that ms (time seeks); "g" + name holds a consumer group; "m" the spec.
const (
	keyRecord = 'r'
	keyState  = 's'
	keyTime   = 'x'
	keyGroup  = 'g'
	keyMeta   = 'm'
)

// Spec is how a channel was created: its source, tables and retention. Stored in the channel's
// database at creation.
type Spec struct {
	Name        string   `json:"name"`
	SourceURL   string   `json:"source_url"`
	Tables      []string `json:"tables"`
	Slot        string   `json:"slot,omitempty"`
	Publication string   `json:"publication,omitempty"`
	// RetentionMs is how long records are kept (by source timestamp); default 24 h.
	RetentionMs int64 `json:"retention_ms"`
	CreatedMs   int64 `json:"created_ms"`
	// CreatedSlot/CreatedPublication: the gateway created them and drops them with the channel.
	CreatedSlot        bool `json:"created_slot,omitempty"`
	CreatedPublication bool `json:"created_publication,omitempty"`
}

// state is the durable head of a channel, rewritten with every appended batch.
type state struct {
	Next     int64  `json:"next"`
	First    int64  `json:"first"`
	Position string `json:"position"`
	// LastMs is the source timestamp of the newest record; MaxMs the running maximum.
	LastMs int64 `json:"last_ms"`
	MaxMs  int64 `json:"max_ms"`
}

// Channel is the durable, ordered log of one subscription channel (SPEC section 11). Append is
// atomic and durable (one synced Pebble batch with the source position); readers wait on Wait
// for new records (no polling). Safe for concurrent use.
type Channel struct {
	name string
	db   *pebble.DB
	log  *slog.Logger

	mu       sync.Mutex
	spec     Spec
	st       state
	lastAppM int64         // gateway clock (ms) of the last append; heartbeats use it
	notify   chan struct{} // closed and replaced by every append
	closed   bool

	verified verifiedLogins // consumer passwords that passed bcrypt (Authenticate)
}

// openChannel opens (creating when spec != nil) the channel database in dir.
func openChannel(dir string, spec *Spec, log *slog.Logger) (*Channel, error) {
	opts := &pebble.Options{
		FormatMajorVersion: pebble.FormatNewest,
		MemTableSize:       4 << 20,
		Logger:             pebbleLog{log},
	}
	if spec == nil {
		opts.ErrorIfNotExists = true
	}
	db, err := pebble.Open(dir, opts)
	if err != nil {
		return nil, Errorf(Internal, "open channel log %s: %v", dir, err)
	}
	c := &Channel{db: db, log: log, notify: make(chan struct{})}
	if spec != nil {
		c.spec = *spec
		b, _ := json.Marshal(spec)
		if err := db.Set([]byte{keyMeta}, b, pebble.Sync); err != nil {
			_ = db.Close()
			return nil, Errorf(Internal, "write channel %s spec: %v", spec.Name, err)
		}
	} else {
		if err := getJSON(db, []byte{keyMeta}, &c.spec); err != nil {
			_ = db.Close()
			return nil, Errorf(Internal, "read channel spec in %s: %v", dir, err)
		}
		if err := getJSON(db, []byte{keyState}, &c.st); err != nil && !errors.Is(err, pebble.ErrNotFound) {
			_ = db.Close()
			return nil, Errorf(Internal, "read channel %s state: %v", c.spec.Name, err)
		}
	}
	c.name = c.spec.Name
	return c, nil
}

func getJSON(db *pebble.DB, key []byte, v any) error {
	b, closer, err := db.Get(key)
	if err != nil {
		return err
	}
	defer closer.Close()
	return json.Unmarshal(b, v)
}

// Name returns the channel's name.
func (c *Channel) Name() string { return c.name }

// Spec returns the channel's creation spec.
func (c *Channel) Spec() Spec {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.spec
}

// Bounds returns the oldest retained record id and the id the next record gets.
func (c *Channel) Bounds() (first, next int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.st.First, c.st.Next
}

// Position returns the source position durably captured so far ("" before the first append).
func (c *Channel) Position() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.st.Position
}

// LastTimestampMs returns the source timestamp of the newest record.
func (c *Channel) LastTimestampMs() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.st.LastMs
}

func recordKey(id int64) []byte {
	return binary.BigEndian.AppendUint64([]byte{keyRecord}, uint64(id))
}

func timeKey(ms int64) []byte {
	return binary.BigEndian.AppendUint64([]byte{keyTime}, uint64(max(ms, 0)))
}

// Append gives recs the next ids and writes them, with pos as the new source position, in one
// synced batch: when it returns nil they are durable and the position with them, so a capture
// that resumes from Position repeats and loses nothing. nowMs is the gateway clock. Open Wait
// channels are closed afterwards. recs may be empty (position only).
func (c *Channel) Append(recs []Record, pos string, nowMs int64) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return Errorf(Unavailable, "channel %s is closed", c.name)
	}
	st := c.st
	b := c.db.NewBatch()
	defer b.Close()
	var buf []byte
	for i := range recs {
		r := &recs[i]
		r.ID = st.Next
		st.Next++
		buf = AppendEncoded(buf[:0], r)
		if err := b.Set(recordKey(r.ID), buf, nil); err != nil {
			return Errorf(Internal, "channel %s: %v", c.name, err)
		}
		st.LastMs = r.TimestampMs
		if r.TimestampMs > st.MaxMs || st.Next == 1 {
			st.MaxMs = max(st.MaxMs, r.TimestampMs)
			if err := b.Set(timeKey(st.MaxMs), binary.BigEndian.AppendUint64(nil, uint64(r.ID)), nil); err != nil {
				return Errorf(Internal, "channel %s: %v", c.name, err)
			}
		}
	}
	if pos != "" {
		st.Position = pos
	}
	sb, _ := json.Marshal(st)
	if err := b.Set([]byte{keyState}, sb, nil); err != nil {
		return Errorf(Internal, "channel %s: %v", c.name, err)
	}
	if err := b.Commit(pebble.Sync); err != nil {
		return Errorf(Internal, "channel %s: append %d records: %v", c.name, len(recs), err)
	}
	c.st = st
	c.lastAppM = nowMs
	if len(recs) > 0 {
		close(c.notify)
		c.notify = make(chan struct{})
	}
	return nil
}

// lastAppendMs returns the gateway clock of the last append (0 = none since open).
func (c *Channel) lastAppendMs() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lastAppM
}

// Wait returns a channel that is closed once a record with id >= from exists (at once when one
// does) or the channel is closed.
func (c *Channel) Wait(from int64) <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.st.Next > from || c.closed {
		ch := make(chan struct{})
		close(ch)
		return ch
	}
	return c.notify
}

// Read appends to buf up to limit records from id from on and returns it. A from below the
// oldest retained id is OutOfRange naming the channel and the removed ids; above the end it is
// OutOfRange too.
func (c *Channel) Read(from int64, limit int, buf []Record) ([]Record, error) {
	c.mu.Lock()
	first, next, closed := c.st.First, c.st.Next, c.closed
	c.mu.Unlock()
	if closed {
		return buf, Errorf(Unavailable, "channel %s is closed", c.name)
	}
	if from < first {
		return buf, Errorf(OutOfRange, "channel %s: record %d was removed by retention: ids [0, %d) are gone; the oldest retained id is %d", c.name, from, first, first)
	}
	if from > next {
		return buf, Errorf(OutOfRange, "channel %s: start id %d is beyond the end id %d", c.name, from, next)
	}
	end := min(next, from+int64(limit))
	if from >= end {
		return buf, nil
	}
	it, err := c.db.NewIter(&pebble.IterOptions{LowerBound: recordKey(from), UpperBound: recordKey(end)})
	if err != nil {
		return buf, Errorf(Internal, "channel %s: %v", c.name, err)
	}
	defer it.Close()
	for ok := it.First(); ok; ok = it.Next() {
		id := int64(binary.BigEndian.Uint64(it.Key()[1:]))
		v, err := it.ValueAndErr()
		if err != nil {
			return buf, Errorf(Internal, "channel %s: read record %d: %v", c.name, id, err)
		}
		r, err := DecodeRecord(id, v)
		if err != nil {
			return buf, err
		}
		buf = append(buf, r)
	}
	if err := it.Error(); err != nil {
		return buf, Errorf(Internal, "channel %s: %v", c.name, err)
	}
	return buf, nil
}

// SeekTimestamp returns the id of the first retained record whose source timestamp (as a running
// maximum over the log) is >= ms; the end id when none is. Before the oldest record it is the
// oldest retained id.
func (c *Channel) SeekTimestamp(ms int64) (int64, error) {
	c.mu.Lock()
	first, next := c.st.First, c.st.Next
	c.mu.Unlock()
	it, err := c.db.NewIter(&pebble.IterOptions{LowerBound: timeKey(ms), UpperBound: []byte{keyTime + 1}})
	if err != nil {
		return 0, Errorf(Internal, "channel %s: %v", c.name, err)
	}
	defer it.Close()
	if !it.First() {
		return next, it.Error()
	}
	id := int64(binary.BigEndian.Uint64(it.Value()))
	return max(id, first), nil
}

// ApplyRetention removes the records whose source timestamp (running maximum) is older than
// nowMs minus the channel's retention and returns how many it removed. HEARTBEATs count like
// every record, so an idle channel keeps about its retention's worth of heartbeats.
func (c *Channel) ApplyRetention(nowMs int64) (int64, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return 0, nil
	}
	ret := c.spec.RetentionMs
	if ret <= 0 {
		ret = DefaultRetentionMs
	}
	cutMs := nowMs - ret
	// The first record with running max >= cutMs stays; everything below it goes.
	it, err := c.db.NewIter(&pebble.IterOptions{LowerBound: timeKey(cutMs), UpperBound: []byte{keyTime + 1}})
	if err != nil {
		return 0, Errorf(Internal, "channel %s: %v", c.name, err)
	}
	keep := c.st.Next
	if it.First() {
		keep = int64(binary.BigEndian.Uint64(it.Value()))
	}
	_ = it.Close()
	if keep <= c.st.First {
		return 0, nil
	}
	st := c.st
	b := c.db.NewBatch()
	defer b.Close()
	_ = b.DeleteRange(recordKey(st.First), recordKey(keep), nil)
	_ = b.DeleteRange(timeKey(0), timeKey(cutMs), nil)
	removed := keep - st.First
	st.First = keep
	sb, _ := json.Marshal(st)
	_ = b.Set([]byte{keyState}, sb, nil)
	if err := b.Commit(pebble.Sync); err != nil {
		return 0, Errorf(Internal, "channel %s: retention: %v", c.name, err)
	}
	c.st = st
	return removed, nil
}

// close closes the database; Wait channels are released and later calls fail Unavailable.
func (c *Channel) close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil
	}
	c.closed = true
	close(c.notify)
	return c.db.Close()
}

// pebbleLog routes Pebble's log lines to slog.
type pebbleLog struct{ l *slog.Logger }

func (p pebbleLog) Infof(format string, args ...any) {
	p.l.Debug(fmt.Sprintf(format, args...), "component", "pebble")
}
func (p pebbleLog) Errorf(format string, args ...any) {
	p.l.Error(fmt.Sprintf(format, args...), "component", "pebble")
}
func (p pebbleLog) Fatalf(format string, args ...any) {
	p.l.Error(fmt.Sprintf(format, args...), "component", "pebble")
	panic(fmt.Sprintf(format, args...))
}

// AppendHeartbeat appends one HEARTBEAT record at the channel's current source position with
// timestamp nowMs (the gateway clock).
func (c *Channel) AppendHeartbeat(nowMs int64) error {
	c.mu.Lock()
	pos := c.st.Position
	c.mu.Unlock()
	return c.Append([]Record{{Op: OpHeartbeat, Position: pos, TimestampMs: nowMs}}, "", nowMs)
}
