package gateway

import (
	"bytes"
	"errors"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/setats/setats/gateway/row"
	"github.com/setats/setats/gateway/rowcodec"
	"github.com/setats/setats/gateway/store"
	"github.com/setats/setats/merge"
	"github.com/setats/setats/proto/setatspb"
)

// DoGet streams one bucket's changelog from the position in a ChangelogTicket (SPEC section 5,
// proto ChangelogTicket). The schema is row.ChangelogSchema (reserved columns, then the table's
// columns; metadata setats.partition and setats.bucket). Record batches hold at most
// max_batch_rows rows (DefaultMaxBatchRows when <= 0).
//
// Record batches also hold at most about MaxBatchBytes (at most half of --max-message-bytes) of
// row data (row.RowBytes); a larger row goes alone.
//
// follow=false ends the stream at the bucket's end offset as of the call. follow=true keeps it
// open: when the reader has caught up it waits on store.Table.Wait (no polling) and sends rows as
// soon as they are durable; the stream then ends when the client cancels (nil), the table is
// dropped (NotFound) or the gateway shuts down (Unavailable). Before it first waits, the stream
// sends an empty record batch so that clients get the schema at once.
//
// Errors: NotFound (table), InvalidArgument (bucket out of range, bad partition), OutOfRange (a
// start offset removed by retention, naming the bucket and the removed offsets, or above the end
// offset).
func (f *flightService) DoGet(tkt *flight.Ticket, stream flight.FlightService_DoGetServer) error {
	s := f.s
	t := &setatspb.ChangelogTicket{}
	enc, err := decodeMsg(tkt.GetTicket(), t, "ChangelogTicket")
	if err != nil {
		return err
	}
	if c := t.GetChannel(); c != nil {
		return s.doGetChannel(c, stream)
	}
	cat, err := s.catalogFor(t.GetCatalog())
	if err != nil {
		return err
	}
	ctx := stream.Context()
	db := dbName(t.GetDatabase())
	if err := s.authorize(ctx, "DoGet", privRead, db, t.GetTable()); err != nil {
		return err
	}
	ot, err := s.openTable(cat, t.GetDatabase(), t.GetTable())
	if err != nil {
		return err
	}
	if id := t.GetTableId(); id != "" && id != ot.tbl.Info.GetTableId() {
		return status.Errorf(codes.NotFound,
			"table %s: the ticket is for table id %s, which was dropped; the table now has id %s "+
				"(a position in the old table's changelog means nothing in the new one)",
			ot.label, id, ot.tbl.Info.GetTableId())
	}
	if err := checkBucket(ot.tbl, t.GetPartition(), t.GetBucket()); err != nil {
		return err
	}
	id := store.BucketID{Partition: t.GetPartition(), Bucket: t.GetBucket()}
	where := bucketName(ot.label, id)
	if t.GetSnapshot() != nil {
		return s.doGetSnapshot(ot, id, t, stream) // flight_snapshot.go
	}
	if !ot.tbl.ChangelogEnabled {
		return status.Errorf(codes.FailedPrecondition,
			"%s: the table has changelog.enabled = false (DWS enable_binlog off): it keeps no changelog to read; "+
				"read its rows with a snapshot read, or re-create it with changelog.enabled = true", where)
	}

	// Resolve the start.
	var next, end int64
	skipBeforeMs := int64(-1) // with a timestamp start, rows committed before it are skipped
	droppedEnd := int64(-1)   // >= 0: the start lies in a dropped partition (partition_drop.go)
	err = ot.use(s, func(st *storeTable) error {
		bo := offsetsOf(st, id)
		from := bo.StartOffset
		if o, ok := t.GetStart().(*setatspb.ChangelogTicket_Offset); ok {
			from = o.Offset
		}
		if e, dropped := st.PartitionDropped(id, from); dropped {
			droppedEnd = e
			return nil
		}
		end = bo.EndOffset
		switch start := t.GetStart().(type) {
		case *setatspb.ChangelogTicket_Offset:
			next = start.Offset
			if next < 0 {
				return status.Errorf(codes.InvalidArgument, "%s: offset %d is negative", where, next)
			}
			if next < bo.StartOffset {
				return expiredError(where, next, bo.StartOffset)
			}
			if next > bo.EndOffset {
				return status.Errorf(codes.OutOfRange, "%s: start offset %d is beyond the end offset %d", where, next, bo.EndOffset)
			}
		case *setatspb.ChangelogTicket_TimestampMs:
			off, _, err := st.OffsetForTimestamp(id, start.TimestampMs)
			if err != nil {
				return statusOr(err, codes.Internal, "%s: offset for timestamp %d", where, start.TimestampMs)
			}
			next = off
			skipBeforeMs = start.TimestampMs
		case *setatspb.ChangelogTicket_Position:
			if start.Position == setatspb.StartPosition_LATEST {
				next = bo.EndOffset
			} else {
				next = bo.StartOffset
			}
		default:
			next = bo.StartOffset
		}
		return nil
	})
	if err != nil {
		return err
	}
	follow := t.GetFollow()
	if eo := t.GetEndOffset(); eo > 0 && droppedEnd < 0 {
		// A bounded range [next, eo) (binlog changes).
		if eo < next {
			return status.Errorf(codes.InvalidArgument, "%s: end offset %d is below the start offset %d", where, eo, next)
		}
		if eo > end {
			return status.Errorf(codes.OutOfRange, "%s: end offset %d is beyond the bucket's end offset %d", where, eo, end)
		}
		end, follow = eo, false
	}
	maxKey := t.GetMaxKey()
	var keyBuf []byte

	maxRows := int(t.GetMaxBatchRows())
	if maxRows <= 0 {
		maxRows = DefaultMaxBatchRows
	}
	maxRows = min(maxRows, MaxBatchRows)
	// Rows go out in record batches of about maxBytes at most (a larger row alone), so that a
	// bucket of large rows stays readable within the message limits of both sides.
	maxBytes := min(MaxBatchBytes, s.opts.MaxMessageBytes/2)
	if follow {
		// The store keeps the bucket's newest rows in memory for followers (store.Table.Follow).
		var unfollow func()
		if err := ot.use(s, func(st *storeTable) error { unfollow = st.Follow(id); return nil }); err != nil {
			return err
		}
		defer unfollow()
	}
	schema := row.ChangelogSchema(ot.tbl, id.Partition, id.Bucket)
	w := flight.NewRecordWriter(stream, ipc.WithSchema(schema), ipc.WithAllocator(s.mem))
	defer w.Close()
	bld := row.NewChangelogBuilder(s.mem, ot.tbl, schema)
	defer bld.Release()

	if droppedEnd >= 0 {
		return sendChangelogEnd(w, bld, enc, id, droppedEnd)
	}
	s.metrics.openStreams.Inc()
	defer s.metrics.openStreams.Dec()
	rowsRead := s.metrics.readCounters(ot.label)
	var kinds [4]int
	// Rows come as their stored values and are decoded straight from the store's memory into
	// the Arrow buffers (store.Table.ReadFunc, row.ChangelogBuilder.AppendEncoded); only a
	// max_key filter decodes them into rows (for their keys).
	var keyDec rowcodec.ValueDecoder
	authChanged := s.auth.Changed() // a users file change: check the grant again
	sent := false
	// send writes the rows appended to bld as one record batch.
	send := func() error {
		rec := bld.NewRecordBatch()
		err := w.Write(rec)
		rec.Release()
		if err != nil {
			return err
		}
		sent = true
		for k, n := range kinds {
			if n > 0 {
				rowsRead[k].Add(float64(n))
				kinds[k] = 0
			}
		}
		return nil
	}
	// One read (store.Table.ReadFunc) appends rows to bld until the row limit or until the
	// batch's byte limit (full: it stops before the row that would exceed it).
	consumed, full := 0, false // rows the read consumed (appended or skipped by a filter)
	// add appends one row to bld, or stops the read before it when the batch is full.
	add := func(off int64, kind merge.RowKind, commitMs int64, val []byte) error {
		if skipBeforeMs >= 0 {
			if commitMs < skipBeforeMs {
				consumed++
				return nil
			}
			skipBeforeMs = -1 // commit times are non-decreasing per bucket
		}
		if len(maxKey) > 0 {
			keyDec.Table = ot.tbl
			r, err := keyDec.Decode(val)
			if err != nil {
				return status.Errorf(codes.Internal, "%s: changelog row at offset %d: %v", where, off, err)
			}
			keyBuf = rowcodec.AppendKey(keyBuf[:0], ot.tbl, r)
			if bytes.Compare(keyBuf, maxKey) > 0 {
				consumed++
				return nil
			}
		}
		// The exact size (a second parse of the value) only near the batch's limit.
		if bld.Len() > 0 && bld.Bytes()+bld.MaxEncodedRowBytes(val) > maxBytes {
			n, err := bld.EncodedRowBytes(val)
			if err != nil {
				return err
			}
			if bld.Bytes()+n > maxBytes {
				full = true
				return store.ErrStopRead // this row starts the next batch
			}
		}
		if err := bld.AppendEncoded(kind, off, commitMs, val); err != nil {
			return err
		}
		kinds[kind&3]++
		consumed++
		return nil
	}
	for {
		if !follow && next >= end {
			return nil
		}
		select {
		case <-authChanged:
			if err := s.authorize(ctx, "DoGet", privRead, db, t.GetTable()); err != nil {
				return err
			}
			authChanged = s.auth.Changed()
		default:
		}
		limit := maxRows
		if !follow && end-next < int64(limit) {
			limit = int(end - next)
		}
		var wait <-chan struct{}
		consumed, full = 0, false
		err := ot.use(s, func(st *storeTable) error {
			err := st.ReadFunc(id, next, limit, add)
			if err != nil {
				// The rows appended by this read are not a result (store.Table.ReadFunc).
				bld.Discard()
				kinds = [4]int{}
				consumed, full = 0, false
			}
			if errors.Is(err, store.ErrPartitionDropped) {
				droppedEnd, _ = st.PartitionDropped(id, next)
				return nil
			}
			if err != nil {
				// OutOfRange when retention removed rows ahead of this reader: the store's message
				// names the bucket and the removed offsets (SPEC section 5: never skip silently).
				return statusOr(err, codes.Internal, "%s: read from offset %d", where, next)
			}
			if consumed == 0 && !full && follow {
				wait = st.Wait(id, next)
			}
			return nil
		})
		if err != nil {
			return err
		}
		if droppedEnd >= 0 {
			return sendChangelogEnd(w, bld, enc, id, droppedEnd)
		}
		if consumed > 0 || full {
			next += int64(consumed) // offsets are dense: the rows read are next, next+1, ...
			if bld.Len() == 0 && sent {
				continue
			}
			if err := send(); err != nil {
				return err
			}
			continue
		}
		if !follow {
			// Read returned nothing below the end offset (it reports removed rows as OutOfRange).
			return nil
		}
		if !sent {
			if err := send(); err != nil { // empty: delivers the schema before waiting
				return err
			}
		}
		select {
		case <-wait:
		case <-authChanged: // checked at the top of the loop
		case <-ctx.Done():
			return nil
		case <-ot.gone:
			if s.shuttingDown.Load() {
				return status.Errorf(codes.Unavailable, "%s: gateway is shutting down", where)
			}
			return status.Errorf(codes.NotFound, "table %s was dropped", ot.label)
		case <-s.quit:
			return status.Errorf(codes.Unavailable, "%s: gateway is shutting down", where)
		}
	}
}

// bucketName names a bucket in errors: "table db.t partition "p" bucket 3" (no partition part for
// an unpartitioned table).
func bucketName(label string, id store.BucketID) string {
	if id.Partition == "" {
		return fmt.Sprintf("table %s bucket %d", label, id.Bucket)
	}
	return fmt.Sprintf("table %s partition %q bucket %d", label, id.Partition, id.Bucket)
}

// expiredError is the OutOfRange error of a start offset removed by retention (SPEC section 5: it
// names the bucket and the removed range).
func expiredError(where string, offset, startOffset int64) error {
	return status.Errorf(codes.OutOfRange,
		"%s: offset %d was removed by retention: offsets [0, %d) are gone; the oldest retained offset is %d",
		where, offset, startOffset, startOffset)
}

// offsetsOf returns the offsets of bucket id (zero when it has no row yet).
func offsetsOf(st *storeTable, id store.BucketID) store.BucketOffsets {
	o, _ := st.Offsets(id)
	return o
}
