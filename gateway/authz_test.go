package gateway

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"golang.org/x/crypto/bcrypt"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/setats/setats/proto/setatspb"
)

// testUser is a user of the test users file.
type testUser struct {
	name, password string
	grants         string // YAML flow sequence
}

// testUsers: admin of everything, a reader of database shop, a writer of shop.orders only, a
// user without grants, and a reader of the subscription channel nochan only.
var testUsers = []testUser{
	{"admin", "admin-pw", `[{privileges: [admin]}]`},
	{"reader", "reader-pw", `[{database: shop, table: "*", privileges: [read]}]`},
	{"writer", "writer-pw", `[{database: shop, table: orders, privileges: [write]}]`},
	{"nobody", "nobody-pw", `[]`},
	{"consumer", "consumer-pw", `[{channel: nochan, privileges: [read]}]`},
}

// writeUsersFile writes a users file (bcrypt at the lowest cost, to keep tests fast) and returns
// its path.
func writeUsersFile(t *testing.T, path string, users []testUser) string {
	t.Helper()
	var b strings.Builder
	b.WriteString("users:\n")
	for _, u := range users {
		h, err := bcrypt.GenerateFromPassword([]byte(u.password), bcrypt.MinCost)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&b, "  - name: %s\n    password: %q\n    grants: %s\n", u.name, h, u.grants)
	}
	if path == "" {
		path = filepath.Join(t.TempDir(), "users.yaml")
	}
	if err := os.WriteFile(path+".tmp", []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(path+".tmp", path); err != nil {
		t.Fatal(err)
	}
	return path
}

// startAuthGateway starts a gateway with the test users file.
func startAuthGateway(t *testing.T, mut func(*Options)) (*testGateway, string) {
	t.Helper()
	path := writeUsersFile(t, "", testUsers)
	g := startGateway(t, func(o *Options) {
		o.UsersFile = path
		o.UsersReloadInterval = -1 // reloads come from the test
		if mut != nil {
			mut(o)
		}
	})
	return g, path
}

// as returns a copy of g whose calls carry HTTP Basic credentials.
func (g *testGateway) as(user, password string) *testGateway {
	c := *g
	cred := base64.StdEncoding.EncodeToString([]byte(user + ":" + password))
	c.ctx = metadata.AppendToOutgoingContext(g.ctx, "authorization", "Basic "+cred)
	return &c
}

// asUser is as with the user's password from testUsers; "" is anonymous.
func (g *testGateway) asUser(name string) *testGateway {
	for _, u := range testUsers {
		if u.name == name {
			return g.as(u.name, u.password)
		}
	}
	return g
}

// setupShop creates shop.orders (id INT, v STRING; 1 bucket) with two rows, as admin.
func setupShop(t *testing.T, g *testGateway) {
	t.Helper()
	a := g.asUser("admin")
	a.createTable("shop", "orders", 1, idV, []string{"id"}, nil)
	rec := intStrRecord(g.mem, nil, []int32{1, 2}, []string{"a", "b"})
	defer rec.Release()
	if _, err := a.put(writeCmd(t, &setatspb.WriteCommand{Database: "shop", Table: "orders"}), rec); err != nil {
		t.Fatal(err)
	}
}

// firstResult runs an action and returns the error of its first result.
func (g *testGateway) firstResult(typ string, req proto.Message) error {
	body, err := proto.Marshal(req)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(g.ctx)
	defer cancel()
	stream, err := g.client.DoAction(ctx, &flight.Action{Type: typ, Body: body})
	if err != nil {
		return err
	}
	_, err = stream.Recv()
	return err
}

// authPassed is nil when err is nil or is not an authentication or authorization refusal: for
// calls on a channel that does not exist (NotFound once authorized) or a source that cannot be
// reached, what matters is that the caller got past authorization.
func authPassed(err error) error {
	if c := status.Code(err); c == codes.Unauthenticated || c == codes.PermissionDenied {
		return err
	}
	return nil
}

// TestAuthorizeEveryCall: every Flight call and action under each kind of user (SPEC section 14):
// anonymous calls fail Unauthenticated, calls beyond the grants PermissionDenied, both naming the
// user and the table, database, channel or action; the others succeed. The table must cover every
// action ListActions lists and every RPC the gRPC server registers (the first word of a call's
// name is the action or RPC it covers): a new action or RPC without an entry fails the test, so
// that a handler that forgets to authorize cannot go unnoticed.
func TestAuthorizeEveryCall(t *testing.T) {
	g, _ := startAuthGateway(t, nil)
	setupShop(t, g)
	ordersCmd := writeCmd(t, &setatspb.WriteCommand{Database: "shop", Table: "orders"})
	orders := &setatspb.TableRequest{Database: "shop", Table: "orders"}
	if err := g.asUser("admin").action(ActionCreateTable, &setatspb.CreateTableRequest{Spec: &setatspb.TableSpec{
		Database: "shop", Table: "parts", Columns: []*setatspb.Column{{Name: "id", Type: "INT"}, {Name: "dt", Type: "STRING"}},
		PrimaryKey: []string{"id", "dt"}, PartitionKeys: []string{"dt"}}}, &setatspb.TableInfo{}); err != nil {
		t.Fatal(err) // drop-partition needs a partitioned table
	}

	type call struct {
		name string
		// need: "any" (any user), "read", "write" or "admin".
		need string
		// what the refusal names besides the user.
		names string
		run   func(g *testGateway, user string) error
	}
	calls := []call{
		{"gateway-info", "any", ActionGatewayInfo, func(g *testGateway, _ string) error {
			return g.action(ActionGatewayInfo, nil, &setatspb.GatewayInfo{})
		}},
		{"list-databases", "any", ActionListDatabases, func(g *testGateway, _ string) error {
			return g.action(ActionListDatabases, &setatspb.ListDatabasesRequest{}, &setatspb.ListDatabasesResponse{})
		}},
		{"list-tables", "any", ActionListTables, func(g *testGateway, _ string) error {
			return g.action(ActionListTables, &setatspb.ListTablesRequest{Database: "shop"}, &setatspb.ListTablesResponse{})
		}},
		{"ListFlights", "any", "ListFlights", func(g *testGateway, _ string) error {
			s, err := g.client.ListFlights(g.ctx, &flight.Criteria{})
			if err != nil {
				return err
			}
			for {
				if _, err := s.Recv(); err != nil {
					if errors.Is(err, io.EOF) {
						return nil
					}
					return err
				}
			}
		}},
		{"Handshake", "any", "Handshake", func(g *testGateway, _ string) error {
			hs, err := g.client.Handshake(g.ctx) // credentials come from g.ctx
			if err != nil {
				return err
			}
			_ = hs.CloseSend()
			if _, err := hs.Recv(); !errors.Is(err, io.EOF) {
				return err
			}
			md, _ := hs.Header()
			if v := md.Get("authorization"); len(v) != 1 || !strings.HasPrefix(v[0], "Bearer ") {
				return fmt.Errorf("no bearer token in the handshake's headers: %v", md)
			}
			return nil
		}},
		{"watch database", "any", ActionWatch, func(g *testGateway, _ string) error {
			return g.firstResult(ActionWatch, &setatspb.WatchRequest{Database: "shop"})
		}},
		{"get-table", "read", "shop.orders", func(g *testGateway, _ string) error {
			return g.action(ActionGetTable, orders, &setatspb.TableInfo{})
		}},
		{"list-buckets", "read", "shop.orders", func(g *testGateway, _ string) error {
			return g.action(ActionListBuckets, orders, &setatspb.ListBucketsResponse{})
		}},
		{"lookup-offsets", "read", "shop.orders", func(g *testGateway, _ string) error {
			return g.action(ActionLookupOffsets, &setatspb.LookupOffsetsRequest{Database: "shop", Table: "orders"}, &setatspb.LookupOffsetsResponse{})
		}},
		{"watch table", "read", "shop.orders", func(g *testGateway, _ string) error {
			return g.firstResult(ActionWatch, &setatspb.WatchRequest{Database: "shop", Table: "orders"})
		}},
		{"GetSchema", "read", "shop.orders", func(g *testGateway, _ string) error {
			_, err := g.client.GetSchema(g.ctx, &flight.FlightDescriptor{Type: flight.DescriptorPATH, Path: []string{"shop", "orders"}})
			return err
		}},
		{"GetFlightInfo", "read", "shop.orders", func(g *testGateway, _ string) error {
			_, err := g.client.GetFlightInfo(g.ctx, &flight.FlightDescriptor{Type: flight.DescriptorPATH, Path: []string{"shop", "orders"}})
			return err
		}},
		{"DoGet", "read", "shop.orders", func(g *testGateway, _ string) error {
			rows, err := g.readStream(ticket(g.t, &setatspb.ChangelogTicket{Database: "shop", Table: "orders", Bucket: 0}))
			_ = rows
			return err
		}},
		{"GetFlightInfo snapshot", "read", "shop.orders", func(g *testGateway, _ string) error {
			info, err := g.client.GetFlightInfo(g.ctx, &flight.FlightDescriptor{Type: flight.DescriptorPATH, Path: []string{"shop.orders"}})
			if err == nil {
				for _, ep := range info.Endpoint { // read them, so that no view stays pinned
					if _, _, _, err := g.snapRows(ep.GetTicket().GetTicket()); err != nil {
						return err
					}
				}
			}
			return err
		}},
		{"DoGet snapshot", "read", "shop.orders", func(g *testGateway, _ string) error {
			_, _, _, err := g.snapRows(ticket(g.t, &setatspb.ChangelogTicket{Database: "shop", Table: "orders", Snapshot: &setatspb.SnapshotRead{}}))
			return err
		}},
		{"DoExchange lookup", "read", "shop.orders", func(g *testGateway, _ string) error {
			l := g.openLookup(&setatspb.LookupCommand{Database: "shop", Table: "orders"},
				arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int32}}, nil))
			defer l.close()
			_, err := l.lookup(intRecord(g.mem, 1))
			return err
		}},
		{"DoPut", "write", "shop.orders", func(g *testGateway, _ string) error {
			rec := intStrRecord(g.mem, nil, []int32{3}, []string{"c"})
			defer rec.Release()
			_, err := g.put(ordersCmd, rec)
			return err
		}},
		{"DoPut PATH", "write", "shop.orders", func(g *testGateway, _ string) error {
			rec := intStrRecord(g.mem, nil, []int32{4}, []string{"d"})
			defer rec.Release()
			_, err := g.put(&flight.FlightDescriptor{Type: flight.DescriptorPATH, Path: []string{"shop", "orders"}}, rec)
			return err
		}},
		{"abort-staged", "write", "shop.orders", func(g *testGateway, user string) error {
			return g.action(ActionAbortStaged, &setatspb.AbortStagedRequest{Database: "shop", Table: "orders",
				CommitUser: "abort-" + user}, &setatspb.AbortStagedResponse{})
		}},
		{"commit-staged", "write", "shop.orders", func(ug *testGateway, user string) error {
			// admin stages a row for (commit-<user>, 0, checkpoint 1); the user commits it.
			a := g.asUser("admin")
			a.t = ug.t
			cu := "commit-" + user
			abort := &setatspb.AbortStagedResponse{}
			if err := a.action(ActionAbortStaged, &setatspb.AbortStagedRequest{Database: "shop", Table: "orders",
				CommitUser: cu}, abort); err != nil {
				ug.t.Fatal(err)
			}
			rec := intStrRecord(a.mem, nil, []int32{5}, []string{"e"})
			defer rec.Release()
			if _, err := a.put(writeCmd(ug.t, &setatspb.WriteCommand{Database: "shop", Table: "orders",
				Staging: &setatspb.StagingTarget{CommitUser: cu, CheckpointId: 1, Epoch: abort.GetEpoch()}}), rec); err != nil {
				ug.t.Fatal(err)
			}
			return ug.action(ActionCommitStaged, &setatspb.CommitStagedRequest{Database: "shop", Table: "orders",
				CommitUser: cu, CheckpointId: 1}, &setatspb.CommitStagedResponse{})
		}},
		{"create-table if exists", "write|read", "shop.orders", func(g *testGateway, _ string) error {
			return g.action(ActionCreateTable, &setatspb.CreateTableRequest{IgnoreIfExists: true,
				Spec: &setatspb.TableSpec{Database: "shop", Table: "orders", Columns: idV, PrimaryKey: []string{"id"}}}, &setatspb.TableInfo{})
		}},
		{"create-table", "admin", "shop.t_", func(g *testGateway, user string) error {
			return g.action(ActionCreateTable, &setatspb.CreateTableRequest{
				Spec: &setatspb.TableSpec{Database: "shop", Table: "t_" + user, Columns: idV, PrimaryKey: []string{"id"}}}, &setatspb.TableInfo{})
		}},
		{"DoPut create_if_absent", "admin", "shop.auto_", func(g *testGateway, user string) error {
			rec := intStrRecord(g.mem, nil, []int32{1}, []string{"x"})
			defer rec.Release()
			_, err := g.put(writeCmd(g.t, &setatspb.WriteCommand{Database: "shop", Table: "auto_" + user,
				CreateIfAbsent: &setatspb.TableSpec{Columns: idV, PrimaryKey: []string{"id"}}}), rec)
			return err
		}},
		{"drop-table", "admin", "shop.orders2", func(g *testGateway, _ string) error {
			return g.action(ActionDropTable, &setatspb.TableRequest{Database: "shop", Table: "orders2", IgnoreIfNotExists: true}, &setatspb.Empty{})
		}},
		{"drop-partition", "admin", "shop.parts", func(g *testGateway, _ string) error {
			return g.action(ActionDropPartition, &setatspb.DropPartitionRequest{Database: "shop", Table: "parts",
				PartitionSpec: map[string]string{"dt": "d1"}, IgnoreIfNotExists: true}, &setatspb.DropPartitionResponse{})
		}},
		{"create-database", "admin", "database db_", func(g *testGateway, user string) error {
			return g.action(ActionCreateDatabase, &setatspb.DatabaseRequest{Database: "db_" + user}, &setatspb.Empty{})
		}},
		{"drop-database", "admin", "database gone", func(g *testGateway, _ string) error {
			return g.action(ActionDropDatabase, &setatspb.DatabaseRequest{Database: "gone", IgnoreExistence: true}, &setatspb.Empty{})
		}},

		// Table binlog (SPEC section 8): read on the table, drop-slot admin. Each user has its slot.
		{"binlog-acquire-slot", "read", "shop.orders", func(g *testGateway, user string) error {
			return g.action(ActionBinlogAcquireSlot, &setatspb.AcquireSlotRequest{Database: "shop", Table: "orders", Slot: "s_" + user, Owner: "o"}, &setatspb.SlotInfo{})
		}},
		{"binlog-register-sync-point", "read", "shop.orders", func(g *testGateway, user string) error {
			return g.action(ActionBinlogRegisterSyncPoint, &setatspb.RegisterSyncPointRequest{Database: "shop", Table: "orders", Slot: "s_" + user, Owner: "o",
				Checkpoint: true, Points: []*setatspb.SyncPointPosition{{Bucket: 0, Offset: 1}}}, &setatspb.SlotInfo{})
		}},
		{"binlog-sync-point", "read", "shop.orders", func(g *testGateway, user string) error {
			return g.action(ActionBinlogSyncPoint, &setatspb.SlotRequest{Database: "shop", Table: "orders", Slot: "s_" + user, Checkpoint: true}, &setatspb.SyncPointResponse{})
		}},
		{"binlog-consumed", "read", "shop.orders", func(g *testGateway, _ string) error {
			return g.action(ActionBinlogConsumed, &setatspb.SlotRequest{Database: "shop", Table: "orders"}, &setatspb.ConsumedResponse{})
		}},
		{"binlog-progress", "read", "shop.orders", func(g *testGateway, _ string) error {
			return g.action(ActionBinlogProgress, &setatspb.SlotRequest{Database: "shop", Table: "orders"}, &setatspb.ProgressResponse{})
		}},
		{"binlog-slots", "read", "shop.orders", func(g *testGateway, _ string) error {
			return g.action(ActionBinlogSlots, &setatspb.SlotRequest{Database: "shop", Table: "orders"}, &setatspb.ListSlotsResponse{})
		}},
		{"binlog-release-slot", "read", "shop.orders", func(g *testGateway, user string) error {
			return g.action(ActionBinlogReleaseSlot, &setatspb.SlotRequest{Database: "shop", Table: "orders", Slot: "s_" + user, Owner: "o"}, &setatspb.Empty{})
		}},
		{"binlog-drop-slot", "admin", "shop.orders", func(g *testGateway, user string) error {
			return g.action(ActionBinlogDropSlot, &setatspb.SlotRequest{Database: "shop", Table: "orders", Slot: "s_" + user}, &setatspb.Empty{})
		}},

		// Subscription channels (SPEC section 11): admin on the channel to manage it, read (and the
		// consumer group's credentials) to describe and read it. Channel nochan does not exist:
		// holders get past authorization to NotFound (TestAuthorizeChannels uses a real channel).
		{"subscription-list", "any", ActionSubscriptionList, func(g *testGateway, _ string) error {
			return g.action(ActionSubscriptionList, &setatspb.ListChannelsRequest{}, &setatspb.ListChannelsResponse{})
		}},
		{"subscription-create", "admin", "channel nochan", func(g *testGateway, _ string) error {
			return authPassed(g.action(ActionSubscriptionCreate, &setatspb.CreateChannelRequest{Channel: "nochan",
				SourceUrl: "postgres://setats@127.0.0.1:1/none", Tables: []string{"shop.orders"}}, &setatspb.ChannelInfo{}))
		}},
		{"subscription-drop", "admin", "channel nochan", func(g *testGateway, _ string) error {
			return authPassed(g.action(ActionSubscriptionDrop, &setatspb.ChannelRequest{Channel: "nochan"}, &setatspb.Empty{}))
		}},
		{"subscription-create-group", "admin", "channel nochan", func(g *testGateway, _ string) error {
			return authPassed(g.action(ActionSubscriptionCreateGroup, &setatspb.CreateGroupRequest{Channel: "nochan", Group: "g", User: "u", Password: "p"}, &setatspb.GroupInfo{}))
		}},
		{"subscription-describe", "chread", "channel nochan", func(g *testGateway, _ string) error {
			return authPassed(g.action(ActionSubscriptionDescribe, &setatspb.ChannelRequest{Channel: "nochan"}, &setatspb.ChannelInfo{}))
		}},
		{"subscription-groups", "chread", "channel nochan", func(g *testGateway, _ string) error {
			return authPassed(g.action(ActionSubscriptionGroups, &setatspb.ChannelRequest{Channel: "nochan"}, &setatspb.ListGroupsResponse{}))
		}},
		{"subscription-seek", "chread", "channel nochan", func(g *testGateway, _ string) error {
			return authPassed(g.action(ActionSubscriptionSeek, &setatspb.SeekRequest{Channel: "nochan", Credentials: consumerCred}, &setatspb.SeekResponse{}))
		}},
		{"subscription-commit", "chread", "channel nochan", func(g *testGateway, _ string) error {
			return authPassed(g.action(ActionSubscriptionCommit, &setatspb.CommitRequest{Channel: "nochan", Credentials: consumerCred, NextId: 1}, &setatspb.Empty{}))
		}},
		{"DoGet channel", "chread", "channel nochan", func(g *testGateway, _ string) error {
			_, _, err := g.readChannel(&setatspb.ChannelTicket{Channel: "nochan", Credentials: consumerCred})
			return authPassed(err)
		}},

		// Calls any caller may make.
		{"ListActions", "open", "", func(g *testGateway, _ string) error {
			_, err := listActions(g)
			return err
		}},
		// Calls the gateway does not serve: Unimplemented for everyone. Serving one without
		// moving it to a privilege fails here.
		{"PollFlightInfo", "unimplemented", "", func(g *testGateway, _ string) error {
			_, err := g.client.PollFlightInfo(g.ctx, &flight.FlightDescriptor{Type: flight.DescriptorPATH, Path: []string{"shop", "orders"}})
			return err
		}},
	}

	// Every action and RPC the server registers has an entry (DoAction through its actions).
	covered := map[string]bool{"DoAction": true}
	for _, c := range calls {
		covered[strings.Fields(c.name)[0]] = true
	}
	actions, err := listActions(g.asUser("admin"))
	if err != nil {
		t.Fatal(err)
	}
	var rpcs []string
	for _, info := range g.s.grpc.GetServiceInfo() {
		for _, m := range info.Methods {
			rpcs = append(rpcs, m.Name)
		}
	}
	if len(actions) < 20 || len(rpcs) < 10 {
		t.Fatalf("ListActions %v, RPCs %v: the enumeration found too little", actions, rpcs)
	}
	for _, name := range append(actions, rpcs...) {
		if !covered[name] {
			t.Errorf("%s has no entry in TestAuthorizeEveryCall: add one with the privilege it needs", name)
		}
	}

	holds := map[string]map[string]bool{
		"admin":    {"any": true, "read": true, "write": true, "admin": true, "write|read": true, "chread": true},
		"reader":   {"any": true, "read": true, "write|read": true},
		"writer":   {"any": true, "write": true, "write|read": true},
		"nobody":   {"any": true},
		"consumer": {"any": true, "chread": true},
	}
	for _, c := range calls {
		for _, user := range []string{"", "admin", "reader", "writer", "nobody", "consumer"} {
			label := user
			if user == "" {
				label = "anonymous"
			}
			t.Run(c.name+"/"+label, func(t *testing.T) {
				ug := g.asUser(user)
				ug.t = t
				err := c.run(ug, user)
				switch {
				case c.need == "open":
					if err != nil {
						t.Fatalf("%s as %s: %v", c.name, label, err)
					}
				case c.need == "unimplemented":
					wantCode(t, err, codes.Unimplemented)
				case user == "":
					wantCode(t, err, codes.Unauthenticated, "anonymous")
				case holds[user][c.need]:
					if err != nil {
						t.Fatalf("%s as %s: %v", c.name, user, err)
					}
				default:
					wantCode(t, err, codes.PermissionDenied, fmt.Sprintf("user %q", user), c.names)
				}
			})
		}
	}
}

// followFirst opens a DoGet of tk with ctx (its outgoing metadata carries the caller's
// credentials) and reads its first record batch; the reader is released at the end of the test.
func (g *testGateway) followFirst(ctx context.Context, tk *setatspb.ChangelogTicket) *flight.Reader {
	g.t.Helper()
	stream, err := g.client.DoGet(ctx, &flight.Ticket{Ticket: ticket(g.t, tk)})
	if err != nil {
		g.t.Fatal(err)
	}
	rdr, err := flight.NewRecordReader(stream, ipc.WithAllocator(g.mem))
	if err != nil {
		g.t.Fatalf("DoGet %v: %v", tk, err)
	}
	g.t.Cleanup(rdr.Release)
	if !rdr.Next() {
		g.t.Fatalf("DoGet %v: no first batch: %v", tk, rdr.Err())
	}
	return rdr
}

// consumerCred are the consumer group credentials of the channel calls of TestAuthorizeEveryCall.
var consumerCred = &setatspb.ConsumerCredentials{Group: "g", User: "u", Password: "p"}

// listActions returns the action types ListActions lists.
func listActions(g *testGateway) ([]string, error) {
	s, err := g.client.ListActions(g.ctx, &flight.Empty{})
	if err != nil {
		return nil, err
	}
	var out []string
	for {
		a, err := s.Recv()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		out = append(out, a.GetType())
	}
}

// TestAuthListingsShowGrantedOnly: listings show only the databases and tables a user holds a
// grant on.
func TestAuthListingsShowGrantedOnly(t *testing.T) {
	g, _ := startAuthGateway(t, nil)
	setupShop(t, g)
	g.asUser("admin").createTable("secret", "keys", 1, idV, []string{"id"}, nil)
	for _, tc := range []struct {
		user      string
		databases string
		shop      string
	}{
		{"admin", "[default secret shop]", "[orders]"},
		{"reader", "[shop]", "[orders]"},
		{"writer", "[shop]", "[]"},
		{"nobody", "[]", "[]"},
	} {
		ug := g.asUser(tc.user)
		dbs := &setatspb.ListDatabasesResponse{}
		ug.mustAction(ActionListDatabases, &setatspb.ListDatabasesRequest{}, dbs)
		tbls := &setatspb.ListTablesResponse{}
		ug.mustAction(ActionListTables, &setatspb.ListTablesRequest{Database: "shop"}, tbls)
		got := fmt.Sprint(dbs.GetDatabases())
		if got != tc.databases && !(tc.user == "admin" && got == "[secret shop]") {
			t.Errorf("%s: list-databases %s, want %s", tc.user, got, tc.databases)
		}
		if got := fmt.Sprint(tbls.GetTables()); got != tc.shop {
			t.Errorf("%s: list-tables shop %s, want %s", tc.user, got, tc.shop)
		}
	}
}

// TestAuthWrongCredentials: wrong passwords, unknown users and malformed headers fail
// Unauthenticated naming the user, are counted, and a peer that keeps failing is slowed down.
func TestAuthWrongCredentials(t *testing.T) {
	g, _ := startAuthGateway(t, nil)
	for _, tc := range []struct {
		name, header string
		names        []string
	}{
		{"wrong password", basic("reader", "nope"), []string{`user "reader"`, "wrong password"}},
		{"unknown user", basic("mallory", "x"), []string{`user "mallory"`}},
		{"not base64", "Basic !!!", []string{"base64"}},
		{"no colon", "Basic " + base64.StdEncoding.EncodeToString([]byte("reader")), []string{"user:password"}},
		{"unknown scheme", "Digest abc", []string{"Digest"}},
		{"unknown token", "Bearer abc", []string{"bearer token"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := metadata.AppendToOutgoingContext(g.ctx, "authorization", tc.header)
			c := *g
			c.ctx = ctx
			err := c.action(ActionGatewayInfo, nil, &setatspb.GatewayInfo{})
			wantCode(t, err, codes.Unauthenticated, tc.names...)
			if err != nil && strings.Contains(err.Error(), "nope") {
				t.Fatalf("the error shows the password: %v", err)
			}
		})
	}
	if n := metricSum(t, g.s, "setats_auth_failures_total"); n != 6 {
		t.Fatalf("setats_auth_failures_total = %v, want 6", n)
	}
	// Six failures from this peer: its next attempts wait (FreeFailures = 3).
	if n := metricSum(t, g.s, "setats_auth_slowed_total"); n < 3 {
		t.Fatalf("setats_auth_slowed_total = %v, want >= 3 after 6 failures in a row", n)
	}
	// The right password still works, and resets the peer's count.
	if err := g.asUser("reader").action(ActionGatewayInfo, nil, &setatspb.GatewayInfo{}); err != nil {
		t.Fatal(err)
	}
}

func basic(user, password string) string {
	return "Basic " + base64.StdEncoding.EncodeToString([]byte(user+":"+password))
}

// TestAuthBearerToken: the handshake hands out a bearer token that works on later calls, is
// refused once expired (--token-ttl) and once its user is removed from the users file.
func TestAuthBearerToken(t *testing.T) {
	clock := &fakeClock{}
	clock.set(time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC).UnixMilli())
	g, path := startAuthGateway(t, func(o *Options) { o.Clock = clock.now; o.TokenTTL = time.Minute })
	setupShop(t, g)

	tokenCtx := func() context.Context {
		ctx, err := g.client.AuthenticateBasicToken(g.ctx, "reader", "reader-pw")
		if err != nil {
			t.Fatal(err)
		}
		md, _ := metadata.FromOutgoingContext(ctx)
		if v := md.Get("authorization"); len(v) != 1 || !strings.HasPrefix(v[0], "Bearer ") {
			t.Fatalf("handshake did not hand out a bearer token: %v", md)
		}
		return ctx
	}
	withCtx := func(ctx context.Context) *testGateway { c := *g; c.ctx = ctx; return &c }

	ctx := tokenCtx()
	if err := withCtx(ctx).action(ActionGetTable, &setatspb.TableRequest{Database: "shop", Table: "orders"}, &setatspb.TableInfo{}); err != nil {
		t.Fatalf("get-table with the bearer token: %v", err)
	}
	// Beyond the grants with a token: PermissionDenied as with Basic.
	rec := intStrRecord(g.mem, nil, []int32{9}, []string{"z"})
	defer rec.Release()
	_, err := withCtx(ctx).put(writeCmd(t, &setatspb.WriteCommand{Database: "shop", Table: "orders"}), rec)
	wantCode(t, err, codes.PermissionDenied, `user "reader"`, "shop.orders", "write")

	clock.set(clock.now() + time.Minute.Milliseconds())
	err = withCtx(ctx).action(ActionGatewayInfo, nil, &setatspb.GatewayInfo{})
	wantCode(t, err, codes.Unauthenticated, `user "reader"`, "expired")

	// A fresh token, then the user is removed: the token is refused.
	ctx = tokenCtx()
	writeUsersFile(t, path, testUsers[:1])
	if err := g.s.Reload(); err != nil {
		t.Fatal(err)
	}
	err = withCtx(ctx).action(ActionGatewayInfo, nil, &setatspb.GatewayInfo{})
	wantCode(t, err, codes.Unauthenticated, `user "reader"`, "revoked")
	// Anonymous handshake: Unauthenticated.
	_, err = g.client.AuthenticateBasicToken(g.ctx, "", "x")
	wantCode(t, err, codes.Unauthenticated)
}

// TestAuthReloadRevokesStreams: a users file change ends the following DoGet, watch, DoPut and
// lookup (DoExchange) streams of users who lost their grant with PermissionDenied naming user and table; the streams
// of a user who keeps the grant go on.
func TestAuthReloadRevokesStreams(t *testing.T) {
	g, path := startAuthGateway(t, nil)
	setupShop(t, g)
	ctx, cancel := context.WithCancel(g.ctx)
	defer cancel()
	userCtx := func(user string) context.Context {
		md, _ := metadata.FromOutgoingContext(g.asUser(user).ctx)
		return metadata.NewOutgoingContext(ctx, md)
	}

	follow := func(user string) *flight.Reader {
		return g.followFirst(userCtx(user), &setatspb.ChangelogTicket{Database: "shop", Table: "orders", Bucket: 0, Follow: true})
	}
	readerGet := follow("reader")
	adminGet := follow("admin")

	body, _ := proto.Marshal(&setatspb.WatchRequest{Database: "shop", Table: "orders"})
	watch, err := g.client.DoAction(userCtx("reader"), &flight.Action{Type: ActionWatch, Body: body})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := watch.Recv(); err != nil { // READY
		t.Fatal(err)
	}

	// The writer's DoPut: one batch acknowledged, the stream kept open.
	put, err := g.client.DoPut(userCtx("writer"))
	if err != nil {
		t.Fatal(err)
	}
	rec := intStrRecord(g.mem, nil, []int32{10}, []string{"w"})
	defer rec.Release()
	w := flight.NewRecordWriter(put, ipc.WithSchema(rec.Schema()), ipc.WithAllocator(g.mem))
	w.SetFlightDescriptor(writeCmd(t, &setatspb.WriteCommand{Database: "shop", Table: "orders"}))
	if err := w.Write(rec); err != nil {
		t.Fatal(err)
	}
	if _, err := put.Recv(); err != nil {
		t.Fatalf("writer's first ack: %v", err)
	}

	// The reader's lookup session (DoExchange): one lookup answered, the stream kept open.
	lookup := g.asUser("reader").openLookup(&setatspb.LookupCommand{Database: "shop", Table: "orders"},
		arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int32}}, nil))
	defer lookup.close()
	if _, err := lookup.lookup(intRecord(g.mem, 1)); err != nil {
		t.Fatalf("reader's first lookup: %v", err)
	}

	// reader and writer lose their grants; admin keeps everything.
	writeUsersFile(t, path, []testUser{testUsers[0], {"reader", "reader-pw", "[]"}, {"writer", "writer-pw", "[]"}})
	if err := g.s.Reload(); err != nil {
		t.Fatal(err)
	}
	for readerGet.Next() {
	}
	wantCode(t, readerGet.Err(), codes.PermissionDenied, `user "reader"`, "shop.orders")
	_, err = put.Recv()
	wantCode(t, err, codes.PermissionDenied, `user "writer"`, "shop.orders")
	_ = w.Close()
	err = nil
	for err == nil || status.Code(err) != codes.PermissionDenied {
		if _, err = watch.Recv(); err != nil {
			break
		}
	}
	wantCode(t, err, codes.PermissionDenied, `user "reader"`, "shop.orders", ActionWatch)
	// The open lookup session answers its next request with PermissionDenied.
	_, err = lookup.lookup(intRecord(g.mem, 2))
	wantCode(t, err, codes.PermissionDenied, `user "reader"`, "shop.orders", "lookup")

	// admin's stream goes on: a new row arrives.
	rec2 := intStrRecord(g.mem, nil, []int32{3}, []string{"c"})
	defer rec2.Release()
	if _, err := g.asUser("admin").put(writeCmd(t, &setatspb.WriteCommand{Database: "shop", Table: "orders"}), rec2); err != nil {
		t.Fatal(err)
	}
	got := 0
	for got == 0 && adminGet.Next() {
		got += int(adminGet.RecordBatch().NumRows())
	}
	if got == 0 {
		t.Fatalf("admin's following DoGet ended after the reload: %v", adminGet.Err())
	}
}

// TestAuthUsersFileWatched: a changed users file applies without SIGHUP; a broken one is refused
// and the previous users stay.
func TestAuthUsersFileWatched(t *testing.T) {
	path := writeUsersFile(t, "", testUsers)
	g := startGateway(t, func(o *Options) { o.UsersFile = path; o.UsersReloadInterval = 10 * time.Millisecond })
	if err := g.asUser("reader").action(ActionGatewayInfo, nil, &setatspb.GatewayInfo{}); err != nil {
		t.Fatal(err)
	}
	writeUsersFile(t, path, testUsers[:1])
	waitFor(t, "the users file change to apply", func() bool { return g.s.auth.Users().Lookup("reader") == nil })
	wantCode(t, g.asUser("reader").action(ActionGatewayInfo, nil, &setatspb.GatewayInfo{}), codes.Unauthenticated, `user "reader"`)

	if err := os.WriteFile(path+".tmp", []byte("users: [{name: x, password: plain}]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(path+".tmp", path); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the broken file to be refused", func() bool { return metricSum(t, g.s, "setats_auth_reloads_total", "error") >= 1 })
	if err := g.asUser("admin").action(ActionGatewayInfo, nil, &setatspb.GatewayInfo{}); err != nil {
		t.Fatalf("after a broken users file the previous users must stay: %v", err)
	}
	if err := g.s.Reload(); err == nil || !strings.Contains(err.Error(), "bcrypt") {
		t.Fatalf("Reload of a broken file: %v, want an error naming bcrypt", err)
	}
}

// TestSafeDefaults: without --users-file a listen address beyond loopback fails at start naming
// --users-file and --allow-anonymous; --allow-anonymous or a users file allow it; the embedded
// NATS server stays on loopback.
func TestSafeDefaults(t *testing.T) {
	users := writeUsersFile(t, "", testUsers)
	for _, tc := range []struct {
		name string
		mut  func(*Options)
		err  []string
	}{
		{"flight on every interface", func(o *Options) { o.FlightAddr = ":0" }, []string{"--flight-addr", "--users-file", "--allow-anonymous"}},
		{"admin on 0.0.0.0", func(o *Options) { o.AdminAddr = "0.0.0.0:0" }, []string{"--admin-addr", "--users-file", "--allow-anonymous"}},
		{"allow anonymous", func(o *Options) { o.FlightAddr = ":0"; o.AllowAnonymous = true }, nil},
		{"users file", func(o *Options) { o.FlightAddr = ":0"; o.AdminAddr = ":0"; o.UsersFile = users }, nil},
		{"both", func(o *Options) { o.UsersFile = users; o.AllowAnonymous = true }, []string{"--allow-anonymous", "--users-file"}},
		{"nats beyond loopback", func(o *Options) { o.NATSListen = "0.0.0.0:-1"; o.AllowAnonymous = true }, []string{"--nats-listen", "--nats-url"}},
		{"tls key without cert", func(o *Options) { o.TLSKey = "k.pem" }, []string{"--tls-cert"}},
		{"creds without url", func(o *Options) { o.NATSCreds = "x.creds" }, []string{"--nats-creds", "--nats-url"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := Options{FlightAddr: "127.0.0.1:0", AdminAddr: "127.0.0.1:0", NATSListen: "127.0.0.1:-1",
				Warehouse: t.TempDir(), Logger: discardLogger()}
			tc.mut(&o)
			s, err := NewServer(o)
			if err == nil {
				err = s.Start()
				s.Shutdown()
			}
			if tc.err == nil {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil {
				t.Fatalf("started; want an error naming %v", tc.err)
			}
			for _, w := range tc.err {
				if !strings.Contains(err.Error(), w) {
					t.Fatalf("error %q does not name %s", err, w)
				}
			}
		})
	}
	var o Options
	o.SetDefaults()
	if o.FlightAddr != "127.0.0.1:8815" || o.AdminAddr != "127.0.0.1:8816" || o.NATSListen != "127.0.0.1:4222" {
		t.Fatalf("defaults must be loopback: %s %s %s", o.FlightAddr, o.AdminAddr, o.NATSListen)
	}
	if err := o.Validate(); err != nil {
		t.Fatalf("defaults must validate: %v", err)
	}
}

// metricSum sums the series of the family name on the server's registry whose label values
// include every one of labels.
func metricSum(t *testing.T, s *Server, name string, labels ...string) float64 {
	t.Helper()
	fams, err := s.metrics.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var sum float64
	for _, f := range fams {
		if f.GetName() != name {
			continue
		}
	next:
		for _, m := range f.GetMetric() {
			for _, l := range labels {
				found := false
				for _, lp := range m.GetLabel() {
					found = found || lp.GetValue() == l
				}
				if !found {
					continue next
				}
			}
			sum += m.GetCounter().GetValue()
		}
	}
	return sum
}

func discardLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }
