package gateway

import (
	"time"

	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/nats-io/nats.go"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/setats/setats/proto/setatspb"
)

// watchBuffer is how many notifications a watch stream may lag behind before NATS drops them for
// that subscriber (a slow consumer only delays discovery, SPEC section 1).
const watchBuffer = 4096

// watch serves the watch action: it subscribes to the Notifications of one table (or of every
// table of a database, or of every table when both are empty) on NATS, sends one READY
// Notification once subscribed, then relays each Notification in the request's encoding until the
// client cancels (nil) or the gateway shuts down (Unavailable). The table need not exist: a watch
// may wait for TABLE_CREATED.
func (s *Server) watch(body []byte, stream flight.FlightService_DoActionServer) error {
	req := &setatspb.WatchRequest{}
	enc, err := s.decodeChecked(body, req, ActionWatch, req.GetCatalog)
	if err != nil {
		return err
	}
	db := req.GetDatabase()
	if db == "" && req.GetTable() != "" {
		db = DefaultDatabase
	}
	ctx := stream.Context()
	// check authorizes the watch: read on the table, or any user for a watch over a database or
	// every database, which relays only notifications of tables the caller may read.
	check := func() error {
		if req.GetTable() == "" {
			return s.authenticated(ctx, ActionWatch)
		}
		return s.authorize(ctx, ActionWatch, privRead, db, req.GetTable())
	}
	if err := check(); err != nil {
		return err
	}
	ch := make(chan *nats.Msg, watchBuffer)
	sub, err := s.nats.nc.ChanSubscribe(watchSubject(db, req.GetTable()), ch)
	if err != nil {
		return status.Errorf(codes.Unavailable, "watch %s.%s: subscribe on NATS: %v", db, req.GetTable(), err)
	}
	defer func() { _ = sub.Unsubscribe() }()
	if err := s.nats.nc.FlushTimeout(2 * time.Second); err != nil {
		// NATS is away: the subscription is re-established by nats.go on reconnect.
		s.log.Warn("watch: NATS flush failed; notifications follow once NATS is back", "subject", sub.Subject, "err", err)
	}
	s.metrics.watchStreams.Inc()
	defer s.metrics.watchStreams.Dec()

	send := func(n *setatspb.Notification) error {
		payload, err := encodeMsg(enc, n)
		if err != nil {
			return err
		}
		return stream.Send(&flight.Result{Body: payload})
	}
	if err := send(&setatspb.Notification{Kind: setatspb.NotificationKind_READY, Database: db, Table: req.GetTable()}); err != nil {
		return err
	}
	authChanged := s.auth.Changed()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-authChanged:
			if err := check(); err != nil {
				return err
			}
			authChanged = s.auth.Changed()
		case <-s.quit:
			return status.Error(codes.Unavailable, "watch: gateway is shutting down")
		case m := <-ch:
			n, ok := s.nats.verify(m)
			if !ok {
				continue
			}
			if !s.watchAllowed(ctx, n.GetDatabase(), n.GetTable()) {
				continue
			}
			if err := send(n); err != nil {
				return err
			}
		}
	}
}
