package gateway

import (
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/setats/setats/gateway/subscribe"
	"github.com/setats/setats/internal/dbtest"
	"github.com/setats/setats/proto/setatspb"
)

// TestSubscriptionOutageRetentionDDL checks, against a real PostgreSQL 15 and the gateway's own
// endpoints: DDL records for schema changes (a column added, TRUNCATE), retention per channel
// (a channel created with retention_ms 1 h loses records a default 24 h channel keeps), and a
// source outage reported in the /readyz body (channel_outages names the channel and the error,
// the gateway stays ready) until the source is back and capture resumes.
func TestSubscriptionOutageRetentionDDL(t *testing.T) {
	p := dbtest.StartPostgres(t)
	p.SQL(t, "test", "CREATE SCHEMA shop; CREATE TABLE shop.orders (id int PRIMARY KEY, amount int); ALTER TABLE shop.orders REPLICA IDENTITY FULL")
	var now atomic.Int64
	now.Store(time.Now().UnixMilli())
	g := startGateway(t, func(o *Options) { o.Clock = func() int64 { return now.Load() } })
	hour := int64(time.Hour / time.Millisecond)
	for _, c := range []struct {
		name string
		ms   int64
	}{{"short", hour}, {"long", 0}} {
		info := &setatspb.ChannelInfo{}
		g.mustAction(ActionSubscriptionCreate, &setatspb.CreateChannelRequest{Channel: c.name, SourceUrl: p.URL("test"),
			Tables: []string{"shop.orders"}, RetentionMs: c.ms}, info)
		want := c.ms
		if want == 0 {
			want = subscribe.DefaultRetentionMs
		}
		if info.GetRetentionMs() != want {
			t.Fatalf("channel %s: retention %d ms, want %d", c.name, info.GetRetentionMs(), want)
		}
	}
	short, _ := g.s.subs.Get("short")
	long, _ := g.s.subs.Get("long")

	// DDL records: pgoutput reports the changed relation before the next change of the table.
	p.SQL(t, "test", "INSERT INTO shop.orders VALUES (1, 10)")
	p.SQL(t, "test", "ALTER TABLE shop.orders ADD COLUMN note text")
	p.SQL(t, "test", "INSERT INTO shop.orders VALUES (2, 20, 'n')")
	p.SQL(t, "test", "TRUNCATE shop.orders")
	for _, ch := range []*subscribe.Channel{short, long} {
		recs := dbtest.WaitRecords(t, ch, 0, dbtest.CountOp(subscribe.OpCommit, 3))
		got := strings.Join(dbtest.Dump(recs), "\n")
		want := strings.Join([]string{
			"BEGIN", "INSERT shop.orders after(1,10)", "COMMIT",
			"BEGIN", "DDL shop.orders after(columns changed: id INT, amount INT, note STRING)", "INSERT shop.orders after(2,20,n)", "COMMIT",
			"BEGIN", "DDL shop.orders after(TRUNCATE shop.orders)", "COMMIT",
		}, "\n")
		if got != want {
			t.Fatalf("channel %s records:\n%s\nwant:\n%s", ch.Name(), got, want)
		}
	}

	// Retention per channel: two hours later (gateway clock) the 1 h channel drops what the
	// sources wrote, the 24 h channel keeps it.
	_, shortNext := short.Bounds()
	now.Add(2 * hour)
	g.s.subs.RunRetention()
	if first, next := short.Bounds(); first < shortNext {
		t.Fatalf("channel short (1 h): bounds [%d, %d) after 2 h, want the %d records before the clock jump removed", first, next, shortNext)
	}
	if first, _ := long.Bounds(); first != 0 {
		t.Fatalf("channel long (24 h): first id %d after 2 h, want 0", first)
	}

	// Source outage: /readyz names the channels and the error and stays 200 (ready).
	p.Stop(t)
	waitFor(t, "channel_outages in /readyz", func() bool {
		_, r := readyz(t, g.s)
		return r.ChannelOutages["short"] != "" && r.ChannelOutages["long"] != "" && r.ChannelOutages["short"] != "connecting"
	})
	code, r := readyz(t, g.s)
	if code != 200 || !r.Ready || !strings.Contains(r.ChannelOutages["long"], "channel long") {
		t.Fatalf("/readyz during the outage: %d %+v", code, r)
	}
	_, next := long.Bounds()
	p.Start(t)
	p.SQL(t, "test", "INSERT INTO shop.orders VALUES (3, 30, 'back')")
	recs := dbtest.WaitRecords(t, long, next, dbtest.CountOp(subscribe.OpCommit, 1))
	if got := strings.Join(dbtest.Dump(recs), "|"); got != "BEGIN|INSERT shop.orders after(3,30,back)|COMMIT" {
		t.Fatalf("after the outage: %s", got)
	}
	waitFor(t, "no channel_outages in /readyz", func() bool {
		_, r := readyz(t, g.s)
		return len(r.ChannelOutages) == 0
	})
}
