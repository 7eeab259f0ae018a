package gateway

import (
	"context"
	"fmt"
	"math/rand"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"

	"github.com/setats/setats/gateway/row"
	"github.com/setats/setats/internal/flighttest"
	"github.com/setats/setats/proto/setatspb"
)

// partTable is (id INT, dt STRING, v STRING), primary key (id, dt), partitioned by dt.
var partCols = []flighttest.Col{{Name: "id", Type: "INT", Key: true}, {Name: "dt", Type: "STRING", Key: true}, {Name: "v", Type: "STRING"}}

func (g *testGateway) createPartTable(name string, buckets int32) {
	g.t.Helper()
	g.mustAction(ActionCreateTable, &setatspb.CreateTableRequest{
		Spec: &setatspb.TableSpec{Database: "default", Table: name,
			Columns:    []*setatspb.Column{col("id", "INT"), col("dt", "STRING"), col("v", "STRING")},
			PrimaryKey: []string{"id", "dt"}, PartitionKeys: []string{"dt"}, BucketCount: buckets},
	}, &setatspb.TableInfo{})
}

// snapInfo runs GetFlightInfo with a snapshot ReadCommand.
func (g *testGateway) snapInfo(table string, sr *setatspb.SnapshotRead) (*flight.FlightInfo, error) {
	b, err := proto.Marshal(&setatspb.ReadCommand{Table: table, Snapshot: sr})
	if err != nil {
		g.t.Fatal(err)
	}
	return g.client.GetFlightInfo(g.ctx, &flight.FlightDescriptor{Type: flight.DescriptorCMD, Cmd: b})
}

// snapRows reads one snapshot ticket and returns the schema, E and the rows printed as
// "name=value ..." over the columns after `_key`.
func (g *testGateway) snapRows(tkt []byte) (*arrow.Schema, int64, []string, error) {
	var sc *arrow.Schema
	var out []string
	err := g.fc.DoGetTicket(g.ctx, tkt, func(s *arrow.Schema, rec arrow.RecordBatch) error {
		sc = s
		for i := 0; i < int(rec.NumRows()); i++ {
			var vals []string
			for c := 1; c < int(rec.NumCols()); c++ {
				vals = append(vals, rec.ColumnName(c)+"="+rec.Column(c).ValueStr(i))
			}
			out = append(out, strings.Join(vals, " "))
		}
		return nil
	})
	var e int64
	if sc != nil {
		ev, _ := sc.Metadata().GetValue(row.MetaSnapshotEndOffset)
		e, _ = strconv.ParseInt(ev, 10, 64)
	}
	return sc, e, out, err
}

func decodeTicket(t testing.TB, ep *flight.FlightEndpoint) *setatspb.ChangelogTicket {
	tk := &setatspb.ChangelogTicket{}
	if err := proto.Unmarshal(ep.GetTicket().GetTicket(), tk); err != nil {
		t.Fatal(err)
	}
	return tk
}

// TestSnapshotPlanIsTheFoldUnderConcurrentWrites plans snapshot reads while two writers upsert
// and delete keys of every partition and bucket, and checks for every endpoint that its rows are
// exactly the fold of its bucket's changelog [0, E), E from the stream's metadata, even though
// writes go on between planning and reading.
func TestSnapshotPlanIsTheFoldUnderConcurrentWrites(t *testing.T) {
	g := startGateway(t, nil)
	g.createPartTable("p", 3)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var writes atomic.Int64
	for w := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rnd := rand.New(rand.NewSource(int64(w)))
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				var rows []flighttest.WriteRow
				for range 1 + rnd.Intn(30) {
					k := int8(2)
					if rnd.Intn(5) == 0 {
						k = 3
					}
					rows = append(rows, flighttest.WriteRow{Kind: k, Values: []any{int32(rnd.Intn(100)), fmt.Sprintf("d%d", rnd.Intn(2)), fmt.Sprintf("w%d-%d", w, i)}})
				}
				if _, err := g.fc.Put(g.ctx, "default", "p", partCols, true, [][]flighttest.WriteRow{rows}); err != nil {
					t.Error(err)
					return
				}
				writes.Add(1)
			}
		}()
	}
	defer func() { close(stop); wg.Wait() }()
	for writes.Load() < 5 {
		runtime.Gosched()
	}
	for round := range 8 {
		info, err := g.snapInfo("p", &setatspb.SnapshotRead{})
		if err != nil {
			t.Fatal(err)
		}
		if len(info.Endpoint) != 2*3 {
			t.Fatalf("round %d: %d endpoints, want 6 (2 partitions x 3 buckets)", round, len(info.Endpoint))
		}
		for _, ep := range info.Endpoint {
			tk := decodeTicket(t, ep)
			if tk.GetSnapshot().GetViewId() == "" {
				t.Fatal("ticket without a view id")
			}
			_, e, rows, err := g.snapRows(ep.GetTicket().GetTicket())
			if err != nil {
				t.Fatal(err)
			}
			fold := map[string]string{}
			if e > 0 {
				cl, err := g.changelogRange("p", tk.GetPartition(), tk.GetBucket(), e)
				if err != nil {
					t.Fatal(err)
				}
				for _, r := range cl {
					k := fmt.Sprint(r.Values[0], "/", r.Values[1])
					if r.Kind == 1 || r.Kind == 3 {
						delete(fold, k)
					} else {
						fold[k] = fmt.Sprintf("id=%v dt=%v v=%v", r.Values[0], r.Values[1], r.Values[2])
					}
				}
			}
			want := make([]string, 0, len(fold))
			for _, v := range fold {
				want = append(want, v)
			}
			sort.Strings(want)
			got := append([]string(nil), rows...)
			sort.Strings(got)
			if strings.Join(got, "\n") != strings.Join(want, "\n") {
				t.Fatalf("round %d %s bucket %d at E=%d:\n got %q\nwant %q", round, tk.GetPartition(), tk.GetBucket(), e, got, want)
			}
		}
	}
	if n := g.s.views.len(); n != 0 {
		t.Fatalf("%d views still pinned after every stream ended", n)
	}
}

// TestSnapshotProjectionAndPartitions: columns pick and order the columns after `_key`,
// partitions select the endpoints (and filter a DoGet of another partition to no row), the
// one-component path "db.table" plans a full snapshot read, and unknown or malformed names are
// InvalidArgument naming them, truncated.
func TestSnapshotProjectionAndPartitions(t *testing.T) {
	g := startGateway(t, nil)
	g.createPartTable("p", 2)
	if _, err := g.fc.Put(g.ctx, "default", "p", partCols, false, [][]flighttest.WriteRow{{
		{Values: []any{int32(1), "d1", "a"}}, {Values: []any{int32(2), "d1", "b"}}, {Values: []any{int32(1), "d2", "c"}},
	}}); err != nil {
		t.Fatal(err)
	}
	info, err := g.snapInfo("p", &setatspb.SnapshotRead{Columns: []string{"v", "id"}, Partitions: []string{"dt=d2"}})
	if err != nil {
		t.Fatal(err)
	}
	sc, err := flight.DeserializeSchema(info.GetSchema(), memory.DefaultAllocator)
	if err != nil || fmt.Sprint(fieldNames(sc.Fields())) != "[_key v id]" {
		t.Fatalf("planned schema %v %v", sc, err)
	}
	var got []string
	for _, ep := range info.Endpoint {
		if p := decodeTicket(t, ep).GetPartition(); p != "dt=d2" {
			t.Fatalf("endpoint of partition %q, filter dt=d2", p)
		}
		_, _, rows, err := g.snapRows(ep.GetTicket().GetTicket())
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, rows...)
	}
	if strings.Join(got, ";") != "v=c id=1" {
		t.Fatalf("projected, filtered rows %q", got)
	}
	// A DoGet of partition d1 with the filter dt=d2: no row.
	_, _, rows, err := g.snapRows(ticket(t, &setatspb.ChangelogTicket{Table: "p", Partition: "dt=d1", Bucket: 0,
		Snapshot: &setatspb.SnapshotRead{Partitions: []string{"dt=d2"}}}))
	if err != nil || len(rows) != 0 {
		t.Fatalf("filtered-out bucket: %q %v", rows, err)
	}
	// ["default.p"]: every partition, every column.
	info, err = g.client.GetFlightInfo(g.ctx, &flight.FlightDescriptor{Type: flight.DescriptorPATH, Path: []string{"default.p"}})
	if err != nil || len(info.Endpoint) != 4 {
		t.Fatalf("path default.p: %v endpoints, %v", len(info.GetEndpoint()), err)
	}
	got = nil
	for _, ep := range info.Endpoint {
		_, _, rows, err := g.snapRows(ep.GetTicket().GetTicket())
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, rows...)
	}
	sort.Strings(got)
	if strings.Join(got, ";") != "id=1 dt=d1 v=a;id=1 dt=d2 v=c;id=2 dt=d1 v=b" {
		t.Fatalf("path read %q", got)
	}
	sr, err := g.client.GetSchema(g.ctx, &flight.FlightDescriptor{Type: flight.DescriptorPATH, Path: []string{"default.p"}})
	if err != nil {
		t.Fatal(err)
	}
	if sc, _ := flight.DeserializeSchema(sr.GetSchema(), memory.DefaultAllocator); fmt.Sprint(fieldNames(sc.Fields())) != "[_key id dt v]" {
		t.Fatalf("GetSchema of the path: %v", sc)
	}

	long := strings.Repeat("x", 5000)
	for _, c := range []struct {
		sr      *setatspb.SnapshotRead
		culprit []string
	}{
		{&setatspb.SnapshotRead{Columns: []string{"id", "nope", long}}, []string{`"nope"`, "(5000 bytes)", "unknown columns"}},
		{&setatspb.SnapshotRead{Columns: []string{"id", "id"}}, []string{`"id"`, "twice"}},
		{&setatspb.SnapshotRead{Partitions: []string{"dt=d9"}}, []string{`"dt=d9"`, "unknown partitions"}},
		{&setatspb.SnapshotRead{Partitions: []string{"zz=" + long}}, []string{"(5003 bytes)"}},
		{&setatspb.SnapshotRead{AfterKey: []byte{1}}, []string{"after_key"}},
	} {
		_, err := g.snapInfo("p", c.sr)
		wantCode(t, err, codes.InvalidArgument, c.culprit...)
		if len(err.Error()) > 2000 {
			t.Fatalf("error of %d bytes", len(err.Error()))
		}
		// The same names in a DoGet ticket.
		if c.sr.GetAfterKey() == nil {
			_, _, _, err = g.snapRows(ticket(t, &setatspb.ChangelogTicket{Table: "p", Partition: "dt=d1", Snapshot: c.sr}))
			wantCode(t, err, codes.InvalidArgument, c.culprit...)
		}
	}
	if n := g.s.views.len(); n != 0 {
		t.Fatalf("%d views pinned after refused plans", n)
	}
}

// TestSnapshotLease: a view pinned by GetFlightInfo and not read is released by the retention
// pass once --snapshot-lease has passed (its DoGet is then Aborted, naming the plan again); a
// stream that broke off keeps its view for a resume with after_key until then; a stream read to
// its end releases its view at once.
func TestSnapshotLease(t *testing.T) {
	clock := &fakeClock{}
	clock.set(1_000_000)
	g := startGateway(t, func(o *Options) { o.Clock = clock.now; o.SnapshotLease = 5000 * 1e6 })
	g.createTable("default", "t", 1, idV, []string{"id"}, nil)
	// 20000 rows of 200 bytes: more than gRPC buffers, so that a cancelled stream breaks off.
	const n = 20000
	for from := 0; from < n; from += 2000 {
		ids := make([]int32, 2000)
		vs := make([]string, 2000)
		for i := range ids {
			ids[i], vs[i] = int32(from+i), strings.Repeat("v", 200)
		}
		rec := intStrRecord(g.mem, nil, ids, vs)
		if _, err := g.put(writeCmd(t, &setatspb.WriteCommand{Table: "t"}), rec); err != nil {
			t.Fatal(err)
		}
		rec.Release()
	}
	st := func() *storeTable {
		ot, err := g.s.openTable(g.s.cat, "default", "t")
		if err != nil {
			t.Fatal(err)
		}
		return ot.st
	}()
	info, err := g.snapInfo("t", &setatspb.SnapshotRead{})
	if err != nil || len(info.Endpoint) != 1 || st.OpenViews() != 1 {
		t.Fatalf("plan: %v %v views=%d", info, err, st.OpenViews())
	}
	tk := decodeTicket(t, info.Endpoint[0])
	// Within the lease the view stays.
	clock.set(1_000_000 + 4000)
	g.s.RunRetention()
	if st.OpenViews() != 1 {
		t.Fatal("view released within its lease")
	}
	// Read one page of 100 rows and break off: resume after its last key on the same view.
	tk.MaxBatchRows = 100
	ctx, cancel := context.WithCancel(g.ctx)
	rdr, err := g.fc.OpenGet(ctx, ticket(t, tk))
	if err != nil {
		t.Fatal(err)
	}
	if !rdr.Next() || rdr.RecordBatch().NumRows() != 100 {
		t.Fatalf("first page: %v", rdr.Err())
	}
	lastKey := append([]byte(nil), rdr.RecordBatch().Column(0).(*array.Binary).Value(99)...)
	cancel()
	rdr.Release()
	for gaugeValue(t, g.s.metrics.openStreams) > 0 { // until the server sees the cancel
		runtime.Gosched()
	}
	if st.OpenViews() != 1 {
		t.Fatal("a broken-off stream released its pinned view")
	}
	tk.Snapshot.AfterKey = lastKey
	_, _, rows, err := g.snapRows(ticket(t, tk))
	if err != nil || len(rows) != n-100 || rows[0] != "id=100 v="+strings.Repeat("v", 200) {
		t.Fatalf("resume on the pinned view: %d rows, %v", len(rows), err)
	}
	if st.OpenViews() != 0 {
		t.Fatal("a stream read to its end kept its view")
	}
	// A plan left unread: released by the lease, then Aborted.
	info, err = g.snapInfo("t", &setatspb.SnapshotRead{})
	if err != nil {
		t.Fatal(err)
	}
	clock.set(1_000_000 + 4000 + 5001)
	g.s.RunRetention()
	if st.OpenViews() != 0 {
		t.Fatal("the lease did not release an unread view")
	}
	_, _, _, err = g.snapRows(info.Endpoint[0].GetTicket().GetTicket())
	wantCode(t, err, codes.Aborted, "GetFlightInfo again")
}

// peakAllocator tracks the most bytes allocated at once.
type peakAllocator struct {
	memory.Allocator
	mu        sync.Mutex
	cur, peak int
}

func (a *peakAllocator) Allocate(n int) []byte {
	a.mu.Lock()
	a.cur += n
	a.peak = max(a.peak, a.cur)
	a.mu.Unlock()
	return a.Allocator.Allocate(n)
}

func (a *peakAllocator) Reallocate(n int, b []byte) []byte {
	a.mu.Lock()
	a.cur += n - len(b)
	a.peak = max(a.peak, a.cur)
	a.mu.Unlock()
	return a.Allocator.Reallocate(n, b)
}

func (a *peakAllocator) Free(b []byte) {
	a.mu.Lock()
	a.cur -= len(b)
	a.mu.Unlock()
	a.Allocator.Free(b)
}

// TestSnapshotStreamMemoryBound: the gateway's Arrow memory while streaming a snapshot does not
// grow with the table: reading 10x the rows peaks at about the same bytes (one batch), and no
// batch exceeds max_batch_rows.
func TestSnapshotStreamMemoryBound(t *testing.T) {
	peaks := map[int]int{}
	for _, n := range []int{1000, 10000} {
		g := startGateway(t, nil)
		pa := &peakAllocator{Allocator: memory.NewGoAllocator()}
		g.s.SetAllocator(pa)
		g.createTable("default", "m", 1, idV, []string{"id"}, nil)
		for from := 0; from < n; from += 1000 {
			ids := make([]int32, 1000)
			vs := make([]string, 1000)
			for i := range ids {
				ids[i] = int32(from + i)
				vs[i] = strings.Repeat("v", 200)
			}
			rec := intStrRecord(g.mem, nil, ids, vs)
			if _, err := g.put(writeCmd(t, &setatspb.WriteCommand{Table: "m"}), rec); err != nil {
				t.Fatal(err)
			}
			rec.Release()
		}
		pa.mu.Lock()
		pa.peak = pa.cur
		pa.mu.Unlock()
		rows := 0
		err := g.fc.DoGetTicket(g.ctx, ticket(t, &setatspb.ChangelogTicket{Table: "m", MaxBatchRows: 100, Snapshot: &setatspb.SnapshotRead{}}),
			func(_ *arrow.Schema, rec arrow.RecordBatch) error {
				if rec.NumRows() > 100 {
					return fmt.Errorf("batch of %d rows, max_batch_rows 100", rec.NumRows())
				}
				rows += int(rec.NumRows())
				return nil
			})
		if err != nil || rows != n {
			t.Fatalf("%d rows: read %d, %v", n, rows, err)
		}
		peaks[n] = pa.peak
	}
	t.Logf("gateway Arrow peak bytes while streaming: 1k rows %d, 10k rows %d", peaks[1000], peaks[10000])
	if peaks[10000] > 2*peaks[1000] {
		t.Fatalf("peak memory grows with the table: %d bytes for 1k rows, %d for 10k", peaks[1000], peaks[10000])
	}
}

// changelogRange reads the changelog rows [0, end) of one bucket.
func (g *testGateway) changelogRange(table, partition string, bucket int32, end int64) ([]flighttest.ChangeRow, error) {
	var out []flighttest.ChangeRow
	err := g.fc.DoGet(g.ctx, &setatspb.ChangelogTicket{Table: table, Partition: partition, Bucket: bucket,
		Start: &setatspb.ChangelogTicket_Offset{Offset: 0}, EndOffset: end}, func(_ *arrow.Schema, rec arrow.RecordBatch) error {
		rows, err := flighttest.DecodeChangelog(rec)
		out = append(out, rows...)
		return err
	})
	return out, err
}
