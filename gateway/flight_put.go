package gateway

import (
	"time"

	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/setats/setats/catalog"
	"github.com/setats/setats/gateway/row"
	"github.com/setats/setats/gateway/store"
	"github.com/setats/setats/proto/setatspb"
)

// DoPut writes upserts (SPEC section 3, proto WriteCommand). The descriptor of the first message
// is a WriteCommand (CMD) or a PATH [db, table] / [table]. Each record batch is decoded and
// validated whole (row.Decode), then applied atomically and durably (store.Table.Write); only then
// is its PutResult sent, app_metadata = WriteAck in the WriteCommand's encoding (binary for PATH).
// A bad batch ends the call with its status error (InvalidArgument naming table and column,
// ResourceExhausted for a message over --max-message-bytes) and nothing of it is applied; the
// batches acknowledged before it stay applied.
func (f *flightService) DoPut(stream flight.FlightService_DoPutServer) error {
	s := f.s
	rdr, err := flight.NewRecordReader(stream, ipc.WithAllocator(s.mem))
	if err != nil {
		return statusOr(err, codes.InvalidArgument, "DoPut: read the Arrow IPC schema message")
	}
	defer rdr.Release()

	enc, tbl, err := s.resolveWrite(rdr.LatestFlightDescriptor())
	if err != nil {
		return err
	}
	ot, err := s.tables.open(tbl)
	if err != nil {
		return err
	}
	label := ot.label
	ctx := stream.Context()
	var seq int64
	for rdr.Next() {
		rec := rdr.RecordBatch()
		begin := time.Now()
		b, err := row.Decode(ot.tbl, rec)
		if err != nil {
			return s.putFailed(label, seq, statusOr(err, codes.InvalidArgument, "table %s batch %d", label, seq))
		}
		ack := &setatspb.WriteAck{BatchSeq: seq, Rows: int64(b.Len())}
		if b.Len() > 0 {
			var c store.Commit
			err := ot.use(s, func(st *storeTable) error {
				var err error
				c, err = st.Write(ctx, b)
				return err
			})
			if err != nil {
				return s.putFailed(label, seq, statusOr(err, codes.Internal, "table %s batch %d", label, seq))
			}
			ack.ChangelogRows = c.ChangelogRows
			ack.CommitMs = c.CommitMs
			for _, bo := range c.Buckets {
				ack.Buckets = append(ack.Buckets, bucketOffsetsPB(bo))
			}
			s.committed(ot, c, time.Since(begin))
		}
		payload, err := encodeMsg(enc, ack)
		if err != nil {
			return err
		}
		if err := stream.Send(&flight.PutResult{AppMetadata: payload}); err != nil {
			return err
		}
		seq++
	}
	if err := rdr.Err(); err != nil {
		return s.putFailed(label, seq, wrapStatus(statusOr(err, codes.InvalidArgument, "malformed Arrow IPC"), "table %s batch %d", label, seq))
	}
	return nil
}

// putFailed counts a rejected batch and returns err.
func (s *Server) putFailed(label string, seq int64, err error) error {
	s.metrics.writeErrors.WithLabelValues(label, status.Code(err).String()).Inc()
	s.log.Debug("DoPut batch rejected", "table", label, "batch_seq", seq, "err", err)
	return err
}

// committed records a durable commit: metrics, then NATS notifications (NEW_BUCKET for each bucket
// that received its first row, NEW_DATA for each bucket the commit touched).
func (s *Server) committed(ot *openTable, c store.Commit, latency time.Duration) {
	t := ot.tbl
	s.metrics.observeWrite(ot.label, c.Rows, c.ChangelogRows, latency)
	for _, bo := range c.Buckets {
		s.metrics.setBucketOffsets(ot.label, bo.Partition, bo.Bucket, bo.StartOffset, bo.EndOffset)
	}
	for _, id := range c.NewBuckets {
		s.nats.publish(&setatspb.Notification{
			Kind: setatspb.NotificationKind_NEW_BUCKET, Database: t.Database, Table: t.Name,
			Partition: id.Partition, Bucket: id.Bucket, TableId: t.Info.GetTableId(), CommitMs: c.CommitMs,
		})
	}
	for _, bo := range c.Buckets {
		s.nats.publish(&setatspb.Notification{
			Kind: setatspb.NotificationKind_NEW_DATA, Database: t.Database, Table: t.Name,
			Partition: bo.Partition, Bucket: bo.Bucket, EndOffset: bo.EndOffset, CommitMs: c.CommitMs,
			TableId: t.Info.GetTableId(),
		})
	}
}

// resolveWrite turns a DoPut descriptor into the answer encoding and the target table, creating
// the table (and its database) from WriteCommand.create_if_absent when it does not exist.
func (s *Server) resolveWrite(d *flight.FlightDescriptor) (encoding, *catalog.Table, error) {
	if d == nil {
		return 0, nil, status.Error(codes.InvalidArgument, "DoPut: the first message carries no flight descriptor")
	}
	switch d.GetType() {
	case flight.DescriptorPATH:
		db, name, err := pathTable(d.GetPath())
		if err != nil {
			return 0, nil, err
		}
		t, err := s.table(db, name)
		return encBinary, t, err
	case flight.DescriptorCMD:
		cmd := &setatspb.WriteCommand{}
		enc, err := decodeMsg(d.GetCmd(), cmd, "WriteCommand")
		if err != nil {
			return enc, nil, err
		}
		if err := s.checkCatalog(cmd.GetCatalog()); err != nil {
			return enc, nil, err
		}
		db := dbName(cmd.GetDatabase())
		t, err := s.table(db, cmd.GetTable())
		if err == nil || status.Code(err) != codes.NotFound || cmd.GetCreateIfAbsent() == nil {
			return enc, t, err
		}
		spec := proto.Clone(cmd.GetCreateIfAbsent()).(*setatspb.TableSpec)
		if spec.Database == "" {
			spec.Database = db
		}
		if spec.Table == "" {
			spec.Table = cmd.GetTable()
		}
		if dbName(spec.Database) != db || spec.Table != cmd.GetTable() {
			return enc, nil, status.Errorf(codes.InvalidArgument,
				"WriteCommand names table %s.%s but create_if_absent names %s.%s",
				db, cmd.GetTable(), dbName(spec.Database), spec.Table)
		}
		t, created, err := s.createTable(spec, true, true)
		if err != nil {
			return enc, nil, err
		}
		if created {
			s.log.Info("table auto-created by DoPut", "table", tableLabel(t.Database, t.Name), "table_id", t.Info.GetTableId())
		}
		return enc, t, nil
	}
	return 0, nil, status.Errorf(codes.InvalidArgument, "DoPut: unsupported descriptor type %s", d.GetType())
}
