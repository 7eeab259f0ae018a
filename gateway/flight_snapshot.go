package gateway

import (
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/setats/setats/gateway/row"
	"github.com/setats/setats/gateway/store"
	"github.com/setats/setats/internal/culprit"
	"github.com/setats/setats/proto/setatspb"
)

// doGetSnapshot streams the merged rows of one bucket at one consistent view (SPEC sections 9
// and 13; ChangelogTicket.snapshot): the view pinned by GetFlightInfo when the ticket names one
// (snapshot.view_id), else a new store.SnapshotView (end offset E, durable). It sends the schema
// row.ProjectedSnapshotSchema (`_key`, then the projected columns) with E in its metadata, then
// the rows after the ticket's after_key in primary-key order, in record batches of at most
// max_batch_rows rows and about MaxBatchBytes bytes. Memory per stream is one batch whatever the
// table size: the view is read page by page, each page with its own short-lived iterator. With
// snapshot.partitions set and the ticket's partition not among them the stream has no row. A new
// view is released when the stream ends; a pinned one when the stream reaches its end (a broken
// stream leaves it to its lease, so that a reader can resume on it).
// Errors: InvalidArgument (unknown columns or partitions, a view id of another bucket),
// ResourceExhausted (too many views open), Aborted (the view was released: plan again, or resume
// after the last key with a new view).
func (s *Server) doGetSnapshot(ot *openTable, id store.BucketID, t *setatspb.ChangelogTicket, stream flight.FlightService_DoGetServer) error {
	sr := t.GetSnapshot()
	where := bucketName(ot.label, id)
	cols, err := snapshotColumns(ot.tbl, sr.GetColumns())
	if err != nil {
		return err
	}
	var parts map[string]bool
	if err := ot.use(s, func(st *storeTable) error {
		var err error
		parts, err = snapshotPartitions(ot.tbl, st, sr.GetPartitions())
		return err
	}); err != nil {
		return err
	}
	ctx := stream.Context()
	var view *store.SnapshotView
	viewID := sr.GetViewId()
	if viewID != "" {
		pv := s.views.get(viewID)
		if pv == nil || pv.tableID != ot.tbl.Info.GetTableId() {
			return status.Errorf(codes.Aborted, "%s: snapshot view %s was released (stream finished, lease expired or table closed) or never existed: call GetFlightInfo again",
				where, culprit.Quote(viewID))
		}
		if pv.view.Bucket() != id {
			return status.Errorf(codes.InvalidArgument, "%s: snapshot view %s belongs to another bucket", where, culprit.Quote(viewID))
		}
		view = pv.view
	} else {
		if err := ot.use(s, func(st *storeTable) error {
			var err error
			view, err = st.OpenSnapshot(ctx, id)
			return err
		}); err != nil {
			return wrapStatus(err, "%s: snapshot", where)
		}
		defer view.Release()
	}

	maxRows := int(t.GetMaxBatchRows())
	if maxRows <= 0 {
		maxRows = DefaultMaxBatchRows
	}
	maxRows = min(maxRows, MaxBatchRows)
	maxBytes := min(MaxBatchBytes, s.opts.MaxMessageBytes/2)
	schema := row.ProjectedSnapshotSchema(ot.tbl, cols, id.Partition, id.Bucket, view.EndOffset())
	w := flight.NewRecordWriter(stream, ipc.WithSchema(schema), ipc.WithAllocator(s.mem))
	defer w.Close()
	bld := row.NewProjectedSnapshotBuilder(s.mem, ot.tbl, cols, schema)
	defer bld.Release()
	s.metrics.openStreams.Inc()
	defer s.metrics.openStreams.Dec()

	after := sr.GetAfterKey()
	if len(after) == 0 {
		after = nil
	}
	filtered := parts != nil && !parts[id.Partition]
	sent := false
	var keyBuf []byte
	for {
		if err := ctx.Err(); err != nil {
			return nil
		}
		var more bool
		if !filtered {
			// Rows go from the view's iterator straight into the Arrow builders (no merge.Row,
			// no copy of keys or values besides the one into the batch's buffers).
			err := ot.use(s, func(*storeTable) error {
				var err error
				more, err = view.ScanEncoded(after, maxRows, maxBytes, bld.AppendEncoded)
				return err
			})
			if err != nil {
				return wrapStatus(err, "%s: snapshot at offset %d", where, view.EndOffset())
			}
		}
		if bld.Len() > 0 {
			keyBuf = bld.LastKey(keyBuf[:0])
			after = keyBuf
		}
		if bld.Len() > 0 || !sent {
			rec := bld.NewRecordBatch()
			err := w.Write(rec)
			rec.Release()
			if err != nil {
				return err
			}
			sent = true
		}
		if !more {
			if viewID != "" {
				s.views.release(viewID) // read to its end
			}
			return nil
		}
	}
}
