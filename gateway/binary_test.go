package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/nats-io/nats.go"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/setats/setats/internal/flighttest"
	"github.com/setats/setats/proto/setatspb"
)

// setatsBinary is the `setats` binary TestMain builds from ./cmd/setats.
var setatsBinary string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "setats-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	setatsBinary = filepath.Join(dir, "setats")
	if out, err := exec.Command("go", "build", "-o", setatsBinary, "./cmd/setats").CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "go build ./cmd/setats: %v\n%s", err, out)
		_ = os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	_ = os.RemoveAll(dir)
	os.Exit(code)
}

// gatewayProcess is the setats binary running as a separate process.
type gatewayProcess struct {
	cmd    *exec.Cmd
	ready  ReadyInfo
	file   string
	stderr *bytes.Buffer
	exited chan struct{}
	err    error // cmd.Wait's result, once exited is closed
}

// startBinary runs `setats serve` on free ports with the given extra args and environment and
// waits for its ready file.
func startBinary(t *testing.T, env []string, args ...string) *gatewayProcess {
	t.Helper()
	file := filepath.Join(t.TempDir(), "ready.json")
	all := append([]string{"serve", "--flight-addr", "127.0.0.1:0", "--admin-addr", "127.0.0.1:0",
		"--nats-listen", "127.0.0.1:-1", "--ready-file", file}, args...)
	p := &gatewayProcess{cmd: exec.Command(setatsBinary, all...), file: file, stderr: &bytes.Buffer{}, exited: make(chan struct{})}
	p.cmd.Env = append(os.Environ(), env...)
	p.cmd.Stderr = p.stderr
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.err = p.cmd.Wait(); close(p.exited) }()
	t.Cleanup(func() {
		_ = p.cmd.Process.Kill()
		<-p.exited
		if t.Failed() {
			t.Logf("setats stderr:\n%s", p.stderr)
		}
	})
	// Wait for the ready file (written atomically once every listener serves).
	deadline := time.Now().Add(testTimeout)
	for {
		b, err := os.ReadFile(file)
		if err == nil {
			if err := json.Unmarshal(b, &p.ready); err != nil {
				t.Fatalf("ready file %q: %v", b, err)
			}
			return p
		}
		select {
		case <-p.exited:
			t.Fatalf("setats exited before it was ready: %v\n%s", p.err, p.stderr)
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("no ready file after %s\n%s", testTimeout, p.stderr)
		}
	}
}

// client connects a Flight client to the process.
func (p *gatewayProcess) client(t *testing.T) *testGateway {
	t.Helper()
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	c, err := flighttest.Dial(p.ready.FlightAddr, flighttest.WithAllocator(mem))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	t.Cleanup(func() { cancel(); _ = c.Close(); mem.AssertSize(t, 0) })
	return &testGateway{t: t, fc: c, client: c.FC, mem: mem, ctx: ctx}
}

// terminate sends SIGTERM and returns the exit code.
func (p *gatewayProcess) terminate(t *testing.T) int {
	t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	return p.wait(t)
}

// wait waits (at most testTimeout) for the process to exit and returns its exit code.
func (p *gatewayProcess) wait(t *testing.T) int {
	t.Helper()
	select {
	case <-p.exited:
	case <-time.After(testTimeout):
		t.Fatal("setats did not exit")
	}
	var ee *exec.ExitError
	if errors.As(p.err, &ee) {
		return ee.ExitCode()
	}
	if p.err != nil {
		t.Fatal(p.err)
	}
	return 0
}

// TestBinary runs the built binary as a separate process, as the Java tests do: ready file,
// environment variables, the first-milestone calls (gateway-info, create-table, get-table,
// list-buckets, lookup-offsets, DoPut with auto-create, DoGet following, watch), NATS refusing
// outside clients, admin HTTP, then SIGTERM exits 0; a restart on the same warehouse still has the rows.
func TestBinary(t *testing.T) {
	wh := t.TempDir()
	env := []string{"SETATS_WAREHOUSE=" + wh, "SETATS_DEFAULT_BUCKET_COUNT=3", "SETATS_LOG_FORMAT=json"}
	p := startBinary(t, env)
	if !strings.HasPrefix(p.ready.FlightAddr, "127.0.0.1:") || !strings.HasPrefix(p.ready.NATSURL, "nats://127.0.0.1:") ||
		p.ready.Warehouse != "file://"+wh {
		t.Fatalf("ready file: %+v", p.ready)
	}
	g := p.client(t)
	gi := &setatspb.GatewayInfo{}
	g.mustAction(ActionGatewayInfo, nil, gi)
	if gi.GetWarehouse() != "file://"+wh || gi.GetDefaultBucketCount() != 3 {
		t.Fatalf("gateway-info: %v", gi)
	}

	// The embedded NATS server refuses other clients (its credential is the gateway's own, SPEC
	// section 14); a watch stream, before the table exists.
	if nc, err := nats.Connect(p.ready.NATSURL); err == nil || !strings.Contains(err.Error(), "Authorization Violation") {
		if nc != nil {
			nc.Close()
		}
		t.Fatalf("NATS client without the gateway's credential: %v, want Authorization Violation", err)
	}
	wctx, wcancel := context.WithCancel(g.ctx)
	defer wcancel()
	watch := g.watchStream(wctx, &setatspb.WatchRequest{Database: "app", Table: "orders"})
	if n := watch(); n.GetKind() != setatspb.NotificationKind_READY {
		t.Fatalf("watch: %v", n)
	}

	// DoPut auto-creates app.orders (3 buckets from the environment's default).
	spec := &setatspb.TableSpec{Columns: idV, PrimaryKey: []string{"id"}}
	desc := writeCmd(t, &setatspb.WriteCommand{Catalog: &setatspb.CatalogContext{CatalogType: "hadoop", Warehouse: wh},
		Database: "app", Table: "orders", CreateIfAbsent: spec})
	rec := intStrRecord(g.mem, nil, []int32{1, 2, 3, 4, 5, 6}, []string{"a", "b", "c", "d", "e", "f"})
	acks, err := g.put(desc, rec)
	rec.Release()
	if err != nil || len(acks) != 1 || acks[0].GetChangelogRows() != 6 {
		t.Fatalf("DoPut: %v %v", acks, err)
	}
	if n := watch(); n.GetKind() != setatspb.NotificationKind_TABLE_CREATED {
		t.Fatalf("watch after auto-create: %v", n)
	}
	ti := &setatspb.TableInfo{}
	g.mustAction(ActionGetTable, &setatspb.TableRequest{Database: "app", Table: "orders"}, ti)
	if ti.GetSpec().GetBucketCount() != 3 {
		t.Fatalf("get-table: %v", ti)
	}
	lb := &setatspb.ListBucketsResponse{}
	g.mustAction(ActionListBuckets, &setatspb.TableRequest{Database: "app", Table: "orders"}, lb)
	var total int64
	for _, b := range lb.GetBuckets() {
		total += b.GetEndOffset()
	}
	if total != 6 {
		t.Fatalf("list-buckets: %v", lb)
	}
	lo := &setatspb.LookupOffsetsResponse{}
	g.mustAction(ActionLookupOffsets, &setatspb.LookupOffsetsRequest{Database: "app", Table: "orders",
		Start: &setatspb.LookupOffsetsRequest_Position{Position: setatspb.StartPosition_EARLIEST}}, lo)
	if len(lo.GetOffsets()) != 3 {
		t.Fatalf("lookup-offsets: %v", lo)
	}

	// Bounded reads of every bucket return the six rows.
	fi, err := g.client.GetFlightInfo(g.ctx, &flight.FlightDescriptor{Type: flight.DescriptorPATH, Path: []string{"app", "orders"}})
	if err != nil {
		t.Fatal(err)
	}
	var rows []string
	for _, ep := range fi.GetEndpoint() {
		r, err := g.readStream(ep.GetTicket().GetTicket())
		if err != nil {
			t.Fatal(err)
		}
		rows = append(rows, r...)
	}
	if len(rows) != 6 {
		t.Fatalf("rows: %q", rows)
	}

	// Admin HTTP.
	if code, _ := httpGet(t, "http://"+p.ready.AdminAddr+"/readyz"); code != 200 {
		t.Fatalf("/readyz %d", code)
	}
	if _, body := httpGet(t, "http://"+p.ready.AdminAddr+"/metrics"); !strings.Contains(body, `setats_rows_written_total{table="app.orders"} 6`) {
		t.Fatalf("/metrics:\n%s", body)
	}

	// SIGTERM: exit 0, ready file removed.
	if code := p.terminate(t); code != 0 {
		t.Fatalf("exit code %d after SIGTERM\n%s", code, p.stderr)
	}
	if _, err := os.Stat(p.file); !os.IsNotExist(err) {
		t.Fatalf("ready file left behind: %v", err)
	}
	if !strings.Contains(p.stderr.String(), `"msg":"setats gateway stopped"`) {
		t.Fatalf("no JSON shutdown log line:\n%s", p.stderr)
	}

	// Restart on the same warehouse: the acknowledged rows are there.
	p2 := startBinary(t, nil, "--warehouse", wh)
	g2 := p2.client(t)
	rows = nil
	for b := int32(0); b < 3; b++ {
		r, err := g2.readStream(ticket(t, &setatspb.ChangelogTicket{Database: "app", Table: "orders", Bucket: b}))
		if err != nil {
			t.Fatal(err)
		}
		rows = append(rows, r...)
	}
	if len(rows) != 6 {
		t.Fatalf("after restart: %q", rows)
	}
	if code := p2.terminate(t); code != 0 {
		t.Fatalf("exit code %d", code)
	}
}

// TestBinaryFollowAndSIGTERM: a following DoGet on the binary gets rows pushed as they are
// written; SIGTERM while it is open ends it with Unavailable and the process exits 0.
func TestBinaryFollowAndSIGTERM(t *testing.T) {
	p := startBinary(t, nil, "--warehouse", t.TempDir())
	g := p.client(t)
	g.createTable("default", "f", 1, idV, []string{"id"}, nil)
	stream, err := g.client.DoGet(g.ctx, &flight.Ticket{Ticket: ticket(t, &setatspb.ChangelogTicket{Table: "f", Follow: true})})
	if err != nil {
		t.Fatal(err)
	}
	rdr, err := flight.NewRecordReader(stream)
	if err != nil {
		t.Fatal(err)
	}
	defer rdr.Release()
	rec := intStrRecord(g.mem, nil, []int32{7}, []string{"x"})
	_, err = g.put(writeCmd(t, &setatspb.WriteCommand{Table: "f"}), rec)
	rec.Release()
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for len(got) < 1 && rdr.Next() {
		got = append(got, stripTime(printChangelog(rdr.RecordBatch()))...)
	}
	if len(got) != 1 || got[0] != "+I[7, x] @0" {
		t.Fatalf("followed %q: %v", got, rdr.Err())
	}
	if code := p.terminate(t); code != 0 {
		t.Fatalf("exit code %d after SIGTERM\n%s", code, p.stderr)
	}
	for rdr.Next() {
	}
	if rdr.Err() == nil {
		t.Fatal("following stream ended without error at shutdown")
	}
}

// TestBinaryCommands: `setats version`, bad flags and bad environment values.
func TestBinaryCommands(t *testing.T) {
	out, err := exec.Command(setatsBinary, "version").Output()
	if err != nil || strings.TrimSpace(string(out)) != "setats "+Version {
		t.Fatalf("setats version: %q %v", out, err)
	}
	for _, tc := range []struct {
		args []string
		env  string
		want string
	}{
		{[]string{"serve", "--no-such-flag"}, "", "no-such-flag"},
		{[]string{"serve"}, "SETATS_CHANGELOG_RETENTION=forever", "SETATS_CHANGELOG_RETENTION"},
		{[]string{"serve", "--log-level", "loud"}, "", "--log-level"},
		{[]string{"frobnicate"}, "", "unknown command"},
	} {
		cmd := exec.Command(setatsBinary, tc.args...)
		cmd.Env = append(os.Environ(), tc.env)
		out, err := cmd.CombinedOutput()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 2 || !strings.Contains(string(out), tc.want) {
			t.Errorf("setats %v (%s): %v\n%s", tc.args, tc.env, err, out)
		}
	}
}

// TestBinarySIGTERMIdlePut: an open DoPut stream that waits for its next batch does not hold up
// SIGTERM for the drain timeout: the stream ends at once with Unavailable (after the
// acknowledgement of its batch) and the process exits 0 well before --shutdown-timeout (10 min
// here; before, it waited all of it).
func TestBinarySIGTERMIdlePut(t *testing.T) {
	p := startBinary(t, nil, "--warehouse", t.TempDir(), "--shutdown-timeout", "10m")
	g := p.client(t)
	g.createTable("default", "idle", 1, idV, []string{"id"}, nil)
	stream, err := g.client.DoPut(g.ctx)
	if err != nil {
		t.Fatal(err)
	}
	rec := intStrRecord(g.mem, nil, []int32{1}, []string{"x"})
	w := flight.NewRecordWriter(stream, ipc.WithSchema(rec.Schema()), ipc.WithAllocator(g.mem))
	w.SetFlightDescriptor(writeCmd(t, &setatspb.WriteCommand{Table: "idle"}))
	err = w.Write(rec)
	rec.Release()
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if _, err := stream.Recv(); err != nil { // the batch's acknowledgement; the stream is now idle
		t.Fatal(err)
	}
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	_, err = stream.Recv()
	if status.Code(err) != codes.Unavailable {
		t.Fatalf("idle DoPut at SIGTERM ended with %v, want Unavailable", err)
	}
	if code := p.wait(t); code != 0 { // waits at most testTimeout (1 min), far below 10 min
		t.Fatalf("exit code %d after SIGTERM\n%s", code, p.stderr)
	}
}
