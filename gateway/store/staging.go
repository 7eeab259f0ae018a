package store

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"sort"
	"sync"
	"sync/atomic"

	"github.com/cockroachdb/pebble/v2"
	"github.com/setats/setats/gateway/row"
	"github.com/setats/setats/gateway/rowcodec"
	"github.com/setats/setats/merge"
)

// Exactly-once staging (SPEC section 10)
//
// An exactly-once sink stages the rows of each checkpoint instead of merging them: Stage stores
// them durably, invisible to the state, the changelog, every read and every notification. When
// the checkpoint completes, CommitStaged merges them (lookup, merge engine, changelog, offsets)
// in one atomic Pebble batch that also records the committed checkpoint, so a second commit of
// the same checkpoint is a no-op; staged rows are kept in a Pebble DB of their own and deleted
// there once the merge is durable (staging_db.go). When a job restores, AbortStaged drops the
// rows of checkpoints after the restored one and raises the epoch, fencing off writers of the
// failed attempt. Staged rows nobody writes to for the transaction timeout expire
// (ExpireStaging).
//
// Stage holds only the staging's mu; CommitStaged holds its commitMu throughout but mu only to
// read and to update the in-memory state, so the staging of checkpoint N+1 proceeds while the
// rows of checkpoint N are merged. Stage refuses the checkpoints a running commit covers. The
// committed checkpoint has its own key, written only by commits and abort-staged: a Stage that
// rewrites the header (last write) while a commit is applied cannot roll it back. The staged
// batches of a checkpoint are also kept in memory (maxStagedMemBytes in all), so its commit
// merges them without reading them back from Pebble; after a restart, or past that bound, the
// commit reads them back.
//
// A staging transaction is named by (commit user, subtask): the commit user names the job and
// sink, the subtask is the sink subtask that stages. Keys, U = rowcodec.AppendEscaped(commit user),
// S = subtask (4 bytes big-endian); "h" and "r" in the staging DB, "k" and "c" in the table's DB:
//
//	"x" U "h" S              header: uvarint epoch, uvarint committed checkpoint, varint last
//	                         write (ms), uvarint transaction timeout (ms)
//	"x" U "r" S ckpt n       staged rows of checkpoint ckpt, the n-th staged batch (8 + 8
//	                         bytes big-endian): uvarint column count c, c bytes declared flags
//	                         (0/1), uvarint row count, then per row 1 byte RowKind, uvarint
//	                         length, row.EncodeValue of the row
//	"x" U "k" S              uvarint committed checkpoint, written by CommitStaged and
//	                         AbortStaged only; when present it overrides the header's
//	"x" U "c" P B            uvarint checkpoint last committed by the commit user into bucket P B
//
// Every staged batch of one (commit user, subtask) must declare the same columns.

// maxStagedMemBytes bounds the encoded bytes of the staged batches kept in memory for their
// commit over all open tables of the process (beyond it a checkpoint's batches are read back
// from Pebble): 64 MiB. The same bytes count against the gateway's staging budget.
var maxStagedMemBytes int64 = 64 << 20 // a variable for tests

// stagedMemAll is the encoded bytes kept in memory over all open tables (Table.stagedMem each).
var stagedMemAll atomic.Int64

// DefaultTransactionTimeoutMs is the transaction timeout when none is given: 1 h.
const DefaultTransactionTimeoutMs = 60 * 60 * 1000

// stagingHeaderRetentionMs is how long the header of a staging without staged rows is kept
// after its last write, so that a late second commit is still recognised as a no-op: 7 days.
const stagingHeaderRetentionMs = 7 * 24 * 60 * 60 * 1000

// StageTarget names the staging transaction a batch goes to (proto StagingTarget).
type StageTarget struct {
	CommitUser string
	Subtask    int32
	Checkpoint int64
	Epoch      int64
}

type stageKey struct {
	user    string
	subtask int32
}

type stageHeader struct {
	epoch, committed, lastWriteMs, timeoutMs int64
}

func (h stageHeader) encode() []byte {
	b := binary.AppendUvarint(nil, uint64(h.epoch))
	b = binary.AppendUvarint(b, uint64(h.committed))
	b = binary.AppendVarint(b, h.lastWriteMs)
	return binary.AppendUvarint(b, uint64(h.timeoutMs))
}

func decodeStageHeader(b []byte) (stageHeader, error) {
	r := reader{b: b}
	h := stageHeader{epoch: int64(r.uvarint()), committed: int64(r.uvarint()), lastWriteMs: r.varint(), timeoutMs: int64(r.uvarint())}
	if r.err != nil {
		return h, errors.New("store: malformed staging header")
	}
	return h, nil
}

// ckptStat counts the staged rows of one checkpoint.
type ckptStat struct {
	ckpt, bytes, rows int64
	// memOK: every staged batch of the checkpoint is in mem (memBytes encoded bytes, in staging
	// order); false after a restart or past maxStagedMemBytes: the commit reads them back.
	memOK    bool
	mem      []*row.Batch
	memBytes int64
}

// stageState is the in-memory state of one (commit user, subtask).
type stageState struct {
	// commitMu serialises CommitStaged, AbortStaged and expiry of the staging; taken before mu.
	commitMu sync.Mutex
	mu       sync.Mutex // guards the fields below; Stage holds it throughout
	key      stageKey
	userPfx  []byte // "x" U
	exists   bool   // the header is on disk
	h        stageHeader
	nextN    int64
	declared []bool     // declared columns of the staged rows (nil when none)
	ckpts    []ckptStat // sorted by checkpoint
	// committing is the checkpoint a running CommitStaged merges (0: none): Stage refuses it
	// and the ones before it.
	committing int64
}

// committedKey returns "x" U "k" S.
func (ss *stageState) committedKey() []byte {
	return binary.BigEndian.AppendUint32(append(bytes.Clone(ss.userPfx), 'k'), uint32(ss.key.subtask))
}

// keepStaged keeps b (n encoded bytes) in memory for the commit of c, unless the table's bound
// is reached (then none of c's batches are kept).
func (t *Table) keepStaged(c *ckptStat, b *row.Batch, n int64) {
	if !c.memOK {
		return
	}
	if stagedMemAll.Add(n) > maxStagedMemBytes {
		stagedMemAll.Add(-n)
		t.dropStagedMem(c)
		return
	}
	t.stagedMem.Add(n)
	c.mem = append(c.mem, b)
	c.memBytes += n
}

// dropStagedMem forgets the in-memory batches of cs (their commit, if any, reads them back).
func (t *Table) dropStagedMem(cs ...*ckptStat) {
	for _, c := range cs {
		t.stagedMem.Add(-c.memBytes)
		stagedMemAll.Add(-c.memBytes)
		c.mem, c.memBytes, c.memOK = nil, 0, false
	}
}

// forgetStagedMem drops the in-memory batches of checkpoints that leave the staging.
func (t *Table) forgetStagedMem(cs []ckptStat) {
	for i := range cs {
		t.dropStagedMem(&cs[i])
	}
}

func (ss *stageState) headerKey() []byte {
	return binary.BigEndian.AppendUint32(append(bytes.Clone(ss.userPfx), 'h'), uint32(ss.key.subtask))
}

// rowsKey returns "x" U "r" S ckpt n.
func (ss *stageState) rowsKey(ckpt, n int64) []byte {
	k := binary.BigEndian.AppendUint32(append(bytes.Clone(ss.userPfx), 'r'), uint32(ss.key.subtask))
	k = binary.BigEndian.AppendUint64(k, uint64(ckpt))
	return binary.BigEndian.AppendUint64(k, uint64(n))
}

// rowsEnd returns the smallest key after every staged-rows key of the subtask.
func (ss *stageState) rowsEnd() []byte {
	k := binary.BigEndian.AppendUint32(append(bytes.Clone(ss.userPfx), 'r'), uint32(ss.key.subtask))
	return prefixEnd(k)
}

func (ss *stageState) bucketKey(id BucketID) []byte {
	return append(append(bytes.Clone(ss.userPfx), 'c'), bucketPrefix(id)...)
}

func (ss *stageState) totals() (bytes, rows int64) {
	for _, c := range ss.ckpts {
		bytes += c.bytes
		rows += c.rows
	}
	return bytes, rows
}

// split returns the stats of checkpoints <= ckpt and those after.
func (ss *stageState) split(ckpt int64) (upTo, after []ckptStat) {
	i := sort.Search(len(ss.ckpts), func(i int) bool { return ss.ckpts[i].ckpt > ckpt })
	return ss.ckpts[:i], ss.ckpts[i:]
}

// forgetCheckpoints removes from ss the checkpoints a commit or an abort finished: those <= ckpt
// when upTo (committed), else those after ckpt (dropped by a restore). It frees their in-memory
// batches, forgets the declared columns once nothing is staged, and returns their encoded bytes
// and rows (the caller reports them with stagingChanged). Called with ss.mu held.
func (t *Table) forgetCheckpoints(ss *stageState, ckpt int64, upTo bool) (bytes, rows int64) {
	before, after := ss.split(ckpt)
	gone, keep := before, after
	if !upTo {
		gone, keep = after, before
	}
	bytes, rows = sumStats(gone)
	t.forgetStagedMem(gone)
	ss.ckpts = slices.Clone(keep)
	if len(ss.ckpts) == 0 {
		ss.declared = nil
	}
	return bytes, rows
}

func sumStats(cs []ckptStat) (bytes, rows int64) {
	for _, c := range cs {
		bytes += c.bytes
		rows += c.rows
	}
	return bytes, rows
}

// stageFor returns the state of (user, subtask), creating an empty one.
func (t *Table) stageFor(user string, subtask int32) *stageState {
	k := stageKey{user, subtask}
	t.mu.Lock()
	defer t.mu.Unlock()
	ss := t.staging[k]
	if ss == nil {
		ss = &stageState{key: k, userPfx: rowcodec.AppendEscaped([]byte{tagStaging}, user)}
		t.staging[k] = ss
	}
	return ss
}

func checkStaging(user string, subtask int32) error {
	if user == "" || len(user) > MaxIDBytes {
		return errorf(ErrInvalid, "commit user must have 1 to %d bytes, got %d", MaxIDBytes, len(user))
	}
	if subtask < 0 {
		return errorf(ErrInvalid, "commit user %s: subtask %d is negative", truncate(user), subtask)
	}
	return nil
}

// stagingChanged updates the staged totals and tells Options.OnStaging.
func (t *Table) stagingChanged(dBytes, dRows int64) {
	if dBytes == 0 && dRows == 0 {
		return
	}
	t.stagedBytes.Add(dBytes)
	t.stagedRows.Add(dRows)
	if t.opts.OnStaging != nil {
		t.opts.OnStaging(dBytes, dRows)
	}
}

// StagingStats returns the bytes (encoded) and rows staged in the table and not yet committed,
// dropped or expired.
func (t *Table) StagingStats() (bytes, rows int64) {
	return t.stagedBytes.Load(), t.stagedRows.Load()
}

// AbortResult answers AbortStaged: the new epoch and what was dropped.
type AbortResult struct {
	Epoch        int64
	DroppedRows  int64
	DroppedBytes int64
}

// AbortStaged starts or restores the staging of (user, subtask) (SPEC section 10): it drops the
// staged rows of checkpoints after restoredCheckpoint (0: all of them), lowers the committed
// checkpoint to restoredCheckpoint when it is higher (a restore from an older checkpoint), raises
// the epoch (Stage refuses older ones, fencing off writers of a failed attempt) and records
// timeoutMs (<= 0: DefaultTransactionTimeoutMs) as the transaction timeout. Durable (fsync)
// before it returns. Errors: codes.InvalidArgument (bad names, negative checkpoint),
// codes.Unavailable, codes.Internal.
func (t *Table) AbortStaged(user string, subtask int32, restoredCheckpoint, timeoutMs int64) (AbortResult, error) {
	if err := checkStaging(user, subtask); err != nil {
		return AbortResult{}, err
	}
	if restoredCheckpoint < 0 {
		return AbortResult{}, errorf(ErrInvalid, "commit user %s: restored checkpoint %d is negative", truncate(user), restoredCheckpoint)
	}
	if timeoutMs <= 0 {
		timeoutMs = DefaultTransactionTimeoutMs
	}
	if err := t.begin(); err != nil {
		return AbortResult{}, err
	}
	defer t.end()
	sdb, err := t.stagingDB()
	if err != nil {
		return AbortResult{}, err
	}
	ss := t.stageFor(user, subtask)
	ss.commitMu.Lock()
	defer ss.commitMu.Unlock()
	ss.mu.Lock()
	defer ss.mu.Unlock()
	h := ss.h
	h.epoch++
	h.committed = min(h.committed, restoredCheckpoint)
	h.timeoutMs = timeoutMs
	h.lastWriteMs = t.clock()
	// The staging DB first: a crash before the committed checkpoint is lowered leaves it higher,
	// and the caller, which saw no answer, calls abort-staged again.
	batch := sdb.NewBatch()
	defer batch.Close()
	if err := batch.DeleteRange(ss.rowsKey(restoredCheckpoint+1, 0), ss.rowsEnd(), nil); err != nil {
		return AbortResult{}, t.internal(err)
	}
	if err := batch.Set(ss.headerKey(), h.encode(), nil); err != nil {
		return AbortResult{}, t.internal(err)
	}
	if err := batch.Commit(pebble.Sync); err != nil {
		return AbortResult{}, t.internal(err)
	}
	if err := t.db.Set(ss.committedKey(), binary.AppendUvarint(nil, uint64(h.committed)), pebble.Sync); err != nil {
		return AbortResult{}, t.internal(err)
	}
	db, dr := t.forgetCheckpoints(ss, restoredCheckpoint, false)
	ss.h, ss.exists = h, true
	t.stagingChanged(-db, -dr)
	if dr > 0 || h.epoch > 1 {
		t.log.Info("staging aborted", "commit_user", user, "subtask", subtask, "restored_checkpoint", restoredCheckpoint,
			"epoch", h.epoch, "dropped_rows", dr, "dropped_bytes", db)
	}
	return AbortResult{Epoch: h.epoch, DroppedRows: dr, DroppedBytes: db}, nil
}

// Stage stores a batch durably as rows of target's checkpoint (SPEC section 10), invisible to
// state, changelog and reads until CommitStaged; with seq it is sequence seq of a sequenced
// writer, staged once (writerseq.go). The returned Pending completes once the batch is durable
// (its Commit has Staged set and Rows, CommitMs = staging time; no changelog, no buckets).
// Rows are validated as by Apply, and a delete the merge engine would refuse (SPEC case M7) is
// refused now rather than at commit. Errors: codes.InvalidArgument (bad batch, names, columns
// declared differently from the rows staged before), codes.FailedPrecondition (no abort-staged
// yet, an epoch other than the current one: a fenced-off writer, a checkpoint already
// committed), codes.Unavailable, codes.Internal.
func (t *Table) Stage(ctx context.Context, target StageTarget, b *row.Batch, seq *Sequence) (*Pending, error) {
	if err := checkStaging(target.CommitUser, target.Subtask); err != nil {
		return nil, err
	}
	if target.Checkpoint <= 0 {
		return nil, errorf(ErrInvalid, "commit user %s subtask %d: checkpoint id %d must be > 0", truncate(target.CommitUser), target.Subtask, target.Checkpoint)
	}
	if err := t.begin(); err != nil {
		return nil, err
	}
	if err := b.Validate(t.tbl); err != nil {
		t.end()
		return nil, err
	}
	if err := t.checkDeletes(b); err != nil {
		t.end()
		return nil, err
	}
	ss := t.stageFor(target.CommitUser, target.Subtask)
	run := func(extra *writeExtra) (*Pending, error) { return t.stage(ctx, ss, target, b, extra) }
	var p *Pending
	var err error
	if seq != nil {
		p, err = t.sequenced(seq, func() string { return "-" }, run)
	} else {
		p, err = run(nil)
	}
	if err != nil {
		t.end()
		return nil, err
	}
	if p.batch == nil {
		t.end()
		return p, nil
	}
	go p.sync()
	return p, nil
}

// checkDeletes refuses the rows the merge engine refuses whatever the stored row (a -D on a
// PARTIAL_UPDATE table without a delete option), so that a commit never fails on them.
func (t *Table) checkDeletes(b *row.Batch) error {
	for i, k := range b.Kinds {
		if k != merge.Delete {
			continue
		}
		if _, _, err := t.engine.Merge(nil, b.Rows[i], k, b.Rows[i], b.Declared); err != nil {
			return t.mergeError(err, int32(i))
		}
	}
	return nil
}

func (t *Table) stage(ctx context.Context, ss *stageState, target StageTarget, b *row.Batch, extra *writeExtra) (*Pending, error) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	name := func() string {
		return fmt.Sprintf("table %s: commit user %s subtask %d", t.tbl.QualifiedName(), truncate(target.CommitUser), target.Subtask)
	}
	if !ss.exists {
		return nil, errorf(ErrFailedPrecondition, "%s: no staging epoch: call abort-staged first", name())
	}
	if target.Epoch != ss.h.epoch {
		return nil, errorf(ErrFailedPrecondition, "%s: epoch %d is not the current epoch %d (a writer of an earlier attempt is fenced off)", name(), target.Epoch, ss.h.epoch)
	}
	if target.Checkpoint <= ss.h.committed {
		return nil, errorf(ErrFailedPrecondition, "%s: checkpoint %d is committed already (committed up to %d)", name(), target.Checkpoint, ss.h.committed)
	}
	if target.Checkpoint <= ss.committing {
		return nil, errorf(ErrFailedPrecondition, "%s: checkpoint %d is being committed (a commit of checkpoint %d runs)", name(), target.Checkpoint, ss.committing)
	}
	if len(b.Rows) > 0 && ss.declared != nil && !slices.Equal(ss.declared, b.Declared) {
		return nil, errorf(ErrInvalid, "%s: the batch declares other columns than the rows staged before it", name())
	}
	if err := ctx.Err(); err != nil {
		return nil, contextError(err)
	}
	now := t.clock()
	h := ss.h
	h.lastWriteMs = now
	sdb := t.sdb.Load() // open: ss.exists
	batch := sdb.NewBatch()
	var value []byte
	if len(b.Rows) > 0 {
		value = encodeStagedRows(t, b)
		if err := batch.Set(ss.rowsKey(target.Checkpoint, ss.nextN), value, nil); err != nil {
			_ = batch.Close()
			return nil, t.internal(err)
		}
	}
	if err := batch.Set(ss.headerKey(), h.encode(), nil); err != nil {
		_ = batch.Close()
		return nil, t.internal(err)
	}
	p := &Pending{t: t, done: make(chan struct{}), c: Commit{Table: t.tbl, Rows: int64(len(b.Rows)), CommitMs: now, Staged: true}}
	if extra != nil && extra.keys != nil {
		if err := extra.keys(batch, &p.c); err != nil {
			_ = batch.Close()
			return nil, err
		}
	}
	if err := sdb.ApplyNoSyncWait(batch, pebble.Sync); err != nil {
		_ = batch.Close()
		return nil, t.internal(err)
	}
	p.seq, p.batch = t.applySeq.Add(1), batch
	ss.h = h
	if len(b.Rows) > 0 {
		ss.nextN++
		if ss.declared == nil {
			ss.declared = slices.Clone(b.Declared)
		}
		i := sort.Search(len(ss.ckpts), func(i int) bool { return ss.ckpts[i].ckpt >= target.Checkpoint })
		if i == len(ss.ckpts) || ss.ckpts[i].ckpt != target.Checkpoint {
			ss.ckpts = slices.Insert(ss.ckpts, i, ckptStat{ckpt: target.Checkpoint, memOK: true})
		}
		ss.ckpts[i].bytes += int64(len(value))
		ss.ckpts[i].rows += int64(len(b.Rows))
		t.keepStaged(&ss.ckpts[i], b, int64(len(value)))
		t.stagingChanged(int64(len(value)), int64(len(b.Rows)))
	}
	return p, nil
}

// encodeStagedRows encodes a batch as a staged-rows value (see the layout above).
func encodeStagedRows(t *Table, b *row.Batch) []byte {
	v := binary.AppendUvarint(make([]byte, 0, 64+len(b.Rows)*32), uint64(len(b.Declared)))
	for _, d := range b.Declared {
		if d {
			v = append(v, 1)
		} else {
			v = append(v, 0)
		}
	}
	v = binary.AppendUvarint(v, uint64(len(b.Rows)))
	var buf []byte
	for i, r := range b.Rows {
		buf = rowcodec.AppendValue(buf[:0], t.tbl, r)
		v = append(v, byte(b.Kinds[i]))
		v = binary.AppendUvarint(v, uint64(len(buf)))
		v = append(v, buf...)
	}
	return v
}

var errMalformedStaged = errors.New("store: malformed staged rows")

// stagedHeader reads the declared flags and row count at the start of a staged-rows value.
func stagedHeader(v []byte) (declared []bool, rows int64, rest []byte, err error) {
	r := reader{b: v}
	nc := r.uvarint()
	if r.err != nil || nc > uint64(len(v)) {
		return nil, 0, nil, errMalformedStaged
	}
	flags := r.bytes(int(nc))
	n := r.uvarint()
	if r.err != nil {
		return nil, 0, nil, errMalformedStaged
	}
	declared = make([]bool, nc)
	for i, f := range flags {
		declared[i] = f != 0
	}
	return declared, int64(n), r.b, nil
}

// decodeStagedRows appends the rows of a staged-rows value to b.
func decodeStagedRows(t *Table, v []byte, b *row.Batch) error {
	_, n, rest, err := stagedHeader(v)
	if err != nil {
		return err
	}
	r := reader{b: rest}
	for range n {
		kind := r.bytes(1)
		l := r.uvarint()
		val := r.bytes(int(l))
		if r.err != nil {
			return errMalformedStaged
		}
		rw, err := rowcodec.DecodeValue(t.tbl, val)
		if err != nil {
			return err
		}
		b.Kinds = append(b.Kinds, merge.RowKind(kind[0]))
		b.Rows = append(b.Rows, rw)
	}
	return nil
}

// CommitResult answers CommitStaged.
type CommitResult struct {
	// AlreadyCommitted: the checkpoint was committed before; nothing was applied now.
	AlreadyCommitted bool
	// Pending is the merge of the staged rows (nil when AlreadyCommitted): Wait for it to be
	// durable before reporting the commit.
	Pending *Pending
}

// CommitStaged merges the staged rows of (user, subtask) of every checkpoint <= checkpoint, in
// the order they were staged (SPEC section 10): lookups, merge engine, changelog rows and offsets
// as one write of those rows (Apply), in one atomic Pebble batch that also records checkpoint as
// committed for (user, subtask) and for (user, bucket) of every touched bucket; once it is
// durable, the staged rows are deleted from the staging DB (staging_db.go).
// A checkpoint <= the committed one is a no-op (AlreadyCommitted). Errors:
// codes.FailedPrecondition (nothing staged for a checkpoint never committed: the rows expired
// after the transaction timeout or a restore dropped them; no staging of (user, subtask) at
// all), codes.InvalidArgument (names), codes.Unavailable, codes.Internal.
func (t *Table) CommitStaged(ctx context.Context, user string, subtask int32, checkpoint int64) (CommitResult, error) {
	if err := checkStaging(user, subtask); err != nil {
		return CommitResult{}, err
	}
	if err := t.begin(); err != nil {
		return CommitResult{}, err
	}
	t.mu.Lock()
	ss := t.staging[stageKey{user, subtask}]
	t.mu.Unlock()
	name := fmt.Sprintf("table %s: commit user %s subtask %d", t.tbl.QualifiedName(), truncate(user), subtask)
	if ss == nil {
		t.end()
		return CommitResult{}, errorf(ErrFailedPrecondition, "%s: checkpoint %d: nothing staged (no staging of this commit user and subtask: it expired, or abort-staged was never called)", name, checkpoint)
	}
	ss.commitMu.Lock()
	defer ss.commitMu.Unlock()
	b, fromMem, err := t.commitStart(ss, name, checkpoint)
	if err != nil || b == nil {
		t.end()
		return CommitResult{AlreadyCommitted: err == nil}, err
	}
	p, err := t.commitApply(ctx, ss, b, fromMem, checkpoint)
	if err != nil {
		ss.mu.Lock()
		ss.committing = 0
		upTo, _ := ss.split(checkpoint)
		t.forgetStagedMem(upTo) // a retry reads them back
		ss.mu.Unlock()
		t.end()
		return CommitResult{}, err
	}
	if t.commitHook != nil {
		t.commitHook("applied")
	}
	ss.mu.Lock()
	ss.h.committed, ss.committing = checkpoint, 0
	db, dr := t.forgetCheckpoints(ss, checkpoint, true)
	ss.mu.Unlock()
	t.stagingChanged(-db, -dr)
	go p.sync()
	return CommitResult{Pending: p}, nil
}

// commitStart checks a commit of checkpoint under ss.mu and marks it running (ss.committing):
// it returns the in-memory staged batches of checkpoints <= checkpoint, concatenated (fromMem),
// or an empty batch with their declared columns to read back; nil and no error when the
// checkpoint is committed already.
func (t *Table) commitStart(ss *stageState, name string, checkpoint int64) (b *row.Batch, fromMem bool, err error) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if !ss.exists {
		return nil, false, errorf(ErrFailedPrecondition, "%s: checkpoint %d: nothing staged (the staging expired)", name, checkpoint)
	}
	if checkpoint <= ss.h.committed {
		return nil, false, nil
	}
	upTo, _ := ss.split(checkpoint)
	if len(upTo) == 0 {
		return nil, false, errorf(ErrFailedPrecondition,
			"%s: checkpoint %d: no staged rows and not committed (committed up to %d): they expired after the transaction timeout or a restore dropped them",
			name, checkpoint, ss.h.committed)
	}
	ss.committing = checkpoint
	b = &row.Batch{Declared: ss.declared}
	_, rows := sumStats(upTo)
	fromMem = true
	for _, c := range upTo {
		fromMem = fromMem && c.memOK
	}
	if fromMem {
		b.Kinds, b.Rows = make([]merge.RowKind, 0, rows), make([]merge.Row, 0, rows)
		for _, c := range upTo {
			for _, m := range c.mem {
				b.Kinds = append(b.Kinds, m.Kinds...)
				b.Rows = append(b.Rows, m.Rows...)
			}
		}
	}
	return b, fromMem, nil
}

// commitApply reads the staged rows of checkpoints <= checkpoint back into b unless fromMem,
// and merges them in one atomic batch that records checkpoint as committed (the staged rows are
// deleted once it is durable: Pending.afterSync), without ss.mu (Stage refuses those checkpoints meanwhile: ss.committing).
func (t *Table) commitApply(ctx context.Context, ss *stageState, b *row.Batch, fromMem bool, checkpoint int64) (*Pending, error) {
	lo, hi := ss.rowsKey(0, 0), ss.rowsKey(checkpoint+1, 0)
	sdb := t.sdb.Load() // open: ss.exists
	if !fromMem {
		it, err := sdb.NewIter(&pebble.IterOptions{LowerBound: lo, UpperBound: hi})
		if err != nil {
			return nil, t.internal(err)
		}
		for it.First(); it.Valid(); it.Next() {
			v, err := it.ValueAndErr()
			if err == nil {
				err = decodeStagedRows(t, v, b)
			}
			if err != nil {
				_ = it.Close()
				return nil, t.internal(err)
			}
		}
		if err := it.Close(); err != nil {
			return nil, t.internal(err)
		}
	}
	mark := binary.AppendUvarint(nil, uint64(checkpoint))
	extra := &writeExtra{fold: true, keys: func(batch *pebble.Batch, c *Commit) error {
		if err := batch.Set(ss.committedKey(), mark, nil); err != nil {
			return t.internal(err)
		}
		for _, bo := range c.Buckets {
			if err := batch.Set(ss.bucketKey(bo.BucketID), mark, nil); err != nil {
				return t.internal(err)
			}
		}
		return nil
	}}
	if t.commitHook != nil {
		t.commitHook("apply")
	}
	p, err := t.apply(ctx, b, extra)
	if err != nil {
		return nil, err
	}
	// Once the merge is durable, the staged rows are garbage (loadStaging ignores them after a
	// crash): deleted without fsync; the next sync of the staging DB covers it.
	p.afterSync = func() {
		if t.commitHook != nil {
			t.commitHook("delete-staged")
		}
		if err := sdb.DeleteRange(lo, hi, pebble.NoSync); err != nil {
			t.log.Warn("deleting committed staged rows failed; the next open deletes them", "err", err)
		}
	}
	return p, nil
}

// ExpireResult counts what ExpireStaging removed.
type ExpireResult struct {
	Rows, Bytes int64 // staged rows and bytes expired
	Writers     int64 // sequenced writers forgotten
}

// ExpireStaging drops, as of nowMs, the staged rows of every (commit user, subtask) not written
// to for its transaction timeout, the headers of stagings without rows unused for 7 days, and
// the records of sequenced writers unused for Options.WriterRetentionMs (SPEC section 10).
// Errors: codes.Unavailable, codes.Internal.
func (t *Table) ExpireStaging(nowMs int64) (ExpireResult, error) {
	var res ExpireResult
	if err := t.begin(); err != nil {
		return res, err
	}
	defer t.end()
	t.mu.Lock()
	all := make([]*stageState, 0, len(t.staging))
	for _, ss := range t.staging {
		all = append(all, ss)
	}
	t.mu.Unlock()
	for _, ss := range all {
		ss.commitMu.Lock()
		ss.mu.Lock()
		err := t.expireStage(ss, nowMs, &res)
		ss.mu.Unlock()
		ss.commitMu.Unlock()
		if err != nil {
			return res, err
		}
	}
	n, err := t.expireWriters(nowMs)
	res.Writers = n
	return res, err
}

func (t *Table) expireStage(ss *stageState, nowMs int64, res *ExpireResult) error {
	if !ss.exists {
		return nil
	}
	idle := nowMs - ss.h.lastWriteMs
	switch {
	case len(ss.ckpts) > 0 && idle >= ss.h.timeoutMs:
		if err := t.sdb.Load().DeleteRange(ss.rowsKey(0, 0), ss.rowsEnd(), pebble.Sync); err != nil {
			return t.internal(err)
		}
		b, r := ss.totals()
		t.forgetStagedMem(ss.ckpts)
		ss.ckpts, ss.declared = nil, nil
		res.Rows += r
		res.Bytes += b
		t.stagingChanged(-b, -r)
		t.log.Warn("staged rows expired after the transaction timeout", "commit_user", ss.key.user, "subtask", ss.key.subtask,
			"rows", r, "bytes", b, "timeout_ms", ss.h.timeoutMs)
	case len(ss.ckpts) == 0 && idle >= max(ss.h.timeoutMs, stagingHeaderRetentionMs):
		// The header first: after a crash in between, the committed checkpoint alone loads as a
		// staging that does not exist (as after the expiry).
		err := t.sdb.Load().Delete(ss.headerKey(), pebble.Sync)
		if err == nil {
			err = t.db.Delete(ss.committedKey(), pebble.Sync)
		}
		if err != nil {
			return t.internal(err)
		}
		ss.exists = false
		ss.h = stageHeader{epoch: ss.h.epoch} // a later abort-staged still raises the epoch
		t.mu.Lock()
		delete(t.staging, ss.key)
		t.mu.Unlock()
	}
	return nil
}

// expireWriters forgets the sequenced writers unused for the writer retention.
func (t *Table) expireWriters(nowMs int64) (int64, error) {
	ret := t.opts.WriterRetentionMs
	if ret <= 0 {
		ret = DefaultWriterRetentionMs
	}
	lastWrites, err := t.writerLastWrites()
	if err != nil {
		return 0, err
	}
	var expired []string
	for id, last := range lastWrites {
		if nowMs-last >= ret {
			expired = append(expired, id)
		}
	}
	for _, id := range expired {
		ws, err := t.writerFor(id)
		if err != nil {
			return 0, err
		}
		ws.mu.Lock()
		for _, db := range t.writerDBs() {
			if err == nil {
				err = db.DeleteRange(ws.prefix, prefixEnd(ws.prefix), pebble.Sync)
			}
		}
		if err == nil {
			t.mu.Lock()
			delete(t.writers, id)
			t.mu.Unlock()
			ws.known, ws.recent = false, map[int64]*Pending{}
		}
		ws.mu.Unlock()
		if err != nil {
			return 0, t.internal(err)
		}
	}
	return int64(len(expired)), nil
}

// writerLastWrites returns the last write (ms) of every sequenced writer with a record, the later
// of its records in the table's DB and the staging DB.
func (t *Table) writerLastWrites() (map[string]int64, error) {
	out := map[string]int64{}
	for _, db := range t.writerDBs() {
		it, err := db.NewIter(&pebble.IterOptions{LowerBound: []byte{tagWriter}, UpperBound: []byte{tagWriter + 1}})
		if err != nil {
			return nil, t.internal(err)
		}
		for it.First(); it.Valid(); it.Next() {
			id, rest, err := parseEscaped(it.Key()[1:])
			if err != nil || len(rest) != 1 || rest[0] != 'w' {
				continue
			}
			r := reader{b: it.Value()}
			r.uvarint()
			last := r.varint()
			if prev, ok := out[id]; r.err == nil && (!ok || last > prev) {
				out[id] = last
			}
		}
		if err := it.Close(); err != nil {
			return nil, t.internal(err)
		}
	}
	return out, nil
}

// parseEscaped reads a rowcodec.AppendEscaped string from the start of k.
func parseEscaped(k []byte) (string, []byte, error) {
	var out []byte
	for {
		i := bytes.IndexByte(k, 0)
		if i < 0 || i+1 >= len(k) {
			return "", nil, errors.New("store: malformed key")
		}
		out = append(out, k[:i]...)
		esc := k[i+1]
		k = k[i+2:]
		if esc == 0x01 {
			return string(out), k, nil
		}
		if esc != 0xFF {
			return "", nil, errors.New("store: malformed key")
		}
		out = append(out, 0)
	}
}

// loadStaging rebuilds the in-memory staging state (Open): the committed checkpoints from the
// table's DB, headers and staged rows from the staging DB. Staged rows of checkpoints <= the
// committed one are what a crash left between a commit's merge and its delete of them
// (staging_db.go): ignored, and deleted.
func (t *Table) loadStaging() error {
	committed := map[stageKey]int64{}
	var legacy [][2][]byte // headers and staged rows an older gateway kept in the table's DB
	err := t.scanStaging(t.db, func(k stageKey, typ byte, key, rest, v []byte) error {
		if typ == 'h' || typ == 'r' {
			legacy = append(legacy, [2][]byte{bytes.Clone(key), bytes.Clone(v)})
			return nil
		}
		if typ != 'k' {
			return nil // 'c': read by CommittedCheckpoint
		}
		c, n := binary.Uvarint(v)
		if n <= 0 || len(rest) != 0 {
			return t.internal(errors.New("malformed committed checkpoint of a staging"))
		}
		committed[k] = int64(c)
		return nil
	})
	if err != nil {
		return err
	}
	if err := t.migrateStaging(legacy); err != nil {
		return err
	}
	sdb := t.sdb.Load()
	if sdb == nil {
		for k, c := range committed {
			t.loadedStage(k).h.committed = c
		}
		return nil
	}
	var totalBytes, totalRows int64
	garbage := map[stageKey]bool{}
	err = t.scanStaging(sdb, func(k stageKey, typ byte, _, rest, v []byte) error {
		ss := t.loadedStage(k)
		switch typ {
		case 'h':
			h, err := decodeStageHeader(v)
			if err != nil {
				return t.internal(err)
			}
			ss.h, ss.exists = h, true
		case 'r':
			if len(rest) != 16 {
				return t.internal(errors.New("malformed staged rows key"))
			}
			ckpt := int64(binary.BigEndian.Uint64(rest))
			n := int64(binary.BigEndian.Uint64(rest[8:]))
			ss.nextN = max(ss.nextN, n+1)
			if c, ok := committed[k]; ok && ckpt <= c {
				garbage[k] = true
				return nil
			}
			declared, rows, _, err := stagedHeader(v)
			if err != nil {
				return t.internal(err)
			}
			if ss.declared == nil {
				ss.declared = declared
			}
			if l := len(ss.ckpts); l == 0 || ss.ckpts[l-1].ckpt != ckpt {
				ss.ckpts = append(ss.ckpts, ckptStat{ckpt: ckpt})
			}
			c := &ss.ckpts[len(ss.ckpts)-1]
			c.bytes += int64(len(v))
			c.rows += rows
			totalBytes += int64(len(v))
			totalRows += rows
		}
		return nil
	})
	if err != nil {
		return err
	}
	for k, c := range committed {
		t.loadedStage(k).h.committed = c // the header's copy may be older (see committedKey)
	}
	for k := range garbage {
		ss := t.staging[k]
		if err := sdb.DeleteRange(ss.rowsKey(0, 0), ss.rowsKey(ss.h.committed+1, 0), pebble.NoSync); err != nil {
			return t.internal(err)
		}
	}
	t.stagedBytes.Store(totalBytes)
	t.stagedRows.Store(totalRows)
	return nil
}

// migrateStaging moves the staging headers and staged rows an older gateway kept in the table's
// DB into the staging DB (opening it): written there with fsync first, then deleted from the
// table's DB, so a crash in between only repeats the move at the next open.
func (t *Table) migrateStaging(kvs [][2][]byte) error {
	if len(kvs) == 0 {
		return nil
	}
	sdb := t.sdb.Load()
	if sdb == nil {
		var err error
		if sdb, err = t.openStagingDB(); err != nil {
			return err
		}
	}
	add, del := sdb.NewBatch(), t.db.NewBatch()
	defer add.Close()
	defer del.Close()
	for _, kv := range kvs {
		if err := add.Set(kv[0], kv[1], nil); err != nil {
			return t.internal(err)
		}
		if err := del.Delete(kv[0], nil); err != nil {
			return t.internal(err)
		}
	}
	if err := add.Commit(pebble.Sync); err != nil {
		return t.internal(err)
	}
	if err := del.Commit(pebble.Sync); err != nil {
		return t.internal(err)
	}
	t.log.Info("staged rows moved into the staging DB", "keys", len(kvs))
	return nil
}

// loadedStage returns the state of k while loading, creating an empty one.
func (t *Table) loadedStage(k stageKey) *stageState {
	ss := t.staging[k]
	if ss == nil {
		ss = &stageState{key: k, userPfx: rowcodec.AppendEscaped([]byte{tagStaging}, k.user)}
		t.staging[k] = ss
	}
	return ss
}

// scanStaging calls fn for every "x" key of db but the per-bucket ones ("c"), with the key's
// commit user and subtask, its type byte, the whole key, the rest of the key after the subtask,
// and the value (valid during the call only).
func (t *Table) scanStaging(db *pebble.DB, fn func(k stageKey, typ byte, key, rest, v []byte) error) error {
	it, err := db.NewIter(&pebble.IterOptions{LowerBound: []byte{tagStaging}, UpperBound: []byte{tagStaging + 1}})
	if err != nil {
		return t.internal(err)
	}
	defer it.Close()
	for it.First(); it.Valid(); it.Next() {
		user, rest, err := parseEscaped(it.Key()[1:])
		if err != nil || len(rest) == 0 {
			return t.internal(errors.New("malformed staging key"))
		}
		typ, rest := rest[0], rest[1:]
		if typ == 'c' {
			continue
		}
		if len(rest) < 4 {
			return t.internal(errors.New("malformed staging key"))
		}
		if err := fn(stageKey{user, int32(binary.BigEndian.Uint32(rest))}, typ, it.Key(), rest[4:], it.Value()); err != nil {
			return err
		}
	}
	return t.internalOrNil(it.Error())
}

// StagingInfo describes one (commit user, subtask) for tests and operators.
type StagingInfo struct {
	CommitUser        string
	Subtask           int32
	Epoch, Committed  int64
	LastWriteMs       int64
	TimeoutMs         int64
	StagedRows, Bytes int64
	StagedCheckpoints []int64
}

// Staging lists every staging of the table, sorted by commit user and subtask.
func (t *Table) Staging() []StagingInfo {
	t.mu.Lock()
	all := make([]*stageState, 0, len(t.staging))
	for _, ss := range t.staging {
		all = append(all, ss)
	}
	t.mu.Unlock()
	var out []StagingInfo
	for _, ss := range all {
		ss.mu.Lock()
		if ss.exists {
			b, r := ss.totals()
			si := StagingInfo{CommitUser: ss.key.user, Subtask: ss.key.subtask, Epoch: ss.h.epoch, Committed: ss.h.committed,
				LastWriteMs: ss.h.lastWriteMs, TimeoutMs: ss.h.timeoutMs, StagedRows: r, Bytes: b}
			for _, c := range ss.ckpts {
				si.StagedCheckpoints = append(si.StagedCheckpoints, c.ckpt)
			}
			out = append(out, si)
		}
		ss.mu.Unlock()
	}
	slices.SortFunc(out, func(a, b StagingInfo) int {
		if a.CommitUser != b.CommitUser {
			return bytes.Compare([]byte(a.CommitUser), []byte(b.CommitUser))
		}
		return int(a.Subtask) - int(b.Subtask)
	})
	return out
}

// CommittedCheckpoint returns the checkpoint the commit user last committed into bucket id (0:
// none), from Pebble.
func (t *Table) CommittedCheckpoint(user string, id BucketID) (int64, error) {
	ss := &stageState{userPfx: rowcodec.AppendEscaped([]byte{tagStaging}, user)}
	v, closer, err := t.db.Get(ss.bucketKey(id))
	if errors.Is(err, pebble.ErrNotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, t.internal(err)
	}
	defer closer.Close()
	c, n := binary.Uvarint(v)
	if n <= 0 {
		return 0, t.internal(errors.New("malformed committed checkpoint"))
	}
	return int64(c), nil
}

// NextExpiryMs returns when ExpireStaging next has work in the table (ms; -1 when never):
// the earliest transaction-timeout expiry of staged rows, header retention of a staging without
// rows, or writer retention of a sequenced writer. The gateway records it when the store closes
// so that retention reopens an idle table in time (gateway/retention_due.go). Errors:
// codes.Internal (a store read failed).
func (t *Table) NextExpiryMs() (int64, error) {
	due := int64(-1)
	at := func(ms int64) {
		if due < 0 || ms < due {
			due = ms
		}
	}
	t.mu.Lock()
	all := make([]*stageState, 0, len(t.staging))
	for _, ss := range t.staging {
		all = append(all, ss)
	}
	t.mu.Unlock()
	for _, ss := range all {
		ss.mu.Lock()
		if ss.exists {
			if len(ss.ckpts) > 0 {
				at(ss.h.lastWriteMs + ss.h.timeoutMs)
			} else {
				at(ss.h.lastWriteMs + max(ss.h.timeoutMs, stagingHeaderRetentionMs))
			}
		}
		ss.mu.Unlock()
	}
	ret := t.opts.WriterRetentionMs
	if ret <= 0 {
		ret = DefaultWriterRetentionMs
	}
	lastWrites, err := t.writerLastWrites()
	if err != nil {
		return 0, err
	}
	for _, last := range lastWrites {
		at(last + ret)
	}
	return max(due, -1), nil
}
