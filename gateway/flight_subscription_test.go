package gateway

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"google.golang.org/grpc/codes"

	"github.com/setats/setats/gateway/subscribe"
	"github.com/setats/setats/internal/dbtest"
	"github.com/setats/setats/proto/setatspb"
)

// readChannel reads a channel DoGet stream (not following) and prints "OP object after=..." per
// record, and the stream's cluster id.
func (g *testGateway) readChannel(ct *setatspb.ChannelTicket) ([]string, string, error) {
	stream, err := g.client.DoGet(g.ctx, &flight.Ticket{Ticket: ticket(g.t, &setatspb.ChangelogTicket{Channel: ct})})
	if err != nil {
		return nil, "", err
	}
	rdr, err := flight.NewRecordReader(stream, ipc.WithAllocator(g.mem))
	if err != nil {
		return nil, "", err
	}
	defer rdr.Release()
	cluster, _ := rdr.Schema().Metadata().GetValue(subscribe.MetaClusterID)
	var out []string
	for rdr.Next() {
		rec := rdr.RecordBatch()
		ops := rec.Column(1).(*array.String)
		objs := rec.Column(2).(*array.String)
		after := rec.Column(9).(*array.List)
		vals := after.ListValues().(*array.Binary)
		for i := 0; i < int(rec.NumRows()); i++ {
			if ops.Value(i) == "HEARTBEAT" {
				continue
			}
			line := ops.Value(i)
			if objs.IsValid(i) {
				line += " " + objs.Value(i)
			}
			if after.IsValid(i) {
				s, e := after.ValueOffsets(i)
				var vs []string
				for j := s; j < e; j++ {
					vs = append(vs, string(vals.Value(int(j))))
				}
				line += " after(" + strings.Join(vs, ",") + ")"
			}
			out = append(out, line)
		}
	}
	return out, cluster, rdr.Err()
}

// TestSubscriptionFlight: channel and group actions, DoGet of a channel with consumer
// credentials (T6), the cluster id check (T7), seek and commit, against a real PostgreSQL.
func TestSubscriptionFlight(t *testing.T) {
	p := dbtest.StartPostgres(t)
	p.SQL(t, "test", "CREATE SCHEMA shop; CREATE TABLE shop.orders (id int PRIMARY KEY, amount int); ALTER TABLE shop.orders REPLICA IDENTITY FULL")
	g := startGateway(t, nil)
	info := &setatspb.ChannelInfo{}
	g.mustAction(ActionSubscriptionCreate, &setatspb.CreateChannelRequest{Channel: "ch1", SourceUrl: p.URL("test"), Tables: []string{"shop.orders"}}, info)
	if info.GetClusterId() == "" || info.GetSlot() != "setats_ch1" || strings.Contains(info.GetSourceUrl(), "xxx") {
		t.Fatalf("channel info: %v", info)
	}
	err := g.action(ActionSubscriptionCreate, &setatspb.CreateChannelRequest{Channel: "ch1", SourceUrl: p.URL("test"), Tables: []string{"shop.orders"}}, nil)
	wantCode(t, err, codes.AlreadyExists, "ch1")
	err = g.action(ActionSubscriptionDescribe, &setatspb.ChannelRequest{Channel: "nope"}, nil)
	wantCode(t, err, codes.NotFound, "nope")
	g.mustAction(ActionSubscriptionCreateGroup, &setatspb.CreateGroupRequest{Channel: "ch1", Group: "dts1", User: "u1", Password: "pw"}, nil)
	g.mustAction(ActionSubscriptionCreateGroup, &setatspb.CreateGroupRequest{Channel: "ch1", Group: "dts2", User: "u2", Password: "pw"}, nil)
	groups := &setatspb.ListGroupsResponse{}
	g.mustAction(ActionSubscriptionGroups, &setatspb.ChannelRequest{Channel: "ch1"}, groups)
	if len(groups.GetGroups()) != 2 || groups.GetGroups()[0].GetCommittedId() != -1 {
		t.Fatalf("groups: %v", groups)
	}

	p.SQL(t, "test", "INSERT INTO shop.orders VALUES (1, 10)")
	cred := &setatspb.ConsumerCredentials{Group: "dts1", User: "u1", Password: "pw"}
	var got []string
	var cluster string
	for len(got) < 3 {
		if got, cluster, err = g.readChannel(&setatspb.ChannelTicket{Channel: "ch1", Credentials: cred}); err != nil {
			t.Fatal(err)
		}
	}
	if strings.Join(got, "|") != "BEGIN|INSERT shop.orders after(1,10)|COMMIT" || cluster != info.GetClusterId() {
		t.Fatalf("read: %v cluster %s", got, cluster)
	}
	// T6: a wrong password and a user of another group are refused, naming user, group, channel.
	_, _, err = g.readChannel(&setatspb.ChannelTicket{Channel: "ch1", Credentials: &setatspb.ConsumerCredentials{Group: "dts1", User: "u1", Password: "bad"}})
	wantCode(t, err, codes.Unauthenticated, "u1", "dts1", "ch1")
	_, _, err = g.readChannel(&setatspb.ChannelTicket{Channel: "ch1", Credentials: &setatspb.ConsumerCredentials{Group: "dts1", User: "u2", Password: "pw"}})
	wantCode(t, err, codes.PermissionDenied, "u2", "dts1", "ch1")
	_, _, err = g.readChannel(&setatspb.ChannelTicket{Channel: "ch1"})
	wantCode(t, err, codes.Unauthenticated, "ch1")
	// T7: a reader whose state names another cluster id.
	_, _, err = g.readChannel(&setatspb.ChannelTicket{Channel: "ch1", Credentials: cred, ClusterId: "A"})
	wantCode(t, err, codes.FailedPrecondition, "Cluster changed from A to "+info.GetClusterId()+", consumer require restart")
	// Restarted, the consumer of that group re-seeks by time: from the start of time, everything.
	got, cluster, err = g.readChannel(&setatspb.ChannelTicket{Channel: "ch1", Credentials: cred, ClusterId: "A", ReseekTimestampMs: 0,
		Start: &setatspb.ChannelTicket_FromId{FromId: 1 << 40}})
	if err != nil || cluster != info.GetClusterId() || strings.Join(got, "|") != "BEGIN|INSERT shop.orders after(1,10)|COMMIT" {
		t.Fatalf("re-seek after the cluster change: %v %s %v", got, cluster, err)
	}

	// Seek and commit.
	seek := &setatspb.SeekResponse{}
	g.mustAction(ActionSubscriptionSeek, &setatspb.SeekRequest{Channel: "ch1", Credentials: cred, Start: &setatspb.SeekRequest_Committed{Committed: true}}, seek)
	if seek.GetFound() {
		t.Fatalf("committed position before any commit: %v", seek)
	}
	// The id of the INSERT (heartbeats may come first).
	ch, _ := g.s.subs.Get("ch1")
	recs, _ := ch.Read(0, 1000, nil)
	insertID := int64(-1)
	for _, r := range recs {
		if r.Op == subscribe.OpInsert {
			insertID = r.ID
		}
	}
	g.mustAction(ActionSubscriptionCommit, &setatspb.CommitRequest{Channel: "ch1", Credentials: cred, NextId: insertID, Checkpoint: "0@0@x@1"}, nil)
	g.mustAction(ActionSubscriptionSeek, &setatspb.SeekRequest{Channel: "ch1", Credentials: cred, Start: &setatspb.SeekRequest_Committed{Committed: true}}, seek)
	if !seek.GetFound() || seek.GetId() != insertID {
		t.Fatalf("committed position: %v", seek)
	}
	got, _, err = g.readChannel(&setatspb.ChannelTicket{Channel: "ch1", Credentials: cred, Start: &setatspb.ChannelTicket_FromId{FromId: insertID}})
	if err != nil || got[0] != "INSERT shop.orders after(1,10)" {
		t.Fatalf("read from the insert: %v %v", got, err)
	}
	err = g.action(ActionSubscriptionCommit, &setatspb.CommitRequest{Channel: "ch1", Credentials: cred, NextId: insertID, ClusterId: "A"}, nil)
	wantCode(t, err, codes.FailedPrecondition, "Cluster changed from A to")

	// The cluster id is stable: it is the warehouse's cluster-id file.
	b, err := os.ReadFile(filepath.Join(strings.TrimPrefix(g.s.Warehouse(), "file://"), subscribe.ClusterIDFile))
	if err != nil || strings.TrimSpace(string(b)) != info.GetClusterId() {
		t.Fatalf("cluster-id file: %q %v", b, err)
	}
	list := &setatspb.ListChannelsResponse{}
	g.mustAction(ActionSubscriptionList, &setatspb.ListChannelsRequest{}, list)
	if len(list.GetChannels()) != 1 {
		t.Fatalf("list: %v", list)
	}
	g.mustAction(ActionSubscriptionDrop, &setatspb.ChannelRequest{Channel: "ch1"}, nil)
	err = g.action(ActionSubscriptionDrop, &setatspb.ChannelRequest{Channel: "ch1"}, nil)
	wantCode(t, err, codes.NotFound, "ch1")
	g.mustAction(ActionSubscriptionDrop, &setatspb.ChannelRequest{Channel: "ch1", IgnoreIfNotExists: true}, nil)
}
