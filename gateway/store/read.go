package store

import (
	"errors"

	"github.com/cockroachdb/pebble/v2"
	"github.com/setats/setats/gateway/buckethash"
	"github.com/setats/setats/gateway/partname"
	"github.com/setats/setats/gateway/row"
	"github.com/setats/setats/gateway/rowcodec"
	"github.com/setats/setats/merge"
)

// published returns the durable metadata of bucket id (zero when it never got a row).
func (t *Table) published(id BucketID) (meta, []byte) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if b := t.buckets[id]; b != nil {
		return b.m, b.prefix
	}
	return meta{}, nil
}

// removedError is the ErrOutOfRange error of a read from an offset retention removed
// (SPEC section 5): it names the table, partition, bucket and the removed range.
func (t *Table) removedError(id BucketID, from int64, m meta) error {
	return errorf(ErrOutOfRange,
		"table %s partition %q bucket %d: offset %d is no longer retained: offsets [%d, %d) were removed by changelog retention (changelog.retention.ms %d); the oldest retained offset is %d",
		t.tbl.QualifiedName(), id.Partition, id.Bucket, from, 0, m.start, t.retentionMs, m.start)
}

// Read appends to dst[:0] the changelog rows of bucket id with offsets [from, min(end,
// from+maxRows)), in offset order, and returns it; maxRows <= 0 means up to the end offset.
// Rows are never partial batches: end is the published end offset. An unknown bucket reads as
// empty at offset 0. Offsets the in-memory tail of a followed bucket holds (Follow) are read from
// memory, older ones from Pebble.
//
// Errors: ErrPartitionDropped when from belongs to a dropped partition (PartitionDropped);
// ErrOutOfRange (SPEC section 5): from below the oldest retained offset (the message
// names the table, partition, bucket and the removed range [0, start)), or above the end offset.
// ErrClosed when the table is closed, ErrInternal for storage errors.
func (t *Table) Read(id BucketID, from int64, maxRows int, dst []Entry) ([]Entry, error) {
	dst = dst[:0]
	dec := rowcodec.ValueDecoder{Table: t.tbl}
	discard, err := t.readRows(id, from, maxRows, func(off int64, kind merge.RowKind, commitMs int64, val []byte) error {
		r, err := dec.Decode(val)
		if err != nil {
			return t.internal(err)
		}
		dst = append(dst, Entry{Offset: off, Kind: kind, CommitMs: commitMs, Row: r})
		return nil
	})
	if discard {
		dst = dst[:0]
	}
	return dst, err
}

// ErrStopRead, returned by the function ReadFunc calls, ends the read at that row: ReadFunc
// returns nil, and the caller reads on from that row's offset.
var ErrStopRead = errors.New("store: read stopped by the caller")

// ReadFunc is Read without decoding the rows: it calls fn with the same rows, in offset order:
// offset, RowKind, commit time (ms) and val, the stored value of the full row
// (rowcodec.EncodeValue; row.ChangelogBuilder.AppendEncoded decodes it straight into Arrow
// buffers). val points into Pebble's or the in-memory tail's memory and is valid only during the
// call: fn copies what it keeps (no copy of it is made for fn). fn runs inside the store's
// operation, with a Pebble iterator open: it must not block (no network sends).
//
// fn returning ErrStopRead ends the read at that row, and ReadFunc returns nil; any other error
// ends it and is returned as is. Errors otherwise as Read's; after an error (fn's included) the
// rows fn received are not a result (a partition dropped or rows removed by retention during the
// read are found only at its end): the caller discards them.
func (t *Table) ReadFunc(id BucketID, from int64, maxRows int, fn func(off int64, kind merge.RowKind, commitMs int64, val []byte) error) error {
	_, err := t.readRows(id, from, maxRows, fn)
	if errors.Is(err, ErrStopRead) {
		return nil
	}
	return err
}

// rowEmitter receives one changelog row of a read; val is valid only during the call. An error
// stops the read and readRows returns it as is (ErrStopRead included).
type rowEmitter func(off int64, kind merge.RowKind, commitMs int64, val []byte) error

// readRows calls emit with the changelog rows Read returns, in offset order, until emit returns
// an error (returned as is, discard false). discard reports
// that the rows emitted so far are not a result (the error says why: a partition dropped or
// rows removed by retention during the read); Read then returns none of them.
func (t *Table) readRows(id BucketID, from int64, maxRows int, emit rowEmitter) (discard bool, err error) {
	if err := t.begin(); err != nil {
		return false, err
	}
	defer t.end()
	m, prefix, tail, droppedEnd, dropped := t.readView(id, from)
	if dropped {
		return false, t.droppedError(id, from, droppedEnd)
	}
	if from < m.start {
		return false, t.removedError(id, from, m)
	}
	if from > m.end {
		return false, errorf(ErrOutOfRange, "table %s partition %q bucket %d: offset %d is beyond the end offset %d",
			t.tbl.QualifiedName(), id.Partition, id.Bucket, from, m.end)
	}
	upto := m.end
	if maxRows > 0 && from+int64(maxRows) < upto {
		upto = from + int64(maxRows)
	}
	if from == upto {
		return false, nil
	}
	want := from
	if tail != nil {
		// The newest rows, from memory (tail.go): contiguous from the chunk holding from.
		for _, c := range tail {
			if want >= upto {
				break
			}
			var err error
			if want, err = emitChunkRows(c, want, upto, emit); err != nil {
				return false, t.emitError(err)
			}
		}
		if want != upto {
			return false, t.internal(errors.New("changelog tail does not reach the end offset"))
		}
		return false, nil
	}
	it, err := t.db.NewIter(&pebble.IterOptions{
		LowerBound: appendChangelogKey(nil, prefix, 0),
		UpperBound: appendChangelogKey(nil, prefix, upto),
	})
	if err != nil {
		return false, t.internal(err)
	}
	defer it.Close()
	// The chunk holding from is the last one starting at or before it.
	for ok := it.SeekLT(appendChangelogKey(nil, prefix, from+1)); ok && want < upto; ok = it.Next() {
		v, err := it.ValueAndErr()
		if err != nil {
			return false, t.internal(err)
		}
		c, err := parseChunk(it.Key(), v)
		if err != nil {
			return false, t.internal(err)
		}
		if c.first > want || c.end() <= want {
			break // retention removed rows after we read the metadata
		}
		if want, err = emitChunkRows(c, want, upto, emit); err != nil {
			return false, t.emitError(err)
		}
	}
	if err := it.Error(); err != nil {
		return false, t.internal(err)
	}
	if want != upto {
		if end, ok := t.PartitionDropped(id, want); ok {
			return true, t.droppedError(id, want, end)
		}
		m, _ := t.published(id)
		if want < m.start {
			return true, t.removedError(id, want, m)
		}
		return false, t.internal(errors.New("changelog rows missing below the end offset"))
	}
	return false, nil
}

// emitError is readRows' error for an error of emitChunkRows: a malformed chunk is
// ErrInternal, emit's own errors are returned as they are.
func (t *Table) emitError(err error) error {
	if errors.Is(err, errMalformedChunk) {
		return t.internal(err)
	}
	return err
}

// emitChunkRows calls emit with the rows of c with offsets in [want, upto) and returns the
// offset after the last row emitted. want must lie in c. A malformed chunk is errMalformedChunk;
// emit's errors are returned as they are.
func emitChunkRows(c chunk, want, upto int64, emit rowEmitter) (int64, error) {
	for off := c.first; off < c.end() && want < upto; off++ {
		kind, val, err := c.next()
		if err != nil {
			return want, err
		}
		if off < want {
			continue
		}
		if err := emit(off, kind, c.commitMs, val); err != nil {
			return want, err
		}
		want++
	}
	return want, nil
}

// OffsetForTimestamp resolves a commit time to an offset of bucket id (SPEC section 5): the
// offset of the first retained changelog row whose commit time is >= tsMs (so a time before the
// oldest retained row gives the oldest retained offset), resolved = true. When every row is older
// (or the bucket is empty) it returns the end offset and resolved = false: rows committed later
// may still be older than tsMs, and a reader must skip them. Binary search over the offsets,
// relying on commit times being non-decreasing within a bucket.
func (t *Table) OffsetForTimestamp(id BucketID, tsMs int64) (offset int64, resolved bool, err error) {
	if err := t.begin(); err != nil {
		return 0, false, err
	}
	defer t.end()
	return t.offsetForTimestamp(id, tsMs)
}

// offsetForTimestamp is OffsetForTimestamp without the operation lock.
func (t *Table) offsetForTimestamp(id BucketID, tsMs int64) (offset int64, resolved bool, err error) {
	m, prefix := t.published(id)
	if m.start == m.end {
		return m.end, false, nil
	}
	it, err := t.db.NewIter(&pebble.IterOptions{
		LowerBound: appendChangelogKey(nil, prefix, 0),
		UpperBound: appendChangelogKey(nil, prefix, m.end),
	})
	if err != nil {
		return 0, false, t.internal(err)
	}
	defer it.Close()
	// Binary search over offsets; every row of a chunk has the chunk's commit time, so the
	// answer is the first offset of a chunk (or the end offset).
	// Invariant: rows below lo are older than tsMs (or gone); the row at hi (or end) is not.
	lo, hi := m.start, m.end
	for lo < hi {
		mid := lo + (hi-lo)/2
		var c chunk
		found := it.SeekLT(appendChangelogKey(nil, prefix, mid+1))
		if found {
			v, err := it.ValueAndErr()
			if err != nil {
				return 0, false, t.internal(err)
			}
			if c, err = parseChunk(it.Key(), v); err != nil {
				return 0, false, t.internal(err)
			}
		} else if err := it.Error(); err != nil {
			return 0, false, t.internal(err)
		}
		switch {
		case !found || c.end() <= mid:
			lo = mid + 1 // removed by retention after we read the metadata
		case c.commitMs >= tsMs:
			hi = max(c.first, lo)
		default:
			lo = c.end()
		}
	}
	// lo may lie below rows retention removed after we read the metadata: clamp.
	if cur, _ := t.published(id); lo < cur.start {
		lo = cur.start
	}
	if lo >= m.end {
		return m.end, false, nil
	}
	return lo, true, nil
}

// Lookup returns the stored row of the primary key in pk (a full-width row whose primary-key
// values are set; other values are ignored). ok is false when the key is absent.
// Errors: ErrInvalid for a bad pk row, ErrClosed, ErrInternal.
func (t *Table) Lookup(pk merge.Row) (merge.Row, bool, error) {
	if err := t.begin(); err != nil {
		return nil, false, err
	}
	defer t.end()
	b := row.Batch{Kinds: []merge.RowKind{merge.UpdateAfter}, Rows: []merge.Row{pk}}
	decl := make([]bool, len(t.tbl.Columns))
	for _, c := range t.tbl.PrimaryKey {
		decl[c] = true
	}
	b.Declared = decl
	if err := b.Validate(t.tbl); err != nil {
		return nil, false, &Error{Kind: ErrInvalid, Err: err}
	}
	id := BucketID{Partition: partname.Of(t.tbl, pk), Bucket: buckethash.Bucket(t.tbl, pk)}
	key := appendStateKey(nil, bucketPrefix(id))
	key = rowcodec.AppendKey(key, t.tbl, pk)
	v, closer, err := t.db.Get(key)
	if errors.Is(err, pebble.ErrNotFound) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, t.internal(err)
	}
	defer closer.Close()
	r, err := rowcodec.DecodeValue(t.tbl, v)
	if err != nil {
		return nil, false, t.internal(err)
	}
	return r, true, nil
}

// ScanState calls fn with every stored row and its bucket, ordered by partition, bucket and
// primary key (EncodeKey order), from one consistent snapshot. The row is fn's to keep. An error
// from fn stops the scan and is returned as is.
func (t *Table) ScanState(fn func(id BucketID, r merge.Row) error) error {
	if err := t.begin(); err != nil {
		return err
	}
	defer t.end()
	it, err := t.db.NewIter(&pebble.IterOptions{LowerBound: []byte{tagState}, UpperBound: []byte{tagState + 1}})
	if err != nil {
		return t.internal(err)
	}
	defer it.Close()
	var id BucketID
	var prevPrefix []byte
	dec := rowcodec.ValueDecoder{Table: t.tbl}
	for it.First(); it.Valid(); it.Next() {
		k := it.Key()[1:]
		if prevPrefix == nil || len(k) < len(prevPrefix) || string(k[:len(prevPrefix)]) != string(prevPrefix) {
			var rest []byte
			id, rest, err = parseBucketPrefix(k)
			if err != nil {
				return t.internal(err)
			}
			prevPrefix = append(prevPrefix[:0], k[:len(k)-len(rest)]...)
		}
		v, err := it.ValueAndErr()
		if err != nil {
			return t.internal(err)
		}
		r, err := dec.Decode(v)
		if err != nil {
			return t.internal(err)
		}
		if err := fn(id, r); err != nil {
			return err
		}
	}
	return t.internalOrNil(it.Error())
}
