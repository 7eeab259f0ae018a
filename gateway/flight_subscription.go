package gateway

import (
	"context"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/setats/setats/gateway/auth"
	"github.com/setats/setats/gateway/subscribe"
	"github.com/setats/setats/gateway/subscribe/mysql"
	"github.com/setats/setats/gateway/subscribe/pg"
	"github.com/setats/setats/proto/setatspb"
)

// Subscription actions (proto/README.md "Subscription channels", SPEC section 11).
const (
	ActionSubscriptionCreate      = "subscription-create"
	ActionSubscriptionList        = "subscription-list"
	ActionSubscriptionDescribe    = "subscription-describe"
	ActionSubscriptionDrop        = "subscription-drop"
	ActionSubscriptionGroups      = "subscription-groups"
	ActionSubscriptionCreateGroup = "subscription-create-group"
	ActionSubscriptionSeek        = "subscription-seek"
	ActionSubscriptionCommit      = "subscription-commit"
)

func init() {
	actionTypes = append(actionTypes,
		&flight.ActionType{Type: ActionSubscriptionCreate, Description: "body: CreateChannelRequest; result: ChannelInfo"},
		&flight.ActionType{Type: ActionSubscriptionList, Description: "body: ListChannelsRequest; result: ListChannelsResponse"},
		&flight.ActionType{Type: ActionSubscriptionDescribe, Description: "body: ChannelRequest; result: ChannelInfo"},
		&flight.ActionType{Type: ActionSubscriptionDrop, Description: "body: ChannelRequest; result: Empty"},
		&flight.ActionType{Type: ActionSubscriptionGroups, Description: "body: ChannelRequest; result: ListGroupsResponse"},
		&flight.ActionType{Type: ActionSubscriptionCreateGroup, Description: "body: CreateGroupRequest; result: GroupInfo"},
		&flight.ActionType{Type: ActionSubscriptionSeek, Description: "body: SeekRequest; result: SeekResponse"},
		&flight.ActionType{Type: ActionSubscriptionCommit, Description: "body: CommitRequest; result: Empty"},
	)
}

// subscriptionSources are the capture sources by URL scheme.
var subscriptionSources = map[string]subscribe.SourceFactory{
	"postgres": pg.New,
	"mysql":    mysql.New,
}

// openSubscriptions opens the channel manager of the warehouse.
func (s *Server) openSubscriptions(warehouseDir string) error {
	m, err := subscribe.Open(subscribe.Options{
		WarehouseDir: warehouseDir,
		Sources:      subscriptionSources,
		Log:          s.log,
		Clock:        s.opts.Clock,
		Registerer:   s.metrics.reg,
	})
	if err != nil {
		return err
	}
	s.subs = m
	return nil
}

// subscriptionAction serves the subscription-* actions; handled=false for other types.
func (s *Server) subscriptionAction(ctx context.Context, typ string, body []byte) (encoding, proto.Message, bool, error) {
	if !strings.HasPrefix(typ, "subscription-") {
		return encBinary, nil, false, nil
	}
	enc, res, err := s.subscriptionActionDo(ctx, typ, body)
	return enc, res, true, subscribeStatus(err)
}

// subscriptionPrivilege is what each subscription action needs of the gateway user on its
// channel (gateway/README.md "Security"): admin to create or drop a channel or create a group,
// read for the rest. subscription-list needs any user and lists the channels the user may read.
var subscriptionPrivilege = map[string]auth.Privilege{
	ActionSubscriptionCreate:      privAdmin,
	ActionSubscriptionDrop:        privAdmin,
	ActionSubscriptionCreateGroup: privAdmin,
	ActionSubscriptionDescribe:    privRead,
	ActionSubscriptionGroups:      privRead,
	ActionSubscriptionSeek:        privRead,
	ActionSubscriptionCommit:      privRead,
}

// channelOf returns the channel a subscription request names.
type channelOf interface {
	proto.Message
	GetChannel() string
}

// decodeChannel decodes a subscription action's body and authorizes the caller on the channel it
// names (subscriptionPrivilege) before anything looks the channel up, so that a caller without
// the grant learns nothing about it.
func (s *Server) decodeChannel(ctx context.Context, typ string, body []byte, req channelOf) (encoding, error) {
	enc, err := decodeMsg(body, req, typ+" body")
	if err != nil {
		return enc, err
	}
	p, ok := subscriptionPrivilege[typ]
	if !ok {
		return enc, status.Errorf(codes.Internal, "%s: no privilege is defined for it", typ)
	}
	return enc, s.authorizeChannel(ctx, typ, p, req.GetChannel())
}

// subscriptionActionDo runs one subscription action. Seek and commit (the consumer's calls) need
// read on the channel and the consumer group's credentials (SPEC section 11), checked by
// s.consumer.
func (s *Server) subscriptionActionDo(ctx context.Context, typ string, body []byte) (encoding, proto.Message, error) {
	m := s.subs
	switch typ {
	case ActionSubscriptionCreate:
		req := &setatspb.CreateChannelRequest{}
		enc, err := s.decodeChannel(ctx, typ, body, req)
		if err != nil {
			return enc, nil, err
		}
		ctx, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		ch, err := m.Create(ctx, subscribe.Spec{
			Name: req.GetChannel(), SourceURL: req.GetSourceUrl(), Tables: req.GetTables(),
			Slot: req.GetSlot(), Publication: req.GetPublication(), RetentionMs: req.GetRetentionMs(),
		}, req.GetStart())
		if err != nil {
			return enc, nil, err
		}
		return enc, s.channelInfo(ch), nil
	case ActionSubscriptionList:
		enc, err := decodeMsg(body, &setatspb.ListChannelsRequest{}, typ+" body")
		if err != nil {
			return enc, nil, err
		}
		if err := s.authenticated(ctx, typ); err != nil {
			return enc, nil, err
		}
		res := &setatspb.ListChannelsResponse{}
		for _, ch := range m.List() {
			if s.auth.SeesChannel(ctx, ch.Name()) { // only the channels the caller may read
				res.Channels = append(res.Channels, s.channelInfo(ch))
			}
		}
		return enc, res, nil
	case ActionSubscriptionDescribe, ActionSubscriptionDrop, ActionSubscriptionGroups:
		req := &setatspb.ChannelRequest{}
		enc, err := s.decodeChannel(ctx, typ, body, req)
		if err != nil {
			return enc, nil, err
		}
		if typ == ActionSubscriptionDrop {
			return enc, &setatspb.Empty{}, m.Drop(ctx, req.GetChannel(), req.GetIgnoreIfNotExists())
		}
		ch, err := m.Get(req.GetChannel())
		if err != nil {
			return enc, nil, err
		}
		if typ == ActionSubscriptionDescribe {
			return enc, s.channelInfo(ch), nil
		}
		gs, err := ch.Groups()
		if err != nil {
			return enc, nil, err
		}
		res := &setatspb.ListGroupsResponse{}
		for i := range gs {
			res.Groups = append(res.Groups, groupInfo(ch, &gs[i]))
		}
		return enc, res, nil
	case ActionSubscriptionCreateGroup:
		req := &setatspb.CreateGroupRequest{}
		enc, err := s.decodeChannel(ctx, typ, body, req)
		if err != nil {
			return enc, nil, err
		}
		ch, err := m.Get(req.GetChannel())
		if err != nil {
			return enc, nil, err
		}
		g, err := ch.CreateGroup(req.GetGroup(), req.GetUser(), req.GetPassword())
		if err != nil {
			return enc, nil, err
		}
		return enc, groupInfo(ch, &g), nil
	case ActionSubscriptionSeek:
		req := &setatspb.SeekRequest{}
		enc, err := s.decodeChannel(ctx, typ, body, req)
		if err != nil {
			return enc, nil, err
		}
		ch, g, err := s.consumer(req.GetChannel(), req.GetCredentials())
		if err != nil {
			return enc, nil, err
		}
		res := &setatspb.SeekResponse{ClusterId: m.ClusterID()}
		first, next := ch.Bounds()
		switch st := req.GetStart().(type) {
		case *setatspb.SeekRequest_TimestampMs:
			res.Id, err = ch.SeekTimestamp(st.TimestampMs)
			res.Found = true
		case *setatspb.SeekRequest_Committed:
			res.Id, res.Found = next, g.CommittedID >= 0
			if res.Found {
				res.Id = max(g.CommittedID, first)
			}
		case *setatspb.SeekRequest_Position:
			res.Id, res.Found = next, true
			if st.Position == setatspb.StartPosition_EARLIEST {
				res.Id = first
			}
		default:
			res.Id, res.Found = next, true
		}
		return enc, res, err
	case ActionSubscriptionCommit:
		req := &setatspb.CommitRequest{}
		enc, err := s.decodeChannel(ctx, typ, body, req)
		if err != nil {
			return enc, nil, err
		}
		ch, _, err := s.consumer(req.GetChannel(), req.GetCredentials())
		if err != nil {
			return enc, nil, err
		}
		if c := req.GetClusterId(); c != "" && c != m.ClusterID() {
			return enc, nil, subscribe.ClusterChanged(c, m.ClusterID())
		}
		return enc, &setatspb.Empty{}, ch.Commit(req.GetCredentials().GetGroup(), req.GetNextId(), req.GetCheckpoint(), s.opts.Clock())
	}
	return encBinary, nil, status.Errorf(codes.InvalidArgument, "unknown action type %q (ListActions lists the action types)", typ)
}

// consumer returns the channel and the group after checking the consumer credentials (SPEC
// section 11): they travel in the request, not as gateway users.
func (s *Server) consumer(channel string, c *setatspb.ConsumerCredentials) (*subscribe.Channel, subscribe.Group, error) {
	ch, err := s.subs.Get(channel)
	if err != nil {
		return nil, subscribe.Group{}, err
	}
	if c.GetGroup() == "" || c.GetUser() == "" {
		return nil, subscribe.Group{}, subscribe.Errorf(subscribe.Unauthenticated, "channel %s: credentials need a consumer group (dts.sid) and a user (dts.user)", channel)
	}
	g, err := ch.Authenticate(c.GetGroup(), c.GetUser(), c.GetPassword())
	return ch, g, err
}

func (s *Server) channelInfo(ch *subscribe.Channel) *setatspb.ChannelInfo {
	sp := ch.Spec()
	first, next := ch.Bounds()
	st := s.subs.Status(ch.Name())
	kind, _, _ := strings.Cut(sp.SourceURL, ":")
	return &setatspb.ChannelInfo{
		Channel: ch.Name(), SourceUrl: subscribe.RedactURL(sp.SourceURL), SourceKind: kind, Tables: sp.Tables,
		ClusterId: s.subs.ClusterID(), FirstId: first, NextId: next, SourcePosition: ch.Position(),
		SourceUp: st.Up, SourceError: st.Error, RetentionMs: sp.RetentionMs, CreatedMs: sp.CreatedMs,
		LastTimestampMs: ch.LastTimestampMs(), Slot: sp.Slot, Publication: sp.Publication,
	}
}

func groupInfo(ch *subscribe.Channel, g *subscribe.Group) *setatspb.GroupInfo {
	return &setatspb.GroupInfo{Channel: ch.Name(), Group: g.Name, Users: g.UserNames(), CommittedId: g.CommittedID,
		CommittedCheckpoint: g.CommittedCheckpoint, CommittedAtMs: g.CommittedAtMs}
}

// doGetChannel streams a channel's records (proto ChannelTicket): from an id, a timestamp, the
// start or the end; with follow it waits on Channel.Wait and pushes records as soon as they are
// durable (no polling). The caller needs read on the channel besides the consumer group's
// credentials; a following stream whose user loses the grant (users file reload) ends with
// PermissionDenied.
func (s *Server) doGetChannel(t *setatspb.ChannelTicket, stream flight.FlightService_DoGetServer) error {
	ctx := stream.Context()
	authChanged := s.auth.Changed()
	if err := s.authorizeChannel(ctx, "DoGet", privRead, t.GetChannel()); err != nil {
		return err
	}
	ch, _, err := s.consumer(t.GetChannel(), t.GetCredentials())
	if err != nil {
		return subscribeStatus(err)
	}
	cluster := s.subs.ClusterID()
	first, next := ch.Bounds()
	var from int64
	reseek := false
	if c := t.GetClusterId(); c != "" && c != cluster {
		// SPEC section 11: the first read fails with the seed's message; once the group was told,
		// the restarted consumer re-seeks by time.
		told, err := ch.NoteClusterChange(t.GetCredentials().GetGroup(), c)
		if err != nil {
			return subscribeStatus(err)
		}
		if !told {
			return subscribeStatus(subscribe.ClusterChanged(c, cluster))
		}
		if from, err = ch.SeekTimestamp(t.GetReseekTimestampMs()); err != nil {
			return subscribeStatus(err)
		}
		reseek = true
		s.log.Info("consumer re-seeks by time after a cluster change", "channel", ch.Name(), "group", t.GetCredentials().GetGroup(),
			"old_cluster", c, "cluster", cluster, "timestamp_ms", t.GetReseekTimestampMs(), "id", from)
	}
	switch st := t.GetStart().(type) {
	case nil:
		if !reseek {
			from = first
		}
	case *setatspb.ChannelTicket_FromId:
		if !reseek {
			from = st.FromId
		}
	case *setatspb.ChannelTicket_TimestampMs:
		if reseek {
			break
		}
		if from, err = ch.SeekTimestamp(st.TimestampMs); err != nil {
			return subscribeStatus(err)
		}
	case *setatspb.ChannelTicket_Position:
		if reseek {
			break
		}
		from = first
		if st.Position == setatspb.StartPosition_LATEST {
			from = next
		}
	}
	end := next
	maxRows := int(t.GetMaxBatchRows())
	if maxRows <= 0 {
		maxRows = DefaultMaxBatchRows
	}
	maxRows = min(maxRows, MaxBatchRows)
	maxBytes := min(MaxBatchBytes, s.opts.MaxMessageBytes/2)
	schema := subscribe.Schema(ch.Name(), cluster)
	w := flight.NewRecordWriter(stream, ipc.WithSchema(schema), ipc.WithAllocator(s.mem))
	defer w.Close()
	bld := subscribe.NewBuilder(s.mem, schema)
	defer bld.Release()
	s.metrics.openStreams.Inc()
	defer s.metrics.openStreams.Dec()
	send := func() error {
		rec := bld.NewRecordBatch()
		defer rec.Release()
		return w.Write(rec)
	}
	var buf []subscribe.Record
	sent := false
	for {
		select {
		case <-authChanged: // the users file changed: the stream goes on only with the grant
			if err := s.authorizeChannel(ctx, "DoGet", privRead, ch.Name()); err != nil {
				return err
			}
			authChanged = s.auth.Changed()
		default:
		}
		if !t.GetFollow() && from >= end {
			if !sent {
				return send()
			}
			return nil
		}
		limit := maxRows
		if !t.GetFollow() {
			limit = int(min(int64(limit), end-from))
		}
		wait := ch.Wait(from)
		buf, err = ch.Read(from, limit, buf[:0])
		if err != nil {
			return subscribeStatus(err)
		}
		if len(buf) > 0 {
			for i := range buf {
				if bld.Len() > 0 && bld.Bytes()+subscribe.RecordBytes(&buf[i]) > maxBytes {
					if err := send(); err != nil {
						return err
					}
				}
				bld.Append(&buf[i])
			}
			from = buf[len(buf)-1].ID + 1
			if err := send(); err != nil {
				return err
			}
			sent = true
			continue
		}
		if !sent {
			if err := send(); err != nil { // the schema at once
				return err
			}
			sent = true
		}
		select {
		case <-wait:
		case <-authChanged:
			if err := s.authorizeChannel(ctx, "DoGet", privRead, ch.Name()); err != nil {
				return err
			}
			authChanged = s.auth.Changed()
		case <-ctx.Done():
			return nil
		case <-s.quit:
			return status.Errorf(codes.Unavailable, "channel %s: gateway is shutting down", ch.Name())
		}
		if _, err := s.subs.Get(ch.Name()); err != nil {
			return subscribeStatus(err) // dropped
		}
	}
}

// subscribeStatus maps a subscribe.Error to its gRPC status (toStatus, gateway/errors.go).
func subscribeStatus(err error) error {
	return statusOr(err, codes.Internal, "subscription")
}
