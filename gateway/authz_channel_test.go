package gateway

import (
	"context"
	"fmt"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"

	"github.com/setats/setats/internal/dbtest"
	"github.com/setats/setats/proto/setatspb"
)

// TestAuthorizeChannels: a real channel on a gateway with a users file (SPEC sections 11 and 14).
// Managing a channel needs admin on it; reading it needs read on it (a channel grant, or a grant
// on every database and table) and the consumer group's credentials; a database grant covers no
// channel; subscription-list shows only the channels the caller may read; a following read ends
// with PermissionDenied once a users file reload takes the grant away.
func TestAuthorizeChannels(t *testing.T) {
	p := dbtest.StartPostgres(t)
	p.SQL(t, "test", "CREATE SCHEMA shop; CREATE TABLE shop.orders (id int PRIMARY KEY, amount int); ALTER TABLE shop.orders REPLICA IDENTITY FULL")
	users := []testUser{
		testUsers[0], // admin
		{"reader", "reader-pw", `[{database: shop, table: "*", privileges: [read]}]`},
		{"consumer", "consumer-pw", `[{channel: orders, privileges: [read]}]`},
		{"other", "other-pw", `[{channel: other, privileges: [admin]}]`},
	}
	path := writeUsersFile(t, "", users)
	g := startGateway(t, func(o *Options) {
		o.UsersFile = path
		o.UsersReloadInterval = -1
	})
	as := func(name string) *testGateway {
		for _, u := range users {
			if u.name == name {
				return g.as(u.name, u.password)
			}
		}
		return g
	}
	create := &setatspb.CreateChannelRequest{Channel: "orders", SourceUrl: p.URL("test"), Tables: []string{"shop.orders"}}
	group := &setatspb.CreateGroupRequest{Channel: "orders", Group: "dts1", User: "u1", Password: "pw"}
	for _, who := range []string{"consumer", "reader", "other"} {
		wantCode(t, as(who).action(ActionSubscriptionCreate, create, nil), codes.PermissionDenied, fmt.Sprintf("user %q", who), "admin", "channel orders")
	}
	wantCode(t, g.action(ActionSubscriptionCreate, create, nil), codes.Unauthenticated, "anonymous", ActionSubscriptionCreate)
	admin := as("admin")
	admin.mustAction(ActionSubscriptionCreate, create, &setatspb.ChannelInfo{})
	wantCode(t, as("consumer").action(ActionSubscriptionCreateGroup, group, nil), codes.PermissionDenied, `user "consumer"`, "channel orders")
	admin.mustAction(ActionSubscriptionCreateGroup, group, &setatspb.GroupInfo{})
	p.SQL(t, "test", "INSERT INTO shop.orders VALUES (1, 10)")

	cred := &setatspb.ConsumerCredentials{Group: "dts1", User: "u1", Password: "pw"}
	// The consumer reads with its channel grant and the group's credentials.
	consumer := as("consumer")
	var got []string
	var err error
	for len(got) < 3 {
		if got, _, err = consumer.readChannel(&setatspb.ChannelTicket{Channel: "orders", Credentials: cred}); err != nil {
			t.Fatal(err)
		}
	}
	consumer.mustAction(ActionSubscriptionDescribe, &setatspb.ChannelRequest{Channel: "orders"}, &setatspb.ChannelInfo{})
	consumer.mustAction(ActionSubscriptionSeek, &setatspb.SeekRequest{Channel: "orders", Credentials: cred}, &setatspb.SeekResponse{})
	// The group's credentials alone are not enough, nor is a grant on the tables of the channel's
	// source database, and the gateway user is no consumer group user.
	_, _, err = g.readChannel(&setatspb.ChannelTicket{Channel: "orders", Credentials: cred})
	wantCode(t, err, codes.Unauthenticated, "anonymous", "DoGet")
	_, _, err = as("reader").readChannel(&setatspb.ChannelTicket{Channel: "orders", Credentials: cred})
	wantCode(t, err, codes.PermissionDenied, `user "reader"`, "read", "channel orders")
	_, _, err = consumer.readChannel(&setatspb.ChannelTicket{Channel: "orders"})
	wantCode(t, err, codes.Unauthenticated, "orders", "dts.sid")
	_, _, err = consumer.readChannel(&setatspb.ChannelTicket{Channel: "orders", Credentials: &setatspb.ConsumerCredentials{Group: "dts1", User: "consumer", Password: "consumer-pw"}})
	wantCode(t, err, codes.PermissionDenied, "consumer", "dts1", "orders")

	// Listings show the channels the caller may read.
	for who, want := range map[string]int{"admin": 1, "consumer": 1, "reader": 0, "other": 0} {
		l := &setatspb.ListChannelsResponse{}
		as(who).mustAction(ActionSubscriptionList, &setatspb.ListChannelsRequest{}, l)
		if len(l.GetChannels()) != want {
			t.Errorf("subscription-list as %s: %d channels, want %d", who, len(l.GetChannels()), want)
		}
	}

	// A following read ends with PermissionDenied when a reload takes the grant away.
	ctx, cancel := context.WithCancel(g.ctx)
	defer cancel()
	md, _ := metadata.FromOutgoingContext(consumer.ctx)
	rdr := g.followFirst(metadata.NewOutgoingContext(ctx, md), &setatspb.ChangelogTicket{
		Channel: &setatspb.ChannelTicket{Channel: "orders", Credentials: cred, Follow: true}})
	writeUsersFile(t, path, []testUser{users[0], {"consumer", "consumer-pw", `[{channel: another, privileges: [read]}]`}})
	if err := g.s.Reload(); err != nil {
		t.Fatal(err)
	}
	for rdr.Next() {
	}
	wantCode(t, rdr.Err(), codes.PermissionDenied, `user "consumer"`, "channel orders")
	admin.mustAction(ActionSubscriptionDrop, &setatspb.ChannelRequest{Channel: "orders"}, &setatspb.Empty{})
}
