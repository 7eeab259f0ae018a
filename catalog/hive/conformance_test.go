package hive

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/beltran/gohive/hive_metastore"
	"github.com/google/uuid"
	"google.golang.org/protobuf/proto"

	"github.com/setats/setats/catalog"
	"github.com/setats/setats/proto/setatspb"
)

// The conformance suite runs every catalog.Catalog implementation through the same cases
// (SPEC sections 2, 3 and 12): hadoop always, hive against each real Hive Metastore named by
// SETATS_TEST_HMS3_URI / SETATS_TEST_HMS4_URI (e2e/hive/run.sh starts HMS 3.1.3 and 4.0.1 and
// sets them); without them the hive cases skip.

type target struct {
	name string
	uri  string // "" for hadoop
	// open opens a catalog over warehouse wh (a new instance each call: a restarted gateway).
	open func(t *testing.T, wh string) catalog.Catalog
}

func targets(t *testing.T) []target {
	ts := []target{{name: "hadoop", open: func(t *testing.T, wh string) catalog.Catalog {
		c, err := catalog.Open("hadoop", catalog.Options{Warehouse: wh})
		if err != nil {
			t.Fatal(err)
		}
		return c
	}}}
	for _, v := range []struct{ name, env string }{{"hms3", "SETATS_TEST_HMS3_URI"}, {"hms4", "SETATS_TEST_HMS4_URI"}} {
		uri := os.Getenv(v.env)
		ts = append(ts, target{name: v.name, uri: uri, open: func(t *testing.T, wh string) catalog.Catalog {
			if uri == "" {
				t.Skipf("%s not set (e2e/hive/run.sh starts real Hive Metastores and sets it)", v.env)
			}
			c, err := catalog.Open("hive", catalog.Options{Warehouse: wh, URIs: uri, CatalogName: "setats"})
			if err != nil {
				t.Fatal(err)
			}
			return c
		}})
	}
	return ts
}

// uniqueDB returns a database name not used before: metastores outlive a test run.
func uniqueDB(prefix string) string {
	return prefix + "_" + strings.ReplaceAll(uuid.NewString()[:8], "-", "")
}

func wantKind(t *testing.T, err error, kind error, substrs ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("got no error, want %s", kind)
	}
	var typed *catalog.Error
	if !errors.As(err, &typed) || typed.Kind != kind {
		t.Fatalf("got error %q (%T), want a catalog.Error of kind %q", err, err, kind)
	}
	for _, s := range substrs {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("error %q does not name %q", err, s)
		}
	}
}

func richSpec(db, table string) *setatspb.TableSpec {
	return &setatspb.TableSpec{
		Database: db,
		Table:    table,
		Columns: []*setatspb.Column{
			{Name: "id", Type: "STRING"},
			{Name: "dt", Type: "STRING"},
			{Name: "UserName", Type: "VARCHAR(20)", Comment: "mixed-case column"},
			{Name: "amount", Type: "DECIMAL(10, 2)", NotNull: true},
			{Name: "ts", Type: "TIMESTAMP_LTZ(3)"},
			{Name: "t", Type: "TIME(0)"},
			{Name: "b", Type: "BYTES"},
		},
		PrimaryKey:    []string{"id", "dt"},
		PartitionKeys: []string{"dt"},
		BucketCount:   10,
		BucketKey:     []string{"id"},
		MergeEngine:   "partial-update",
		Options:       map[string]string{"changelog.retention.ms": "3600000", "ignore-delete": "TRUE"},
		Comment:       "conformance",
	}
}

func TestConformanceCreateGetListDrop(t *testing.T) {
	for _, tg := range targets(t) {
		t.Run(tg.name, func(t *testing.T) {
			wh := t.TempDir()
			c := tg.open(t, wh)
			db := uniqueDB("conf")
			if err := c.CreateDatabase(db, false); err != nil {
				t.Fatal(err)
			}
			wantKind(t, c.CreateDatabase(db, false), catalog.ErrAlreadyExists, db)
			if err := c.CreateDatabase(db, true); err != nil {
				t.Fatal(err)
			}
			dbs, err := c.ListDatabases()
			if err != nil || !contains(dbs, db) || !contains(dbs, "default") {
				t.Fatalf("ListDatabases = %v, %v; want %s and default", dbs, err, db)
			}
			created, err := c.CreateTable(richSpec(db, "orders"), false, false)
			if err != nil {
				t.Fatal(err)
			}
			if created.TableID() == "" || created.Location != filepath.Join(wh, db+".db", "orders") {
				t.Fatalf("created table id %q location %s", created.TableID(), created.Location)
			}
			got, err := c.GetTable(db, "orders")
			if err != nil {
				t.Fatal(err)
			}
			if !proto.Equal(got.Info.GetSpec(), created.Info.GetSpec()) || got.TableID() != created.TableID() ||
				got.Info.GetCreatedAtMs() != created.Info.GetCreatedAtMs() {
				t.Fatalf("GetTable:\n got %v id %s\nwant %v id %s", got.Info.GetSpec(), got.TableID(), created.Info.GetSpec(), created.TableID())
			}
			if got.Columns[2].Name != "UserName" || got.Columns[4].Type.String() != "TIMESTAMP_LTZ(3)" || !got.Columns[3].NotNull ||
				got.MergeEngine != "PARTIAL_UPDATE" || got.Options["ignore-delete"] != "true" || got.BucketCount != 10 {
				t.Fatalf("GetTable lost a property: %v", got.Info.GetSpec())
			}
			if _, err := c.CreateTable(richSpec(db, "orders"), false, false); true {
				wantKind(t, err, catalog.ErrAlreadyExists, db+".orders")
			}
			same, err := c.CreateTable(richSpec(db, "orders"), true, false)
			if err != nil || same.TableID() != created.TableID() {
				t.Fatalf("CreateTable(ignoreIfExists) = %v, %v; want the existing table %s", same, err, created.TableID())
			}
			if _, err := c.CreateTable(simpleSpec(db, "second"), false, false); err != nil {
				t.Fatal(err)
			}
			names, err := c.ListTables(db)
			if err != nil || strings.Join(names, ",") != "orders,second" {
				t.Fatalf("ListTables = %v, %v", names, err)
			}
			_, err = c.ListTables(db + "_missing")
			wantKind(t, err, catalog.ErrNotFound, db+"_missing")
			_, err = c.GetTable(db, "missing")
			wantKind(t, err, catalog.ErrNotFound, db+".missing")
			_, err = c.CreateTable(simpleSpec(db+"_missing", "x"), false, false)
			wantKind(t, err, catalog.ErrNotFound, db+"_missing")
			wantKind(t, c.DropDatabase(db, false, false), catalog.ErrFailedPrecondition, db)

			dropped, err := c.DropTable(db, "orders", false)
			if err != nil || dropped.TableID() != created.TableID() {
				t.Fatalf("DropTable = %v, %v", dropped, err)
			}
			_, err = c.GetTable(db, "orders")
			wantKind(t, err, catalog.ErrNotFound, "orders")
			_, err = c.DropTable(db, "orders", false)
			wantKind(t, err, catalog.ErrNotFound, "orders")
			if d, err := c.DropTable(db, "orders", true); d != nil || err != nil {
				t.Fatalf("DropTable(ignoreIfNotExists) = %v, %v", d, err)
			}
			if n := len(c.DroppedTables()); n != 1 {
				t.Fatalf("DroppedTables has %d tables, want 1", n)
			}
			if err := c.RemoveData(dropped); err != nil {
				t.Fatal(err)
			}
			if _, err := os.Stat(dropped.Location); !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("location %s still there after RemoveData: %v", dropped.Location, err)
			}
			again, err := c.CreateTable(richSpec(db, "orders"), false, false)
			if err != nil || again.TableID() == created.TableID() {
				t.Fatalf("re-created table = %v, %v; want a new id", again, err)
			}
			if err := c.DropDatabase(db, false, true); err != nil {
				t.Fatal(err)
			}
			dbs, _ = c.ListDatabases()
			if contains(dbs, db) {
				t.Fatalf("database %s still listed after a cascading drop", db)
			}
			wantKind(t, c.DropDatabase(db, false, false), catalog.ErrNotFound, db)
			if err := c.DropDatabase(db, true, false); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func simpleSpec(db, table string) *setatspb.TableSpec {
	return &setatspb.TableSpec{
		Database:   db,
		Table:      table,
		Columns:    []*setatspb.Column{{Name: "id", Type: "INT"}, {Name: "v", Type: "STRING"}},
		PrimaryKey: []string{"id"},
	}
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// Concurrent creators of one table: exactly one wins, every other gets AlreadyExists; then
// concurrent droppers: exactly one gets the table, every other NotFound.
func TestConformanceConcurrentCreators(t *testing.T) {
	const n = 6
	for _, tg := range targets(t) {
		t.Run(tg.name, func(t *testing.T) {
			wh := t.TempDir()
			c := tg.open(t, wh)
			db := uniqueDB("race")
			if err := c.CreateDatabase(db, false); err != nil {
				t.Fatal(err)
			}
			// Separate catalog instances, as several gateways would have.
			cats := []catalog.Catalog{c}
			for i := 1; i < n; i++ {
				if tg.uri == "" {
					cats = append(cats, c) // one hadoop catalog per warehouse
				} else {
					cats = append(cats, tg.open(t, wh))
				}
			}
			var wg sync.WaitGroup
			errs := make([]error, n)
			ids := make([]string, n)
			for i := 0; i < n; i++ {
				wg.Add(1)
				go func(i int) {
					defer wg.Done()
					tbl, err := cats[i].CreateTable(simpleSpec(db, "contended"), false, false)
					errs[i] = err
					if err == nil {
						ids[i] = tbl.TableID()
					}
				}(i)
			}
			wg.Wait()
			winner := ""
			for i, err := range errs {
				if err == nil {
					if winner != "" {
						t.Fatalf("two creators won: %s and %s", winner, ids[i])
					}
					winner = ids[i]
				} else {
					wantKind(t, err, catalog.ErrAlreadyExists, db+".contended")
				}
			}
			if winner == "" {
				t.Fatal("no creator won")
			}
			got, err := c.GetTable(db, "contended")
			if err != nil || got.TableID() != winner {
				t.Fatalf("GetTable = %v, %v; want the winner %s", got, err, winner)
			}
			won := 0
			for i := 0; i < n; i++ {
				wg.Add(1)
				go func(i int) {
					defer wg.Done()
					_, errs[i] = cats[i].DropTable(db, "contended", false)
				}(i)
			}
			wg.Wait()
			for _, err := range errs {
				if err == nil {
					won++
				} else {
					wantKind(t, err, catalog.ErrNotFound, "contended")
				}
			}
			if won != 1 {
				t.Fatalf("%d droppers won, want exactly 1", won)
			}
			if err := c.DropDatabase(db, false, true); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// A new catalog instance (a restarted gateway) sees what the old one acknowledged.
func TestConformanceRestartPersistence(t *testing.T) {
	for _, tg := range targets(t) {
		t.Run(tg.name, func(t *testing.T) {
			wh := t.TempDir()
			c := tg.open(t, wh)
			db := uniqueDB("restart")
			created, err := c.CreateTable(richSpec(db, "kept"), false, true)
			if err != nil {
				t.Fatal(err)
			}
			if cl, ok := c.(interface{ Close() }); ok {
				cl.Close()
			}
			c2 := tg.open(t, wh)
			got, err := c2.GetTable(db, "kept")
			if err != nil || got.TableID() != created.TableID() || !proto.Equal(got.Info.GetSpec(), created.Info.GetSpec()) {
				t.Fatalf("after restart GetTable = %v, %v; want %v", got, err, created.Info)
			}
			if err := c2.DropDatabase(db, false, true); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func deadURI(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return "thrift://" + addr
}

func openHive(t *testing.T, wh, uris string) *Catalog {
	t.Helper()
	c, err := Open(Options{Warehouse: wh, URIs: uris, CatalogName: "setats"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// The first URI is dead: every call goes to the second one.
func TestConformanceFailover(t *testing.T) {
	for _, tg := range targets(t) {
		if tg.uri == "" && tg.name == "hadoop" {
			continue // no URIs
		}
		t.Run(tg.name, func(t *testing.T) {
			tg.open(t, t.TempDir()) // skips without the metastore
			wh := t.TempDir()
			c := openHive(t, wh, deadURI(t)+" , "+tg.uri)
			db := uniqueDB("failover")
			tbl, err := c.CreateTable(simpleSpec(db, "t1"), false, true)
			if err != nil {
				t.Fatal(err)
			}
			direct := openHive(t, wh, tg.uri)
			got, err := direct.GetTable(db, "t1")
			if err != nil || got.TableID() != tbl.TableID() {
				t.Fatalf("direct GetTable = %v, %v", got, err)
			}
			if err := c.DropDatabase(db, false, true); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// proxy forwards TCP connections from a loopback port to a metastore; close cuts the port and
// every forwarded connection, as a metastore host going away does.
type proxy struct {
	l        net.Listener
	mu       sync.Mutex
	conns    []net.Conn
	accepted int
}

func startProxy(t *testing.T, target string) *proxy {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &proxy{l: l}
	go func() {
		for {
			in, err := l.Accept()
			if err != nil {
				return
			}
			out, err := net.Dial("tcp", target)
			if err != nil {
				in.Close()
				continue
			}
			p.mu.Lock()
			p.accepted++
			p.conns = append(p.conns, in, out)
			p.mu.Unlock()
			go func() { _, _ = io.Copy(out, in); out.Close() }()
			go func() { _, _ = io.Copy(in, out); in.Close() }()
		}
	}()
	t.Cleanup(p.close)
	return p
}

func (p *proxy) uri() string { return "thrift://" + p.l.Addr().String() }

func (p *proxy) close() {
	p.l.Close()
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.conns {
		c.Close()
	}
	p.conns = nil
}

func (p *proxy) count() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.accepted
}

// The first URI serves, then goes away while the catalog holds idle connections to it: the
// next calls, a write first, go to the second URI; nothing is lost or applied twice.
func TestConformanceFailoverMidSession(t *testing.T) {
	for _, tg := range targets(t)[1:] {
		t.Run(tg.name, func(t *testing.T) {
			tg.open(t, t.TempDir()) // skips without the metastore
			addrs, err := ParseURIs(tg.uri)
			if err != nil {
				t.Fatal(err)
			}
			first := startProxy(t, addrs[0])
			wh := t.TempDir()
			c := openHive(t, wh, first.uri()+","+tg.uri)
			db := uniqueDB("midfail")
			if err := c.CreateDatabase(db, false); err != nil {
				t.Fatal(err)
			}
			before, err := c.CreateTable(simpleSpec(db, "t1"), false, false)
			if err != nil {
				t.Fatal(err)
			}
			if first.count() == 0 {
				t.Fatal("the first URI was not used")
			}
			first.close()
			// A write first (create_database: no read before it): it must not be sent on the
			// dead idle connection.
			if err := c.CreateDatabase(db+"_b", false); err != nil {
				t.Fatalf("CreateDatabase after the first URI went away: %v", err)
			}
			if _, err := c.CreateTable(simpleSpec(db, "t2"), false, false); err != nil {
				t.Fatalf("CreateTable after the first URI went away: %v", err)
			}
			got, err := c.GetTable(db, "t1")
			if err != nil || got.TableID() != before.TableID() {
				t.Fatalf("GetTable after failover = %v, %v; want table id %s", got, err, before.TableID())
			}
			names, err := c.ListTables(db)
			if err != nil || strings.Join(names, ",") != "t1,t2" {
				t.Fatalf("ListTables after failover = %v, %v", names, err)
			}
			for _, d := range []string{db, db + "_b"} {
				if err := c.DropDatabase(d, false, true); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}

// Every metastore is down: Unavailable naming every URI, and nothing created on disk.
func TestConformanceMetastoreDown(t *testing.T) {
	wh := t.TempDir()
	a, b := deadURI(t), deadURI(t)
	c := openHive(t, wh, a+","+b)
	_, err := c.CreateTable(simpleSpec("down", "t"), false, true)
	wantKind(t, err, catalog.ErrUnavailable, a, b)
	entries, _ := os.ReadDir(wh)
	if len(entries) != 0 {
		t.Fatalf("warehouse has %d entries after a failed create, want none", len(entries))
	}
	_, err = c.GetTable("down", "t")
	wantKind(t, err, catalog.ErrUnavailable, a, b)
	_, err = c.ListDatabases()
	wantKind(t, err, catalog.ErrUnavailable, a)
	wantKind(t, c.CreateDatabase("down", false), catalog.ErrUnavailable, b)
	_, err = c.DropTable("down", "t", true)
	wantKind(t, err, catalog.ErrUnavailable, a)
}

// A table created outside Setats (a plain Hive table) is refused, naming its table type, and is
// not listed.
func TestConformancePlainHiveTable(t *testing.T) {
	for _, tg := range targets(t)[1:] {
		t.Run(tg.name, func(t *testing.T) {
			tg.open(t, t.TempDir())
			wh := t.TempDir()
			c := openHive(t, wh, tg.uri)
			db := uniqueDB("plain")
			if err := c.CreateDatabase(db, false); err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			err := c.ms.do(ctx, false, func(h *conn) error {
				return h.client.CreateTable(ctx, &hive_metastore.Table{
					TableName: "hive_only", DbName: db, Owner: "hive", TableType: "MANAGED_TABLE",
					Parameters: map[string]string{},
					Sd: &hive_metastore.StorageDescriptor{
						Cols:         []*hive_metastore.FieldSchema{{Name: "id", Type: "int"}},
						Location:     "file://" + filepath.Join(wh, "hive_only"),
						SerdeInfo:    &hive_metastore.SerDeInfo{SerializationLib: "org.apache.hadoop.hive.serde2.lazy.LazySimpleSerDe", Parameters: map[string]string{}},
						InputFormat:  "org.apache.hadoop.mapred.TextInputFormat",
						OutputFormat: "org.apache.hadoop.hive.ql.io.HiveIgnoreKeyTextOutputFormat",
						BucketCols:   []string{}, SortCols: []*hive_metastore.Order{}, Parameters: map[string]string{},
					},
					PartitionKeys: []*hive_metastore.FieldSchema{},
				})
			})
			if err != nil {
				t.Fatal(err)
			}
			_, err = c.GetTable(db, "hive_only")
			wantKind(t, err, catalog.ErrFailedPrecondition, "not a Setats table", "table type is", db+".hive_only")
			_, err = c.DropTable(db, "hive_only", false)
			wantKind(t, err, catalog.ErrFailedPrecondition, "table type is")
			names, err := c.ListTables(db)
			if err != nil || len(names) != 0 {
				t.Fatalf("ListTables = %v, %v; want no Setats table", names, err)
			}
			_, err = c.CreateTable(simpleSpec(db, "hive_only"), false, false)
			wantKind(t, err, catalog.ErrFailedPrecondition, "table type is")
			err = c.ms.do(ctx, false, func(h *conn) error { return h.client.DropDatabase(ctx, db, true, true) })
			if err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestParseURIs(t *testing.T) {
	for _, tc := range []struct{ in, want, err string }{
		{"thrift://a:1", "a:1", ""},
		{"thrift://a:1, thrift://b:2 ,", "a:1,b:2", ""},
		{"", "", "uri is empty"},
		{"http://a:1", "", "want thrift://host:port"},
		{"thrift://a", "", "want thrift://host:port"},
		{"thrift://a:99999", "", "port"},
	} {
		got, err := ParseURIs(tc.in)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) || !errors.Is(err, catalog.ErrInvalid) {
				t.Errorf("ParseURIs(%q) = %v, %v; want InvalidArgument %q", tc.in, got, err, tc.err)
			}
			continue
		}
		if err != nil || strings.Join(got, ",") != tc.want {
			t.Errorf("ParseURIs(%q) = %v, %v; want %s", tc.in, got, err, tc.want)
		}
	}
	_ = fmt.Sprint
}
