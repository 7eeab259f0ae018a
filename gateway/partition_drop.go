package gateway

import (
	"context"
	"errors"

	"github.com/apache/arrow-go/v18/arrow/flight"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/setats/setats/gateway/partname"
	"github.com/setats/setats/gateway/row"
	"github.com/setats/setats/gateway/store"
	"github.com/setats/setats/internal/culprit"
	"github.com/setats/setats/proto/setatspb"
)

// ActionDropPartition drops one partition of a table (proto/README.md "Dropping partitions").
const ActionDropPartition = "drop-partition"

func init() {
	actionTypes = append(actionTypes, &flight.ActionType{
		Type: ActionDropPartition, Description: "body: DropPartitionRequest; result: DropPartitionResponse",
	})
}

// partitionAction serves drop-partition; ok is false for other action types.
//
// The caller needs admin on the table (as for drop-table). The partition is named by
// partition_spec (every partition key -> its value's string form) or by its name; both, neither
// (on a partitioned table), or an unpartitioned table are InvalidArgument, as is a spec or name
// that is not a partition name of the table (partname.FromSpec, partname.Validate; bounded by
// partname.MaxSpecBytes). A partition without any bucket is NotFound naming it, unless
// ignore_if_not_exists (then dropped = false). The store drops it in one atomic batch
// (store.Table.DropPartition), then PARTITION_DROPPED is published and the offset gauges of its
// buckets are removed.
func (s *Server) partitionAction(ctx context.Context, typ string, body []byte) (encoding, proto.Message, error, bool) {
	if typ != ActionDropPartition {
		return encBinary, nil, nil, false
	}
	req := &setatspb.DropPartitionRequest{}
	enc, cat, err := s.decodeChecked(body, req, typ, req.GetCatalog)
	if err != nil {
		return enc, nil, err, true
	}
	db := dbName(req.GetDatabase())
	if err := s.authorize(ctx, typ, privAdmin, db, req.GetTable()); err != nil {
		return enc, nil, err, true
	}
	ot, err := s.openTable(cat, db, req.GetTable())
	if err != nil {
		return enc, nil, err, true
	}
	name, err := requestedPartition(ot, req)
	if err != nil {
		return enc, nil, err, true
	}
	var r store.DropResult
	err = ot.use(s, func(*storeTable) error {
		var err error
		r, err = ot.slots.DropPartition(name)
		return err
	})
	if errors.Is(err, store.ErrNotFound) && req.GetIgnoreIfNotExists() {
		return enc, &setatspb.DropPartitionResponse{Partition: name}, nil, true
	}
	if err != nil {
		return enc, nil, statusOr(err, codes.Internal, "%s %s partition %q", typ, ot.label, name), true
	}
	res := &setatspb.DropPartitionResponse{Partition: name, StateRows: r.StateRows, DroppedMs: r.DroppedMs, Dropped: true}
	for _, b := range r.Buckets {
		res.Buckets = append(res.Buckets, &setatspb.BucketOffsets{Partition: b.Partition, Bucket: b.Bucket, StartOffset: b.EndOffset, EndOffset: b.EndOffset})
		s.metrics.forgetBucket(ot.label, b.Partition, b.Bucket)
	}
	_ = ot.use(s, func(*storeTable) error { s.updateSlotMetrics(ot); return nil })
	s.nats.publish(&setatspb.Notification{
		Kind: setatspb.NotificationKind_PARTITION_DROPPED, Database: ot.tbl.Database, Table: ot.tbl.Name,
		Partition: name, TableId: ot.tbl.Info.GetTableId(), CommitMs: r.DroppedMs,
	})
	s.log.Info("partition dropped", "table", ot.label, "partition", name, "buckets", len(r.Buckets), "state_rows", r.StateRows)
	return enc, res, nil, true
}

// requestedPartition returns the partition name a DropPartitionRequest names (see
// partitionAction).
func requestedPartition(ot *openTable, req *setatspb.DropPartitionRequest) (string, error) {
	spec, name := req.GetPartitionSpec(), req.GetPartition()
	switch {
	case len(ot.tbl.PartitionKeys) == 0:
		return "", status.Errorf(codes.InvalidArgument, "%s: table %s is not partitioned: it has no partition to drop (drop-table drops it)", ActionDropPartition, ot.label)
	case len(spec) > 0 && name != "":
		return "", status.Errorf(codes.InvalidArgument, "%s: give either partition_spec or partition, not both", ActionDropPartition)
	case len(spec) > 0:
		n, err := partname.FromSpec(ot.tbl, spec)
		if err != nil {
			return "", statusOr(err, codes.InvalidArgument, "%s", ActionDropPartition)
		}
		return n, nil
	case name == "":
		return "", status.Errorf(codes.InvalidArgument, "%s: table %s: the partition is missing (partition_spec or partition)", ActionDropPartition, ot.label)
	case len(name) > partname.MaxSpecBytes:
		return "", status.Errorf(codes.InvalidArgument, "%s: table %s: partition %s is longer than %d bytes", ActionDropPartition, ot.label, culprit.Quote(name), partname.MaxSpecBytes)
	}
	if err := partname.Validate(ot.tbl, name); err != nil {
		return "", statusOr(err, codes.InvalidArgument, "%s", ActionDropPartition)
	}
	return name, nil
}

// sendChangelogEnd ends a changelog DoGet of a dropped partition's bucket: an empty record batch
// whose app_metadata is a ChangelogEnd END_PARTITION_DROPPED (in the ticket's encoding), after
// which the stream completes without an error (proto/README.md "Dropping partitions").
func sendChangelogEnd(w *flight.Writer, bld *row.ChangelogBuilder, enc encoding, id store.BucketID, end int64) error {
	meta, err := encodeMsg(enc, &setatspb.ChangelogEnd{
		Reason: setatspb.ChangelogEndReason_END_PARTITION_DROPPED, Partition: id.Partition, Bucket: id.Bucket, EndOffset: end,
	})
	if err != nil {
		return err
	}
	rec := bld.NewRecordBatch()
	defer rec.Release()
	return w.WriteWithAppMetadata(rec, meta)
}
