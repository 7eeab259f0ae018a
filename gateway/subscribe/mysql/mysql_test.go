package mysql_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/setats/setats/gateway/subscribe"
	"github.com/setats/setats/gateway/subscribe/mysql"
	"github.com/setats/setats/internal/dbtest"
)

func openManager(t *testing.T, dir string) *subscribe.Manager {
	t.Helper()
	m, err := subscribe.Open(subscribe.Options{WarehouseDir: dir, Sources: map[string]subscribe.SourceFactory{"mysql": mysql.New},
		RetryMax: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestCapture runs T1 and T5 of shared/cases/dts-cases.txt against a real MariaDB, a DDL, a
// restart (no change lost or repeated), a source outage and the settings check.
func TestCapture(t *testing.T) {
	db := dbtest.StartMariaDB(t)
	db.SQL(t, `CREATE DATABASE shop; CREATE TABLE shop.orders (id int PRIMARY KEY, amount int);
		CREATE TABLE shop.users (id int PRIMARY KEY, name varchar(20)); CREATE TABLE shop.plain (id int PRIMARY KEY)`)
	dir := t.TempDir()
	m := openManager(t, dir)
	ctx := context.Background()

	db.SQL(t, "SET GLOBAL binlog_row_image = 'MINIMAL'")
	_, err := m.Create(ctx, subscribe.Spec{Name: "c1", SourceURL: db.URL("shop"), Tables: []string{"shop.orders"}}, "")
	if err == nil || !strings.Contains(err.Error(), "binlog_row_image = FULL") {
		t.Fatalf("create with binlog_row_image=MINIMAL: %v", err)
	}
	db.SQL(t, "SET GLOBAL binlog_row_image = 'FULL'")
	ch, err := m.Create(ctx, subscribe.Spec{Name: "c1", SourceURL: db.URL("shop"), Tables: []string{"shop.orders", "shop.users"}}, "")
	if err != nil {
		t.Fatal(err)
	}
	db.SQL(t, "BEGIN; INSERT INTO shop.orders VALUES (1, 10); UPDATE shop.orders SET amount = 11 WHERE id = 1; DELETE FROM shop.orders WHERE id = 1; COMMIT;")
	recs := dbtest.WaitRecords(t, ch, 0, dbtest.CountOp(subscribe.OpCommit, 1))
	want := "BEGIN\nINSERT shop.orders after(1,10)\nUPDATE shop.orders before(1,10) after(1,11)\nDELETE shop.orders before(1,11)\nCOMMIT"
	if got := strings.Join(dbtest.Dump(recs), "\n"); got != want {
		t.Fatalf("T1:\n%s\nwant:\n%s", got, want)
	}
	for _, r := range recs {
		if r.TxID != recs[0].TxID || r.TxID == "" {
			t.Fatalf("transaction ids differ: %+v", r)
		}
	}
	last := recs[len(recs)-1].ID

	m.Close()
	db.SQL(t, "INSERT INTO shop.orders VALUES (2, 20)")
	m = openManager(t, dir)
	defer m.Close()
	if ch, err = m.Get("c1"); err != nil {
		t.Fatal(err)
	}
	db.SQL(t, "INSERT INTO shop.users VALUES (5, 'u'); INSERT INTO shop.plain VALUES (1); INSERT INTO shop.orders VALUES (3, 30); ALTER TABLE shop.orders ADD COLUMN note varchar(10); INSERT INTO shop.orders VALUES (4, 40, 'n')")
	recs = dbtest.WaitRecords(t, ch, last+1, dbtest.CountOp(subscribe.OpCommit, 5))
	want = strings.Join([]string{
		"BEGIN", "INSERT shop.orders after(2,20)", "COMMIT",
		"BEGIN", "INSERT shop.users after(5,u)", "COMMIT",
		"BEGIN", "INSERT shop.orders after(3,30)", "COMMIT",
		"BEGIN", "DDL shop.orders after(ALTER TABLE shop.orders ADD COLUMN note varchar(10))", "COMMIT",
		"BEGIN", "INSERT shop.orders after(4,40,n)", "COMMIT",
	}, "\n")
	if got := strings.Join(dbtest.Dump(recs), "\n"); got != want {
		t.Fatalf("after restart:\n%s\nwant:\n%s", got, want)
	}
	last = recs[len(recs)-1].ID

	db.Kill()
	deadline := time.Now().Add(time.Minute)
	for m.Status("c1").Up {
		if time.Now().After(deadline) {
			t.Fatal("source still up after MariaDB was killed")
		}
		time.Sleep(50 * time.Millisecond)
	}
	db.Start(t)
	db.SQL(t, "UPDATE shop.orders SET amount = 41 WHERE id = 4")
	recs = dbtest.WaitRecords(t, ch, last+1, dbtest.CountOp(subscribe.OpCommit, 1))
	if got := strings.Join(dbtest.Dump(recs), "\n"); got != "BEGIN\nUPDATE shop.orders before(4,40,n) after(4,41,n)\nCOMMIT" {
		t.Fatalf("after the outage:\n%s", got)
	}
}

// TestTypes checks the documented type table.
func TestTypes(t *testing.T) {
	db := dbtest.StartMariaDB(t)
	db.SQL(t, `CREATE DATABASE d; CREATE TABLE d.ty (id bigint PRIMARY KEY, ti tinyint, su smallint unsigned, i int, bu bigint unsigned,
		f float, db double, n decimal(10,2), v varchar(10), tx text, bi varbinary(4), dt date, tm time(3), ts datetime(3), tz timestamp(3) NULL, y year, nul int)`)
	m := openManager(t, t.TempDir())
	defer m.Close()
	ch, err := m.Create(context.Background(), subscribe.Spec{Name: "ty", SourceURL: db.URL("d"), Tables: []string{"d.ty"}}, "")
	if err != nil {
		t.Fatal(err)
	}
	db.SQL(t, `SET time_zone = '+00:00'; INSERT INTO d.ty VALUES (1, -2, 65535, -3, 18446744073709551615, 1.5, 2.25, -12.34, 'héllo', 'txt', 'AB',
		'2021-06-23', '20:32:17.391', '2021-06-23 20:32:17.391', '2021-06-23 20:32:17.391', 2021, NULL)`)
	recs := dbtest.WaitRecords(t, ch, 0, dbtest.CountOp(subscribe.OpInsert, 1))
	r := recs[1]
	var types, vals []string
	for i, f := range r.Fields {
		types = append(types, f.Name+" "+f.Type)
		if r.After[i] == nil {
			vals = append(vals, "null")
		} else {
			vals = append(vals, string(r.After[i]))
		}
	}
	wantTypes := "id BIGINT,ti TINYINT,su INT,i INT,bu DECIMAL(20,0),f FLOAT,db DOUBLE,n DECIMAL(10,2),v STRING,tx STRING,bi BYTES,dt DATE,tm TIME(3),ts TIMESTAMP(3),tz TIMESTAMP_LTZ(3),y INT,nul INT"
	if got := strings.Join(types, ","); got != wantTypes {
		t.Fatalf("types:\n%s\nwant\n%s", got, wantTypes)
	}
	wantVals := "1|-2|65535|-3|18446744073709551615|1.5|2.25|-12.34|héllo|txt|AB|2021-06-23|20:32:17.391|2021-06-23 20:32:17.391|2021-06-23 20:32:17.391|2021|null"
	if got := strings.Join(vals, "|"); got != wantVals {
		t.Fatalf("values:\n%q\nwant\n%q", got, wantVals)
	}
}
