package gateway

import (
	"context"
	"crypto/tls"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"
	natsserver "github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/setats/setats/internal/flighttest"
	"github.com/setats/setats/internal/testpki"
	"github.com/setats/setats/proto/setatspb"
)

// newTestPKI generates a CA, a server certificate for 127.0.0.1 and a client certificate
// (internal/testpki).
func newTestPKI(t *testing.T) *testpki.PKI { return testpki.New(t) }

// tlsGateway connects a test client to a Flight address over TLS with cfg; it is closed (and
// its Arrow memory checked) at the end of the test.
func tlsGateway(t *testing.T, addr string, cfg *tls.Config) *testGateway {
	t.Helper()
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	c, err := flighttest.DialTLS(addr, cfg, flighttest.WithAllocator(mem))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	t.Cleanup(func() { cancel(); _ = c.Close(); mem.AssertSize(t, 0) })
	return &testGateway{t: t, fc: c, client: c.FC, mem: mem, ctx: ctx}
}

// tlsInfo calls gateway-info over TLS with cfg (and Basic credentials of reader when users).
func tlsInfo(t *testing.T, addr string, cfg *tls.Config, users bool) error {
	t.Helper()
	g := tlsGateway(t, addr, cfg)
	if users {
		g = g.asUser("reader")
	}
	return g.action(ActionGatewayInfo, nil, &setatspb.GatewayInfo{})
}

// TestTLS: Flight and admin HTTP over TLS with a CA generated in the test; a plaintext client
// and a client that does not trust the CA fail; with --tls-client-ca a client certificate is
// required on Flight, optional on admin HTTP.
func TestTLS(t *testing.T) {
	p := newTestPKI(t)
	t.Run("server certificate", func(t *testing.T) {
		g, _ := startAuthGateway(t, func(o *Options) { o.TLSCert, o.TLSKey = p.CertFile, p.KeyFile })
		if err := tlsInfo(t, g.s.FlightAddr(), &tls.Config{RootCAs: p.Pool}, true); err != nil {
			t.Fatalf("gateway-info over TLS: %v", err)
		}
		if err := tlsInfo(t, g.s.FlightAddr(), &tls.Config{}, true); status.Code(err) != codes.Unavailable {
			t.Fatalf("a client that does not trust the CA: %v, want Unavailable", err)
		}
		// The plain client of startGateway cannot talk to a TLS server.
		wantCode(t, g.asUser("reader").action(ActionGatewayInfo, nil, &setatspb.GatewayInfo{}), codes.Unavailable)
		hc := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: p.Pool}}}
		resp, err := hc.Get("https://" + g.s.AdminAddr() + "/healthz")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("https /healthz: %d", resp.StatusCode)
		}
	})
	t.Run("client certificates", func(t *testing.T) {
		g, _ := startAuthGateway(t, func(o *Options) {
			o.TLSCert, o.TLSKey, o.TLSClientCA = p.CertFile, p.KeyFile, p.CAFile
		})
		err := tlsInfo(t, g.s.FlightAddr(), &tls.Config{RootCAs: p.Pool}, true)
		if err == nil {
			t.Fatal("a Flight client without a certificate was accepted")
		}
		if err := tlsInfo(t, g.s.FlightAddr(), &tls.Config{RootCAs: p.Pool, Certificates: []tls.Certificate{p.ClientPair}}, true); err != nil {
			t.Fatalf("gateway-info with a client certificate: %v", err)
		}
		hc := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: p.Pool}}}
		resp, err := hc.Get("https://" + g.s.AdminAddr() + "/metrics")
		if err != nil {
			t.Fatalf("/metrics without a client certificate: %v", err)
		}
		resp.Body.Close()
	})
	t.Run("bad files fail at start", func(t *testing.T) {
		o := Options{FlightAddr: "127.0.0.1:0", AdminAddr: "127.0.0.1:0", NATSListen: "127.0.0.1:-1",
			Warehouse: t.TempDir(), Logger: discardLogger(), Security: Security{TLSCert: p.CAFile, TLSKey: p.KeyFile}}
		s, err := NewServer(o)
		if err == nil {
			err = s.Start()
			s.Shutdown()
		}
		if err == nil || !strings.Contains(err.Error(), "--tls-cert") {
			t.Fatalf("mismatched cert and key: %v, want an error naming --tls-cert", err)
		}
	})
}

// TestForgedNotificationsNotRelayed: on an external NATS anyone with access may publish on the
// setats subjects; watch relays only what this gateway published (signed), counts and drops the
// rest.
func TestForgedNotificationsNotRelayed(t *testing.T) {
	ns := runNATS(t, -1)
	defer ns.Shutdown()
	g := startGateway(t, func(o *Options) { o.NATSURL = ns.ClientURL() })
	ctx, cancel := context.WithCancel(g.ctx)
	defer cancel()
	next := g.watchStream(ctx, &setatspb.WatchRequest{Table: "w"})
	if n := next(); n.GetKind() != setatspb.NotificationKind_READY {
		t.Fatalf("first notification %v, want READY", n)
	}

	nc, err := nats.Connect(ns.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	forged := []byte(`{"kind":"NEW_DATA","database":"default","table":"w","endOffset":"999"}`)
	if err := nc.Publish("setats.default.w.data", forged); err != nil { // no signature
		t.Fatal(err)
	}
	m := nats.NewMsg("setats.default.w.data")
	m.Data = forged
	m.Header.Set(signatureHeader, "AAAA") // a wrong signature
	if err := nc.PublishMsg(m); err != nil {
		t.Fatal(err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	// Both were routed to the gateway's subscription before the real notification below.
	info := g.createTable("default", "w", 1, idV, []string{"id"}, nil)
	if n := next(); n.GetKind() != setatspb.NotificationKind_TABLE_CREATED || n.GetTableId() != info.GetTableId() {
		t.Fatalf("after forged messages and create-table: %v, want the gateway's TABLE_CREATED", n)
	}
	if n := metricSum(t, g.s, "setats_nats_forged_dropped_total"); n != 2 {
		t.Fatalf("setats_nats_forged_dropped_total = %v, want 2", n)
	}
}

// TestNATSCredentials: an external NATS server requiring a user and password is reached with
// them in --nats-url, and the URL the gateway reports hides the password.
func TestNATSCredentials(t *testing.T) {
	ns, err := natsserver.NewServer(&natsserver.Options{Host: "127.0.0.1", Port: -1, NoSigs: true, NoLog: true,
		Username: "gw", Password: "s3cret"})
	if err != nil {
		t.Fatal(err)
	}
	ns.Start()
	defer ns.Shutdown()
	if !ns.ReadyForConnections(10 * time.Second) {
		t.Fatal("nats not ready")
	}
	port := ns.Addr().(*net.TCPAddr).Port
	url := "nats://gw:s3cret@127.0.0.1:" + itoa(port)
	g := startGateway(t, func(o *Options) { o.NATSURL = url })
	waitFor(t, "the gateway to connect to NATS", func() bool { return g.s.nats.connected() })
	if strings.Contains(g.s.NATSURL(), "s3cret") || strings.Contains(g.s.ReadyInfo().NATSURL, "s3cret") {
		t.Fatalf("the reported NATS URL shows the password: %s", g.s.NATSURL())
	}
	// Without the credentials the server refuses (the check above is not vacuous).
	if nc, err := nats.Connect("nats://127.0.0.1:" + itoa(port)); err == nil {
		nc.Close()
		t.Fatal("the test NATS server accepts clients without credentials")
	}
}

func itoa(i int) string { return strconv.Itoa(i) }

// TestAdminExposesNoData: with a users file, the admin port answers /healthz, /readyz and
// /metrics without credentials (SPEC section 14), serves nothing else (no pprof, no expvar, no
// other method), and none of its answers carries a row value.
func TestAdminExposesNoData(t *testing.T) {
	g, _ := startAuthGateway(t, nil)
	setupShop(t, g)
	const secret = "row-value-only-in-the-table"
	rec := intStrRecord(g.mem, nil, []int32{7}, []string{secret})
	defer rec.Release()
	if _, err := g.asUser("admin").put(writeCmd(t, &setatspb.WriteCommand{Database: "shop", Table: "orders"}), rec); err != nil {
		t.Fatal(err)
	}
	base := "http://" + g.s.AdminAddr()
	for _, path := range []string{"/healthz", "/readyz", "/metrics"} {
		code, body := httpGet(t, base+path)
		if code != http.StatusOK {
			t.Errorf("GET %s without credentials: %d, want 200", path, code)
		}
		if strings.Contains(body, secret) {
			t.Errorf("GET %s shows a row value: %s", path, body)
		}
	}
	for _, path := range []string{"/", "/debug/pprof/", "/debug/pprof/goroutine", "/debug/vars", "/tables", "/shop/orders", "/metrics/../debug/vars"} {
		if code, body := httpGet(t, base+path); code != http.StatusNotFound {
			t.Errorf("GET %s: %d %q, want 404", path, code, body)
		}
	}
	resp, err := http.Post(base+"/metrics", "text/plain", strings.NewReader(""))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("POST /metrics: %d, want 405", resp.StatusCode)
	}
}
