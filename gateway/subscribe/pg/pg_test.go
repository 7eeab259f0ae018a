package pg_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/setats/setats/gateway/subscribe"
	"github.com/setats/setats/gateway/subscribe/pg"
	"github.com/setats/setats/internal/dbtest"
)

func openManager(t *testing.T, dir string) *subscribe.Manager {
	t.Helper()
	m, err := subscribe.Open(subscribe.Options{WarehouseDir: dir, Sources: map[string]subscribe.SourceFactory{"postgres": pg.New},
		RetryMax: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestCapture runs T1 and T5 of shared/cases/dts-cases.txt against a real PostgreSQL 15, then
// checks resume after a restart (no change lost or repeated) and a source outage.
func TestCapture(t *testing.T) {
	p := dbtest.StartPostgres(t)
	p.SQL(t, "test", `CREATE SCHEMA shop;
		CREATE TABLE shop.orders (id int PRIMARY KEY, amount int);
		CREATE TABLE shop.users (id int PRIMARY KEY, name text);
		CREATE TABLE shop.plain (id int PRIMARY KEY)`)
	dir := t.TempDir()
	m := openManager(t, dir)
	ctx := context.Background()

	// Before images need REPLICA IDENTITY FULL: refused, naming what to run.
	_, err := m.Create(ctx, subscribe.Spec{Name: "c1", SourceURL: p.URL("test"), Tables: []string{"shop.orders"}}, "")
	if err == nil || !strings.Contains(err.Error(), `ALTER TABLE "shop"."orders" REPLICA IDENTITY FULL`) {
		t.Fatalf("create without REPLICA IDENTITY FULL: %v", err)
	}
	p.SQL(t, "test", "ALTER TABLE shop.orders REPLICA IDENTITY FULL; ALTER TABLE shop.users REPLICA IDENTITY FULL")
	ch, err := m.Create(ctx, subscribe.Spec{Name: "c1", SourceURL: p.URL("test"), Tables: []string{"shop.orders", "shop.users"}}, "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Create(ctx, subscribe.Spec{Name: "c1", SourceURL: p.URL("test"), Tables: []string{"shop.orders"}}, ""); err == nil {
		t.Fatal("second create of c1 succeeded")
	}
	// T1: one transaction, three kinds.
	p.SQL(t, "test", "BEGIN; INSERT INTO shop.orders VALUES (1, 10); UPDATE shop.orders SET amount = 11 WHERE id = 1; DELETE FROM shop.orders WHERE id = 1; COMMIT;")
	recs := dbtest.WaitRecords(t, ch, 0, dbtest.CountOp(subscribe.OpCommit, 1))
	want := []string{
		"BEGIN",
		"INSERT shop.orders after(1,10)",
		"UPDATE shop.orders before(1,10) after(1,11)",
		"DELETE shop.orders before(1,11)",
		"COMMIT",
	}
	if got := dbtest.Dump(recs); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("T1 records:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	for _, r := range recs {
		if r.TxID != recs[0].TxID || r.TxID == "" {
			t.Fatalf("transaction ids differ: %+v", r)
		}
		if r.Object != "" && (len(r.Fields) != 2 || r.Fields[0] != (subscribe.Field{Name: "id", Type: "INT"})) {
			t.Fatalf("fields: %+v", r.Fields)
		}
	}
	last := recs[len(recs)-1].ID

	// Restart: the manager is closed and opened again; changes made meanwhile arrive once.
	m.Close()
	p.SQL(t, "test", "INSERT INTO shop.orders VALUES (2, 20)")
	m = openManager(t, dir)
	defer m.Close()
	ch, err = m.Get("c1")
	if err != nil {
		t.Fatal(err)
	}
	// T5 (capture side): both tables are in the channel, each with its object name.
	p.SQL(t, "test", "INSERT INTO shop.users VALUES (5, 'u'); INSERT INTO shop.orders VALUES (3, 30); INSERT INTO shop.plain VALUES (1)")
	// (psql -c runs its statements in one transaction.)
	recs = dbtest.WaitRecords(t, ch, last+1, dbtest.CountOp(subscribe.OpCommit, 2))
	want = []string{
		"BEGIN", "INSERT shop.orders after(2,20)", "COMMIT",
		"BEGIN", "INSERT shop.users after(5,u)", "INSERT shop.orders after(3,30)", "COMMIT",
	}
	if got := dbtest.Dump(recs); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("after restart:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	last = recs[len(recs)-1].ID

	// Outage: the source stops; the channel keeps its records and reports the outage; capture
	// resumes when the source is back.
	p.Stop(t)
	deadline := time.Now().Add(time.Minute)
	for m.Status("c1").Up {
		if time.Now().After(deadline) {
			t.Fatal("source still reported up after PostgreSQL stopped")
		}
		time.Sleep(50 * time.Millisecond)
	}
	if o := m.Outages(); o["c1"] == "" {
		t.Fatalf("outages: %v", o)
	}
	if got, err := ch.Read(0, 100, nil); err != nil || len(got) < int(last) {
		t.Fatalf("records during the outage: %d, %v", len(got), err)
	}
	p.Start(t)
	p.SQL(t, "test", "UPDATE shop.orders SET amount = 31 WHERE id = 3")
	recs = dbtest.WaitRecords(t, ch, last+1, dbtest.CountOp(subscribe.OpCommit, 1))
	if got := dbtest.Dump(recs); strings.Join(got, "\n") != "BEGIN\nUPDATE shop.orders before(3,30) after(3,31)\nCOMMIT" {
		t.Fatalf("after the outage:\n%s", strings.Join(got, "\n"))
	}

	// Drop removes the slot and the publication the gateway created.
	if err := m.Drop(ctx, "c1", false); err != nil {
		t.Fatal(err)
	}
	if out := p.SQL(t, "test", "SELECT count(*) FROM pg_replication_slots"); strings.TrimSpace(out) != "0" {
		t.Fatalf("slots after drop: %s", out)
	}
}

// TestTypes checks the documented type table on one row of every mapped type.
func TestTypes(t *testing.T) {
	p := dbtest.StartPostgres(t)
	p.SQL(t, "test", `CREATE TABLE public.ty (id bigint PRIMARY KEY, b boolean, s smallint, i integer, r real, d double precision,
		n numeric(10,2), t text, v varchar(5), by bytea, dt date, tm time, ts timestamp(3), tz timestamptz, u uuid, nul int);
		ALTER TABLE public.ty REPLICA IDENTITY FULL`)
	m := openManager(t, t.TempDir())
	defer m.Close()
	ch, err := m.Create(context.Background(), subscribe.Spec{Name: "ty", SourceURL: p.URL("test"), Tables: []string{"public.ty"}}, "")
	if err != nil {
		t.Fatal(err)
	}
	p.SQL(t, "test", `INSERT INTO public.ty VALUES (1, true, 2, 3, 1.5, 2.25, 12.34, 'héllo', 'abc', '\x0102', '2021-06-23', '20:32:17.391',
		'2021-06-23 20:32:17.391', '2021-06-23 20:32:17.391+02', 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', NULL)`)
	recs := dbtest.WaitRecords(t, ch, 0, dbtest.CountOp(subscribe.OpInsert, 1))
	r := recs[1]
	var types, vals []string
	for i, f := range r.Fields {
		types = append(types, f.Name+" "+f.Type)
		if r.After[i] == nil {
			vals = append(vals, "null")
		} else if f.Type == "BYTES" {
			vals = append(vals, strings.TrimSpace(strings.Join(strings.Fields(string(rune('0'+r.After[i][0]))+" "+string(rune('0'+r.After[i][1]))), "")))
		} else {
			vals = append(vals, string(r.After[i]))
		}
	}
	wantTypes := "id BIGINT,b BOOLEAN,s SMALLINT,i INT,r FLOAT,d DOUBLE,n DECIMAL(10,2),t STRING,v STRING,by BYTES,dt DATE,tm TIME(6),ts TIMESTAMP(3),tz TIMESTAMP_LTZ(6),u STRING,nul INT"
	if got := strings.Join(types, ","); got != wantTypes {
		t.Fatalf("types:\n%s\nwant\n%s", got, wantTypes)
	}
	wantVals := "1|true|2|3|1.5|2.25|12.34|héllo|abc|12|2021-06-23|20:32:17.391|2021-06-23 20:32:17.391|2021-06-23 18:32:17.391+00|a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11|null"
	if got := strings.Join(vals, "|"); got != wantVals {
		t.Fatalf("values:\n%s\nwant\n%s", got, wantVals)
	}
}
