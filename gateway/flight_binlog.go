package gateway

import (
	"context"
	"github.com/setats/setats/catalog"

	"github.com/apache/arrow-go/v18/arrow/flight"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/setats/setats/gateway/binlog"
	"github.com/setats/setats/gateway/store"
	"github.com/setats/setats/proto/setatspb"
)

// Binlog actions (SPEC section 8, proto/README.md "Binlog actions"): the seed's binlog functions.
const (
	ActionBinlogAcquireSlot       = "binlog-acquire-slot"
	ActionBinlogReleaseSlot       = "binlog-release-slot"
	ActionBinlogRegisterSyncPoint = "binlog-register-sync-point"
	ActionBinlogSyncPoint         = "binlog-sync-point"
	ActionBinlogConsumed          = "binlog-consumed"
	ActionBinlogProgress          = "binlog-progress"
	ActionBinlogSlots             = "binlog-slots"
	ActionBinlogDropSlot          = "binlog-drop-slot"
)

var binlogActionTypes = []*flight.ActionType{
	{Type: ActionBinlogAcquireSlot, Description: "body: AcquireSlotRequest; result: SlotInfo"},
	{Type: ActionBinlogReleaseSlot, Description: "body: SlotRequest; result: Empty"},
	{Type: ActionBinlogRegisterSyncPoint, Description: "body: RegisterSyncPointRequest; result: SlotInfo"},
	{Type: ActionBinlogSyncPoint, Description: "body: SlotRequest; result: SyncPointResponse"},
	{Type: ActionBinlogConsumed, Description: "body: SlotRequest (table only); result: ConsumedResponse"},
	{Type: ActionBinlogProgress, Description: "body: SlotRequest (slot \"\" = all); result: ProgressResponse"},
	{Type: ActionBinlogSlots, Description: "body: SlotRequest (table only); result: ListSlotsResponse"},
	{Type: ActionBinlogDropSlot, Description: "body: SlotRequest; result: Empty"},
}

// binlogAction serves the binlog actions; ok is false for any other type. Each decodes its
// body, checks the catalog context, and calls one method of the table's binlog.Slots.
//
// Privileges (authz.go): read on the table for every action but binlog-drop-slot, which needs
// admin: a consumer job holds read, like any changelog reader.
func (s *Server) binlogAction(ctx context.Context, typ string, body []byte) (enc encoding, res proto.Message, err error, ok bool) {
	switch typ {
	case ActionBinlogAcquireSlot:
		req := &setatspb.AcquireSlotRequest{}
		var cat catalog.Catalog
		if enc, cat, err = s.decodeChecked(body, req, typ, req.GetCatalog); err != nil {
			return enc, nil, err, true
		}
		if err := s.authorize(ctx, typ, privRead, dbName(req.GetDatabase()), req.GetTable()); err != nil {
			return enc, nil, err, true
		}
		res, err = s.withSlots(cat, req.GetDatabase(), req.GetTable(), func(sl *binlog.Slots) (proto.Message, error) {
			r, created, err := sl.Acquire(req.GetSlot(), req.GetOwner(), req.GetReset_(), req.GetLeaseMs())
			if err != nil {
				return nil, err
			}
			info := slotInfoPB(sl, r)
			info.Created = created
			return info, nil
		})
		return enc, res, err, true

	case ActionBinlogRegisterSyncPoint:
		req := &setatspb.RegisterSyncPointRequest{}
		var cat catalog.Catalog
		if enc, cat, err = s.decodeChecked(body, req, typ, req.GetCatalog); err != nil {
			return enc, nil, err, true
		}
		if err := s.authorize(ctx, typ, privRead, dbName(req.GetDatabase()), req.GetTable()); err != nil {
			return enc, nil, err, true
		}
		if len(req.GetPoints()) > maxSyncPoints {
			return enc, nil, status.Errorf(codes.InvalidArgument, "%s: %d sync points, at most %d per call", typ, len(req.GetPoints()), maxSyncPoints), true
		}
		pts := make([]binlog.Point, 0, len(req.GetPoints()))
		for _, p := range req.GetPoints() {
			pts = append(pts, binlog.Point{Bucket: store.BucketID{Partition: p.GetPartition(), Bucket: p.GetBucket()}, Offset: p.GetOffset()})
		}
		res, err = s.withSlots(cat, req.GetDatabase(), req.GetTable(), func(sl *binlog.Slots) (proto.Message, error) {
			r, err := sl.Register(req.GetSlot(), req.GetOwner(), pts, req.GetCheckpoint())
			if err != nil {
				return nil, err
			}
			return slotInfoPB(sl, r), nil
		})
		return enc, res, err, true

	case ActionBinlogReleaseSlot, ActionBinlogSyncPoint, ActionBinlogConsumed, ActionBinlogProgress,
		ActionBinlogSlots, ActionBinlogDropSlot:
		req := &setatspb.SlotRequest{}
		var cat catalog.Catalog
		if enc, cat, err = s.decodeChecked(body, req, typ, req.GetCatalog); err != nil {
			return enc, nil, err, true
		}
		priv := privRead
		if typ == ActionBinlogDropSlot {
			priv = privAdmin
		}
		if err := s.authorize(ctx, typ, priv, dbName(req.GetDatabase()), req.GetTable()); err != nil {
			return enc, nil, err, true
		}
		res, err = s.withSlots(cat, req.GetDatabase(), req.GetTable(), func(sl *binlog.Slots) (proto.Message, error) {
			return slotRequest(typ, req, sl)
		})
		return enc, res, err, true
	}
	return encBinary, nil, nil, false
}

// maxSyncPoints bounds the points of one register call (buckets of a table over partitions).
const maxSyncPoints = 1 << 16

// withSlots runs fn with the slot rules of db.table while its store is held open.
func (s *Server) withSlots(cat catalog.Catalog, db, table string, fn func(sl *binlog.Slots) (proto.Message, error)) (proto.Message, error) {
	ot, err := s.openTable(cat, dbName(db), table)
	if err != nil {
		return nil, err
	}
	var res proto.Message
	err = ot.use(s, func(*storeTable) error {
		var err error
		res, err = fn(ot.slots)
		if _, isProgress := res.(*setatspb.ProgressResponse); err == nil && isProgress {
			s.updateSlotMetrics(ot)
		}
		return err
	})
	return res, err
}

// slotRequest serves the actions whose body is a SlotRequest.
func slotRequest(typ string, req *setatspb.SlotRequest, sl *binlog.Slots) (proto.Message, error) {
	switch typ {
	case ActionBinlogReleaseSlot:
		return &setatspb.Empty{}, sl.Release(req.GetSlot(), req.GetOwner())
	case ActionBinlogDropSlot:
		ok, err := sl.Drop(req.GetSlot())
		if err == nil && !ok && !req.GetIgnoreIfNotExists() {
			err = status.Errorf(codes.NotFound, "slot %q of table %s does not exist", req.GetSlot(), sl.Table())
		}
		return &setatspb.Empty{}, err
	case ActionBinlogSlots:
		recs, err := sl.List()
		if err != nil {
			return nil, err
		}
		out := &setatspb.ListSlotsResponse{}
		for _, r := range recs {
			if req.GetSlot() == "" || req.GetSlot() == r.Name {
				out.Slots = append(out.Slots, slotInfoPB(sl, r))
			}
		}
		return out, nil
	case ActionBinlogSyncPoint:
		rows, err := sl.Progress(req.GetSlot())
		if err != nil {
			return nil, err
		}
		if req.GetSlot() == "" {
			return nil, status.Errorf(codes.InvalidArgument, "%s: the slot is empty", typ)
		}
		out := &setatspb.SyncPointResponse{Slot: req.GetSlot(), Checkpoint: req.GetCheckpoint()}
		for _, pr := range rows {
			if pr.Checkpoint == req.GetCheckpoint() {
				out.Buckets = append(out.Buckets, &setatspb.BucketSyncPoint{Partition: pr.Bucket.Partition, Bucket: pr.Bucket.Bucket,
					LastSyncPoint: pr.ConsumedOffset, LatestSyncPoint: pr.EndOffset, Registered: pr.Registered})
			}
		}
		return out, nil
	case ActionBinlogConsumed:
		all, per, err := sl.Consumed()
		if err != nil {
			return nil, err
		}
		out := &setatspb.ConsumedResponse{Consumed: all}
		for _, bc := range per {
			out.Buckets = append(out.Buckets, &setatspb.BucketConsumed{Partition: bc.Bucket.Partition, Bucket: bc.Bucket.Bucket,
				EndOffset: bc.EndOffset, LowestSyncPoint: bc.LowestPoint, Consumed: bc.Consumed})
		}
		return out, nil
	case ActionBinlogProgress:
		rows, err := sl.Progress(req.GetSlot())
		if err != nil {
			return nil, err
		}
		out := &setatspb.ProgressResponse{Rows: make([]*setatspb.ProgressRow, 0, len(rows))}
		for _, pr := range rows {
			out.Rows = append(out.Rows, &setatspb.ProgressRow{
				Slot: pr.Slot, Partition: pr.Bucket.Partition, Bucket: pr.Bucket.Bucket, Checkpoint: pr.Checkpoint,
				ConsumedOffset: pr.ConsumedOffset, EndOffset: pr.EndOffset, Unconsumed: pr.Unconsumed,
				ConsumedCommitMs: pr.ConsumedCommitMs, LatestCommitMs: pr.LatestCommitMs, LagMs: pr.LagMs,
				UpdatedAtMs: pr.UpdatedMs, ExpiresAtMs: pr.ExpiresMs, Status: slotStatusPB(pr.Status), Registered: pr.Registered,
			})
		}
		return out, nil
	}
	return nil, status.Errorf(codes.InvalidArgument, "unknown action type %q", typ)
}

func slotStatusPB(st store.SlotStatus) setatspb.SlotStatus {
	switch st {
	case store.SlotActive:
		return setatspb.SlotStatus_SLOT_ACTIVE
	case store.SlotExpired:
		return setatspb.SlotStatus_SLOT_EXPIRED
	case store.SlotLost:
		return setatspb.SlotStatus_SLOT_LOST
	}
	return setatspb.SlotStatus_SLOT_STATUS_UNSPECIFIED
}

func slotInfoPB(sl *binlog.Slots, r store.SlotRecord) *setatspb.SlotInfo {
	info := &setatspb.SlotInfo{Name: r.Name, Status: slotStatusPB(r.Status), Reason: r.Reason, Owner: r.Owner,
		OwnerLeaseUntilMs: r.OwnerLeaseMs, CreatedAtMs: r.CreatedMs, UpdatedAtMs: r.UpdatedMs}
	if r.Status == store.SlotActive {
		info.ExpiresAtMs = r.UpdatedMs + sl.TTLMs()
	}
	for _, id := range r.SortedBuckets() {
		p := r.Points[id]
		info.Buckets = append(info.Buckets, &setatspb.SlotBucket{Partition: id.Partition, Bucket: id.Bucket,
			CheckpointOffset: p.Checkpoint, RunningOffset: p.Running, CheckpointMs: p.CheckpointMs, RunningMs: p.RunningMs})
	}
	return info
}
