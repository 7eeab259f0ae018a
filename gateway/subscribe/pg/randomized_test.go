package pg_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/setats/setats/gateway/subscribe"
	"github.com/setats/setats/internal/dbtest"
)

// pgModel is the reference model of the randomized capture test: the rows of the captured tables
// (key -> amount) as the source holds them, and the channel records each transaction must yield.
type pgModel struct {
	rows map[string]map[int]int // table -> id -> amount
}

// TestRandomizedCapture is the model-based randomized test of a subscription channel (SPEC
// section 11) against a real PostgreSQL 15: random transactions of INSERT, UPDATE and DELETE over
// two captured tables and one table the channel does not capture, with the capture closed and
// opened again at random points between and during the workload (a restart, as a gateway crash
// leaves it: the slot is acknowledged only after records are durable). The channel must hold, in
// commit order, BEGIN, each captured change with its before and after images, and COMMIT per
// transaction, exactly once: none lost across the restarts, none repeated. Seed:
// SETATS_CHANNEL_SEED (default: random, printed); transactions: SETATS_CHANNEL_TXNS (default 30).
func TestRandomizedCapture(t *testing.T) {
	seed := uint64(rand.Int64())
	if s := os.Getenv("SETATS_CHANNEL_SEED"); s != "" {
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		seed = v
	}
	txns := 30
	if s := os.Getenv("SETATS_CHANNEL_TXNS"); s != "" {
		v, err := strconv.Atoi(s)
		if err != nil {
			t.Fatal(err)
		}
		txns = v
	}
	t.Logf("SETATS_CHANNEL_SEED=%d SETATS_CHANNEL_TXNS=%d", seed, txns)
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))

	p := dbtest.StartPostgres(t)
	p.SQL(t, "test", `CREATE SCHEMA shop;
		CREATE TABLE shop.orders (id int PRIMARY KEY, amount int);
		CREATE TABLE shop.items (id int PRIMARY KEY, amount int);
		CREATE TABLE shop.other (id int PRIMARY KEY, amount int);
		ALTER TABLE shop.orders REPLICA IDENTITY FULL; ALTER TABLE shop.items REPLICA IDENTITY FULL`)
	dir := t.TempDir()
	m := openManager(t, dir)
	defer func() { m.Close() }()
	if _, err := m.Create(context.Background(), subscribe.Spec{Name: "rnd", SourceURL: p.URL("test"),
		Tables: []string{"shop.orders", "shop.items"}}, ""); err != nil {
		t.Fatal(err)
	}
	model := &pgModel{rows: map[string]map[int]int{"shop.orders": {}, "shop.items": {}, "shop.other": {}}}
	var want []string
	restarts := 0
	for i := 0; i < txns; i++ {
		var stmts, recs []string
		for n := 1 + rng.IntN(4); n > 0; n-- {
			table := []string{"shop.orders", "shop.items", "shop.other"}[rng.IntN(3)]
			rows := model.rows[table]
			id, amount := rng.IntN(12), rng.IntN(1000)
			captured := table != "shop.other"
			old, present := rows[id]
			switch {
			case !present:
				stmts = append(stmts, fmt.Sprintf("INSERT INTO %s VALUES (%d, %d)", table, id, amount))
				rows[id] = amount
				if captured {
					recs = append(recs, fmt.Sprintf("INSERT %s after(%d,%d)", table, id, amount))
				}
			case rng.IntN(3) == 0:
				stmts = append(stmts, fmt.Sprintf("DELETE FROM %s WHERE id = %d", table, id))
				delete(rows, id)
				if captured {
					recs = append(recs, fmt.Sprintf("DELETE %s before(%d,%d)", table, id, old))
				}
			default:
				stmts = append(stmts, fmt.Sprintf("UPDATE %s SET amount = %d WHERE id = %d", table, amount, id))
				rows[id] = amount
				if captured {
					recs = append(recs, fmt.Sprintf("UPDATE %s before(%d,%d) after(%d,%d)", table, id, old, id, amount))
				}
			}
		}
		if rng.IntN(8) == 0 { // the capture stops before this transaction and comes back after it
			m.Close()
			p.SQL(t, "test", strings.Join(stmts, "; "))
			m = openManager(t, dir)
			restarts++
		} else {
			p.SQL(t, "test", strings.Join(stmts, "; ")) // psql -c: one transaction
		}
		if len(recs) > 0 { // a transaction touching only uncaptured tables yields nothing
			want = append(want, "BEGIN")
			want = append(want, recs...)
			want = append(want, "COMMIT")
		}
		if rng.IntN(10) == 0 { // restart right after the commit, maybe before the capture saw it
			m.Close()
			m = openManager(t, dir)
			restarts++
		}
	}
	ch, err := m.Get("rnd")
	if err != nil {
		t.Fatal(err)
	}
	commits := 0
	for _, w := range want {
		if w == "COMMIT" {
			commits++
		}
	}
	recs := dbtest.WaitRecords(t, ch, 0, dbtest.CountOp(subscribe.OpCommit, commits))
	got := dbtest.Dump(recs)
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("seed %d (%d restarts): channel differs from the model\n%s", seed, restarts, diffLines(got, want))
	}
	// Ids are dense over every record (heartbeats included) and each transaction's records share
	// one transaction id.
	all, err := ch.Read(0, 1<<20, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i < len(all); i++ {
		if all[i].ID != all[i-1].ID+1 {
			t.Fatalf("ids not dense: %d after %d", all[i].ID, all[i-1].ID)
		}
	}
	tx := ""
	for _, r := range recs {
		switch r.Op {
		case subscribe.OpBegin:
			tx = r.TxID
		default:
			if r.TxID != tx {
				t.Fatalf("record %d: transaction id %q inside transaction %q", r.ID, r.TxID, tx)
			}
		}
	}
	// The source's tables equal the model (the workload itself ran as modelled).
	for _, table := range []string{"shop.orders", "shop.items"} {
		var rows []string
		for id, a := range model.rows[table] {
			rows = append(rows, fmt.Sprintf("%d|%d", id, a))
		}
		sort.Strings(rows)
		var src []string
		if out := strings.TrimSpace(p.SQL(t, "test", "SELECT id, amount FROM "+table)); out != "" {
			src = strings.Split(out, "\n")
		}
		sort.Strings(src)
		if strings.Join(src, ",") != strings.Join(rows, ",") {
			t.Fatalf("%s: source %q, model %q", table, src, rows)
		}
	}
	t.Logf("%d transactions, %d records, %d restarts", txns, len(recs), restarts)
}

// diffLines shows the first difference of two line lists with some context.
func diffLines(got, want []string) string {
	i := 0
	for i < len(got) && i < len(want) && got[i] == want[i] {
		i++
	}
	lo := max(0, i-3)
	return fmt.Sprintf("first difference at line %d\ngot:\n  %s\nwant:\n  %s", i,
		strings.Join(got[lo:min(len(got), i+4)], "\n  "), strings.Join(want[lo:min(len(want), i+4)], "\n  "))
}
