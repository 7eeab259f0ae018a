package hive

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/apache/thrift/lib/go/thrift"
	"github.com/beltran/gohive/hive_metastore"

	"github.com/setats/setats/catalog"
)

// ParseURIs splits a comma-separated list of Hive Metastore thrift URIs ("thrift://host:port",
// SPEC section 2 option uri) into host:port addresses, in order. Blank entries are skipped. A
// list with no URI, another scheme, a missing host or port, or a path is KindInvalidArgument
// naming the entry.
func ParseURIs(list string) ([]string, error) {
	var out []string
	for _, raw := range strings.Split(list, ",") {
		s := strings.TrimSpace(raw)
		if s == "" {
			continue
		}
		u, err := url.Parse(s)
		if err != nil || !strings.EqualFold(u.Scheme, "thrift") || u.Hostname() == "" || u.Port() == "" ||
			(u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.User != nil {
			return nil, catalog.Errorf(catalog.ErrInvalid,
				"uri %q: want thrift://host:port (Hive Metastore thrift URIs, comma separated)", truncate(s, 200))
		}
		if p, err := strconv.Atoi(u.Port()); err != nil || p <= 0 || p > 65535 {
			return nil, catalog.Errorf(catalog.ErrInvalid, "uri %q: port %q is not in 1..65535", truncate(s, 200), u.Port())
		}
		out = append(out, net.JoinHostPort(u.Hostname(), u.Port()))
	}
	if len(out) == 0 {
		return nil, catalog.Errorf(catalog.ErrInvalid,
			"uri is empty: catalog-type 'hive' needs the Hive Metastore thrift URIs (thrift://host:port, comma separated)")
	}
	return out, nil
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}

// noCAS holds the addresses ("host:port") of Hive 4 metastores that failed an
// expected-parameter alter_table for want of support in their database: updates to them take
// HMS locks from then on (for the life of the process).
var noCAS sync.Map

// hiveCatalog is the metastore catalog (Hive 3+ namespaces above databases) Setats uses.
const hiveCatalog = "hive"

// conn is one open thrift connection to a Hive Metastore. It is not safe for concurrent use.
type conn struct {
	addr   string
	tr     thrift.TTransport
	client *hive_metastore.ThriftHiveMetastoreClient
	hive4  bool // the metastore has the Hive 4 calls (expected-parameter alter_table)
}

func (c *conn) close() { _ = c.tr.Close() }

// metastore dials the URIs of one catalog, in order, and remembers per address whether the
// metastore is Hive 4 (probed once per connection by get_database_req, which Hive 3 lacks).
type metastore struct {
	addrs   []string
	uriList string // the option as given, for messages
	timeout time.Duration

	mu   sync.Mutex
	idle []*conn // connections returned in good state, reused LIFO
}

// connectTimeout bounds a TCP connect to one metastore address.
const connectTimeout = 5 * time.Second

// maxIdle bounds the idle connections kept per catalog.
const maxIdle = 4

// get returns an idle connection (reused true) or dials the URIs in order; every address
// failing is ErrUnavailable naming each URI and its error.
func (m *metastore) get(ctx context.Context) (c *conn, reused bool, err error) {
	m.mu.Lock()
	if n := len(m.idle); n > 0 {
		c := m.idle[n-1]
		m.idle = m.idle[:n-1]
		m.mu.Unlock()
		return c, true, nil
	}
	m.mu.Unlock()
	c, err = m.dial(ctx)
	return c, false, err
}

func (m *metastore) dial(ctx context.Context) (*conn, error) {
	var fails []string
	for _, addr := range m.addrs {
		c, err := m.dialOne(ctx, addr)
		if err == nil {
			return c, nil
		}
		fails = append(fails, fmt.Sprintf("thrift://%s: %v", addr, err))
	}
	return nil, catalog.Errorf(catalog.ErrUnavailable, "Hive Metastore unavailable at %s (%s)",
		m.uriList, strings.Join(fails, "; "))
}

func (m *metastore) dialOne(ctx context.Context, addr string) (*conn, error) {
	cfg := &thrift.TConfiguration{ConnectTimeout: min(m.timeout, connectTimeout), SocketTimeout: m.timeout}
	sock := thrift.NewTSocketConf(addr, cfg)
	if err := sock.Open(); err != nil {
		return nil, err
	}
	tr := thrift.NewTBufferedTransport(sock, 8192)
	pf := thrift.NewTBinaryProtocolFactoryConf(cfg)
	client := hive_metastore.NewThriftHiveMetastoreClient(thrift.NewTStandardClient(pf.GetProtocol(tr), pf.GetProtocol(tr)))
	c := &conn{addr: addr, tr: tr, client: client}
	// Probe: Hive 4 knows get_database_req, Hive 3 answers "Invalid method name". A transport
	// error means the address does not serve the metastore protocol: try the next one.
	req := hive_metastore.NewGetDatabaseRequest()
	req.Name = thrift.StringPtr(catalog.DefaultDatabase)
	req.CatalogName = thrift.StringPtr(hiveCatalog)
	_, err := client.GetDatabaseReq(ctx, req)
	var appErr thrift.TApplicationException
	switch {
	case err == nil:
		c.hive4 = true
	case errors.As(err, &appErr) && appErr.TypeId() == thrift.UNKNOWN_METHOD:
		c.hive4 = false
	case isTransport(err):
		c.close()
		return nil, err
	default: // NoSuchObject / MetaException: the call exists
		c.hive4 = true
	}
	return c, nil
}

// put returns a connection after a call; broken connections (a transport error) are closed.
func (m *metastore) put(c *conn, err error) {
	if err != nil && isTransport(err) {
		c.close()
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.idle) >= maxIdle {
		c.close()
		return
	}
	m.idle = append(m.idle, c)
}

func (m *metastore) closeAll() {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, c := range m.idle {
		c.close()
	}
	m.idle = nil
}

// do runs fn on a connection. A connection that sat idle may have died meanwhile (the
// metastore restarted, or the first URI went away while the next one still serves):
//   - a transport failure on a reused connection closes every idle connection; an idempotent fn
//     is then retried once on a fresh dial, which tries the URIs in order again;
//   - before a fn that is not idempotent (create, drop, alter) a reused connection is checked
//     with fb303 getStatus, so that a write is never sent on a dead connection and lost there.
//
// Any other transport failure is ErrUnavailable naming the URIs and the address that failed.
func (m *metastore) do(ctx context.Context, idempotent bool, fn func(c *conn) error) error {
	for attempt := 0; ; attempt++ {
		c, reused, err := m.get(ctx)
		if err != nil {
			return err
		}
		if reused && !idempotent {
			if _, perr := c.client.GetStatus(ctx); perr != nil && isTransport(perr) {
				c.close()
				m.closeAll()
				if attempt == 0 {
					continue
				}
				return catalog.Errorf(catalog.ErrUnavailable, "Hive Metastore unavailable at %s (thrift://%s: %v)",
					m.uriList, c.addr, perr)
			}
		}
		err = fn(c)
		m.put(c, err)
		if err == nil || !isTransport(err) {
			return err
		}
		if reused {
			m.closeAll()
		}
		if !(reused && idempotent && attempt == 0) {
			return catalog.Errorf(catalog.ErrUnavailable, "Hive Metastore unavailable at %s (thrift://%s: %v)",
				m.uriList, c.addr, err)
		}
	}
}

// isTransport reports whether err is a connection-level failure (as opposed to an answer): a
// thrift transport or protocol error, a network error, or the connection closed under a call.
func isTransport(err error) bool {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET) ||
		errors.Is(err, syscall.EPIPE) || errors.Is(err, net.ErrClosed) {
		return true
	}
	var te thrift.TTransportException
	if errors.As(err, &te) {
		return true
	}
	var pe thrift.TProtocolException
	if errors.As(err, &pe) {
		return true
	}
	var ne net.Error
	return errors.As(err, &ne)
}
