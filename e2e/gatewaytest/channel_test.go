package gatewaytest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"google.golang.org/protobuf/proto"

	"github.com/setats/setats/internal/dbtest"
	"github.com/setats/setats/proto/setatspb"
)

// chanRecord is one subscription channel record as a consumer reads it (SPEC section 11).
type chanRecord struct {
	id            int64
	op, object    string
	before, after []string // nil: no image
}

// String renders a record without its id, as the channel model writes it.
func (r chanRecord) String() string {
	s := r.op
	if r.object != "" {
		s += " " + r.object
	}
	if r.before != nil {
		s += " before(" + strings.Join(r.before, ",") + ")"
	}
	if r.after != nil {
		s += " after(" + strings.Join(r.after, ",") + ")"
	}
	return s
}

func listStrings(l *array.List, i int) []string {
	if l.IsNull(i) {
		return nil
	}
	s, e := l.ValueOffsets(i)
	out := make([]string, 0, e-s)
	switch v := l.ListValues().(type) {
	case *array.Binary:
		for j := s; j < e; j++ {
			out = append(out, string(v.Value(int(j))))
		}
	case *array.String:
		for j := s; j < e; j++ {
			out = append(out, v.Value(int(j)))
		}
	}
	return out
}

// decodeChannel converts one record batch of the channel schema (proto ChannelTicket).
func decodeChannel(sc *arrow.Schema, rec arrow.RecordBatch) []chanRecord {
	col := func(name string) arrow.Array {
		idx := sc.FieldIndices(name)
		return rec.Column(idx[0])
	}
	ids := col("id").(*array.Int64)
	ops := col("operation").(*array.String)
	objs := col("object_name").(*array.String)
	before, after := col("before").(*array.List), col("after").(*array.List)
	out := make([]chanRecord, 0, rec.NumRows())
	for i := 0; i < int(rec.NumRows()); i++ {
		r := chanRecord{id: ids.Value(i), op: ops.Value(i), before: listStrings(before, i), after: listStrings(after, i)}
		if objs.IsValid(i) {
			r.object = objs.Value(i)
		}
		out = append(out, r)
	}
	return out
}

// channelSource is a real source database of the randomized channel test.
type channelSource struct {
	url  string
	exec func(t *testing.T, sql string)
	rows func(t *testing.T, table string) []string // "id,amount", sorted
}

func startChannelSource(t *testing.T, kind string) channelSource {
	sortLines := func(out, sep string) []string {
		var rows []string
		for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
			if l != "" {
				rows = append(rows, strings.ReplaceAll(l, sep, ","))
			}
		}
		sort.Strings(rows)
		return rows
	}
	ddl := `CREATE TABLE shop.orders (id int PRIMARY KEY, amount int);
		CREATE TABLE shop.items (id int PRIMARY KEY, amount int);
		CREATE TABLE shop.other (id int PRIMARY KEY, amount int);`
	switch kind {
	case "postgres":
		p := dbtest.StartPostgres(t)
		p.SQL(t, "test", "CREATE SCHEMA shop; "+ddl+" ALTER TABLE shop.orders REPLICA IDENTITY FULL; ALTER TABLE shop.items REPLICA IDENTITY FULL")
		return channelSource{url: p.URL("test"),
			exec: func(t *testing.T, sql string) { p.SQL(t, "test", sql) },
			rows: func(t *testing.T, table string) []string {
				return sortLines(p.SQL(t, "test", "SELECT id, amount FROM "+table), "|")
			}}
	default:
		m := dbtest.StartMariaDB(t)
		m.SQL(t, "CREATE DATABASE shop; "+ddl)
		return channelSource{url: m.URL("shop"),
			exec: func(t *testing.T, sql string) { m.SQL(t, sql) },
			rows: func(t *testing.T, table string) []string {
				return sortLines(m.SQL(t, "SELECT id, amount FROM "+table), "\t")
			}}
	}
}

// groupReader models one consumer group's consumer: it reads from its position, processes a
// prefix of what it read (pending), commits pending as the group's position, or restarts, which
// drops pending and resumes from the committed position, as a Flink job restores its checkpoint.
type groupReader struct {
	cred      *setatspb.ConsumerCredentials
	applied   []chanRecord // processed and committed, in order
	pending   []chanRecord // processed since the last commit
	next      int64        // id the reader reads next
	restarts  int
	committed int
}

// TestRandomizedChannel is the channel part of the model-based randomized test (SPEC section
// 11), against the real binary and a real PostgreSQL 15 and MariaDB: random transactions of
// INSERT, UPDATE and DELETE over two captured tables and one uncaptured one, the gateway killed
// with SIGKILL and restarted at random points (between transactions, while a transaction commits
// with the gateway down, right after a commit, while a consumer follows the channel), and two
// consumer groups whose readers read, commit their position (subscription-commit) and restart
// from it (subscription-seek committed) at random. At the end every group's committed stream
// holds each transaction's BEGIN, changes with their images and COMMIT exactly once in commit
// order with dense ids (no change lost or repeated per group), and the channel folded per
// primary key equals the source tables. Seed: SETATS_CHANNEL_SEED (default: random, printed);
// transactions per source: SETATS_CHANNEL_TXNS (default 30).
func TestRandomizedChannel(t *testing.T) {
	seed := uint64(envInt64(t, "SETATS_CHANNEL_SEED", rand.Int64()))
	txns := int(envInt64(t, "SETATS_CHANNEL_TXNS", 30))
	for _, kind := range []string{"postgres", "mariadb"} {
		t.Run(kind, func(t *testing.T) {
			t.Logf("SETATS_CHANNEL_SEED=%d SETATS_CHANNEL_TXNS=%d", seed, txns)
			randomizedChannel(t, kind, seed, txns)
		})
	}
}

func randomizedChannel(t *testing.T, kind string, seed uint64, txns int) {
	rng := rand.New(rand.NewPCG(seed, seed^0x51f15e))
	src := startChannelSource(t, kind)
	ctx := testCtx(t)
	gw := testGateway(t)
	c := dial(t, gw)
	action := func(typ string, req, resp proto.Message) {
		t.Helper()
		if err := c.Action(ctx, typ, req, resp); err != nil {
			t.Fatalf("seed %d: %s: %v", seed, typ, err)
		}
	}
	action("subscription-create", &setatspb.CreateChannelRequest{Channel: "rnd", SourceUrl: src.url,
		Tables: []string{"shop.orders", "shop.items"}}, &setatspb.ChannelInfo{})
	var groups []*groupReader
	for _, g := range []string{"g1", "g2"} {
		action("subscription-create-group", &setatspb.CreateGroupRequest{Channel: "rnd", Group: g, User: g + "u", Password: "pw-" + g}, &setatspb.GroupInfo{})
		groups = append(groups, &groupReader{cred: &setatspb.ConsumerCredentials{Group: g, User: g + "u", Password: "pw-" + g}})
	}

	// The model: the source tables and the channel records every transaction must yield.
	tables := []string{"shop.orders", "shop.items", "shop.other"}
	model := map[string]map[int]int{}
	for _, tb := range tables {
		model[tb] = map[int]int{}
	}
	var want []string
	kills := 0
	kill := func() {
		gw.Kill()
		kills++
	}
	restart := func() {
		t.Helper()
		if err := gw.Restart(); err != nil {
			t.Fatalf("seed %d: restart after kill -9: %v", seed, err)
		}
		_ = c.Close()
		nc, err := Dial(gw.Info.FlightAddr)
		if err != nil {
			t.Fatal(err)
		}
		c = nc
	}
	t.Cleanup(func() { _ = c.Close() })

	// read reads the channel from r.next: follow=false up to the channel's end, or following
	// until stop is closed or the stream fails (a killed gateway); ids must be dense from r.next.
	read := func(r *groupReader, follow bool, stop <-chan struct{}) ([]chanRecord, error) {
		rctx, cancel := context.WithCancel(ctx)
		defer cancel()
		if stop != nil {
			go func() {
				select {
				case <-stop:
					cancel()
				case <-rctx.Done():
				}
			}()
		}
		var got []chanRecord
		expect := r.next
		err := c.DoGet(rctx, &setatspb.ChangelogTicket{Channel: &setatspb.ChannelTicket{Channel: "rnd", Credentials: r.cred,
			Start: &setatspb.ChannelTicket_FromId{FromId: r.next}, Follow: follow, MaxBatchRows: int32(1 + rng.IntN(16))}},
			func(sc *arrow.Schema, rec arrow.RecordBatch) error {
				for _, x := range decodeChannel(sc, rec) {
					if x.id != expect {
						return fmt.Errorf("group %s: read id %d, want %d (ids are dense)", r.cred.Group, x.id, expect)
					}
					expect++
					got = append(got, x)
				}
				return nil
			})
		if err != nil && strings.Contains(err.Error(), "ids are dense") {
			t.Fatalf("seed %d: %v", seed, err)
		}
		return got, err
	}
	// process takes a random prefix of what was read as processed.
	process := func(r *groupReader, got []chanRecord) {
		n := len(got)
		if n > 0 && rng.IntN(3) == 0 {
			n = rng.IntN(n + 1)
		}
		r.pending = append(r.pending, got[:n]...)
		r.next += int64(n)
	}
	commit := func(r *groupReader) {
		action("subscription-commit", &setatspb.CommitRequest{Channel: "rnd", Credentials: r.cred, NextId: r.next,
			Checkpoint: fmt.Sprintf("0@%d@x@0", r.next)}, &setatspb.Empty{})
		r.applied = append(r.applied, r.pending...)
		r.pending = nil
		r.committed++
	}
	// restartReader drops what was not committed and resumes at the group's committed id.
	restartReader := func(r *groupReader) {
		seek := &setatspb.SeekResponse{}
		action("subscription-seek", &setatspb.SeekRequest{Channel: "rnd", Credentials: r.cred,
			Start: &setatspb.SeekRequest_Committed{Committed: true}}, seek)
		wantNext := int64(len(r.applied))
		if !seek.GetFound() {
			seek.Id = 0
		}
		if seek.GetId() != wantNext {
			t.Fatalf("seed %d: group %s: committed id %d, the model committed up to %d", seed, r.cred.Group, seek.GetId(), wantNext)
		}
		r.pending, r.next = nil, seek.GetId()
		r.restarts++
	}
	readerStep := func() {
		r := groups[rng.IntN(len(groups))]
		switch x := rng.IntN(6); {
		case x < 3:
			got, err := read(r, false, nil)
			if err != nil {
				t.Fatalf("seed %d: group %s read: %v", seed, r.cred.Group, err)
			}
			process(r, got)
		case x < 5:
			commit(r)
		default:
			restartReader(r)
		}
	}

	for i := 0; i < txns; i++ {
		var stmts, recs []string
		for n := 1 + rng.IntN(4); n > 0; n-- {
			table := tables[rng.IntN(len(tables))]
			rows := model[table]
			id := rng.IntN(10)
			captured := table != "shop.other"
			old, present := rows[id]
			var rec string
			switch {
			case !present:
				a := rng.IntN(1000)
				stmts = append(stmts, fmt.Sprintf("INSERT INTO %s VALUES (%d, %d)", table, id, a))
				rows[id] = a
				rec = fmt.Sprintf("INSERT %s after(%d,%d)", table, id, a)
			case rng.IntN(3) == 0:
				stmts = append(stmts, fmt.Sprintf("DELETE FROM %s WHERE id = %d", table, id))
				delete(rows, id)
				rec = fmt.Sprintf("DELETE %s before(%d,%d)", table, id, old)
			default: // always a change: MariaDB logs no row event for an UPDATE that changes nothing
				a := old + 1 + rng.IntN(100)
				stmts = append(stmts, fmt.Sprintf("UPDATE %s SET amount = %d WHERE id = %d", table, a, id))
				rows[id] = a
				rec = fmt.Sprintf("UPDATE %s before(%d,%d) after(%d,%d)", table, id, old, id, a)
			}
			if captured {
				recs = append(recs, rec)
			}
		}
		sql := "BEGIN; " + strings.Join(stmts, "; ") + "; COMMIT"
		// A consumer of g2 follows the channel across this transaction; the gateway may die under it.
		var follow chan struct{}
		var followed chan []chanRecord
		if rng.IntN(5) == 0 {
			follow, followed = make(chan struct{}), make(chan []chanRecord, 1)
			r := groups[1]
			go func() {
				got, _ := read(r, true, follow)
				followed <- got
			}()
		}
		switch x := rng.IntN(10); {
		case x == 0: // killed before the transaction, which commits while the gateway is down
			kill()
			src.exec(t, sql)
			restart()
		case x == 1: // killed right after the commit, maybe before the capture saw it
			src.exec(t, sql)
			kill()
			restart()
		default:
			src.exec(t, sql)
		}
		if len(recs) > 0 { // a transaction touching only uncaptured tables yields nothing
			want = append(want, "BEGIN")
			want = append(want, recs...)
			want = append(want, "COMMIT")
		}
		if follow != nil {
			if rng.IntN(2) == 0 {
				kill() // while the consumer follows
				restart()
			} else {
				time.Sleep(time.Duration(rng.IntN(200)) * time.Millisecond)
			}
			close(follow)
			got := <-followed
			process(groups[1], got)
			if rng.IntN(2) == 0 {
				restartReader(groups[1])
			}
		}
		for n := rng.IntN(3); n > 0; n-- {
			readerStep()
		}
	}

	// Wait until the channel holds every transaction, then every group reads to the end and commits.
	commits := strings.Count(strings.Join(want, "\n"), "COMMIT")
	var all []chanRecord
	deadline := time.Now().Add(2 * time.Minute)
	for {
		probe := &groupReader{cred: groups[0].cred}
		got, err := read(probe, false, nil)
		if err != nil {
			t.Fatalf("seed %d: read the channel: %v", seed, err)
		}
		all = got
		n := 0
		for _, r := range all {
			if r.op == "COMMIT" {
				n++
			}
		}
		if n >= commits {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("seed %d: the channel holds %d of %d transactions after 2 min", seed, n, commits)
		}
		time.Sleep(100 * time.Millisecond)
	}
	content := func(recs []chanRecord) []string {
		var out []string
		for _, r := range recs {
			if r.op != "HEARTBEAT" {
				out = append(out, r.String())
			}
		}
		return out
	}
	if got := content(all); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("seed %d (%d kills): the channel differs from the model\n%s", seed, kills, diffChannel(got, want))
	}
	end := int64(len(all))
	for _, r := range groups {
		for r.next < end {
			got, err := read(r, false, nil)
			if err != nil {
				t.Fatalf("seed %d: group %s read: %v", seed, r.cred.Group, err)
			}
			r.pending = append(r.pending, got...)
			r.next += int64(len(got))
		}
		commit(r)
		// Stitched over its commits and restarts, the group consumed every record exactly once.
		for i, x := range r.applied {
			if x.id != int64(i) {
				t.Fatalf("seed %d: group %s: committed record %d has id %d (lost or repeated)", seed, r.cred.Group, i, x.id)
			}
		}
		if got := content(r.applied[:min(len(r.applied), len(all))]); strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Fatalf("seed %d: group %s consumed other changes than the model\n%s", seed, r.cred.Group, diffChannel(got, want))
		}
		info := &setatspb.ListGroupsResponse{}
		action("subscription-groups", &setatspb.ChannelRequest{Channel: "rnd"}, info)
		for _, g := range info.GetGroups() {
			if g.GetGroup() == r.cred.Group && g.GetCommittedId() != r.next {
				t.Fatalf("seed %d: group %s committed id %d, want %d", seed, g.GetGroup(), g.GetCommittedId(), r.next)
			}
		}
	}
	// The channel folded per primary key equals the source tables (and the model).
	for _, table := range tables[:2] {
		fold := map[string]string{}
		for _, r := range all {
			if r.object != table {
				continue
			}
			if r.before != nil {
				delete(fold, r.before[0])
			}
			if r.after != nil {
				fold[r.after[0]] = strings.Join(r.after, ",")
			}
		}
		var folded, modelled []string
		for _, v := range fold {
			folded = append(folded, v)
		}
		for id, a := range model[table] {
			modelled = append(modelled, fmt.Sprintf("%d,%d", id, a))
		}
		sort.Strings(folded)
		sort.Strings(modelled)
		source := src.rows(t, table)
		if strings.Join(folded, " ") != strings.Join(source, " ") || strings.Join(source, " ") != strings.Join(modelled, " ") {
			t.Fatalf("seed %d: %s: folded channel %v, source %v, model %v", seed, table, folded, source, modelled)
		}
	}
	t.Logf("%s: %d transactions, %d records, %d kills; groups: %s", kind, txns, len(all), kills, groupSummary(groups))
}

func groupSummary(gs []*groupReader) string {
	var s []string
	for _, g := range gs {
		s = append(s, g.cred.Group+" "+strconv.Itoa(g.committed)+" commits/"+strconv.Itoa(g.restarts)+" restarts")
	}
	return strings.Join(s, ", ")
}

// diffChannel shows the first difference of two record lists with some context.
func diffChannel(got, want []string) string {
	i := 0
	for i < len(got) && i < len(want) && got[i] == want[i] {
		i++
	}
	lo := max(0, i-3)
	return fmt.Sprintf("first difference at record %d of %d (want %d)\ngot:\n  %s\nwant:\n  %s", i, len(got), len(want),
		strings.Join(got[lo:min(len(got), i+4)], "\n  "), strings.Join(want[lo:min(len(want), i+4)], "\n  "))
}
