package gateway

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	natsserver "github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/setats/setats/proto/setatspb"
)

// watchStream opens a watch action and returns a function receiving its next Notification.
func (g *testGateway) watchStream(ctx context.Context, req *setatspb.WatchRequest) func() *setatspb.Notification {
	g.t.Helper()
	body, _ := proto.Marshal(req)
	stream, err := g.client.DoAction(ctx, &flight.Action{Type: ActionWatch, Body: body})
	if err != nil {
		g.t.Fatal(err)
	}
	return func() *setatspb.Notification {
		g.t.Helper()
		r, err := stream.Recv()
		if err != nil {
			g.t.Fatalf("watch: %v", err)
		}
		n := &setatspb.Notification{}
		if err := proto.Unmarshal(r.GetBody(), n); err != nil {
			g.t.Fatal(err)
		}
		return n
	}
}

// TestWatch: the watch action starts with READY, then relays the table's catalog changes, new
// buckets and new data from NATS; outside clients see the same JSON on setats.<db>.<table>.<kind>.
func TestWatch(t *testing.T) {
	g := startGateway(t, nil)
	nc, err := nats.Connect(g.s.NATSURL(), nats.UserInfo(g.s.nats.user, g.s.nats.pass))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	sub, err := nc.SubscribeSync("setats.default.w.data")
	if err != nil {
		t.Fatal(err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithCancel(g.ctx)
	defer cancel()
	next := g.watchStream(ctx, &setatspb.WatchRequest{Table: "w"})
	if n := next(); n.GetKind() != setatspb.NotificationKind_READY {
		t.Fatalf("first notification %v, want READY", n)
	}
	info := g.createTable("default", "w", 1, idV, []string{"id"}, nil)
	if n := next(); n.GetKind() != setatspb.NotificationKind_TABLE_CREATED || n.GetTableId() != info.GetTableId() {
		t.Fatalf("after create-table: %v", n)
	}
	rec := intStrRecord(g.mem, nil, []int32{1, 2}, []string{"a", "b"})
	defer rec.Release()
	if _, err := g.put(writeCmd(t, &setatspb.WriteCommand{Table: "w"}), rec); err != nil {
		t.Fatal(err)
	}
	if n := next(); n.GetKind() != setatspb.NotificationKind_NEW_BUCKET || n.GetBucket() != 0 || n.GetTable() != "w" {
		t.Fatalf("after first write: %v, want NEW_BUCKET", n)
	}
	if n := next(); n.GetKind() != setatspb.NotificationKind_NEW_DATA || n.GetEndOffset() != 2 || n.GetDatabase() != "default" {
		t.Fatalf("after first write: %v, want NEW_DATA end_offset 2", n)
	}
	m, err := sub.NextMsg(testTimeout)
	if err != nil {
		t.Fatal(err)
	}
	var raw map[string]any
	if err := json.Unmarshal(m.Data, &raw); err != nil || raw["kind"] != "NEW_DATA" || raw["endOffset"] != "2" {
		t.Fatalf("NATS message %s: %v", m.Data, err)
	}
	g.mustAction(ActionDropTable, &setatspb.TableRequest{Table: "w"}, &setatspb.Empty{})
	if n := next(); n.GetKind() != setatspb.NotificationKind_TABLE_DROPPED {
		t.Fatalf("after drop-table: %v", n)
	}
}

// runNATS starts a real nats-server in-process on port (-1: any free port).
func runNATS(t *testing.T, port int) *natsserver.Server {
	t.Helper()
	ns, err := natsserver.NewServer(&natsserver.Options{Host: "127.0.0.1", Port: port, NoSigs: true, NoLog: true})
	if err != nil {
		t.Fatal(err)
	}
	ns.Start()
	if !ns.ReadyForConnections(10 * time.Second) {
		t.Fatal("nats server not ready")
	}
	return ns
}

// readyz returns the /readyz status code and body.
func readyz(t *testing.T, s *Server) (int, readiness) {
	t.Helper()
	resp, err := http.Get("http://" + s.AdminAddr() + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var r readiness
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, r
}

// waitFor re-checks cond until it holds, failing the test after testTimeout. It waits on an
// external process (NATS reconnects), never on the gateway's own data path.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(testTimeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestExternalNATS: with --nats-url the gateway publishes to that server; killing the server
// mid-test fails neither writes nor reads (following streams are fed by the store, not NATS) nor
// /readyz (200, the body reports NATS down), and once a server is back on the address the
// gateway reconnects and notifications flow again.
func TestExternalNATS(t *testing.T) {
	ns := runNATS(t, -1)
	port := ns.Addr().(*net.TCPAddr).Port
	url := ns.ClientURL()
	g := startGateway(t, func(o *Options) { o.NATSURL = url })
	if g.s.NATSURL() != url || g.s.nats.ns != nil {
		t.Fatalf("gateway NATS %q (embedded %v), want external %q", g.s.NATSURL(), g.s.nats.ns != nil, url)
	}
	if code, r := readyz(t, g.s); code != http.StatusOK || !r.NATSConnected {
		t.Fatalf("readyz %d %+v", code, r)
	}
	nc, err := nats.Connect(url)
	if err != nil {
		t.Fatal(err)
	}
	sub, err := nc.SubscribeSync("setats.default.ext.*")
	if err != nil {
		t.Fatal(err)
	}
	_ = nc.Flush()
	g.createTable("default", "ext", 1, idV, []string{"id"}, nil)
	if m, err := sub.NextMsg(testTimeout); err != nil || m.Subject != "setats.default.ext.table" {
		t.Fatalf("TABLE_CREATED on external NATS: %v %v", m, err)
	}
	nc.Close()

	// A following reader, opened while NATS is up.
	ctx, cancel := context.WithCancel(g.ctx)
	defer cancel()
	stream, err := g.client.DoGet(ctx, &flight.Ticket{Ticket: ticket(t, &setatspb.ChangelogTicket{Table: "ext", Follow: true})})
	if err != nil {
		t.Fatal(err)
	}
	rdr, err := flight.NewRecordReader(stream, ipc.WithAllocator(g.mem))
	if err != nil {
		t.Fatal(err)
	}
	defer rdr.Release()

	ns.Shutdown()
	ns.WaitForShutdown()
	// A NATS outage only delays notifications: /readyz stays 200 and its body reports NATS down.
	waitFor(t, "the gateway to see NATS down", func() bool { _, r := readyz(t, g.s); return !r.NATSConnected })
	if code, r := readyz(t, g.s); code != http.StatusOK || !r.Ready || r.NATSConnected {
		t.Fatalf("readyz with NATS down: %d %+v, want 200, ready, nats_connected false", code, r)
	}
	if v := metricValue(t, g.s, "setats_nats_connected"); v != 0 {
		t.Fatalf("setats_nats_connected %v with NATS down", v)
	}

	desc := writeCmd(t, &setatspb.WriteCommand{Table: "ext"})
	for i := int32(1); i <= 3; i++ {
		rec := intStrRecord(g.mem, nil, []int32{i}, []string{"while-nats-down"})
		acks, err := g.put(desc, rec)
		rec.Release()
		if err != nil || len(acks) != 1 {
			t.Fatalf("write %d with NATS down: %v %v", i, acks, err)
		}
	}
	var got int
	for got < 3 && rdr.Next() {
		got += int(rdr.RecordBatch().NumRows())
	}
	if got != 3 {
		t.Fatalf("following reader got %d rows with NATS down: %v", got, rdr.Err())
	}
	rows, err := g.readStream(ticket(t, &setatspb.ChangelogTicket{Table: "ext"}))
	if err != nil || len(rows) != 3 {
		t.Fatalf("bounded read with NATS down: %q %v", rows, err)
	}

	// NATS comes back on the same address: the gateway reconnects and publishes again.
	ns2 := runNATS(t, port)
	defer ns2.Shutdown()
	waitFor(t, "the gateway to reconnect to NATS", func() bool { return g.s.nats.connected() })
	nc2, err := nats.Connect(url)
	if err != nil {
		t.Fatal(err)
	}
	defer nc2.Close()
	sub2, err := nc2.SubscribeSync("setats.default.ext.data")
	if err != nil {
		t.Fatal(err)
	}
	_ = nc2.Flush()
	rec := intStrRecord(g.mem, nil, []int32{4}, []string{"nats-back"})
	defer rec.Release()
	if _, err := g.put(desc, rec); err != nil {
		t.Fatal(err)
	}
	// Notifications buffered while NATS was down may come first.
	for n := (&setatspb.Notification{}); n.GetEndOffset() != 4; {
		m, err := sub2.NextMsg(testTimeout)
		if err != nil {
			t.Fatal(err)
		}
		if err := protojson.Unmarshal(m.Data, n); err != nil {
			t.Fatalf("notification after reconnect: %s %v", m.Data, err)
		}
	}
	if code, _ := readyz(t, g.s); code != http.StatusOK {
		t.Fatalf("readyz after reconnect: %d", code)
	}
}
