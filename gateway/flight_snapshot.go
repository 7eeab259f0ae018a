package gateway

import (
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/setats/setats/gateway/row"
	"github.com/setats/setats/gateway/store"
	"github.com/setats/setats/proto/setatspb"
)

// doGetSnapshot streams the merged rows of one bucket at one consistent view (SPEC sections 9
// and 13; ChangelogTicket.snapshot): it opens a store.SnapshotView (end offset E, durable),
// sends the schema row.SnapshotSchema with E in its metadata, then the rows after the ticket's
// after_key in primary-key order, in record batches of at most max_batch_rows rows and about
// MaxBatchBytes bytes. Memory per stream is one batch: the view is read page by page, each
// page with its own short-lived iterator. The view is released when the stream ends.
// Errors: Unimplemented (projection or partition filters, not served yet), ResourceExhausted
// (too many views open), Aborted (the view's lease ran out: resume after the last key).
func (s *Server) doGetSnapshot(ot *openTable, id store.BucketID, t *setatspb.ChangelogTicket, stream flight.FlightService_DoGetServer) error {
	sr := t.GetSnapshot()
	where := bucketName(ot.label, id)
	if len(sr.GetColumns()) > 0 || len(sr.GetPartitions()) > 0 {
		return status.Errorf(codes.Unimplemented, "%s: snapshot reads with columns or partitions are not served yet; leave them empty", where)
	}
	ctx := stream.Context()
	var view *store.SnapshotView
	if err := ot.use(s, func(st *storeTable) error {
		var err error
		view, err = st.OpenSnapshot(ctx, id)
		return err
	}); err != nil {
		return wrapStatus(err, "%s: snapshot", where)
	}
	defer view.Release()

	maxRows := int(t.GetMaxBatchRows())
	if maxRows <= 0 {
		maxRows = DefaultMaxBatchRows
	}
	maxRows = min(maxRows, MaxBatchRows)
	maxBytes := min(MaxBatchBytes, s.opts.MaxMessageBytes/2)
	schema := row.SnapshotSchema(ot.tbl, id.Partition, id.Bucket, view.EndOffset())
	w := flight.NewRecordWriter(stream, ipc.WithSchema(schema), ipc.WithAllocator(s.mem))
	defer w.Close()
	bld := row.NewSnapshotBuilder(s.mem, ot.tbl, schema)
	defer bld.Release()
	s.metrics.openStreams.Inc()
	defer s.metrics.openStreams.Dec()

	after := sr.GetAfterKey()
	if len(after) == 0 {
		after = nil
	}
	var page []store.SnapshotRow
	sent := false
	for {
		if err := ctx.Err(); err != nil {
			return nil
		}
		var more bool
		err := ot.use(s, func(*storeTable) error {
			var err error
			page, more, err = view.Scan(after, maxRows, maxBytes, page[:0])
			return err
		})
		if err != nil {
			return wrapStatus(err, "%s: snapshot at offset %d", where, view.EndOffset())
		}
		for _, r := range page {
			if err := bld.Append(r.Key, r.Row); err != nil {
				return err
			}
		}
		if len(page) > 0 {
			after = page[len(page)-1].Key
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
			return nil
		}
	}
}
