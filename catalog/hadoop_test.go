package catalog

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/setats/setats/proto/setatspb"
	"google.golang.org/protobuf/proto"
)

func openT(t *testing.T, wh string) Catalog {
	t.Helper()
	c, err := Open("hadoop", Options{Warehouse: wh, DefaultBucketCount: 2})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func wantKind(t *testing.T, err error, kind error, mentions ...string) {
	t.Helper()
	var typed *Error
	if !errors.Is(err, kind) || !errors.As(err, &typed) {
		t.Fatalf("err %v, want a catalog.Error of kind %v", err, kind)
	}
	for _, m := range mentions {
		if !strings.Contains(err.Error(), m) {
			t.Fatalf("error %q does not mention %q", err, m)
		}
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

func TestOpenCatalogType(t *testing.T) {
	wh := t.TempDir()
	for _, typ := range []string{"", "hadoop", "HADOOP"} {
		if _, err := Open(typ, Options{Warehouse: wh}); err != nil {
			t.Errorf("Open(%q): %v", typ, err)
		}
	}
	_, err := Open("hive", Options{Warehouse: wh})
	wantKind(t, err, ErrFailedPrecondition, "catalog-type", "hive")
	_, err = Open("jdbc", Options{Warehouse: wh})
	wantKind(t, err, ErrInvalid, "catalog-type", "jdbc")
	_, err = Open("hadoop", Options{})
	wantKind(t, err, ErrInvalid, "warehouse")
	_, err = Open("hadoop", Options{Warehouse: "s3://bucket/wh"})
	wantKind(t, err, ErrInvalid, "warehouse", "s3")
	_, err = Open("hadoop", Options{Warehouse: wh, DefaultBucketCount: 2000})
	wantKind(t, err, ErrInvalid, "bucket count 2000")
}

func TestNormalizeWarehouse(t *testing.T) {
	cwd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ in, want string }{
		{"/tmp/wh", "file:///tmp/wh"},
		{"/tmp/wh/", "file:///tmp/wh"},
		{"/tmp//wh/./x/..", "file:///tmp/wh"},
		{"file:///tmp/wh", "file:///tmp/wh"},
		{"file:///tmp/wh/", "file:///tmp/wh"},
		{"FILE:///tmp/wh", "file:///tmp/wh"},
		{"file:/tmp/wh", "file:///tmp/wh"},
		{"file://localhost/tmp/wh", "file:///tmp/wh"},
		{"file:///tmp/a%20b", "file:///tmp/a b"},
		{" /tmp/wh ", "file:///tmp/wh"},
		{"/", "file:///"},
		{"wh", "file://" + filepath.Join(cwd, "wh")},
		{"./a/../wh", "file://" + filepath.Join(cwd, "wh")},
	} {
		got, err := NormalizeWarehouse(tc.in)
		if err != nil || got != tc.want {
			t.Errorf("NormalizeWarehouse(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
	for _, bad := range []string{"", "  ", "hdfs://nn:8020/wh", "cosn://bucket/warehouse", "file://otherhost/wh", "file:wh", "file:///wh?x=1"} {
		_, err := NormalizeWarehouse(bad)
		if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "warehouse") {
			t.Errorf("NormalizeWarehouse(%q): err %v, want InvalidArgument naming warehouse", bad, err)
		}
	}
}

func TestHadoopCatalogLifecycle(t *testing.T) {
	wh := t.TempDir()
	c := openT(t, wh)
	if c.Warehouse() != "file://"+wh {
		t.Errorf("Warehouse() = %q", c.Warehouse())
	}
	dbs, _ := c.ListDatabases()
	if !slices.Equal(dbs, []string{"default"}) {
		t.Errorf("databases of a new warehouse: %v", dbs)
	}

	// Databases.
	if err := c.CreateDatabase("shop", false); err != nil {
		t.Fatal(err)
	}
	wantKind(t, c.CreateDatabase("shop", false), ErrAlreadyExists, "shop")
	if err := c.CreateDatabase("shop", true); err != nil {
		t.Fatal(err)
	}
	wantKind(t, c.CreateDatabase("bad-name", false), ErrInvalid, "bad-name")

	// Tables.
	_, err := c.CreateTable(simpleSpec("nodb", "t"), false, false)
	wantKind(t, err, ErrNotFound, "nodb")
	orders, err := c.CreateTable(ordersSpec(), false, false)
	if err != nil {
		t.Fatal(err)
	}
	if orders.TableID() == "" || orders.Info.GetCreatedAtMs() == 0 || orders.BucketCount != 2 {
		t.Errorf("created table: id %q created %d buckets %d", orders.TableID(), orders.Info.GetCreatedAtMs(), orders.BucketCount)
	}
	if fi, err := os.Stat(orders.Location); err != nil || !fi.IsDir() {
		t.Errorf("location %s not created: %v", orders.Location, err)
	}
	_, err = c.CreateTable(ordersSpec(), false, false)
	wantKind(t, err, ErrAlreadyExists, "shop.orders")
	same, err := c.CreateTable(simpleSpec("shop", "orders"), true, false)
	if err != nil || same.TableID() != orders.TableID() {
		t.Errorf("ignoreIfExists: %v, id %s want %s", err, same.TableID(), orders.TableID())
	}
	auto, err := c.CreateTable(simpleSpec("sink_db", "events"), false, true) // creates the database
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.CreateTable(simpleSpec("", "plain"), false, false); err != nil {
		t.Fatal(err)
	}

	check := func(c Catalog) {
		t.Helper()
		dbs, err := c.ListDatabases()
		if err != nil || !slices.Equal(dbs, []string{"default", "shop", "sink_db"}) {
			t.Errorf("ListDatabases = %v, %v", dbs, err)
		}
		tables, err := c.ListTables("shop")
		if err != nil || !slices.Equal(tables, []string{"orders"}) {
			t.Errorf("ListTables(shop) = %v, %v", tables, err)
		}
		if tables, _ := c.ListTables(""); !slices.Equal(tables, []string{"plain"}) {
			t.Errorf("ListTables(default) = %v", tables)
		}
		got, err := c.GetTable("shop", "orders")
		if err != nil {
			t.Fatal(err)
		}
		if !proto.Equal(got.Info, orders.Info) || got.Location != orders.Location || got.RetentionMs != 60000 ||
			!got.Schema.Equal(orders.Schema) {
			t.Errorf("GetTable(shop.orders)\n got  %v\n want %v", got.Info, orders.Info)
		}
		if got, err := c.GetTable("sink_db", "events"); err != nil || got.TableID() != auto.TableID() {
			t.Errorf("GetTable(sink_db.events) = %v, %v", got, err)
		}
		_, err = c.GetTable("shop", "nope")
		wantKind(t, err, ErrNotFound, "shop.nope")
		_, err = c.GetTable("nodb", "t")
		wantKind(t, err, ErrNotFound, "nodb.t", "database nodb")
		_, err = c.ListTables("nodb")
		wantKind(t, err, ErrNotFound, "nodb")
	}
	check(c)
	check(openT(t, wh))                     // survives a restart
	check(openT(t, "file://"+wh+"/"))       // same warehouse, other spelling
	check(openT(t, filepath.Join(wh, "."))) // and another

	// Dropping.
	wantKind(t, c.DropDatabase("shop", false, false), ErrFailedPrecondition, "shop", "not empty")
	wantKind(t, c.DropDatabase("nodb", false, false), ErrNotFound, "nodb")
	if err := c.DropDatabase("nodb", true, false); err != nil {
		t.Fatal(err)
	}
	_, err = c.DropTable("shop", "nope", false)
	wantKind(t, err, ErrNotFound, "shop.nope")
	if d, err := c.DropTable("shop", "nope", true); d != nil || err != nil {
		t.Errorf("DropTable(ignore) = %v, %v", d, err)
	}
	dropped, err := c.DropTable("shop", "orders", false)
	if err != nil || dropped.TableID() != orders.TableID() {
		t.Fatalf("DropTable = %v, %v", dropped, err)
	}
	if _, err := c.GetTable("shop", "orders"); !errors.Is(err, ErrNotFound) {
		t.Errorf("GetTable after drop: %v", err)
	}
	if d := c.DroppedTables(); len(d) != 1 || d[0] != dropped {
		t.Errorf("DroppedTables = %v", d)
	}
	// Re-creating the name must wait until the data is removed.
	_, err = c.CreateTable(ordersSpec(), false, false)
	wantKind(t, err, ErrFailedPrecondition, "shop.orders", "dropped")
	if err := os.MkdirAll(filepath.Join(dropped.Location, "data"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dropped.Location, "data", "000001.sst"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := c.RemoveData(dropped); err != nil {
		t.Fatal(err)
	}
	if err := c.RemoveData(dropped); err != nil { // twice is fine
		t.Fatal(err)
	}
	if _, err := os.Stat(dropped.Location); !os.IsNotExist(err) {
		t.Errorf("location %s still there: %v", dropped.Location, err)
	}
	if len(c.DroppedTables()) != 0 {
		t.Errorf("DroppedTables after RemoveData: %v", c.DroppedTables())
	}
	again, err := c.CreateTable(ordersSpec(), false, false)
	if err != nil || again.TableID() == orders.TableID() {
		t.Fatalf("re-create: %v (id %s, old %s)", err, again.TableID(), orders.TableID())
	}
	wantKind(t, c.RemoveData(again), ErrFailedPrecondition, "shop.orders", "not dropped")

	// Cascade.
	if err := c.DropDatabase("shop", false, true); err != nil {
		t.Fatal(err)
	}
	if d := c.DroppedTables(); len(d) != 1 || d[0].TableID() != again.TableID() {
		t.Errorf("DroppedTables after cascade = %v", d)
	}
	if err := c.RemoveData(again); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(wh, "shop.db")); !os.IsNotExist(err) {
		t.Errorf("shop.db still there: %v", err)
	}
	c2 := openT(t, wh)
	if dbs, _ := c2.ListDatabases(); !slices.Equal(dbs, []string{"default", "sink_db"}) {
		t.Errorf("after drops, reopened: %v", dbs)
	}
	if _, err := c2.GetTable("shop", "orders"); !errors.Is(err, ErrNotFound) {
		t.Errorf("dropped table came back: %v", err)
	}
}

// TestHadoopCatalogCrashLeftovers plays the states a crash can leave and checks Open.
func TestHadoopCatalogCrashLeftovers(t *testing.T) {
	wh := t.TempDir()
	c := openT(t, wh)
	keep, err := c.CreateTable(simpleSpec("db", "keep"), false, true)
	if err != nil {
		t.Fatal(err)
	}
	gone, err := c.CreateTable(simpleSpec("db", "gone"), false, true)
	if err != nil {
		t.Fatal(err)
	}
	dataFile := filepath.Join(gone.Location, "data", "MANIFEST")
	if err := os.MkdirAll(filepath.Dir(dataFile), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dataFile, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	// Crash after DropTable, before RemoveData.
	if _, err := c.DropTable("db", "gone", false); err != nil {
		t.Fatal(err)
	}
	// Crash in the middle of atomic writes: temporary files, one of them truncated JSON.
	dbDir := filepath.Join(wh, "db.db")
	for path, content := range map[string]string{
		filepath.Join(dbDir, "keep", ".table.json.123.tmp"):   `{"spec": {"database": "db", "tab`,
		filepath.Join(dbDir, ".database.json.9.tmp"):          "",
		filepath.Join(dbDir, "half", ".table.json.77.tmp"):    `{}`,
		filepath.Join(wh, "other.db", ".database.json.1.tmp"): `{"name": "other"}`,
	} {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// Unrelated entries in the warehouse are ignored.
	if err := os.WriteFile(filepath.Join(wh, "README"), []byte("hi"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(wh, "not-a-db.db"), 0o755); err != nil {
		t.Fatal(err)
	}

	c2 := openT(t, wh)
	if dbs, _ := c2.ListDatabases(); !slices.Equal(dbs, []string{"db", "default"}) {
		t.Errorf("databases: %v", dbs)
	}
	if tables, _ := c2.ListTables("db"); !slices.Equal(tables, []string{"keep"}) {
		t.Errorf("tables: %v", tables)
	}
	if got, err := c2.GetTable("db", "keep"); err != nil || got.TableID() != keep.TableID() {
		t.Errorf("keep: %v %v", got, err)
	}
	// The interrupted drop was finished: data gone, name free again.
	if _, err := os.Stat(gone.Location); !os.IsNotExist(err) {
		t.Errorf("data of the dropped table still there: %v", err)
	}
	if _, err := c2.CreateTable(simpleSpec("db", "gone"), false, false); err != nil {
		t.Errorf("re-create after the finished drop: %v", err)
	}
	// A table whose create crashed before the rename does not exist and can be created.
	if _, err := c2.CreateTable(simpleSpec("db", "half"), false, false); err != nil {
		t.Errorf("create over a crashed create: %v", err)
	}
	// Temporary files were removed.
	for _, p := range []string{filepath.Join(dbDir, "keep", ".table.json.123.tmp"), filepath.Join(dbDir, ".database.json.9.tmp")} {
		if _, err := os.Stat(p); !os.IsNotExist(err) {
			t.Errorf("%s still there", p)
		}
	}
	// A corrupt committed metadata file is an error naming the file, not silently skipped.
	if err := os.WriteFile(filepath.Join(dbDir, "keep", "table.json"), []byte("{"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = Open("hadoop", Options{Warehouse: wh})
	wantKind(t, err, ErrInternal, filepath.Join(dbDir, "keep", "table.json"))
}

func TestHadoopCatalogLocations(t *testing.T) {
	wh := t.TempDir()
	c := openT(t, wh)
	own := filepath.Join(wh, "custom", "own")
	spec := simpleSpec("db", "custom")
	spec.Location = "file://" + own
	tbl, err := c.CreateTable(spec, false, true)
	if err != nil {
		t.Fatal(err)
	}
	if tbl.Location != own {
		t.Fatalf("location %s, want %s", tbl.Location, own)
	}
	// A relative location is relative to the warehouse.
	rel, err := c.CreateTable(func() *setatspb.TableSpec { s := simpleSpec("db", "rel"); s.Location = "custom/rel"; return s }(), false, false)
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(wh, "custom", "rel"); rel.Location != want {
		t.Fatalf("relative location %s, want %s", rel.Location, want)
	}
	// A data directory that no table owns is refused.
	stray := filepath.Join(wh, "db.db", "stray")
	if err := os.MkdirAll(filepath.Join(stray, "data"), 0o755); err != nil {
		t.Fatal(err)
	}
	_, err = c.CreateTable(simpleSpec("db", "stray"), false, false)
	wantKind(t, err, ErrFailedPrecondition, "db.stray", filepath.Join(stray, "data"))

	// A copied warehouse works where it is: default and custom locations (stored relative to
	// the warehouse) follow it.
	if _, err := c.CreateTable(simpleSpec("db", "plain"), false, false); err != nil {
		t.Fatal(err)
	}
	moved := filepath.Join(t.TempDir(), "moved")
	if out, err := exec.Command("cp", "-a", wh, moved).CombinedOutput(); err != nil {
		t.Fatalf("cp: %v %s", err, out)
	}
	m := openT(t, moved)
	plain, err := m.GetTable("db", "plain")
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(moved, "db.db", "plain"); plain.Location != want || plain.Info.GetSpec().GetLocation() != "file://"+want {
		t.Errorf("moved default location: %s (%s), want %s", plain.Location, plain.Info.GetSpec().GetLocation(), want)
	}
	custom, err := m.GetTable("db", "custom")
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(moved, "custom", "own"); custom.Location != want {
		t.Errorf("moved custom location: %s, want %s", custom.Location, want)
	}
}

// TestHadoopCatalogLocationRefused: a location must resolve, symbolic links included, inside
// the warehouse, outside other tables' (present or future) directories and the gateway's own,
// and neither share nor nest with another table's location (SPEC section 14, issue 7 item 3).
// Nothing of a refused location is created.
func TestHadoopCatalogLocationRefused(t *testing.T) {
	base := t.TempDir()
	wh := filepath.Join(base, "wh")
	outside := filepath.Join(base, "outside")
	if err := os.MkdirAll(outside, 0o755); err != nil {
		t.Fatal(err)
	}
	c := openT(t, wh)
	s := simpleSpec("db", "first")
	s.Location = "tables/first"
	if _, err := c.CreateTable(s, false, true); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(wh, "escape")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(base, "nowhere"), filepath.Join(wh, "dangling")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(wh, "db.db"), filepath.Join(wh, "dbalias")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(wh, "afile"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	long := "/" + strings.Repeat("x", 1<<16)
	for _, tc := range []struct {
		name, loc string
		kind      error
		mentions  []string
	}{
		{"absolute outside", outside + "/t", ErrInvalid, []string{"db.other", "not inside the warehouse"}},
		{"dot-dot escape", "../outside/t", ErrInvalid, []string{"not inside the warehouse", "../outside/t"}},
		{"dot-dot deep", "a/../../../../../../etc", ErrInvalid, []string{"not inside the warehouse"}},
		{"file URI root", "file:///", ErrInvalid, []string{"not inside the warehouse"}},
		{"file URI outside", "file://" + outside, ErrInvalid, []string{"not inside the warehouse"}},
		{"proc self", "/proc/self/cwd/x", ErrInvalid, []string{"not inside the warehouse"}},
		{"symlink escape", "escape/t", ErrInvalid, []string{"resolves to", outside}},
		{"dangling symlink", "dangling/t", ErrInvalid, []string{"dangling symbolic link"}},
		{"through a file", "afile/t", ErrInvalid, []string{"not a directory"}},
		{"NUL byte", "\x00", ErrInvalid, []string{"NUL"}},
		{"warehouse itself", ".", ErrInvalid, []string{"not inside the warehouse"}},
		{"another table's future directory", "db.db/future", ErrInvalid, []string{"database directory"}},
		{"another database", "other.db/x", ErrInvalid, []string{"database directory"}},
		{"database directory by a symlink", "dbalias/future", ErrInvalid, []string{"database directory"}},
		{"reserved", "_subscriptions/x", ErrInvalid, []string{"reserves"}},
		{"shared", "tables/first", ErrAlreadyExists, []string{"db.first", "already the location"}},
		{"shared by a file URI", "file://" + filepath.Join(wh, "tables", "first"), ErrAlreadyExists, []string{"db.first"}},
		{"nested inside", "tables/first/sub", ErrInvalid, []string{"nests", "db.first"}},
		{"holding another", "tables", ErrInvalid, []string{"nests", "db.first"}},
		{"long outside, truncated", long, ErrInvalid, []string{"bytes)"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := simpleSpec("db", "other")
			s.Location = tc.loc
			_, err := c.CreateTable(s, false, true)
			wantKind(t, err, tc.kind, tc.mentions...)
			if len(err.Error()) > 2048 {
				t.Errorf("error of %d bytes", len(err.Error()))
			}
			if _, err := c.GetTable("db", "other"); err == nil {
				t.Fatal("table created")
			}
		})
	}
	if ents, err := os.ReadDir(outside); err != nil || len(ents) != 0 {
		t.Errorf("outside the warehouse: %v %v", ents, err)
	}
	for _, p := range []string{filepath.Join(base, "nowhere"), filepath.Join(wh, "db.db", "future")} {
		if _, err := os.Lstat(p); err == nil {
			t.Errorf("%s was created", p)
		}
	}
	// The table's own default location, given explicitly, is fine.
	s = simpleSpec("db", "explicit")
	s.Location = filepath.Join(wh, "db.db", "explicit")
	if _, err := c.CreateTable(s, false, false); err != nil {
		t.Fatal(err)
	}
}

// TestHadoopCatalogConcurrent runs DDL and reads from several goroutines; run with -race.
func TestHadoopCatalogConcurrent(t *testing.T) {
	wh := t.TempDir()
	c := openT(t, wh)
	var wg sync.WaitGroup
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 10; i++ {
				name := fmt.Sprintf("t%d_%d", g, i)
				if _, err := c.CreateTable(simpleSpec("db", name), false, true); err != nil {
					t.Error(err)
					return
				}
				if _, err := c.GetTable("db", name); err != nil {
					t.Error(err)
				}
				if _, err := c.ListTables("db"); err != nil {
					t.Error(err)
				}
				if i%2 == 0 {
					d, err := c.DropTable("db", name, false)
					if err != nil {
						t.Error(err)
						return
					}
					if err := c.RemoveData(d); err != nil {
						t.Error(err)
					}
				}
			}
		}()
	}
	wg.Wait()
	for _, cat := range []Catalog{c, openT(t, wh)} {
		tables, err := cat.ListTables("db")
		if err != nil || len(tables) != 20 {
			t.Errorf("tables after concurrent DDL: %d %v", len(tables), err)
		}
	}
}
