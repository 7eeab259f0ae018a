package store

import (
	"bytes"
	"cmp"
	"errors"
	"log/slog"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/setats/setats/catalog"
	"github.com/setats/setats/merge"
)

// DefaultRetentionMs is the changelog retention of a table without changelog.retention.ms when
// Options.DefaultRetentionMs is 0: 24 hours (SPEC section 4).
const DefaultRetentionMs = 24 * 60 * 60 * 1000

// Options configures a Table. The zero value works.
type Options struct {
	// Clock returns the current time in ms since the epoch; nil means time.Now().UnixMilli.
	// Commit timestamps come from it (tests inject fake clocks).
	Clock func() int64
	// DefaultRetentionMs is the changelog retention (ms) of a table whose RetentionMs is 0;
	// <= 0 means DefaultRetentionMs (24 h).
	DefaultRetentionMs int64
	// CacheBytes is the size of the table's Pebble block cache in bytes; <= 0 means
	// DefaultCacheBytes. Ignored when Cache is set.
	CacheBytes int64
	// Cache, when set, is a Pebble block cache shared with other tables; the Table takes its own
	// reference and releases it on Close.
	Cache *pebble.Cache
	// KeyIndexMaxKeys bounds the in-memory index of stored keys that lets writes skip the
	// lookup of new keys (about 12 bytes per key): 0 means DefaultKeyIndexMaxKeys, < 0 turns
	// the index off. A table with more keys drops its index and looks every key up.
	KeyIndexMaxKeys int
	// KeyIndexBudget, when set, bounds the memory of the key indexes of all tables sharing it
	// (16 bytes per key): a table whose index would not fit drops it, as over KeyIndexMaxKeys.
	KeyIndexBudget *MemBudget
	// MaxRowBytes caps the size of a stored row, as row.RowBytes counts it (the row data DoGet
	// sends): a write whose merged row is larger fails with ErrInvalid naming the column and
	// nothing of its batch is applied. 0 means DefaultMaxRowBytes (16 MiB).
	MaxRowBytes int
	// Logger receives Pebble's and the store's log lines; nil means slog.Default().
	Logger *slog.Logger
	// ViewLeaseMs is how long a snapshot view lives without a Scan (snapshot.go); <= 0 means
	// DefaultViewLeaseMs.
	ViewLeaseMs int64
	// OnCommit is called after each write is durable and published, before its Pending is done
	// (so before Write returns), from the goroutine that waited for the fsync; it must not block
	// long. Calls for writes whose fsyncs complete together may come in any order: each Commit
	// carries its own offsets.
	OnCommit func(c Commit)
	// OnFailure is called once, from the goroutine that saw it, when the table's storage fails
	// (a failed WAL write or fsync: failure.go); err is an *ErrFailed naming the table. The
	// table refuses writes from then on. It must not block long.
	OnFailure func(err error)
	// FS is the filesystem of the Pebble DB; nil means the operating system's (vfs.Default).
	// Tests inject fault-injecting ones. WAL preallocation is turned off on it (failure.go).
	FS vfs.FS
	// OnStaging is called whenever the table's staged rows change (Stage, CommitStaged,
	// AbortStaged, ExpireStaging) with the change in staged bytes and rows; it must not block.
	OnStaging func(deltaBytes, deltaRows int64)
	// WriterRetentionMs is how long a sequenced writer unused is remembered (ms); <= 0 means
	// DefaultWriterRetentionMs (24 h).
	WriterRetentionMs int64
}

// BucketID names one bucket of a table: the partition name ("" when unpartitioned,
// proto/README.md) and the bucket number in 0..BucketCount-1.
type BucketID struct {
	Partition string
	Bucket    int32
}

// Compare orders BucketIDs by partition, then bucket.
func (id BucketID) Compare(o BucketID) int {
	return cmp.Or(cmp.Compare(id.Partition, o.Partition), cmp.Compare(id.Bucket, o.Bucket))
}

// BucketOffsets reports a bucket's changelog positions: StartOffset is the oldest retained
// offset, EndOffset the offset the next changelog row gets, LastCommitMs the commit time (ms) of
// the newest changelog row (0 when none). The changelog holds exactly [StartOffset, EndOffset).
type BucketOffsets struct {
	BucketID
	StartOffset, EndOffset, LastCommitMs int64
}

// Commit describes one durable Write: Rows written rows, ChangelogRows changelog rows emitted,
// ChangelogKinds those rows per RowKind (indexed by the RowKind value: +I, -U, +U, -D; they sum
// to ChangelogRows), CommitMs their commit time (ms), Buckets the offsets after the write of every
// bucket the batch touched (sorted by partition, bucket), NewBuckets those buckets that did not
// exist before.
type Commit struct {
	Table          *catalog.Table
	Rows           int64
	ChangelogRows  int64
	ChangelogKinds [4]int64
	CommitMs       int64
	Buckets        []BucketOffsets
	NewBuckets     []BucketID
	// Duplicate: the write's (writer, sequence) had been applied before (writerseq.go); nothing
	// was applied now and the other fields are those of the original write (NewBuckets empty).
	Duplicate bool
	// Staged: the rows were staged for exactly-once delivery (staging.go), not merged; there
	// are no changelog rows and no buckets.
	Staged bool
}

// Entry is one changelog row as Read returns it: its offset, RowKind, commit time (ms) and the
// full row (table column order, nil = null).
type Entry struct {
	Offset   int64
	Kind     merge.RowKind
	CommitMs int64
	Row      merge.Row
}

// Table is the storage of one table. All methods are safe for concurrent use.
type Table struct {
	tbl         *catalog.Table
	opts        Options
	clock       func() int64
	retentionMs int64
	engine      merge.Engine
	log         *slog.Logger
	db          *pebble.DB
	fs          vfs.FS                    // the table's file system (Options.FS or vfs.Default)
	sdb         atomic.Pointer[pebble.DB] // the staging DB (staging_db.go), nil until opened
	sdbMu       sync.Mutex                // serialises opening sdb
	cache       *pebble.Cache
	keys        *keyIndex
	bg          sync.WaitGroup            // background goroutines (key index build)
	keysBuilt   chan struct{}             // closed when the key index build ends
	applySeq    atomic.Uint64             // numbers applied writes in apply order (pending.go)
	failed      atomic.Pointer[ErrFailed] // the storage failure (failure.go), nil while healthy
	opened      atomic.Bool               // pebble.Open returned; background errors fail the table
	bgErr       chan error                // the first storage background error during pebble.Open

	// Sequenced writers (writerseq.go) and exactly-once staging (staging.go), guarded by mu.
	writers     map[string]*writerState
	staging     map[stageKey]*stageState
	stagedBytes atomic.Int64
	stagedRows  atomic.Int64
	// stagedMem is the encoded bytes of the staged batches also kept in memory (staging.go),
	// part of stagedMemAll until Close.
	stagedMem atomic.Int64
	// commitHook, when set (tests), runs inside CommitStaged at "apply" (before the merge) and
	// "applied" (the commit's batch is in Pebble, the in-memory state not yet updated), and
	// "delete-staged" (the merge is durable; its staged rows are about to be deleted).
	commitHook func(point string)

	// ops is held shared by every operation and exclusively by Close.
	ops sync.RWMutex
	// mu guards buckets and closed.
	mu      sync.Mutex
	buckets map[BucketID]*bucket
	closed  bool
	done    chan struct{} // closed by Close

	// slotMu guards slots (slots.go).
	slotMu sync.Mutex
	slots  map[string]*SlotRecord
	// views are the open snapshot views (snapshot.go), guarded by viewMu.
	viewMu sync.Mutex
	views  map[*SnapshotView]struct{}
}

// bucket is the in-memory state of one bucket.
type bucket struct {
	id     BucketID
	prefix []byte // P B (doc.go)
	// wmu serialises writers and retention of the bucket. Lock order: by BucketID.
	wmu sync.Mutex

	// Guarded by Table.mu: the published (durable) metadata, whether it exists on disk, and
	// waiters by the offset they wait to be exceeded.
	m       meta
	exists  bool
	waiters map[int64]chan struct{}
	// Guarded by Table.mu: the writes applied to Pebble but not yet published, in apply order
	// (pending.go); followers and the in-memory changelog tail (tail.go).
	queue     []applied
	followers int
	tail      []chunk
	tailBytes int
	// refs counts the calls holding a pointer to the bucket (writers between grouping and the
	// end of Apply, a snapshot open), guarded by Table.mu: a bucket that does not exist on disk
	// is forgotten once nothing holds or follows it (Table.releaseBucket).
	refs int
	// Guarded by Table.mu: the bucket's partition was dropped when its end offset was
	// droppedEnd (partition_drop.go); the bucket is then kept in memory for good.
	dropped    bool
	droppedEnd int64
}

// Open opens (creating when needed) the Pebble DB of tbl at tbl.Location/data and rebuilds the
// buckets' offsets from it. tbl must be resolved (catalog.ResolveSpec) and is shared, not copied.
// Errors: ErrInvalid for a bad merge engine or options, ErrFailedPrecondition for
// data of another format version, ErrInternal for I/O errors.
func Open(tbl *catalog.Table, opts Options) (*Table, error) {
	engine, err := merge.New(tbl.MergeEngine, tbl.Options)
	if err != nil {
		return nil, err
	}
	if tbl.Location == "" {
		return nil, errorf(ErrInvalid, "table %s: no location", tbl.QualifiedName())
	}
	t := &Table{
		tbl:     tbl,
		opts:    opts,
		clock:   opts.Clock,
		engine:  engine,
		log:     opts.Logger,
		buckets: map[BucketID]*bucket{},
		writers: map[string]*writerState{},
		staging: map[stageKey]*stageState{},
		done:    make(chan struct{}),
	}
	if t.clock == nil {
		t.clock = func() int64 { return time.Now().UnixMilli() }
	}
	if t.log == nil {
		t.log = slog.Default()
	}
	t.log = t.log.With("table", tbl.QualifiedName())
	t.retentionMs = tbl.RetentionMs
	if t.retentionMs <= 0 {
		t.retentionMs = opts.DefaultRetentionMs
	}
	if t.retentionMs <= 0 {
		t.retentionMs = DefaultRetentionMs
	}
	if opts.Cache != nil {
		t.cache = opts.Cache
		t.cache.Ref()
	} else {
		size := opts.CacheBytes
		if size <= 0 {
			size = DefaultCacheBytes
		}
		t.cache = pebble.NewCache(size)
	}
	dir := filepath.Join(tbl.Location, "data")
	fs := opts.FS
	if fs == nil {
		fs = vfs.Default
	}
	t.fs = fs
	if err := mkdirAllSynced(fs, dir); err != nil {
		t.cache.Unref()
		return nil, errorf(ErrInternal, "table %s: %w", tbl.QualifiedName(), err)
	}
	po := PebbleOptions(t.cache, t.log)
	po.FS = walFS{fs}
	t.bgErr = make(chan error, 1)
	po.EventListener = &pebble.EventListener{BackgroundError: t.backgroundError}
	db, err := t.openPebble(dir, po)
	if err != nil {
		return nil, errorf(ErrInternal, "table %s: open %s: %w", tbl.QualifiedName(), dir, err)
	}
	t.opened.Store(true)
	t.db = db
	err = t.openStagingIfPresent()
	if err == nil {
		err = t.load()
	}
	if err != nil {
		if t.Err() == nil { // a failed DB cannot be closed (failure.go)
			_ = t.closeStagingDB()
			_ = db.Close()
			t.cache.Unref()
		}
		return nil, err
	}
	maxKeys := opts.KeyIndexMaxKeys
	if maxKeys == 0 {
		maxKeys = DefaultKeyIndexMaxKeys
	}
	t.keys = newKeyIndex(maxKeys, opts.KeyIndexBudget)
	t.keysBuilt = make(chan struct{})
	if maxKeys < 0 {
		close(t.keysBuilt)
	} else {
		t.bg.Add(1)
		go func() {
			defer t.bg.Done()
			defer close(t.keysBuilt)
			if err := t.keys.build(t.db, t.done); err != nil {
				t.log.Error("building the key index failed; every written key is looked up", "err", err)
			}
		}()
	}
	return t, nil
}

// load checks the format version (writing it into a new DB) and reads every bucket's metadata.
func (t *Table) load() error {
	v, closer, err := t.db.Get([]byte{tagVersion})
	switch {
	case errors.Is(err, pebble.ErrNotFound):
		if err := t.pebbleCall("commit", func() error { return t.db.Set([]byte{tagVersion}, []byte(formatVersion), pebble.Sync) }); err != nil {
			return err
		}
	case err != nil:
		return t.internal(err)
	default:
		got := string(v)
		_ = closer.Close()
		if got != formatVersion {
			return errorf(ErrFailedPrecondition, "table %s: data in %s has format %q, this gateway reads %q",
				t.tbl.QualifiedName(), t.tbl.Location, got, formatVersion)
		}
	}
	err = t.scanBucketRecords(tagMeta, "bucket metadata", func(id BucketID, v []byte) error {
		m, err := decodeMeta(v)
		if err != nil {
			return err
		}
		t.buckets[id] = &bucket{id: id, prefix: bucketPrefix(id), m: m, exists: true}
		return nil
	})
	if err != nil {
		return err
	}
	if err := t.loadDropped(); err != nil {
		return err
	}
	if err := t.loadSlots(); err != nil {
		return err
	}
	return t.loadStaging()
}

func (t *Table) internal(err error) error {
	return errorf(ErrInternal, "table %s: store: %w", t.tbl.QualifiedName(), err)
}

func (t *Table) internalOrNil(err error) error {
	if err == nil {
		return nil
	}
	return t.internal(err)
}

// Catalog returns the table the store was opened for.
func (t *Table) Catalog() *catalog.Table { return t.tbl }

// RetentionMs returns the changelog retention in force (ms): the table's, else the default.
func (t *Table) RetentionMs() int64 { return t.retentionMs }

// begin takes the shared operation lock; it fails with ErrClosed once the table closed.
func (t *Table) begin() error {
	t.ops.RLock()
	t.mu.Lock()
	closed := t.closed
	t.mu.Unlock()
	if closed {
		t.ops.RUnlock()
		return errorf(ErrClosed, "table %s is closed", t.tbl.QualifiedName())
	}
	return nil
}

// beginWrite is begin for calls that commit to Pebble (writes, retention): they also fail, with
// the *ErrFailed, once the table's storage failed.
func (t *Table) beginWrite() error {
	if f := t.failed.Load(); f != nil {
		return f
	}
	if err := t.begin(); err != nil {
		return err
	}
	if f := t.failed.Load(); f != nil {
		t.end()
		return f
	}
	return nil
}

func (t *Table) end() { t.ops.RUnlock() }

// bucketFor returns the in-memory bucket of id, creating a placeholder (not yet existing on
// disk) when there is none. Called with t.mu held.
func (t *Table) bucketFor(id BucketID) *bucket {
	b := t.buckets[id]
	if b == nil {
		b = &bucket{id: id, prefix: bucketPrefix(id)}
		t.buckets[id] = b
	}
	return b
}

// holdBucket is bucketFor that also counts a reference, which releaseBucket drops. Called with
// t.mu held.
func (t *Table) holdBucket(id BucketID) *bucket {
	b := t.bucketFor(id)
	b.refs++
	return b
}

// releaseBucket drops a reference of holdBucket, and forgets b when it is a placeholder nothing
// uses any more. Called with t.mu held.
func (t *Table) releaseBucket(b *bucket) {
	b.refs--
	t.forgetIfUnused(b)
}

// forgetIfUnused removes b from the table when it does not exist on disk and nothing holds,
// follows or queues a write to it, waking its waiters (a waiter re-reads and waits again): a
// reader that followed a partition that was never written leaves nothing behind (issue 7 item 4:
// follow DoGets on partitions that do not exist used to grow the heap for good). Called with
// t.mu held.
func (t *Table) forgetIfUnused(b *bucket) {
	if b.exists || b.dropped || b.refs > 0 || b.followers > 0 || len(b.queue) > 0 || t.buckets[b.id] != b {
		return
	}
	for off, ch := range b.waiters {
		close(ch)
		delete(b.waiters, off)
	}
	delete(t.buckets, b.id)
}

// MemBuckets returns how many buckets the table keeps in memory, placeholders of buckets that
// were never written included (tests: following readers leave none behind).
func (t *Table) MemBuckets() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.buckets)
}

// Buckets returns the offsets of every bucket that ever got a row, sorted by partition, then
// bucket.
func (t *Table) Buckets() []BucketOffsets {
	t.mu.Lock()
	out := make([]BucketOffsets, 0, len(t.buckets))
	for _, b := range t.buckets {
		if b.exists {
			out = append(out, b.offsets())
		}
	}
	t.mu.Unlock()
	slices.SortFunc(out, func(a, b BucketOffsets) int { return a.BucketID.Compare(b.BucketID) })
	return out
}

// Offsets returns the offsets of one bucket; ok is false when it never got a row.
func (t *Table) Offsets(id BucketID) (o BucketOffsets, ok bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	b := t.buckets[id]
	if b == nil || !b.exists {
		return BucketOffsets{BucketID: id}, false
	}
	return b.offsets(), true
}

// offsets returns the published offsets; t.mu held.
func (b *bucket) offsets() BucketOffsets {
	return BucketOffsets{BucketID: b.id, StartOffset: b.m.start, EndOffset: b.m.end, LastCommitMs: b.m.lastCommitMs}
}

// publish makes m the bucket's durable metadata and wakes waiters it satisfies; t.mu held.
func (b *bucket) publish(m meta) {
	b.m = m
	b.exists = true
	for off, ch := range b.waiters {
		if m.end > off {
			close(ch)
			delete(b.waiters, off)
		}
	}
}

// closedChan is an already closed channel.
var closedChan = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

// Wait returns a channel that is closed as soon as the end offset of bucket id exceeds offset
// (at once when it already does), or when the table closes. The bucket need not exist yet; the
// waiter of a bucket that does not exist is kept only while the bucket is followed (Follow):
// once its last follower leaves, the channel is closed and the bucket forgotten, so call Wait
// for such a bucket only while following it. Waiters for the same (bucket, offset) share one
// channel, so abandoning a Wait costs nothing lasting. A spurious wakeup is possible (re-check
// the offsets). Wakeups come from commits in this process: there is no polling. A drop of the
// bucket's partition wakes every waiter, and Wait of an offset of a dropped partition
// (PartitionDropped) returns a closed channel: the next Read says ErrPartitionDropped.
func (t *Table) Wait(id BucketID, offset int64) <-chan struct{} {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return closedChan
	}
	return t.waitLocked(t.bucketFor(id), offset)
}

// waitLocked is Wait for bucket b; t.mu held.
func (t *Table) waitLocked(b *bucket, offset int64) <-chan struct{} {
	if b.m.end > offset || b.droppedAt(offset) {
		return closedChan
	}
	ch := b.waiters[offset]
	if ch == nil {
		if b.waiters == nil {
			b.waiters = map[int64]chan struct{}{}
		}
		ch = make(chan struct{})
		b.waiters[offset] = ch
	}
	return ch
}

// Done returns a channel closed when the table closes.
func (t *Table) Done() <-chan struct{} { return t.done }

// Close waits for running operations, closes every waiter and the Pebble DB. Later calls of any
// method fail with ErrClosed (Wait returns a closed channel). Safe to call twice. A
// failed table (Err) is only marked closed: its operations may be blocked in Pebble for good and
// its DB cannot be closed (failure.go); Close returns the failure at once.
func (t *Table) Close() error {
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		return nil
	}
	t.closed = true
	close(t.done)
	defer func() { stagedMemAll.Add(-t.stagedMem.Swap(0)) }() // staging.go
	for _, b := range t.buckets {
		for off, ch := range b.waiters {
			close(ch)
			delete(b.waiters, off)
		}
	}
	t.mu.Unlock()
	t.releaseViews()
	if f := t.failed.Load(); f != nil {
		return f
	}
	t.ops.Lock() // wait for running operations
	defer t.ops.Unlock()
	t.bg.Wait()
	t.keys.close()
	serr := t.closeStagingDB()
	err := t.db.Close()
	t.cache.Unref()
	if err = errors.Join(err, serr); err != nil {
		return t.internal(err)
	}
	return nil
}

// sortBuckets sorts buckets by id (the lock order).
func sortBuckets(bs []*bucket) {
	slices.SortFunc(bs, func(a, b *bucket) int { return bytes.Compare(a.prefix, b.prefix) })
}
