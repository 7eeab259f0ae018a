package subscribe

import (
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"
)

func testChannel(t *testing.T, retentionMs int64) *Channel {
	t.Helper()
	c, err := openChannel(t.TempDir(), &Spec{Name: "c", RetentionMs: retentionMs}, slog.Default())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.close() })
	return c
}

func txn(ms int64, tx string, n int) []Record {
	rs := []Record{{Op: OpBegin, TimestampMs: ms, TxID: tx}}
	for i := 0; i < n; i++ {
		rs = append(rs, Record{Op: OpInsert, Object: "d.t", TimestampMs: ms, TxID: tx, Fields: []Field{{"id", "INT"}}, After: [][]byte{[]byte("1")}})
	}
	return append(rs, Record{Op: OpCommit, TimestampMs: ms, TxID: tx})
}

func TestChannelAppendReadReopen(t *testing.T) {
	dir := t.TempDir()
	c, err := openChannel(dir, &Spec{Name: "c"}, slog.Default())
	if err != nil {
		t.Fatal(err)
	}
	wait := c.Wait(0)
	select {
	case <-wait:
		t.Fatal("wait closed before any record")
	default:
	}
	if err := c.Append(txn(1000, "1", 2), "pos1", 1000); err != nil {
		t.Fatal(err)
	}
	<-wait // closed by the append
	if err := c.Append(txn(2000, "2", 1), "pos@2", 2000); err != nil {
		t.Fatal(err)
	}
	_ = c.close()
	c, err = openChannel(dir, nil, slog.Default())
	if err != nil {
		t.Fatal(err)
	}
	defer c.close()
	if first, next := c.Bounds(); first != 0 || next != 7 || c.Position() != "pos@2" {
		t.Fatalf("after reopen: [%d,%d) %q", first, next, c.Position())
	}
	recs, err := c.Read(2, 100, nil)
	if err != nil || len(recs) != 5 || recs[0].ID != 2 || recs[4].ID != 6 || recs[1].Op != OpCommit || recs[3].TxID != "2" {
		t.Fatalf("read from 2: %+v %v", recs, err)
	}
	if _, err := c.Read(8, 1, nil); !isKind(err, OutOfRange) {
		t.Fatalf("read beyond the end: %v", err)
	}
	// Seek by time: first record at or after the timestamp.
	for _, tc := range []struct{ ms, id int64 }{{0, 0}, {1000, 0}, {1001, 4}, {2000, 4}, {2001, 7}} {
		if id, err := c.SeekTimestamp(tc.ms); err != nil || id != tc.id {
			t.Fatalf("seek %d: %d %v, want %d", tc.ms, id, err, tc.id)
		}
	}
}

func isKind(err error, k Kind) bool {
	var e *Error
	return errors.As(err, &e) && e.Kind == k
}

func TestChannelRetention(t *testing.T) {
	c := testChannel(t, 1000)
	for i := int64(0); i < 5; i++ {
		if err := c.Append(txn(i*1000, "t", 1), "p", i*1000); err != nil {
			t.Fatal(err)
		}
	}
	// now 3500: records with timestamp < 2500 go (transactions 0, 1, 2 = ids 0..8).
	n, err := c.ApplyRetention(3500)
	if err != nil || n != 9 {
		t.Fatalf("removed %d, %v", n, err)
	}
	if first, next := c.Bounds(); first != 9 || next != 15 {
		t.Fatalf("bounds [%d,%d)", first, next)
	}
	_, err = c.Read(3, 1, nil)
	if !isKind(err, OutOfRange) || !strings.Contains(err.Error(), "removed by retention") {
		t.Fatalf("read of a removed record: %v", err)
	}
	if recs, err := c.Read(9, 100, nil); err != nil || len(recs) != 6 || recs[0].TimestampMs != 3000 {
		t.Fatalf("read from first: %v %v", recs, err)
	}
	if id, _ := c.SeekTimestamp(0); id != 9 {
		t.Fatalf("seek before the oldest retained: %d", id)
	}
	if n, _ := c.ApplyRetention(3500); n != 0 {
		t.Fatalf("second retention removed %d", n)
	}
}

func TestGroups(t *testing.T) {
	c := testChannel(t, 0)
	if _, err := c.CreateGroup("dts1", "alice", "pw1"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.CreateGroup("dts1", "bob", "pw2"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.CreateGroup("dts2", "carol", "pw3"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.CreateGroup("dts1", "alice", "x"); !isKind(err, AlreadyExists) {
		t.Fatalf("duplicate user: %v", err)
	}
	for _, tc := range []struct {
		group, user, pw string
		kind            Kind // 255 = ok
	}{
		{"dts1", "alice", "pw1", 255},
		{"dts1", "bob", "pw2", 255},
		{"dts1", "alice", "wrong", Unauthenticated}, // T6 wrong password
		{"dts1", "alice", "", Unauthenticated},
		{"dts1", "carol", "pw3", PermissionDenied}, // T6 user of another group
		{"nope", "alice", "pw1", PermissionDenied},
	} {
		_, err := c.Authenticate(tc.group, tc.user, tc.pw)
		if tc.kind == 255 {
			if err != nil {
				t.Fatalf("%+v: %v", tc, err)
			}
			continue
		}
		if !isKind(err, tc.kind) || !strings.Contains(err.Error(), tc.user) || !strings.Contains(err.Error(), tc.group) || !strings.Contains(err.Error(), "channel c") {
			t.Fatalf("%+v: %v (want kind %d naming user, group and channel)", tc, err, tc.kind)
		}
	}
	gs, _ := c.Groups()
	if len(gs) != 2 || gs[0].CommittedID != -1 || strings.Join(gs[0].UserNames(), ",") != "alice,bob" {
		t.Fatalf("groups: %+v", gs)
	}
	if string(gs[0].Users["alice"]) == "pw1" || !strings.HasPrefix(string(gs[0].Users["alice"]), "$2") {
		t.Fatal("password not stored as a bcrypt hash")
	}
	_ = c.Append(txn(1, "t", 1), "p", 1)
	if err := c.Commit("dts1", 3, "0@2@p@1", 5); err != nil {
		t.Fatal(err)
	}
	if err := c.Commit("dts1", 4, "", 5); !isKind(err, OutOfRange) {
		t.Fatalf("commit beyond the end: %v", err)
	}
	gs, _ = c.Groups()
	if gs[0].CommittedID != 3 || gs[0].CommittedCheckpoint != "0@2@p@1" {
		t.Fatalf("committed: %+v", gs[0])
	}
}

// TestHeartbeats: an idle channel gets a HEARTBEAT about every HeartbeatInterval, with
// increasing ids and the channel's position; none while records arrive faster.
func TestHeartbeats(t *testing.T) {
	dir := t.TempDir()
	var now int64 = 1_000_000
	clock := make(chan int64, 1)
	clock <- now
	m, err := Open(Options{WarehouseDir: dir, HeartbeatInterval: 20 * time.Millisecond, Clock: func() int64 {
		v := <-clock
		clock <- v
		return v
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	ch, err := openChannel(t.TempDir(), &Spec{Name: "hb"}, slog.Default())
	if err != nil {
		t.Fatal(err)
	}
	_ = ch.Append(nil, "pos@1", now)
	m.mu.Lock()
	m.chans["hb"] = &running{ch: ch, done: make(chan struct{})}
	m.mu.Unlock()
	set := func(v int64) { <-clock; clock <- v }
	// The clock does not move: no heartbeat is due.
	time.Sleep(100 * time.Millisecond)
	if _, next := ch.Bounds(); next != 0 {
		t.Fatalf("%d heartbeats while the clock stood still", next)
	}
	for i := int64(1); i <= 5; i++ {
		set(now + i*20)
		<-ch.Wait(i - 1)
	}
	recs, _ := ch.Read(0, 100, nil)
	if len(recs) != 5 {
		t.Fatalf("%d records after 5 intervals", len(recs))
	}
	for i, r := range recs {
		if r.Op != OpHeartbeat || r.ID != int64(i) || r.Position != "pos@1" || r.TimestampMs != now+int64(i+1)*20 {
			t.Fatalf("heartbeat %d: %+v", i, r)
		}
	}
	if got := recs[4].Checkpoint(); got != "0@4@pos@1@1000100" {
		t.Fatalf("checkpoint %q", got)
	}
}
