package gateway

import (
	"sync"
	"time"

	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/nats-io/nats.go"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/setats/setats/proto/setatspb"
)

// Bounds of a watch stream's buffer of notifications not yet sent (the client reads slower than
// notifications come): at most watchMaxBytes of message data, and messages over
// watchMaxMessageBytes (a Notification is well under 1 KiB; larger ones are forged) are dropped
// and logged. A watcher that falls behind by more is cut off with ResourceExhausted: it watches
// again and re-lists (list-buckets) what it missed.
const (
	watchMaxBytes        = 1 << 20
	watchMaxMessageBytes = 64 << 10
)

// watchQueue is a watch stream's buffer of verified notifications: the NATS callback appends,
// the stream drains.
type watchQueue struct {
	mu       sync.Mutex
	notes    []*setatspb.Notification
	bytes    int
	overflow bool
	dropped  int
	ready    chan struct{} // cap 1: something to drain
}

// handler returns the NATS message handler of the queue: it never blocks; it drops oversized
// messages and those verify refuses (forged), so that they take no room.
// overflowed is called once, when the buffer first goes over watchMaxBytes.
func (q *watchQueue) handler(verify func(*nats.Msg) (*setatspb.Notification, bool), overflowed func()) nats.MsgHandler {
	return func(m *nats.Msg) {
		if len(m.Data) > watchMaxMessageBytes {
			q.mu.Lock()
			q.dropped++
			q.mu.Unlock()
			return
		}
		n, ok := verify(m)
		if !ok {
			return
		}
		q.mu.Lock()
		switch {
		case q.bytes+len(m.Data) > watchMaxBytes:
			if !q.overflow {
				overflowed()
			}
			q.overflow = true
		case !q.overflow:
			q.notes = append(q.notes, n)
			q.bytes += len(m.Data)
		}
		q.mu.Unlock()
		select {
		case q.ready <- struct{}{}:
		default:
		}
	}
}

// take returns the buffered notifications, whether the buffer overflowed, and how many oversized
// messages were dropped since the last take.
func (q *watchQueue) take() ([]*setatspb.Notification, bool, int) {
	q.mu.Lock()
	defer q.mu.Unlock()
	notes, over, dropped := q.notes, q.overflow, q.dropped
	q.notes, q.bytes, q.dropped = nil, 0, 0
	return notes, over, dropped
}

// watch serves the watch action: it subscribes to the Notifications of one table (or of every
// table of a database, or of every table when both are empty) on NATS, sends one READY
// Notification once subscribed, then relays each Notification in the request's encoding until the
// client cancels (nil) or the gateway shuts down (Unavailable). The table need not exist: a watch
// may wait for TABLE_CREATED.
func (s *Server) watch(body []byte, stream flight.FlightService_DoActionServer) error {
	req := &setatspb.WatchRequest{}
	enc, _, err := s.decodeChecked(body, req, ActionWatch, req.GetCatalog)
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
	q := &watchQueue{ready: make(chan struct{}, 1)}
	sub, err := s.nats.nc.Subscribe(watchSubject(db, req.GetTable()), q.handler(s.nats.verify, s.metrics.watchOverflows.Inc))
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
		case <-q.ready:
			msgs, over, dropped := q.take()
			if dropped > 0 {
				s.log.Warn("watch: dropped notifications larger than the bound", "subject", sub.Subject,
					"messages", dropped, "max_bytes", watchMaxMessageBytes)
			}
			for _, n := range msgs {
				if !s.watchAllowed(ctx, n.GetDatabase(), n.GetTable()) {
					continue
				}
				if err := send(n); err != nil {
					return err
				}
			}
			if over {
				return status.Errorf(codes.ResourceExhausted,
					"watch %s.%s: the watcher fell more than %d bytes of notifications behind; watch again and re-list the buckets (list-buckets) to catch up",
					db, req.GetTable(), watchMaxBytes)
			}
		}
	}
}
