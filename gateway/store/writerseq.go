package store

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"sync"

	"github.com/cockroachdb/pebble/v2"
	"github.com/setats/setats/gateway/buckethash"
	"github.com/setats/setats/gateway/partname"
	"github.com/setats/setats/gateway/row"
	"github.com/setats/setats/gateway/rowcodec"
)

// Sequenced writers (SPEC section 10)
//
// An at-least-once client that resends a batch after a lost acknowledgement or a reconnect must
// not have it applied twice. Such a client names itself with a writer id and numbers its batches;
// the store applies each (writer, sequence) once. Keys, W = rowcodec.AppendEscaped(writer id):
//
//	"q" W "w"               writer record: uvarint last applied sequence, varint last use (ms)
//	"q" W "a" seq           the commit of sequence seq (8 bytes big-endian), for the last
//	                        AckWindow sequences: encodeCommit
//	"q" W "b" P B           uvarint last sequence of the writer applied to bucket P B
//
// They are written in the same Pebble batch as the write's state and changelog rows (or staged
// rows), so after a crash the sequences say exactly which batches are durable. A writer unused
// for Options.WriterRetentionMs is forgotten by ExpireStaging.

// AckWindow is how many of a writer's newest sequences keep their commit, so that a duplicate
// of one of them is answered with the original acknowledgement.
const AckWindow = 64

// DefaultWriterRetentionMs is how long an unused sequenced writer is remembered: 24 h.
const DefaultWriterRetentionMs = 24 * 60 * 60 * 1000

// MaxIDBytes bounds writer ids and commit users (bytes).
const MaxIDBytes = 1024

// Sequence names one batch of a sequenced writer: Writer is the writer id (1..MaxIDBytes bytes),
// Seq the batch's sequence (>= 0; a writer's sequences are consecutive).
type Sequence struct {
	Writer string
	Seq    int64
}

// writerState is the in-memory record of one writer (loaded from Pebble on first use).
type writerState struct {
	mu     sync.Mutex // serialises the writer's writes
	prefix []byte     // "q" W
	known  bool       // a sequence was applied
	last   int64
	recent map[int64]*Pending // commits of the newest AckWindow sequences
}

func writerPrefix(writer string) []byte {
	return rowcodec.AppendEscaped([]byte{tagWriter}, writer)
}

func (ws *writerState) recordKey() []byte { return append(bytes.Clone(ws.prefix), 'w') }

func (ws *writerState) ackKey(seq int64) []byte {
	return binary.BigEndian.AppendUint64(append(bytes.Clone(ws.prefix), 'a'), uint64(seq))
}

func (ws *writerState) bucketKey(bucketPrefix []byte) []byte {
	return append(append(bytes.Clone(ws.prefix), 'b'), bucketPrefix...)
}

// checkSequence validates a Sequence (codes.InvalidArgument).
func checkSequence(s *Sequence) error {
	if s.Writer == "" || len(s.Writer) > MaxIDBytes {
		return errorf(ErrInvalid, "writer id must have 1 to %d bytes, got %d", MaxIDBytes, len(s.Writer))
	}
	if s.Seq < 0 {
		return errorf(ErrInvalid, "writer %s: sequence %d is negative", truncate(s.Writer), s.Seq)
	}
	return nil
}

// truncate shortens an id for error messages.
func truncate(s string) string {
	if len(s) > 64 {
		return fmt.Sprintf("%q...", s[:64])
	}
	return fmt.Sprintf("%q", s)
}

// writerFor returns the state of writer id, loading it from Pebble the first time.
func (t *Table) writerFor(id string) (*writerState, error) {
	t.mu.Lock()
	ws := t.writers[id]
	if ws == nil {
		ws = &writerState{prefix: writerPrefix(id), recent: map[int64]*Pending{}}
		t.writers[id] = ws
		ws.mu.Lock() // loaded below, before anyone else uses it
		t.mu.Unlock()
		err := t.loadWriter(ws)
		ws.mu.Unlock()
		if err != nil {
			t.mu.Lock()
			delete(t.writers, id)
			t.mu.Unlock()
			return nil, err
		}
		return ws, nil
	}
	t.mu.Unlock()
	return ws, nil
}

// loadWriter reads a writer's record and kept commits, from the table's DB and the staging DB
// (a writer that stages keeps them there, atomic with its staged rows): the higher record wins.
func (t *Table) loadWriter(ws *writerState) error {
	for _, db := range t.writerDBs() {
		if err := t.loadWriterFrom(db, ws); err != nil {
			return err
		}
	}
	return nil
}

func (t *Table) loadWriterFrom(db *pebble.DB, ws *writerState) error {
	v, closer, err := db.Get(ws.recordKey())
	if errors.Is(err, pebble.ErrNotFound) {
		return nil
	}
	if err != nil {
		return t.internal(err)
	}
	last, n := binary.Uvarint(v)
	_ = closer.Close()
	if n <= 0 {
		return t.internal(errors.New("malformed writer record"))
	}
	ws.known, ws.last = true, max(ws.last, int64(last))
	lo := ws.ackKey(0)
	it, err := db.NewIter(&pebble.IterOptions{LowerBound: lo, UpperBound: prefixEnd(lo[:len(lo)-8])})
	if err != nil {
		return t.internal(err)
	}
	defer it.Close()
	for it.First(); it.Valid(); it.Next() {
		k := it.Key()
		seq := int64(binary.BigEndian.Uint64(k[len(k)-8:]))
		c, err := decodeCommit(it.Value())
		if err != nil {
			return t.internal(err)
		}
		c.Table = t.tbl
		c.Duplicate = true
		ws.recent[seq] = donePending(c)
	}
	return t.internalOrNil(it.Error())
}

// sequenced runs write (which applies a batch with the given extra keys) as sequence seq of its
// writer: a duplicate returns the original's Pending (its Commit has Duplicate set) without
// calling write; a gap is codes.FailedPrecondition naming the writer, bucket (the first the
// batch touches, from firstBucket) and the expected and received sequence.
func (t *Table) sequenced(seq *Sequence, firstBucket func() string, write func(extra *writeExtra) (*Pending, error)) (*Pending, error) {
	if err := checkSequence(seq); err != nil {
		return nil, err
	}
	ws, err := t.writerFor(seq.Writer)
	if err != nil {
		return nil, err
	}
	ws.mu.Lock()
	defer ws.mu.Unlock()
	if ws.known && seq.Seq <= ws.last {
		orig := ws.recent[seq.Seq]
		if orig == nil {
			return nil, errorf(ErrFailedPrecondition,
				"table %s: writer %s: sequence %d was applied already and its acknowledgement is no longer kept (the last %d are; last applied %d)",
				t.tbl.QualifiedName(), truncate(seq.Writer), seq.Seq, AckWindow, ws.last)
		}
		return duplicateOf(orig), nil
	}
	if ws.known && seq.Seq != ws.last+1 {
		return nil, errorf(ErrFailedPrecondition,
			"table %s: writer %s, bucket %s: expected sequence %d, got %d (a gap: batches %d..%d were never applied)",
			t.tbl.QualifiedName(), truncate(seq.Writer), firstBucket(), ws.last+1, seq.Seq, ws.last+1, seq.Seq-1)
	}
	now := t.clock()
	extraKeys := func(batch *pebble.Batch, c *Commit) error {
		rec := binary.AppendUvarint(nil, uint64(seq.Seq))
		rec = binary.AppendVarint(rec, now)
		if err := batch.Set(ws.recordKey(), rec, nil); err != nil {
			return t.internal(err)
		}
		if err := batch.Set(ws.ackKey(seq.Seq), encodeCommit(c), nil); err != nil {
			return t.internal(err)
		}
		if old := seq.Seq - AckWindow; old >= 0 {
			if err := batch.Delete(ws.ackKey(old), nil); err != nil {
				return t.internal(err)
			}
		}
		last := binary.AppendUvarint(nil, uint64(seq.Seq))
		for _, bo := range c.Buckets {
			if err := batch.Set(ws.bucketKey(bucketPrefix(bo.BucketID)), last, nil); err != nil {
				return t.internal(err)
			}
		}
		return nil
	}
	p, err := write(&writeExtra{keys: extraKeys})
	if err != nil {
		return nil, err
	}
	ws.known, ws.last = true, seq.Seq
	ws.recent[seq.Seq] = p
	delete(ws.recent, seq.Seq-AckWindow)
	return p, nil
}

// duplicateOf returns a Pending that completes with orig's Commit marked Duplicate.
func duplicateOf(orig *Pending) *Pending {
	select {
	case <-orig.done:
		c, err := orig.Wait()
		c.Duplicate = true
		c.NewBuckets = nil
		return &Pending{c: c, err: err, done: closedChan}
	default:
	}
	d := &Pending{done: make(chan struct{})}
	go func() {
		c, err := orig.Wait()
		c.Duplicate = true
		c.NewBuckets = nil
		d.c, d.err = c, err
		close(d.done)
	}()
	return d
}

// ApplySequenced is Apply for sequence seq of a sequenced writer (SPEC section 10): the batch is
// applied once; the writer's last sequence, per writer and per touched bucket, and the write's
// commit are stored in the same Pebble batch as its state and changelog rows. A sequence the
// writer already applied applies nothing and returns a Pending whose Commit is the original's
// with Duplicate set (waiting for the original's fsync when it is still in flight); a sequence
// after a gap is codes.FailedPrecondition; a sequence older than the AckWindow kept commits is
// codes.FailedPrecondition too. An empty batch consumes its sequence. Other errors as Apply.
func (t *Table) ApplySequenced(ctx context.Context, b *row.Batch, seq Sequence) (*Pending, error) {
	if err := t.begin(); err != nil {
		return nil, err
	}
	if err := b.Validate(t.tbl); err != nil {
		t.end()
		return nil, err
	}
	p, err := t.sequenced(&seq, func() string { return t.firstBucketName(b) }, func(extra *writeExtra) (*Pending, error) {
		return t.apply(ctx, b, extra)
	})
	if err != nil {
		t.end()
		return nil, err
	}
	if p.batch == nil { // a duplicate
		t.end()
		return p, nil
	}
	go p.sync()
	return p, nil
}

// firstBucketName names the first bucket a batch touches, "-" for an empty batch.
func (t *Table) firstBucketName(b *row.Batch) string {
	if len(b.Rows) == 0 {
		return "-"
	}
	r := b.Rows[0]
	part := ""
	if len(t.tbl.PartitionKeys) > 0 {
		part = partname.Of(t.tbl, r)
	}
	return fmt.Sprintf("%q/%d", part, buckethash.Bucket(t.tbl, r))
}

// encodeCommit encodes the acknowledgement fields of a commit: uvarint rows, changelog rows, the
// four per-RowKind counts, varint commit ms, uvarint bucket count, then per bucket uvarint
// partition length, partition, varint bucket, uvarint start, end, varint last commit ms; one
// byte flags (1 = staged).
func encodeCommit(c *Commit) []byte {
	b := binary.AppendUvarint(nil, uint64(c.Rows))
	b = binary.AppendUvarint(b, uint64(c.ChangelogRows))
	for _, n := range c.ChangelogKinds {
		b = binary.AppendUvarint(b, uint64(n))
	}
	b = binary.AppendVarint(b, c.CommitMs)
	b = binary.AppendUvarint(b, uint64(len(c.Buckets)))
	for _, bo := range c.Buckets {
		b = binary.AppendUvarint(b, uint64(len(bo.Partition)))
		b = append(b, bo.Partition...)
		b = binary.AppendVarint(b, int64(bo.Bucket))
		b = binary.AppendUvarint(b, uint64(bo.StartOffset))
		b = binary.AppendUvarint(b, uint64(bo.EndOffset))
		b = binary.AppendVarint(b, bo.LastCommitMs)
	}
	var flags byte
	if c.Staged {
		flags |= 1
	}
	return append(b, flags)
}

var errMalformedCommit = errors.New("store: malformed stored commit")

func decodeCommit(b []byte) (Commit, error) {
	var c Commit
	r := reader{b: b}
	c.Rows = int64(r.uvarint())
	c.ChangelogRows = int64(r.uvarint())
	for k := range c.ChangelogKinds {
		c.ChangelogKinds[k] = int64(r.uvarint())
	}
	c.CommitMs = r.varint()
	n := r.uvarint()
	if r.err != nil || n > uint64(len(b)) {
		return c, errMalformedCommit
	}
	for range n {
		var bo BucketOffsets
		bo.Partition = string(r.bytes(int(r.uvarint())))
		bo.Bucket = int32(r.varint())
		bo.StartOffset = int64(r.uvarint())
		bo.EndOffset = int64(r.uvarint())
		bo.LastCommitMs = r.varint()
		c.Buckets = append(c.Buckets, bo)
	}
	flags := r.bytes(1)
	if r.err != nil {
		return c, errMalformedCommit
	}
	c.Staged = flags[0]&1 != 0
	return c, nil
}

// reader decodes varints and byte strings, remembering the first error.
type reader struct {
	b   []byte
	err error
}

func (r *reader) uvarint() uint64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.err = errMalformedCommit
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *reader) varint() int64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Varint(r.b)
	if n <= 0 {
		r.err = errMalformedCommit
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *reader) bytes(n int) []byte {
	if r.err != nil {
		return nil
	}
	if n < 0 || n > len(r.b) {
		r.err = errMalformedCommit
		return nil
	}
	v := r.b[:n]
	r.b = r.b[n:]
	return v
}
