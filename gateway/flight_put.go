package gateway

import (
	"context"
	"fmt"
	"time"

	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/setats/setats/catalog"
	"github.com/setats/setats/gateway/ipcguard"
	"github.com/setats/setats/gateway/row"
	"github.com/setats/setats/gateway/store"
	"github.com/setats/setats/proto/setatspb"
)

// DoPut writes upserts (SPEC section 3, proto WriteCommand). The descriptor of the first message
// is a WriteCommand (CMD) or a PATH [db, table] / [table]. Each record batch is decoded and
// validated whole (row.Decode), then applied atomically and durably (store.Table.Apply); only
// once it is durable (store.Pending.Wait: its Pebble batch fsynced) is its PutResult sent,
// app_metadata = WriteAck in the WriteCommand's encoding (binary for PATH). PutResults come in
// batch order. A bad batch ends the call with its status error (InvalidArgument naming table and
// column, ResourceExhausted for a message over --max-message-bytes) after the acknowledgements of
// the batches before it, and nothing of it is applied; the batches acknowledged before it stay
// applied, and no later batch is applied.
//
// The stream is a pipeline of three goroutines, so that one stream keeps both cores and the disk
// busy and an fsync stall does not hold up the batches behind it: receivePut reads and decodes
// the next batch, DoPut applies batches one after the other (a batch's lookups see the batches
// before it even while their fsync runs), and sendAcks waits for each batch's fsync in order
// and sends its PutResult. At most putPipelineDepth batches are applied and not yet acknowledged.
//
// Metrics and notifications of a batch come from the store's commit hook (Server.committed), so
// a batch that became durable is announced even when its client left before the acknowledgement.
// On shutdown a stream waiting for its next batch ends at once with Unavailable, after the
// acknowledgements of the batches it applied (the sink reconnects and resends the rest).
func (f *flightService) DoPut(stream flight.FlightService_DoPutServer) error {
	s := f.s
	// Every message goes through the IPC guard before arrow-go decodes it (ipcguard.Reader says
	// which upstream behaviour it covers): a forged schema or batch is refused before anything
	// is allocated from it.
	rdr, err := flight.NewRecordReader(ipcguard.NewReader(stream, s.ipcLimits()), ipc.WithAllocator(s.mem))
	if err != nil {
		return ipcStatus(err, "DoPut: read the Arrow IPC schema message")
	}
	ctx := stream.Context()
	enc, tbl, cmd, err := s.resolveWrite(ctx, rdr.LatestFlightDescriptor())
	if err != nil {
		rdr.Release()
		return err
	}
	dm, err := newDeliveryMode(cmd)
	if err != nil {
		rdr.Release()
		return err
	}
	ot, err := s.tables.open(tbl)
	if err != nil {
		rdr.Release()
		return err
	}
	label := ot.label
	authChanged := s.auth.Changed() // a users file change: check the grant again

	quit := make(chan struct{})
	defer close(quit)
	in := make(chan decodedBatch, 1)
	go receivePut(rdr, ot.tbl, in, quit) // releases rdr
	applied := make(chan appliedBatch, putPipelineDepth)
	ackFailed := make(chan struct{})
	ackErr := make(chan error, 1)
	go func() { ackErr <- s.sendAcks(stream, enc, ot, applied, ackFailed) }()

	// Bytes of the batches applied and not yet acknowledged count against the gateway-wide
	// in-flight budget (putbudget.go); waiting for it ends with the stream or the gateway.
	budgetCtx, budgetCancel := context.WithCancel(ctx)
	defer budgetCancel()
	go func() {
		select {
		case <-s.quit:
			budgetCancel()
		case <-budgetCtx.Done():
		}
	}()
	var failure error
	var seq int64
apply:
	for {
		var d decodedBatch
		var ok bool
		select {
		case d, ok = <-in:
		case <-ackFailed:
			break apply
		case <-s.quit:
			// Shutting down: a stream waiting for its next batch ends at once (the batches
			// applied so far are still acknowledged, below); only a batch already received goes on.
			select {
			case d, ok = <-in:
			default:
				failure = status.Errorf(codes.Unavailable,
					"table %s: gateway is shutting down; batches from batch_seq %d on were not applied, resend them to another gateway or after the restart", label, seq)
				break apply
			}
		case <-authChanged:
			if err := s.authorize(ctx, "DoPut", privWrite, tbl.Database, tbl.Name); err != nil {
				failure = s.putFailed(label, seq, err)
				break apply
			}
			authChanged = s.auth.Changed()
			continue
		}
		if !ok {
			break
		}
		if d.err != nil {
			if d.malformed {
				failure = batchError(ipcStatus(d.err, "table %s: malformed Arrow IPC", label), codes.InvalidArgument, label, seq)
			} else {
				failure = batchError(d.err, codes.InvalidArgument, label, seq)
			}
			failure = s.putFailed(label, seq, failure)
			break
		}
		a := appliedBatch{seq: seq, rows: d.b.Len(), begin: d.begin, sequence: dm.sequence(seq)}
		if n, err := s.limits.put.acquire(budgetCtx, d.bytes); err != nil {
			failure = status.Errorf(codes.Unavailable,
				"table %s: gateway is shutting down; batches from batch_seq %d on were not applied, resend them to another gateway or after the restart", label, seq)
			break
		} else {
			a.bytes = n
		}
		if a.rows > 0 || dm.writer != "" || dm.staging != nil {
			if dm.staging != nil {
				if err := s.budget.wait(ctx, s.metrics.delivery.budgetWaits.Inc); err != nil {
					s.limits.put.release(a.bytes)
					failure = s.putFailed(label, seq, batchError(err, codes.Canceled, label, seq))
					break
				}
			}
			err := ot.use(s, func(st *storeTable) error {
				var err error
				a.p, err = dm.apply(ctx, st, d.b, seq)
				return err
			})
			if err != nil {
				s.limits.put.release(a.bytes)
				failure = s.putFailed(label, seq, batchError(err, codes.Internal, label, seq))
				break
			}
			s.metrics.pendingWrites.Inc()
			go func(p *store.Pending) {
				<-p.Done()
				s.metrics.pendingWrites.Dec()
			}(a.p)
		}
		select {
		case applied <- a:
		case <-ackFailed:
			s.limits.put.release(a.bytes) // the Pending publishes itself; its bytes are out of our hands
			break apply
		}
		seq++
	}
	close(applied)
	// The acknowledgements of the batches before a failed one go out before its error.
	if err := <-ackErr; err != nil {
		return err
	}
	return failure
}

// ipcLimits are the bounds of ipcguard for client IPC streams: the defaults of ipcguard, and a
// record batch body of at most --max-message-bytes (also once decompressed).
func (s *Server) ipcLimits() ipcguard.Limits {
	return ipcguard.Limits{MaxBodyBytes: int64(s.opts.MaxMessageBytes)}
}

// ipcStatus maps an error of a guarded IPC reader: a message the guard refused is InvalidArgument
// with the guard's reason after the formatted prefix; anything else as statusOr does.
func ipcStatus(err error, format string, args ...any) error {
	if e, ok := ipcguard.AsError(err); ok {
		return status.Errorf(codes.InvalidArgument, "%s: %s", fmt.Sprintf(format, args...), e.Error())
	}
	return statusOr(err, codes.InvalidArgument, format, args...)
}

// putPipelineDepth bounds the batches of one DoPut stream that are applied but not yet
// acknowledged.
const putPipelineDepth = 16

// decodedBatch is a record batch as receivePut hands it on: the decoded rows and the time the
// record arrived, or the error that ends the stream (malformed: the IPC stream, not the batch).
type decodedBatch struct {
	b         *row.Batch
	bytes     int64 // Arrow bytes of the record batch (in-flight budget)
	begin     time.Time
	err       error
	malformed bool
}

// appliedBatch is a batch applied to the store (p nil for an empty batch), waiting for its
// acknowledgement.
type appliedBatch struct {
	seq      int64
	bytes    int64 // taken from the in-flight budget, given back once acknowledged
	rows     int
	begin    time.Time
	p        *store.Pending
	sequence int64 // the writer sequence of the batch (WriteCommand.writer_id), else 0
}

// receivePut reads and decodes the record batches of a DoPut stream into in, ending (and closing
// in) after the first error or at the end of the stream, or when quit is closed. It owns and
// releases rdr. It may outlive DoPut, blocked in Recv, until gRPC ends the call.
func receivePut(rdr *flight.Reader, tbl *catalog.Table, in chan<- decodedBatch, quit <-chan struct{}) {
	defer rdr.Release()
	defer close(in)
	for rdr.Next() {
		begin := time.Now()
		rec := rdr.RecordBatch()
		b, err := row.Decode(tbl, rec)
		select {
		case in <- decodedBatch{b: b, bytes: recordBytes(rec), begin: begin, err: err}:
		case <-quit:
			return
		}
		if err != nil {
			return
		}
	}
	if err := rdr.Err(); err != nil {
		select {
		case in <- decodedBatch{err: err, malformed: true}:
		case <-quit:
		}
	}
}

// sendAcks waits, in batch order, until each applied batch is durable, records it (committed)
// and sends its PutResult. After the first failure (a failed fsync, a failed Send) it closes
// failed, sends nothing more and drains applied; it returns that failure once applied is closed.
func (s *Server) sendAcks(stream flight.FlightService_DoPutServer, enc encoding, ot *openTable, applied <-chan appliedBatch, failed chan<- struct{}) error {
	var failure error
	fail := func(err error) {
		failure = err
		close(failed)
	}
	for a := range applied {
		if failure != nil {
			s.limits.put.release(a.bytes)
			continue // not acknowledged; the Pending publishes itself when durable
		}
		ack := &setatspb.WriteAck{BatchSeq: a.seq, Rows: int64(a.rows), Sequence: a.sequence}
		if a.p != nil {
			c, err := a.p.Wait()
			if err != nil {
				s.limits.put.release(a.bytes)
				fail(s.putFailed(ot.label, a.seq, batchError(err, codes.Internal, ot.label, a.seq)))
				continue
			}
			ack.ChangelogRows = c.ChangelogRows
			ack.CommitMs = c.CommitMs
			ack.Duplicate = c.Duplicate
			ack.Staged = c.Staged
			for _, bo := range c.Buckets {
				ack.Buckets = append(ack.Buckets, bucketOffsetsPB(bo))
			}
			if c.Duplicate {
				s.metrics.delivery.duplicates.WithLabelValues(ot.label).Inc()
			} else {
				if c.Staged {
					s.metrics.delivery.stagedBatch.WithLabelValues(ot.label).Inc()
				}
				s.metrics.writeLatency.WithLabelValues(ot.label).Observe(time.Since(a.begin).Seconds())
			}
		}
		s.limits.put.release(a.bytes)
		payload, err := encodeMsg(enc, ack)
		if err != nil {
			fail(err)
			continue
		}
		if err := stream.Send(&flight.PutResult{AppMetadata: payload}); err != nil {
			fail(err)
		}
	}
	return failure
}

// batchError names the batch (its batch_seq in the stream) in the error of a rejected record
// batch, so that a client that sent several knows which one failed; a non-status err gets code.
func batchError(err error, code codes.Code, label string, seq int64) error {
	return wrapStatus(statusOr(err, code, "table %s", label), "batch %d", seq)
}

// putFailed counts a rejected batch and returns err.
func (s *Server) putFailed(label string, seq int64, err error) error {
	s.metrics.writeErrors.WithLabelValues(label, codeOf(err).String()).Inc()
	s.log.Debug("DoPut batch rejected", "table", label, "batch_seq", seq, "err", err)
	return err
}

// committed records a durable commit of table t (metrics label label): metrics, then NATS
// notifications (NEW_BUCKET for each bucket that received its first row, NEW_DATA for each bucket
// the commit touched). It is the store's commit hook (store.Options.OnCommit), so it runs for
// every durable batch, also when the client that wrote it is gone.
func (s *Server) committed(t *catalog.Table, label string, c store.Commit) {
	s.metrics.observeWrite(label, c.Rows, c.ChangelogKinds)
	for _, bo := range c.Buckets {
		s.metrics.setBucketOffsets(label, bo.Partition, bo.Bucket, bo.StartOffset, bo.EndOffset)
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
// The WriteCommand is returned too (nil for a PATH descriptor).
func (s *Server) resolveWrite(ctx context.Context, d *flight.FlightDescriptor) (encoding, *catalog.Table, *setatspb.WriteCommand, error) {
	var cmd *setatspb.WriteCommand
	enc, t, err := s.resolveWriteTable(ctx, d, &cmd)
	return enc, t, cmd, err
}

func (s *Server) resolveWriteTable(ctx context.Context, d *flight.FlightDescriptor, out **setatspb.WriteCommand) (encoding, *catalog.Table, error) {
	if d == nil {
		return 0, nil, status.Error(codes.InvalidArgument, "DoPut: the first message carries no flight descriptor")
	}
	switch d.GetType() {
	case flight.DescriptorPATH:
		db, name, err := pathTable(d.GetPath())
		if err != nil {
			return 0, nil, err
		}
		if err := s.authorize(ctx, "DoPut", privWrite, db, name); err != nil {
			return 0, nil, err
		}
		t, err := s.table(s.cat, db, name)
		return encBinary, t, err
	case flight.DescriptorCMD:
		cmd := &setatspb.WriteCommand{}
		enc, err := decodeMsg(d.GetCmd(), cmd, "WriteCommand")
		if err != nil {
			return enc, nil, err
		}
		*out = cmd
		cat, err := s.catalogFor(cmd.GetCatalog())
		if err != nil {
			return enc, nil, err
		}
		db := dbName(cmd.GetDatabase())
		if err := s.authorize(ctx, "DoPut", privWrite, db, cmd.GetTable()); err != nil {
			return enc, nil, err
		}
		t, err := s.table(cat, db, cmd.GetTable())
		if err == nil || codeOf(err) != codes.NotFound || cmd.GetCreateIfAbsent() == nil {
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
		if err := s.authorize(ctx, "DoPut (create_if_absent)", privAdmin, db, spec.Table); err != nil {
			return enc, nil, err
		}
		t, created, err := s.createTable(cat, spec, true, true)
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
