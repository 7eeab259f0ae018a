package gateway

import (
	"context"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"

	"github.com/setats/setats/proto/setatspb"
)

// readToEnd reads a DoGet of tk to its end and returns the rows and the ChangelogEnd of its last
// message (nil when there was none).
func (g *testGateway) readToEnd(ctx context.Context, tk *setatspb.ChangelogTicket) (rows int, end *setatspb.ChangelogEnd, err error) {
	g.t.Helper()
	stream, err := g.client.DoGet(ctx, &flight.Ticket{Ticket: ticket(g.t, tk)})
	if err != nil {
		return 0, nil, err
	}
	rdr, err := flight.NewRecordReader(stream, ipc.WithAllocator(g.mem))
	if err != nil {
		return 0, nil, err
	}
	defer rdr.Release()
	for rdr.Next() {
		rows += int(rdr.RecordBatch().NumRows())
		if md := rdr.LatestAppMetadata(); len(md) > 0 {
			end = &setatspb.ChangelogEnd{}
			if err := proto.Unmarshal(md, end); err != nil {
				g.t.Fatal(err)
			}
		}
	}
	return rows, end, rdr.Err()
}

// TestDropPartition: drop-partition through Flight. A follow DoGet open on a bucket of the
// partition and a DoGet started after the drop both end without an error with a ChangelogEnd
// END_PARTITION_DROPPED; PARTITION_DROPPED is announced; list-buckets no longer lists the
// partition, the other partition keeps its rows; unknown partitions are NotFound naming them,
// bad specs InvalidArgument naming the culprit; a rewrite continues the offsets.
func TestDropPartition(t *testing.T) {
	g := startGateway(t, nil)
	g.mustAction(ActionCreateTable, &setatspb.CreateTableRequest{Spec: &setatspb.TableSpec{Table: "p",
		Columns:    []*setatspb.Column{col("id", "INT"), col("dt", "STRING"), col("v", "STRING")},
		PrimaryKey: []string{"id", "dt"}, PartitionKeys: []string{"dt"}, BucketCount: 2}}, &setatspb.TableInfo{})
	fDt := arrow.Field{Name: "dt", Type: arrow.BinaryTypes.String}
	put := func(ids []int32, dts, vs []string) {
		rec := recordOf(g.mem, []arrow.Field{fID, fDt, fV}, ids, dts, vs)
		defer rec.Release()
		if _, err := g.put(writeCmd(t, &setatspb.WriteCommand{Table: "p"}), rec); err != nil {
			t.Fatal(err)
		}
	}
	put([]int32{1, 2, 3, 4}, []string{"d1", "d1", "d1", "d2"}, []string{"a", "b", "c", "d"})
	buckets := func() map[string]*setatspb.BucketOffsets {
		res := &setatspb.ListBucketsResponse{}
		g.mustAction(ActionListBuckets, &setatspb.TableRequest{Table: "p"}, res)
		out := map[string]*setatspb.BucketOffsets{}
		for _, b := range res.GetBuckets() {
			out[b.GetPartition()+"/"+string(rune('0'+b.GetBucket()))] = b
		}
		return out
	}
	before := buckets()
	var d1 *setatspb.BucketOffsets
	for k, b := range before {
		if strings.HasPrefix(k, "dt=d1/") && (d1 == nil || b.GetEndOffset() > d1.GetEndOffset()) {
			d1 = b
		}
	}

	ctx, cancel := context.WithCancel(g.ctx)
	defer cancel()
	watch := g.watchStream(ctx, &setatspb.WatchRequest{Table: "p"})
	if n := watch(); n.GetKind() != setatspb.NotificationKind_READY {
		t.Fatal(n)
	}
	// A follower of the partition's fullest bucket, open across the drop: it has read every row
	// before the drop starts.
	stream, err := g.client.DoGet(ctx, &flight.Ticket{Ticket: ticket(t, &setatspb.ChangelogTicket{Table: "p", Partition: "dt=d1", Bucket: d1.GetBucket(), Follow: true})})
	if err != nil {
		t.Fatal(err)
	}
	follower, err := flight.NewRecordReader(stream, ipc.WithAllocator(g.mem))
	if err != nil {
		t.Fatal(err)
	}
	defer follower.Release()
	followedRows := 0
	for followedRows < int(d1.GetEndOffset()) && follower.Next() {
		followedRows += int(follower.RecordBatch().NumRows())
	}
	if followedRows != int(d1.GetEndOffset()) {
		t.Fatalf("follower read %d rows before the drop, want %d: %v", followedRows, d1.GetEndOffset(), follower.Err())
	}

	// Refusals first: nothing is dropped by them.
	for _, tc := range []struct {
		req      *setatspb.DropPartitionRequest
		code     codes.Code
		culprits []string
	}{
		{&setatspb.DropPartitionRequest{Table: "p", PartitionSpec: map[string]string{"dt": "d9"}}, codes.NotFound, []string{`"dt=d9"`}},
		{&setatspb.DropPartitionRequest{Table: "p", PartitionSpec: map[string]string{"nope": "x"}}, codes.InvalidArgument, []string{"nope"}},
		{&setatspb.DropPartitionRequest{Table: "p", PartitionSpec: map[string]string{"dt": strings.Repeat("x", 20000)}}, codes.InvalidArgument, []string{"bytes"}},
		{&setatspb.DropPartitionRequest{Table: "p", Partition: "day=d1"}, codes.InvalidArgument, []string{"day=d1"}},
		{&setatspb.DropPartitionRequest{Table: "p", Partition: "dt=d1", PartitionSpec: map[string]string{"dt": "d1"}}, codes.InvalidArgument, []string{"not both"}},
		{&setatspb.DropPartitionRequest{Table: "p"}, codes.InvalidArgument, []string{"missing"}},
		{&setatspb.DropPartitionRequest{Table: "nope", Partition: "dt=d1"}, codes.NotFound, []string{"nope"}},
	} {
		err := g.action(ActionDropPartition, tc.req, &setatspb.DropPartitionResponse{})
		wantCode(t, err, tc.code, tc.culprits...)
	}
	res := &setatspb.DropPartitionResponse{}
	g.mustAction(ActionDropPartition, &setatspb.DropPartitionRequest{Table: "p", PartitionSpec: map[string]string{"dt": "d1"}}, res)
	if !res.GetDropped() || res.GetPartition() != "dt=d1" || res.GetStateRows() != 3 {
		t.Fatalf("drop-partition answered %v", res)
	}
	// Dropped already: NotFound, or dropped = false with ignore_if_not_exists.
	wantCode(t, g.action(ActionDropPartition, &setatspb.DropPartitionRequest{Table: "p", Partition: "dt=d1"}, nil), codes.NotFound, `"dt=d1"`)
	again := &setatspb.DropPartitionResponse{}
	g.mustAction(ActionDropPartition, &setatspb.DropPartitionRequest{Table: "p", Partition: "dt=d1", IgnoreIfNotExists: true}, again)
	if again.GetDropped() {
		t.Fatalf("second drop answered %v", again)
	}

	for {
		n := watch()
		if n.GetKind() == setatspb.NotificationKind_PARTITION_DROPPED {
			if n.GetPartition() != "dt=d1" || n.GetTable() != "p" {
				t.Fatalf("notification %v", n)
			}
			break
		}
	}
	var followEnd *setatspb.ChangelogEnd
	for follower.Next() {
		followedRows += int(follower.RecordBatch().NumRows())
		if md := follower.LatestAppMetadata(); len(md) > 0 {
			followEnd = &setatspb.ChangelogEnd{}
			if err := proto.Unmarshal(md, followEnd); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := follower.Err(); err != nil || followedRows != int(d1.GetEndOffset()) || followEnd.GetReason() != setatspb.ChangelogEndReason_END_PARTITION_DROPPED ||
		followEnd.GetEndOffset() != d1.GetEndOffset() || followEnd.GetPartition() != "dt=d1" {
		t.Fatalf("follower: %d rows, end %v, err %v; want %d rows and END_PARTITION_DROPPED", followedRows, followEnd, err, d1.GetEndOffset())
	}
	// A reader of the dropped partition started after the drop: the same end, at once.
	for _, tk := range []*setatspb.ChangelogTicket{
		{Table: "p", Partition: "dt=d1", Bucket: d1.GetBucket(), Follow: true},
		{Table: "p", Partition: "dt=d1", Bucket: d1.GetBucket(), Start: &setatspb.ChangelogTicket_Offset{Offset: 1}},
	} {
		rows, end, err := g.readToEnd(g.ctx, tk)
		if err != nil || rows != 0 || end.GetReason() != setatspb.ChangelogEndReason_END_PARTITION_DROPPED {
			t.Fatalf("DoGet %v after the drop: %d rows, end %v, err %v", tk, rows, end, err)
		}
	}
	after := buckets()
	for k := range after {
		if strings.HasPrefix(k, "dt=d1/") {
			t.Fatalf("list-buckets still lists %s", k)
		}
	}
	if len(after) != len(before)-len(res.GetBuckets()) {
		t.Fatalf("buckets before %v, after %v", before, after)
	}
	for k, b := range before {
		if strings.HasPrefix(k, "dt=d2/") {
			if rows, err := g.readStream(ticket(t, &setatspb.ChangelogTicket{Table: "p", Partition: "dt=d2", Bucket: b.GetBucket()})); err != nil || len(rows) != int(b.GetEndOffset()) {
				t.Fatalf("partition dt=d2 bucket %d after the drop: %q %v", b.GetBucket(), rows, err)
			}
		}
	}

	// Written again: the same keys are new rows at offsets after the dropped end offset.
	put([]int32{1, 2, 3}, []string{"d1", "d1", "d1"}, []string{"x", "y", "z"})
	rows, end, err := g.readToEnd(g.ctx, &setatspb.ChangelogTicket{Table: "p", Partition: "dt=d1", Bucket: d1.GetBucket(),
		Start: &setatspb.ChangelogTicket_Offset{Offset: d1.GetEndOffset()}})
	if err != nil || end != nil || rows == 0 {
		t.Fatalf("read of the rewritten partition from %d: %d rows, end %v, err %v", d1.GetEndOffset(), rows, end, err)
	}
	if b := buckets()["dt=d1/"+string(rune('0'+d1.GetBucket()))]; b.GetStartOffset() != d1.GetEndOffset() {
		t.Fatalf("rewritten bucket %v starts at %d, want %d", b, b.GetStartOffset(), d1.GetEndOffset())
	}
}
