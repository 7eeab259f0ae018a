package gateway

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/setats/setats/internal/flighttest"
	"github.com/setats/setats/proto/setatspb"
)

// testTimeout bounds every call a test makes, so that a bug hangs no test forever. It is a safety
// net, not an assertion on timing.
const testTimeout = 60 * time.Second

// fakeClock is a settable clock in ms for Options.Clock.
type fakeClock struct{ ms atomic.Int64 }

func (c *fakeClock) now() int64   { return c.ms.Load() }
func (c *fakeClock) set(ms int64) { c.ms.Store(ms) }

// testGateway is a gateway started in-process on free ports, with a Flight client and a checked
// allocator that must be back to zero bytes once the gateway stops.
type testGateway struct {
	t      testing.TB
	s      *Server
	fc     *flighttest.Client // the shared test client (internal/flighttest)
	client flight.Client      // fc.FC, for tests of the protocol itself
	mem    *memory.CheckedAllocator
	ctx    context.Context
}

// startGateway starts a gateway in a temporary warehouse with an embedded NATS server on a free
// port; mut may change the options first. Everything is stopped at the end of the test.
func startGateway(t testing.TB, mut func(*Options)) *testGateway {
	t.Helper()
	opts := Options{
		FlightAddr:      "127.0.0.1:0",
		AdminAddr:       "127.0.0.1:0",
		NATSListen:      "127.0.0.1:-1",
		Warehouse:       t.TempDir(),
		ShutdownTimeout: 5 * time.Second,
		Logger:          slog.New(slog.NewTextHandler(io.Discard, nil)),
	}
	if testing.Verbose() {
		opts.Logger = slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	if mut != nil {
		mut(&opts)
	}
	s, err := NewServer(opts)
	if err != nil {
		t.Fatal(err)
	}
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	s.SetAllocator(mem)
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	fc, err := flighttest.Dial(s.FlightAddr(), flighttest.WithAllocator(mem))
	if err != nil {
		s.Shutdown()
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	g := &testGateway{t: t, s: s, fc: fc, client: fc.FC, mem: mem, ctx: ctx}
	t.Cleanup(func() {
		cancel()
		_ = fc.Close()
		s.Shutdown()
		mem.AssertSize(t, 0)
	})
	return g
}

// testWriter sends log lines to t.Log.
type testWriter struct{ t testing.TB }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// action runs a single-result action with a binary body and decodes its result into res.
func (g *testGateway) action(typ string, req, res proto.Message) error {
	var body []byte
	if req != nil {
		var err error
		if body, err = proto.Marshal(req); err != nil {
			return err
		}
	}
	return g.rawAction(typ, body, func(b []byte) error {
		if res == nil {
			return nil
		}
		return proto.Unmarshal(b, res)
	})
}

// rawAction runs an action and hands the body of its single result to fn.
func (g *testGateway) rawAction(typ string, body []byte, fn func([]byte) error) error {
	res, err := g.fc.RawAction(g.ctx, typ, body)
	if err != nil {
		return err
	}
	if len(res) != 1 {
		return fmt.Errorf("action %s: want one result, then EOF; got %d results", typ, len(res))
	}
	return fn(res[0])
}

// mustAction is action that fails the test on error.
func (g *testGateway) mustAction(typ string, req, res proto.Message) {
	g.t.Helper()
	if err := g.action(typ, req, res); err != nil {
		g.t.Fatalf("action %s: %v", typ, err)
	}
}

// createTable creates db.name with the given columns ("name TYPE" pairs) and primary key.
func (g *testGateway) createTable(db, name string, buckets int32, cols []*setatspb.Column, pk []string, opts map[string]string) *setatspb.TableInfo {
	g.t.Helper()
	info := &setatspb.TableInfo{}
	g.mustAction(ActionCreateTable, &setatspb.CreateTableRequest{
		Spec: &setatspb.TableSpec{Database: db, Table: name, Columns: cols, PrimaryKey: pk,
			BucketCount: buckets, Options: opts},
		CreateDatabase: true,
	}, info)
	return info
}

// col builds a Column.
func col(name, typ string) *setatspb.Column { return &setatspb.Column{Name: name, Type: typ} }

// writeCmd returns a CMD descriptor holding a binary WriteCommand for db.table.
func writeCmd(t testing.TB, cmd *setatspb.WriteCommand) *flight.FlightDescriptor {
	b, err := proto.Marshal(cmd)
	if err != nil {
		t.Fatal(err)
	}
	return &flight.FlightDescriptor{Type: flight.DescriptorCMD, Cmd: b}
}

// put sends record batches in one DoPut and returns the decoded acks (or the call's error).
func (g *testGateway) put(desc *flight.FlightDescriptor, recs ...arrow.RecordBatch) ([]*setatspb.WriteAck, error) {
	return g.fc.PutRecords(g.ctx, desc, recs...)
}

// readStream reads a DoGet stream to its end and prints its rows.
func (g *testGateway) readStream(tkt []byte) ([]string, error) {
	var out []string
	err := g.fc.DoGetTicket(g.ctx, tkt, func(_ *arrow.Schema, rec arrow.RecordBatch) error {
		out = append(out, printChangelog(rec)...)
		return nil
	})
	return out, err
}

// ticket encodes a ChangelogTicket in binary.
func ticket(t testing.TB, tk *setatspb.ChangelogTicket) []byte {
	b, err := proto.Marshal(tk)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// printChangelog prints the rows of a DoGet record batch as "+I[v1, v2] @offset t=commitMs".
func printChangelog(rec arrow.RecordBatch) []string {
	kinds := rec.Column(0).(*array.Int8)
	offs := rec.Column(1).(*array.Int64)
	ts := rec.Column(2).(*array.Timestamp)
	out := make([]string, 0, rec.NumRows())
	for i := 0; i < int(rec.NumRows()); i++ {
		var vals []string
		for c := 3; c < int(rec.NumCols()); c++ {
			vals = append(vals, rec.Column(c).ValueStr(i))
		}
		kind := [...]string{"+I", "-U", "+U", "-D"}[kinds.Value(i)]
		out = append(out, fmt.Sprintf("%s[%s] @%d t=%d", kind, strings.Join(vals, ", "), offs.Value(i), ts.Value(i)))
	}
	return out
}

// intStrRecord builds a record (id INT, v STRING) with an optional _row_kind column.
func intStrRecord(mem memory.Allocator, kinds []int8, ids []int32, vs []string) arrow.RecordBatch {
	fields := []arrow.Field{}
	if kinds != nil {
		fields = append(fields, arrow.Field{Name: "_row_kind", Type: arrow.PrimitiveTypes.Int8})
	}
	fields = append(fields,
		arrow.Field{Name: "id", Type: arrow.PrimitiveTypes.Int32},
		arrow.Field{Name: "v", Type: arrow.BinaryTypes.String, Nullable: true})
	b := array.NewRecordBuilder(mem, arrow.NewSchema(fields, nil))
	defer b.Release()
	f := 0
	if kinds != nil {
		b.Field(0).(*array.Int8Builder).AppendValues(kinds, nil)
		f = 1
	}
	b.Field(f).(*array.Int32Builder).AppendValues(ids, nil)
	b.Field(f+1).(*array.StringBuilder).AppendValues(vs, nil)
	return b.NewRecordBatch()
}

// wantCode checks err's gRPC code and that its message names every culprit.
func wantCode(t *testing.T, err error, code codes.Code, culprits ...string) {
	t.Helper()
	if status.Code(err) != code {
		t.Fatalf("error %v: want code %s", err, code)
	}
	for _, c := range culprits {
		if !strings.Contains(status.Convert(err).Message(), c) {
			t.Fatalf("error %q does not name %q", status.Convert(err).Message(), c)
		}
	}
}

// intRecord builds a record with the single column id INT.
func intRecord(mem memory.Allocator, ids ...int32) arrow.RecordBatch {
	b := array.NewRecordBuilder(mem, arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int32}}, nil))
	defer b.Release()
	b.Field(0).(*array.Int32Builder).AppendValues(ids, nil)
	return b.NewRecordBatch()
}

// gaugeValue reads a gauge.
func gaugeValue(t *testing.T, g prometheus.Gauge) float64 {
	t.Helper()
	var pb dto.Metric
	if err := g.Write(&pb); err != nil {
		t.Fatal(err)
	}
	return pb.GetGauge().GetValue()
}

// counterSum adds up every series of a counter vector.
func counterSum(t *testing.T, c prometheus.Collector) float64 {
	t.Helper()
	ch := make(chan prometheus.Metric, 64)
	go func() { c.Collect(ch); close(ch) }()
	var sum float64
	for m := range ch {
		var pb dto.Metric
		if err := m.Write(&pb); err != nil {
			t.Fatal(err)
		}
		sum += pb.GetCounter().GetValue()
	}
	return sum
}
