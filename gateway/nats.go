package gateway

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	natsserver "github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/crypto/bcrypt"

	"github.com/setats/setats/gateway/auth"
	"github.com/setats/setats/proto/setatspb"
)

// Notification subjects (proto Notification): setats.<database>.<table>.<kind> where kind is
// "data" (NEW_DATA), "bucket" (NEW_BUCKET), "table" (TABLE_CREATED, TABLE_DROPPED) or
// "partition" (PARTITION_DROPPED).
const (
	subjectPrefix = "setats"
	kindData      = "data"
	kindBucket    = "bucket"
	kindTable     = "table"
	kindPartition = "partition"
)

// natsReadyTimeout bounds how long Start waits for the embedded NATS server to accept clients.
const natsReadyTimeout = 10 * time.Second

// notifier publishes Notifications on NATS and subscribes watch streams to them. It owns the
// embedded NATS server when the gateway runs one. Publishing never fails a caller: errors are
// logged and counted, and nats.go buffers while it reconnects (SPEC section 1: losing NATS only
// delays notifications).
type notifier struct {
	log *slog.Logger
	m   *metrics
	ns  *natsserver.Server // nil with an external server
	nc  *nats.Conn
	url string // URL of the NATS server, without credentials (ready file, logs)
	// user and pass are the embedded server's generated credential ("" with an external one).
	user, pass string
	// secret signs the gateway's notifications (HMAC-SHA256 in the Setats-Signature header);
	// watch relays only messages it verifies (SPEC section 14: never relay what the gateway did
	// not publish). Random per gateway process.
	secret []byte
	// forged counts messages on setats.> that failed the check and were dropped.
	forged  prometheus.Counter
	dropped atomic.Int64
	// closed is closed by nats.go once the connection is closed (after a drain).
	closed chan struct{}
}

// natsListenHostPort splits a --nats-listen address; port 0 and -1 both mean any free port
// (nats-server's RANDOM_PORT).
func natsListenHostPort(addr string) (string, int, error) {
	host, ps, err := net.SplitHostPort(addr)
	if err != nil {
		return "", 0, fmt.Errorf("--nats-listen %q: %v", addr, err)
	}
	port, err := strconv.Atoi(ps)
	if err != nil || port < -1 || port > 65535 {
		return "", 0, fmt.Errorf("--nats-listen %q: bad port %q", addr, ps)
	}
	if port == 0 {
		port = natsserver.RANDOM_PORT
	}
	if host == "" {
		host = "0.0.0.0"
	}
	return host, port, nil
}

// startNATS starts the embedded NATS server (o.NATSURL empty) or connects to o.NATSURL, and
// opens the gateway's connection. An external server that is down does not fail the start: the
// connection keeps retrying and /readyz reports it.
func startNATS(o *Options, log *slog.Logger, m *metrics) (*notifier, error) {
	n := &notifier{log: log, m: m, closed: make(chan struct{}), secret: []byte(auth.RandomSecret(32))}
	n.forged = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "setats_nats_forged_dropped_total",
		Help: "Messages on setats subjects that the gateway did not publish (bad or missing signature), dropped by watch.",
	})
	if err := m.reg.Register(n.forged); err != nil {
		return nil, err
	}
	copts := []nats.Option{
		nats.Name("setats-gateway"),
		nats.DrainTimeout(2 * time.Second),
		nats.ClosedHandler(func(*nats.Conn) { close(n.closed) }),
		nats.MaxReconnects(-1),
		nats.ReconnectWait(250 * time.Millisecond),
		nats.DisconnectErrHandler(func(_ *nats.Conn, err error) {
			if err != nil {
				log.Warn("nats disconnected", "err", err)
			}
		}),
		nats.ReconnectHandler(func(c *nats.Conn) {
			m.natsReconnects.Inc()
			log.Info("nats reconnected", "url", c.ConnectedUrl())
		}),
		nats.ErrorHandler(func(_ *nats.Conn, sub *nats.Subscription, err error) {
			subj := ""
			if sub != nil {
				subj = sub.Subject
			}
			log.Warn("nats error", "subject", subj, "err", err)
		}),
	}
	connectURL := o.NATSURL
	if o.NATSURL != "" {
		n.url = redactURL(o.NATSURL)
		copts = append(copts, nats.RetryOnFailedConnect(true))
		if o.NATSCreds != "" {
			copts = append(copts, nats.UserCredentials(o.NATSCreds))
		}
	} else {
		host, port, err := natsListenHostPort(o.NATSListen)
		if err != nil {
			return nil, err
		}
		// A credential only this process knows: nobody else may publish or subscribe.
		user, pass := "setats-gateway", auth.RandomSecret(24)
		n.user, n.pass = user, pass
		// The server keeps a bcrypt hash (nats-server warns about plain passwords); the password
		// is random, so the lowest cost is enough.
		hash, err := bcrypt.GenerateFromPassword([]byte(pass), bcrypt.MinCost)
		if err != nil {
			return nil, err
		}
		ns, err := natsserver.NewServer(&natsserver.Options{
			ServerName: "setats-embedded",
			Host:       host,
			Port:       port,
			NoSigs:     true,
			MaxPayload: 1 << 20,
			Username:   user,
			Password:   string(hash),
		})
		if err != nil {
			return nil, fmt.Errorf("embedded nats server on %s: %w", o.NATSListen, err)
		}
		ns.SetLoggerV2(natsLogger{log.With("component", "nats")}, false, false, false)
		ns.Start()
		if !ns.ReadyForConnections(natsReadyTimeout) {
			ns.Shutdown()
			return nil, fmt.Errorf("embedded nats server on %s: not ready after %s", o.NATSListen, natsReadyTimeout)
		}
		n.ns = ns
		n.url = dialableNATSURL(ns)
		connectURL = n.url
		copts = append(copts, nats.InProcessServer(ns), nats.UserInfo(user, pass))
	}
	nc, err := nats.Connect(connectURL, copts...)
	if err != nil {
		if n.ns != nil {
			n.ns.Shutdown()
		}
		return nil, fmt.Errorf("connect to nats %s: %w", n.url, err)
	}
	n.nc = nc
	return n, nil
}

// dialableNATSURL is the embedded server's client URL with an unspecified host (0.0.0.0, ::)
// replaced by 127.0.0.1, so that it can be handed to clients on this machine.
func dialableNATSURL(ns *natsserver.Server) string {
	addr, ok := ns.Addr().(*net.TCPAddr)
	if !ok {
		return ns.ClientURL()
	}
	host := addr.IP.String()
	if addr.IP.IsUnspecified() {
		host = "127.0.0.1"
	}
	return "nats://" + net.JoinHostPort(host, strconv.Itoa(addr.Port))
}

// connected reports whether the gateway's NATS connection is up.
func (n *notifier) connected() bool {
	return n != nil && n.nc != nil && n.nc.IsConnected()
}

// subjectToken maps a database or table name to a NATS subject token: characters NATS gives a
// meaning to ('.', '*', '>', blanks) become '_'. Catalog names are identifiers, so this is the
// identity for them.
func subjectToken(s string) string {
	if s == "" {
		return "_"
	}
	return strings.Map(func(r rune) rune {
		switch r {
		case '.', '*', '>', ' ', '\t', '\r', '\n':
			return '_'
		}
		return r
	}, s)
}

// subject returns "setats.<db>.<table>.<kind>".
func subject(db, table, kind string) string {
	return subjectPrefix + "." + subjectToken(db) + "." + subjectToken(table) + "." + kind
}

// watchSubject is the subject a watch on (db, table) subscribes to; empty names are wildcards.
func watchSubject(db, table string) string {
	d, t := "*", "*"
	if db != "" {
		d = subjectToken(db)
	}
	if table != "" {
		t = subjectToken(table)
	}
	return subjectPrefix + "." + d + "." + t + ".*"
}

// notificationKindSubject maps a NotificationKind to its subject suffix.
func notificationKindSubject(k setatspb.NotificationKind) string {
	switch k {
	case setatspb.NotificationKind_NEW_BUCKET:
		return kindBucket
	case setatspb.NotificationKind_TABLE_CREATED, setatspb.NotificationKind_TABLE_DROPPED:
		return kindTable
	case setatspb.NotificationKind_PARTITION_DROPPED:
		return kindPartition
	default:
		return kindData
	}
}

// publish sends note as JSON on its subject. It never blocks on the network and never fails the
// caller: an error is logged and counted in setats_nats_publish_errors_total.
func (n *notifier) publish(note *setatspb.Notification) {
	if n == nil || n.nc == nil {
		return
	}
	b, err := jsonOut.Marshal(note)
	if err == nil {
		msg := nats.NewMsg(subject(note.GetDatabase(), note.GetTable(), notificationKindSubject(note.GetKind())))
		msg.Data = b
		msg.Header.Set(signatureHeader, n.sign(msg.Subject, b))
		err = n.nc.PublishMsg(msg)
	}
	if err != nil {
		n.m.natsPubErrors.Inc()
		n.log.Warn("nats publish failed", "kind", note.GetKind().String(), "database", note.GetDatabase(),
			"table", note.GetTable(), "err", err)
		return
	}
	n.m.natsPublished.Inc()
}

// signatureHeader carries the HMAC-SHA256 of a notification (base64url of
// HMAC(secret, subject "\n" payload)).
const signatureHeader = "Setats-Signature"

// sign returns the signature of a notification on subject.
func (n *notifier) sign(subject string, payload []byte) string {
	h := hmac.New(sha256.New, n.secret)
	h.Write([]byte(subject))
	h.Write([]byte{'\n'})
	h.Write(payload)
	return base64.RawURLEncoding.EncodeToString(h.Sum(nil))
}

// verify checks that m was published by this gateway (its signature) and decodes it. Anything
// else is dropped: counted in setats_nats_forged_dropped_total and logged (the first, then every
// 1000th).
func (n *notifier) verify(m *nats.Msg) (*setatspb.Notification, bool) {
	got := ""
	if m.Header != nil {
		got = m.Header.Get(signatureHeader)
	}
	if got == "" || !hmac.Equal([]byte(got), []byte(n.sign(m.Subject, m.Data))) {
		n.forged.Inc()
		if c := n.dropped.Add(1); c%1000 == 1 {
			n.log.Warn("dropped a message on a notification subject that this gateway did not publish",
				"subject", m.Subject, "dropped_so_far", c)
		}
		return nil, false
	}
	note := &setatspb.Notification{}
	if err := jsonIn.Unmarshal(m.Data, note); err != nil {
		n.log.Warn("watch: bad notification on NATS", "subject", m.Subject, "err", err)
		return nil, false
	}
	return note, true
}

// redactURL removes passwords from a NATS URL list (nats://user:pass@host:4222,...) for logs and
// the ready file.
func redactURL(urls string) string {
	parts := strings.Split(urls, ",")
	for i, p := range parts {
		u, err := url.Parse(strings.TrimSpace(p))
		if err != nil || u.User == nil {
			continue
		}
		if _, has := u.User.Password(); has {
			u.User = url.UserPassword(u.User.Username(), "REDACTED")
		} else {
			u.User = url.User("REDACTED")
		}
		parts[i] = u.String()
	}
	return strings.Join(parts, ",")
}

// close drains the connection (flushing buffered notifications, bounded by nats.go's drain
// timeout) and shuts the embedded server down. Safe on a nil notifier.
func (n *notifier) close() {
	if n == nil {
		return
	}
	if n.nc != nil {
		if n.nc.IsConnected() && n.nc.Drain() == nil {
			select {
			case <-n.closed:
			case <-time.After(3 * time.Second):
			}
		}
		n.nc.Close()
	}
	if n.ns != nil {
		n.ns.Shutdown()
		n.ns.WaitForShutdown()
	}
}

// natsLogger routes the embedded NATS server's logs to slog.
type natsLogger struct{ l *slog.Logger }

func (n natsLogger) Noticef(format string, v ...any) { n.l.Debug(fmt.Sprintf(format, v...)) }
func (n natsLogger) Warnf(format string, v ...any)   { n.l.Warn(fmt.Sprintf(format, v...)) }
func (n natsLogger) Fatalf(format string, v ...any)  { n.l.Error(fmt.Sprintf(format, v...)) }
func (n natsLogger) Errorf(format string, v ...any)  { n.l.Error(fmt.Sprintf(format, v...)) }
func (n natsLogger) Debugf(format string, v ...any)  { n.l.Debug(fmt.Sprintf(format, v...)) }
func (n natsLogger) Tracef(format string, v ...any)  { n.l.Debug(fmt.Sprintf(format, v...)) }
