package catalog

import (
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/setats/setats/internal/culprit"
	"github.com/setats/setats/proto/setatspb"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
)

// File and directory names of the hadoop catalog layout (see the package doc).
const (
	databaseDirSuffix = ".db"
	databaseFile      = "database.json"
	tableFile         = "table.json"
	droppedFile       = "dropped.json"
	dataDir           = "data"
	tempSuffix        = ".tmp"
)

// databaseMeta is the content of database.json.
type databaseMeta struct {
	Name        string `json:"name"`
	CreatedAtMs int64  `json:"created_at_ms"`
}

// hadoopCatalog is the "hadoop" catalog: metadata in files under the warehouse directory.
// mu guards dbs and dropped, and serializes every change on disk.
type hadoopCatalog struct {
	opts Options // Warehouse normalized
	root string  // warehouse directory

	mu      sync.RWMutex
	dbs     map[string]map[string]*Table // database -> table -> table
	dropped map[string]*Table            // table id -> dropped table whose data is not removed
}

func openHadoop(opts Options) (*hadoopCatalog, error) {
	root, err := WarehouseDir(opts.Warehouse)
	if err != nil {
		return nil, err
	}
	opts.Warehouse = pathURI(root)
	if err := os.MkdirAll(root, 0o755); err != nil {
		return nil, errorf(ErrInternal, "create warehouse directory %s: %w", root, err)
	}
	c := &hadoopCatalog{opts: opts, root: root, dbs: map[string]map[string]*Table{}, dropped: map[string]*Table{}}
	if err := c.load(); err != nil {
		return nil, err
	}
	if _, ok := c.dbs[DefaultDatabase]; !ok {
		if err := c.createDatabaseLocked(DefaultDatabase); err != nil {
			return nil, err
		}
	}
	return c, nil
}

func (c *hadoopCatalog) databaseDir(db string) string {
	return filepath.Join(c.root, db+databaseDirSuffix)
}

func (c *hadoopCatalog) tableDir(db, table string) string {
	return filepath.Join(c.databaseDir(db), table)
}

// load reads every database and table under the root, removes leftover temporary files and
// finishes interrupted drops.
func (c *hadoopCatalog) load() error {
	entries, err := os.ReadDir(c.root)
	if err != nil {
		return errorf(ErrInternal, "read warehouse directory %s: %w", c.root, err)
	}
	for _, e := range entries {
		db, ok := strings.CutSuffix(e.Name(), databaseDirSuffix)
		if !e.IsDir() || !ok || ValidateIdentifier("database", db) != nil {
			continue
		}
		dir := c.databaseDir(db)
		removeTemps(dir)
		_, err := os.Stat(filepath.Join(dir, databaseFile))
		live := err == nil
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return errorf(ErrInternal, "read database %s: %w", db, err)
		}
		if live {
			var meta databaseMeta
			if err := readJSON(filepath.Join(dir, databaseFile), &meta); err != nil {
				return err
			}
			c.dbs[db] = map[string]*Table{}
		}
		tables, err := os.ReadDir(dir)
		if err != nil {
			return errorf(ErrInternal, "read database directory %s: %w", dir, err)
		}
		for _, te := range tables {
			name := te.Name()
			if !te.IsDir() || ValidateIdentifier("table", name) != nil {
				continue
			}
			tdir := filepath.Join(dir, name)
			removeTemps(tdir)
			// A drop that the caller did not finish (crash before RemoveData): nothing has the
			// table open while the catalog opens, so finish it now.
			if t, err := c.readTable(db, name, filepath.Join(tdir, droppedFile)); err == nil {
				if err := c.removeData(t); err != nil {
					return err
				}
			} else if !errors.Is(err, fs.ErrNotExist) {
				return err
			}
			t, err := c.readTable(db, name, filepath.Join(tdir, tableFile))
			if errors.Is(err, fs.ErrNotExist) {
				continue
			}
			if err != nil {
				return err
			}
			if live {
				c.dbs[db][name] = t
			}
		}
		if !live {
			_ = os.Remove(dir) // a dropped database, empty now
		}
	}
	return nil
}

// readTable reads a table file (table.json or dropped.json) and resolves it. A missing file is
// an error wrapping fs.ErrNotExist.
func (c *hadoopCatalog) readTable(db, name, path string) (*Table, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
		return nil, errorf(ErrInternal, "read table metadata %s: %w", path, err)
	}
	info := &setatspb.TableInfo{}
	if err := protojson.Unmarshal(data, info); err != nil {
		return nil, errorf(ErrInternal, "parse table metadata %s: %w", path, err)
	}
	if info.GetSpec().GetDatabase() != db || info.GetSpec().GetTable() != name || info.GetTableId() == "" {
		return nil, errorf(ErrInternal, "table metadata %s names table %s.%s (id %q), want %s.%s",
			path, info.GetSpec().GetDatabase(), info.GetSpec().GetTable(), info.GetTableId(), db, name)
	}
	t, err := ResolveSpec(info.GetSpec(), c.opts)
	if err != nil {
		return nil, errorf(ErrInternal, "table metadata %s: %s", path, err.Error())
	}
	t.Info.TableId = info.GetTableId()
	t.Info.CreatedAtMs = info.GetCreatedAtMs()
	return t, nil
}

// encodeTable renders t's TableInfo for table.json: the location is left empty when it is the
// default one (so a moved warehouse keeps working) and the Arrow schema is left out (both are
// derived again on load).
func (c *hadoopCatalog) encodeTable(t *Table) ([]byte, error) {
	info := proto.Clone(t.Info).(*setatspb.TableInfo)
	info.ArrowSchema = nil
	if t.Location == DefaultLocation(c.root, t.Database, t.Name) {
		info.Spec.Location = ""
	} else if rel, err := filepath.Rel(c.root, t.Location); err == nil && filepath.IsLocal(rel) {
		info.Spec.Location = filepath.ToSlash(rel) // relative to the warehouse: a moved warehouse keeps working
	}
	data, err := protojson.MarshalOptions{Multiline: true, Indent: "  "}.Marshal(info)
	if err != nil {
		return nil, errorf(ErrInternal, "encode table %s: %w", t.QualifiedName(), err)
	}
	return append(data, '\n'), nil
}

func (c *hadoopCatalog) Warehouse() string { return c.opts.Warehouse }

func (c *hadoopCatalog) CreateDatabase(name string, ignoreIfExists bool) error {
	if err := ValidateIdentifier("database", name); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.dbs[name]; ok {
		if ignoreIfExists {
			return nil
		}
		return errorf(ErrAlreadyExists, "database %s already exists", name)
	}
	return c.createDatabaseLocked(name)
}

func (c *hadoopCatalog) createDatabaseLocked(name string) error {
	dir := c.databaseDir(name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return errorf(ErrInternal, "create database %s: %w", name, err)
	}
	if err := syncDir(c.root); err != nil {
		return err
	}
	data, err := json.MarshalIndent(databaseMeta{Name: name, CreatedAtMs: time.Now().UnixMilli()}, "", "  ")
	if err != nil {
		return errorf(ErrInternal, "encode database %s: %w", name, err)
	}
	if err := writeFileAtomic(dir, databaseFile, append(data, '\n')); err != nil {
		return err
	}
	c.dbs[name] = map[string]*Table{}
	return nil
}

func (c *hadoopCatalog) DropDatabase(name string, ignoreIfNotExists, cascade bool) error {
	if err := ValidateIdentifier("database", name); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	tables, ok := c.dbs[name]
	if !ok {
		if ignoreIfNotExists {
			return nil
		}
		return errorf(ErrNotFound, "database %s not found", name)
	}
	if len(tables) > 0 && !cascade {
		return errorf(ErrFailedPrecondition,
			"database %s is not empty (%d tables): drop its tables first or drop it with cascade", name, len(tables))
	}
	for _, tn := range sortedKeys(tables) {
		if _, err := c.dropTableLocked(name, tn); err != nil {
			return err
		}
	}
	dir := c.databaseDir(name)
	if err := os.Remove(filepath.Join(dir, databaseFile)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return errorf(ErrInternal, "drop database %s: %w", name, err)
	}
	if err := syncDir(dir); err != nil {
		return err
	}
	delete(c.dbs, name)
	_ = os.Remove(dir) // only when empty: dropped tables may still hold data
	return nil
}

func (c *hadoopCatalog) ListDatabases() ([]string, error) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return sortedKeys(c.dbs), nil
}

func (c *hadoopCatalog) CreateTable(spec *setatspb.TableSpec, ignoreIfExists bool, createDatabase bool) (*Table, error) {
	t, err := ResolveSpec(spec, c.opts)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	tables, ok := c.dbs[t.Database]
	if ok {
		if old, exists := tables[t.Name]; exists {
			if ignoreIfExists {
				return old, nil
			}
			return nil, errorf(ErrAlreadyExists, "table %s already exists", t.QualifiedName())
		}
	}
	for _, d := range c.dropped {
		if d.Database == t.Database && d.Name == t.Name {
			return nil, errorf(ErrFailedPrecondition,
				"table %s was dropped and its data is not removed yet; retry once the drop has finished", t.QualifiedName())
		}
	}
	if err := c.checkLocation(t, spec.GetLocation()); err != nil {
		return nil, err
	}
	if !ok {
		if !createDatabase {
			return nil, errorf(ErrNotFound, "database %s not found (table %s)", t.Database, t.QualifiedName())
		}
		if err := c.createDatabaseLocked(t.Database); err != nil {
			return nil, err
		}
		tables = c.dbs[t.Database]
	}

	t.Info.TableId = uuid.NewString()
	t.Info.CreatedAtMs = time.Now().UnixMilli()
	data, err := c.encodeTable(t)
	if err != nil {
		return nil, err
	}
	tdir := c.tableDir(t.Database, t.Name)
	for _, dir := range []string{tdir, t.Location} {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, errorf(ErrInternal, "create table %s: %w", t.QualifiedName(), err)
		}
	}
	if err := syncDir(c.databaseDir(t.Database)); err != nil {
		return nil, err
	}
	if err := writeFileAtomic(tdir, tableFile, data); err != nil {
		return nil, err
	}
	tables[t.Name] = t
	return t, nil
}

// checkLocation refuses a location that CheckLocation refuses (ErrInvalid), that is the location
// of another table, live or dropped and not removed (ErrAlreadyExists), that lies inside another
// table's location or holds it (ErrInvalid), or whose data directory already exists
// (ErrFailedPrecondition). given is the location the spec gave ("" for the default). On success
// t's resolved location is set.
func (c *hadoopCatalog) checkLocation(t *Table, given string) error {
	real, err := CheckLocation(c.root, t, given)
	if err != nil {
		return err
	}
	t.realLocation = real
	others := make([]*Table, 0, len(c.dropped))
	for _, d := range c.dropped {
		others = append(others, d)
	}
	for _, tables := range c.dbs {
		for _, o := range tables {
			others = append(others, o)
		}
	}
	for _, o := range others {
		ol := c.realLocationOf(o)
		switch {
		case ol == real:
			return errorf(ErrAlreadyExists, "table %s: location %s (%s) is already the location of table %s",
				t.QualifiedName(), culprit.Quote(given), culprit.Quote(real), o.QualifiedName())
		case pathsOverlap(ol, real):
			return errorf(ErrInvalid, "table %s: location %s (%s) nests with location %s of table %s: "+
				"no table's location may lie inside another's",
				t.QualifiedName(), culprit.Quote(given), culprit.Quote(real), culprit.Quote(ol), o.QualifiedName())
		}
	}
	data := filepath.Join(t.Location, dataDir)
	if _, err := os.Lstat(data); err == nil {
		return errorf(ErrFailedPrecondition,
			"table %s: location %s already holds a data directory (%s) that no table owns; remove it or choose another location",
			t.QualifiedName(), t.Location, data)
	} else if !errors.Is(err, fs.ErrNotExist) {
		return errorf(ErrInternal, "table %s: check location %s: %w", t.QualifiedName(), t.Location, err)
	}
	return nil
}

// realLocationOf returns the resolved location of t, resolving it once (tables loaded from disk).
// c.mu held for writing.
func (c *hadoopCatalog) realLocationOf(t *Table) string {
	if t.realLocation == "" {
		t.realLocation = t.Location
		if real, err := resolveExisting(t.Location); err == nil {
			t.realLocation = real
		}
	}
	return t.realLocation
}

func pathsOverlap(a, b string) bool {
	sep := string(filepath.Separator)
	return a == b || strings.HasPrefix(a, strings.TrimSuffix(b, sep)+sep) || strings.HasPrefix(b, strings.TrimSuffix(a, sep)+sep)
}

func (c *hadoopCatalog) DropTable(database, table string, ignoreIfNotExists bool) (*Table, error) {
	if database == "" {
		database = DefaultDatabase
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.dbs[database][table]; !ok {
		if ignoreIfNotExists {
			return nil, nil
		}
		return nil, notFound(database, table, c.dbs[database] != nil)
	}
	return c.dropTableLocked(database, table)
}

// dropTableLocked renames table.json to dropped.json: the table is gone from the catalog, and
// the marker tells the next Open to remove its data should the caller not get to RemoveData.
func (c *hadoopCatalog) dropTableLocked(database, table string) (*Table, error) {
	t := c.dbs[database][table]
	tdir := c.tableDir(database, table)
	if err := os.Rename(filepath.Join(tdir, tableFile), filepath.Join(tdir, droppedFile)); err != nil {
		return nil, errorf(ErrInternal, "drop table %s: %w", t.QualifiedName(), err)
	}
	if err := syncDir(tdir); err != nil {
		return nil, err
	}
	delete(c.dbs[database], table)
	c.dropped[t.TableID()] = t
	return t, nil
}

func notFound(database, table string, dbExists bool) error {
	if !dbExists {
		return errorf(ErrNotFound, "table %s.%s not found: database %s does not exist", database, table, database)
	}
	return errorf(ErrNotFound, "table %s.%s not found", database, table)
}

func (c *hadoopCatalog) GetTable(database, table string) (*Table, error) {
	if database == "" {
		database = DefaultDatabase
	}
	c.mu.RLock()
	defer c.mu.RUnlock()
	tables, ok := c.dbs[database]
	if t, found := tables[table]; found {
		return t, nil
	}
	return nil, notFound(database, table, ok)
}

func (c *hadoopCatalog) ListTables(database string) ([]string, error) {
	if database == "" {
		database = DefaultDatabase
	}
	c.mu.RLock()
	defer c.mu.RUnlock()
	tables, ok := c.dbs[database]
	if !ok {
		return nil, errorf(ErrNotFound, "database %s not found", database)
	}
	return sortedKeys(tables), nil
}

func (c *hadoopCatalog) RemoveData(t *Table) error {
	if t == nil {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if live, ok := c.dbs[t.Database][t.Name]; ok && live.TableID() == t.TableID() {
		return errorf(ErrFailedPrecondition, "table %s is not dropped: drop it before removing its data", t.QualifiedName())
	}
	if err := c.removeData(t); err != nil {
		return err
	}
	delete(c.dropped, t.TableID())
	return nil
}

// removeData deletes Location/data, then the drop marker (so a crash in between leaves the
// marker for the next Open), then the emptied directories.
func (c *hadoopCatalog) removeData(t *Table) error {
	if err := os.RemoveAll(filepath.Join(t.Location, dataDir)); err != nil {
		return errorf(ErrInternal, "remove data of table %s at %s: %w", t.QualifiedName(), t.Location, err)
	}
	_ = syncDir(t.Location)
	tdir := c.tableDir(t.Database, t.Name)
	marker := filepath.Join(tdir, droppedFile)
	if d, err := c.readTable(t.Database, t.Name, marker); err == nil && d.TableID() == t.TableID() {
		if err := os.Remove(marker); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return errorf(ErrInternal, "remove drop marker of table %s: %w", t.QualifiedName(), err)
		}
		_ = syncDir(tdir)
	}
	// Only empty directories go: a custom location may hold other files, and a new table of the
	// same name may already use the metadata directory.
	_ = os.Remove(t.Location)
	_ = os.Remove(tdir)
	if _, live := c.dbs[t.Database]; !live { // the database was dropped with cascade
		_ = os.Remove(c.databaseDir(t.Database))
	}
	return nil
}

func (c *hadoopCatalog) DroppedTables() []*Table {
	c.mu.RLock()
	defer c.mu.RUnlock()
	out := make([]*Table, 0, len(c.dropped))
	for _, t := range c.dropped {
		out = append(out, t)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].QualifiedName() != out[j].QualifiedName() {
			return out[i].QualifiedName() < out[j].QualifiedName()
		}
		return out[i].TableID() < out[j].TableID()
	})
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func readJSON(path string, v any) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return errorf(ErrInternal, "read %s: %w", path, err)
	}
	if err := json.Unmarshal(data, v); err != nil {
		return errorf(ErrInternal, "parse %s: %w", path, err)
	}
	return nil
}
