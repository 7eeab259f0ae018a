package hive

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/beltran/gohive/hive_metastore"
	"github.com/google/uuid"

	"github.com/setats/setats/catalog"
	"github.com/setats/setats/proto/setatspb"
)

// Options configure a Hive Metastore catalog.
type Options struct {
	// URIs are the Hive Metastore thrift URIs, comma separated, tried in order (SPEC section 2,
	// option uri). Required.
	URIs string
	// CatalogName is the Flink-side catalog name (catalog-name); it is recorded in messages only.
	CatalogName string
	// Warehouse and DefaultBucketCount as in catalog.Options: table data lives under the
	// warehouse, only metadata lives in the metastore.
	Warehouse          string
	DefaultBucketCount int32
	// Timeout bounds each dial and each metastore call; <= 0 means DefaultTimeout.
	Timeout time.Duration
	// Owner is the owner recorded on databases and tables created; "" means "setats".
	Owner string
}

// DefaultTimeout bounds a call to the metastore (a TCP connect: 5 s).
const DefaultTimeout = 30 * time.Second

// lockWait bounds how long a Hive 3 table lock is waited for.
const lockWait = 30 * time.Second

// droppedMarker is written into a table's location before its metastore entry is dropped and
// removed (after the data) by RemoveData: a data directory next to it belongs to a dropped table.
const droppedMarker = "setats-dropped"

// Catalog is a catalog.Catalog whose databases and tables live in a Hive Metastore (SPEC
// section 12). It keeps no metadata of its own beyond the tables it dropped and whose data is
// not removed yet: every call asks the metastore, so several gateways and restarts see the same
// state. Safe for concurrent use.
type Catalog struct {
	opts catalog.Options
	root string
	ms   *metastore
	name string
	own  string

	mu      sync.Mutex
	dropped map[string]*catalog.Table // table id -> dropped table whose data is not removed
}

var _ catalog.Catalog = (*Catalog)(nil)

func init() {
	catalog.Register(catalog.CatalogTypeHive, func(o catalog.Options) (catalog.Catalog, error) {
		return Open(Options{URIs: o.URIs, CatalogName: o.CatalogName, Warehouse: o.Warehouse, DefaultBucketCount: o.DefaultBucketCount})
	})
}

// Open returns a catalog for the metastores at opts.URIs. It does not dial: an unreachable
// metastore shows on the first call (KindUnavailable naming the URIs). Bad URIs or warehouse
// are KindInvalidArgument.
func Open(opts Options) (*Catalog, error) {
	addrs, err := ParseURIs(opts.URIs)
	if err != nil {
		return nil, err
	}
	root, err := catalog.WarehouseDir(opts.Warehouse)
	if err != nil {
		return nil, catalog.Errorf(catalog.ErrInvalid, "%s", err.Error())
	}
	if opts.DefaultBucketCount > catalog.MaxBucketCount {
		return nil, catalog.Errorf(catalog.ErrInvalid, "default bucket count %d is above the maximum %d",
			opts.DefaultBucketCount, catalog.MaxBucketCount)
	}
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultTimeout
	}
	if opts.Owner == "" {
		opts.Owner = "setats"
	}
	norm, _ := catalog.NormalizeWarehouse(root)
	return &Catalog{
		opts: catalog.Options{Warehouse: norm, DefaultBucketCount: opts.DefaultBucketCount},
		root: root,
		ms:   &metastore{addrs: addrs, uriList: strings.TrimSpace(opts.URIs), timeout: opts.Timeout},
		name: opts.CatalogName,
		own:  opts.Owner,

		dropped: map[string]*catalog.Table{},
	}, nil
}

// Close closes the idle metastore connections.
func (c *Catalog) Close() { c.ms.closeAll() }

// URIs returns the metastore URIs as configured.
func (c *Catalog) URIs() string { return c.ms.uriList }

func (c *Catalog) ctx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), c.ms.timeout*3)
}

// Warehouse returns the normalized warehouse URI.
func (c *Catalog) Warehouse() string { return c.opts.Warehouse }

// checkName refuses names the metastore would change: it keeps database and table names in
// lower case.
func checkName(kind, name string) error {
	if err := catalog.ValidateIdentifier(kind, name); err != nil {
		return catalog.Errorf(catalog.ErrInvalid, "%s", err.Error())
	}
	if strings.ToLower(name) != name {
		return catalog.Errorf(catalog.ErrInvalid,
			"invalid %s name %q: the Hive Metastore keeps names in lower case; use %q", kind, name, strings.ToLower(name))
	}
	return nil
}

// classify turns a metastore answer into a typed error; what names the object. A transport
// failure is returned as it is: metastore.do retries it or makes it ErrUnavailable.
func classify(err error, what string) error {
	if err == nil || isTransport(err) {
		return err
	}
	var ce *catalog.Error
	if errors.As(err, &ce) {
		return err
	}
	var (
		nso *hive_metastore.NoSuchObjectException
		ae  *hive_metastore.AlreadyExistsException
		ioe *hive_metastore.InvalidObjectException
		iop *hive_metastore.InvalidOperationException
		me  *hive_metastore.MetaException
	)
	switch {
	case errors.As(err, &nso):
		return catalog.Errorf(catalog.ErrNotFound, "%s not found: %s", what, nso.Message)
	case errors.As(err, &ae):
		return catalog.Errorf(catalog.ErrAlreadyExists, "%s already exists", what)
	case errors.As(err, &ioe):
		return catalog.Errorf(catalog.ErrInvalid, "%s: the Hive Metastore refused it: %s", what, ioe.Message)
	case errors.As(err, &iop):
		return catalog.Errorf(catalog.ErrFailedPrecondition, "%s: the Hive Metastore refused it: %s", what, iop.Message)
	case errors.As(err, &me):
		return catalog.Errorf(catalog.ErrInternal, "%s: Hive Metastore error: %s", what, me.Message)
	}
	return catalog.Errorf(catalog.ErrInternal, "%s: Hive Metastore call failed: %v", what, err)
}

// CreateDatabase creates a Hive database whose location is <warehouse>/<name>.db.
func (c *Catalog) CreateDatabase(name string, ignoreIfExists bool) error {
	if err := checkName("database", name); err != nil {
		return err
	}
	ctx, cancel := c.ctx()
	defer cancel()
	err := c.ms.do(ctx, false, func(h *conn) error { return c.createDatabase(ctx, h, name) })
	if errors.Is(err, catalog.ErrAlreadyExists) && ignoreIfExists {
		return nil
	}
	return err
}

func (c *Catalog) createDatabase(ctx context.Context, h *conn, name string) error {
	owner := c.own
	ot := hive_metastore.PrincipalType_USER
	db := &hive_metastore.Database{
		Name:        name,
		Description: "Setats database",
		LocationUri: "file://" + filepath.ToSlash(filepath.Join(c.root, name+".db")),
		Parameters:  map[string]string{"setats.created-by": "setats"},
		OwnerName:   &owner,
		OwnerType:   &ot,
	}
	return classify(h.client.CreateDatabase(ctx, db), "database "+name)
}

// DropDatabase drops a Hive database (never its data). Without cascade a database with tables
// is KindFailedPrecondition; with cascade every Setats table is dropped as DropTable does, and a
// table of another type stops the drop (KindFailedPrecondition naming it).
func (c *Catalog) DropDatabase(name string, ignoreIfNotExists, cascade bool) error {
	if err := checkName("database", name); err != nil {
		return err
	}
	ctx, cancel := c.ctx()
	defer cancel()
	var all []string
	err := c.ms.do(ctx, true, func(h *conn) error {
		if _, err := h.client.GetDatabase(ctx, name); err != nil {
			return classify(err, "database "+name)
		}
		var err error
		all, err = h.client.GetAllTables(ctx, name)
		return classify(err, "database "+name)
	})
	if err != nil {
		if errors.Is(err, catalog.ErrNotFound) {
			if ignoreIfNotExists {
				return nil
			}
			return catalog.Errorf(catalog.ErrNotFound, "database %s not found", name)
		}
		return err
	}
	if len(all) > 0 && !cascade {
		return catalog.Errorf(catalog.ErrFailedPrecondition,
			"database %s is not empty (%d tables): drop its tables first or drop it with cascade", name, len(all))
	}
	sort.Strings(all)
	for _, tn := range all {
		if _, err := c.DropTable(name, tn, true); err != nil {
			return err
		}
	}
	err = c.ms.do(ctx, false, func(h *conn) error {
		return classify(h.client.DropDatabase(ctx, name, false, false), "database "+name)
	})
	if errors.Is(err, catalog.ErrNotFound) && ignoreIfNotExists {
		return nil
	}
	return err
}

// ListDatabases returns every database of the metastore, sorted.
func (c *Catalog) ListDatabases() ([]string, error) {
	ctx, cancel := c.ctx()
	defer cancel()
	var dbs []string
	err := c.ms.do(ctx, true, func(h *conn) error {
		var err error
		dbs, err = h.client.GetAllDatabases(ctx)
		return classify(err, "list databases")
	})
	sort.Strings(dbs)
	return dbs, err
}

// CreateTable resolves spec and creates it in the metastore as an external table of type
// TableType, with a new table id. Nothing is created when the metastore fails: the database
// (with createDatabase) is removed again if this call created it and the table could not be.
// A location whose data directory exists without the marker of a dropped table is
// KindFailedPrecondition; with the marker, the leftover data of the dropped table is removed.
func (c *Catalog) CreateTable(spec *setatspb.TableSpec, ignoreIfExists, createDatabase bool) (*catalog.Table, error) {
	t, err := catalog.ResolveSpec(spec, c.opts)
	if err != nil {
		return nil, err
	}
	if err := checkName("database", t.Database); err != nil {
		return nil, err
	}
	if err := checkName("table", t.Name); err != nil {
		return nil, err
	}
	qn := t.QualifiedName()
	ctx, cancel := c.ctx()
	defer cancel()
	var existing *catalog.Table
	err = c.ms.do(ctx, true, func(h *conn) error {
		old, err := c.getTable(ctx, h, t.Database, t.Name)
		if err == nil {
			existing = old
			return nil
		}
		if errors.Is(err, catalog.ErrNotFound) {
			return nil
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	if existing != nil {
		if ignoreIfExists {
			return existing, nil
		}
		return nil, catalog.Errorf(catalog.ErrAlreadyExists, "table %s already exists", qn)
	}
	if err := c.checkLocation(t); err != nil {
		return nil, err
	}
	t.Info.TableId = uuid.NewString()
	t.Info.CreatedAtMs = time.Now().UnixMilli()
	ht := toHive(t, c.own)
	ht.Parameters[paramVersion] = "1"

	createdDB := false
	err = c.ms.do(ctx, false, func(h *conn) error {
		if _, err := h.client.GetDatabase(ctx, t.Database); err != nil {
			if err := classify(err, "database "+t.Database); !errors.Is(err, catalog.ErrNotFound) {
				return err
			}
			if !createDatabase {
				return catalog.Errorf(catalog.ErrNotFound, "database %s not found (table %s)", t.Database, qn)
			}
			err := c.createDatabase(ctx, h, t.Database)
			if err == nil {
				createdDB = true
			} else if !errors.Is(err, catalog.ErrAlreadyExists) {
				return err
			}
		}
		err := h.client.CreateTable(ctx, ht)
		if err == nil {
			return nil
		}
		cerr := classify(err, "table "+qn)
		if isTransport(err) {
			return err
		}
		if errors.Is(cerr, catalog.ErrAlreadyExists) {
			return cerr
		}
		// Two creators passing the metastore's existence check at once: the loser gets a
		// constraint violation (MetaException). If the table exists now, another creator won.
		if _, gerr := c.getTable(ctx, h, t.Database, t.Name); gerr == nil || errors.Is(gerr, catalog.ErrFailedPrecondition) {
			return catalog.Errorf(catalog.ErrAlreadyExists, "table %s already exists", qn)
		}
		return cerr
	})
	if err != nil {
		if createdDB {
			c.undoDatabase(t.Database)
		}
		if errors.Is(err, catalog.ErrAlreadyExists) {
			if ignoreIfExists {
				return c.GetTable(t.Database, t.Name)
			}
			return nil, catalog.Errorf(catalog.ErrAlreadyExists, "table %s already exists", qn)
		}
		return nil, err
	}
	if err := os.MkdirAll(t.Location, 0o755); err != nil {
		return nil, catalog.Errorf(catalog.ErrInternal, "create table %s: location %s: %v", qn, t.Location, err)
	}
	return t, nil
}

// undoDatabase drops a database this catalog has just created, best effort.
func (c *Catalog) undoDatabase(name string) {
	ctx, cancel := c.ctx()
	defer cancel()
	_ = c.ms.do(ctx, false, func(h *conn) error { return h.client.DropDatabase(ctx, name, false, false) })
}

// checkLocation refuses a location inside another dropped table's location or whose data
// directory exists, unless a dropped-table marker says the data is a dropped table's leftover:
// then the leftover is removed.
func (c *Catalog) checkLocation(t *catalog.Table) error {
	c.mu.Lock()
	for _, d := range c.dropped {
		if d.Location == t.Location {
			c.mu.Unlock()
			return catalog.Errorf(catalog.ErrFailedPrecondition,
				"table %s was dropped and its data is not removed yet; retry once the drop has finished", t.QualifiedName())
		}
	}
	c.mu.Unlock()
	data := filepath.Join(t.Location, "data")
	if _, err := os.Lstat(data); err == nil {
		if _, merr := os.Stat(filepath.Join(t.Location, droppedMarker)); merr == nil {
			if err := os.RemoveAll(data); err != nil {
				return catalog.Errorf(catalog.ErrInternal, "table %s: remove data of a dropped table at %s: %v", t.QualifiedName(), data, err)
			}
			_ = os.Remove(filepath.Join(t.Location, droppedMarker))
			return nil
		}
		return catalog.Errorf(catalog.ErrFailedPrecondition,
			"table %s: location %s already holds a data directory (%s) that no table owns; remove it or choose another location",
			t.QualifiedName(), t.Location, data)
	} else if !errors.Is(err, fs.ErrNotExist) {
		return catalog.Errorf(catalog.ErrInternal, "table %s: check location %s: %v", t.QualifiedName(), t.Location, err)
	}
	if _, err := os.Stat(filepath.Join(t.Location, "table.json")); err == nil {
		return catalog.Errorf(catalog.ErrFailedPrecondition,
			"table %s: location %s is the directory of a hadoop-catalog table", t.QualifiedName(), t.Location)
	}
	return nil
}

// paramVersion counts the metadata updates of a table; an update expects the version it read
// (compare-and-swap on Hive 4) or holds the table lock (Hive 3).
const paramVersion = "setats.version"

// getTable reads a Setats table on h. A missing table is KindNotFound, another table type
// KindFailedPrecondition, a table being dropped KindNotFound.
func (c *Catalog) getTable(ctx context.Context, h *conn, database, name string) (*catalog.Table, error) {
	ht, err := c.getHive(ctx, h, database, name)
	if err != nil {
		return nil, err
	}
	if ht.GetParameters()[ParamDropping] != "" {
		return nil, catalog.Errorf(catalog.ErrNotFound, "table %s.%s not found (being dropped)", database, name)
	}
	return fromHive(ht, database, name, c.opts)
}

func (c *Catalog) getHive(ctx context.Context, h *conn, database, name string) (*hive_metastore.Table, error) {
	req := hive_metastore.NewGetTableRequest()
	req.DbName, req.TblName = database, name
	res, err := h.client.GetTableReq(ctx, req)
	if err != nil {
		var nso *hive_metastore.NoSuchObjectException
		if errors.As(err, &nso) {
			return nil, catalog.Errorf(catalog.ErrNotFound, "table %s.%s not found", database, name)
		}
		return nil, classify(err, "table "+database+"."+name)
	}
	if res.GetTable() == nil {
		return nil, catalog.Errorf(catalog.ErrNotFound, "table %s.%s not found", database, name)
	}
	return res.GetTable(), nil
}

// GetTable returns a Setats table. A missing one is KindNotFound; a Hive table of another type
// is KindFailedPrecondition naming its table type.
func (c *Catalog) GetTable(database, table string) (*catalog.Table, error) {
	if database == "" {
		database = catalog.DefaultDatabase
	}
	if err := lookupName(database, table); err != nil {
		return nil, err
	}
	ctx, cancel := c.ctx()
	defer cancel()
	var t *catalog.Table
	err := c.ms.do(ctx, true, func(h *conn) error {
		var err error
		t, err = c.getTable(ctx, h, database, table)
		return err
	})
	return t, err
}

// lookupName makes names the metastore cannot hold NotFound (they cannot exist there).
func lookupName(database, table string) error {
	if catalog.ValidateIdentifier("database", database) != nil || catalog.ValidateIdentifier("table", table) != nil ||
		strings.ToLower(database) != database || strings.ToLower(table) != table {
		return catalog.Errorf(catalog.ErrNotFound, "table %s.%s not found (Hive Metastore names are lower case)",
			truncate(database, 130), truncate(table, 130))
	}
	return nil
}

// ListTables returns the Setats tables of a database (table type TableType), sorted; a
// missing database is KindNotFound.
func (c *Catalog) ListTables(database string) ([]string, error) {
	if database == "" {
		database = catalog.DefaultDatabase
	}
	ctx, cancel := c.ctx()
	defer cancel()
	var names []string
	err := c.ms.do(ctx, true, func(h *conn) error {
		if _, err := h.client.GetDatabase(ctx, database); err != nil {
			err = classify(err, "database "+database)
			if errors.Is(err, catalog.ErrNotFound) {
				return catalog.Errorf(catalog.ErrNotFound, "database %s not found", database)
			}
			return err
		}
		// get_tables_by_type is no use: Hive 3 parses the type into its TableType enum.
		metas, err := h.client.GetTableMeta(ctx, database, "*", nil)
		if err != nil {
			return classify(err, "list tables of database "+database)
		}
		names = names[:0]
		for _, m := range metas {
			if m.GetDbName() == database && strings.EqualFold(m.GetTableType(), TableType) {
				names = append(names, m.GetTableName())
			}
		}
		return nil
	})
	sort.Strings(names)
	return names, err
}

// DropTable drops a Setats table from the metastore (never its data; see RemoveData). The
// drop first marks the table (parameter ParamDropping) by an atomic update: on Hive 4 an
// alter_table that expects the version parameter it read, on Hive 3 under an exclusive HMS
// table lock. Of concurrent droppers exactly one gets the table, the others KindNotFound.
func (c *Catalog) DropTable(database, table string, ignoreIfNotExists bool) (*catalog.Table, error) {
	if database == "" {
		database = catalog.DefaultDatabase
	}
	notFound := func(err error) (*catalog.Table, error) {
		if ignoreIfNotExists {
			return nil, nil
		}
		return nil, err
	}
	if err := lookupName(database, table); err != nil {
		return notFound(err)
	}
	qn := database + "." + table
	ctx, cancel := c.ctx()
	defer cancel()
	var t *catalog.Table
	err := c.ms.do(ctx, false, func(h *conn) error {
		var err error
		t, err = c.update(ctx, h, database, table, func(p map[string]string, t *catalog.Table) error {
			// The marker in the location first: should the process die after the metastore drop,
			// the next CreateTable of this location finds the leftover data marked as dropped.
			if err := os.MkdirAll(t.Location, 0o755); err != nil {
				return catalog.Errorf(catalog.ErrInternal, "drop table %s: %v", qn, err)
			}
			if err := os.WriteFile(filepath.Join(t.Location, droppedMarker), []byte(t.TableID()+"\n"), 0o644); err != nil {
				return catalog.Errorf(catalog.ErrInternal, "drop table %s: write %s: %v", qn, droppedMarker, err)
			}
			p[ParamDropping] = t.TableID()
			return nil
		}, func() error {
			return classify(h.client.DropTable(ctx, database, table, false), "table "+qn)
		})
		return err
	})
	if err != nil {
		if errors.Is(err, catalog.ErrNotFound) {
			return notFound(err)
		}
		return nil, err
	}
	c.mu.Lock()
	c.dropped[t.TableID()] = t
	c.mu.Unlock()
	return t, nil
}

// update applies mutate to the parameters of a Setats table atomically and then runs after.
//
// On Hive 4 the alter_table carries the expected-parameter compare-and-swap (environment
// context expected_parameter_key/value on the version parameter paramVersion): a concurrent
// update that won makes this one read again. A Hive 4 metastore whose database cannot run the
// compare-and-swap (embedded Derby keeps parameter values in CLOBs, which it cannot compare) and
// every Hive 3 metastore get an exclusive HMS table lock instead, held until after has run.
// A table gone or being dropped meanwhile is KindNotFound.
func (c *Catalog) update(ctx context.Context, h *conn, database, name string,
	mutate func(p map[string]string, t *catalog.Table) error, after func() error) (*catalog.Table, error) {
	qn := database + "." + name
	if _, broken := noCAS.Load(h.addr); h.hive4 && !broken {
		for attempt := 0; attempt < 20; attempt++ {
			ht, t, version, err := c.prepareUpdate(ctx, h, database, name, mutate)
			if err != nil {
				return nil, err
			}
			env := hive_metastore.NewEnvironmentContext()
			env.Properties = map[string]string{
				"expected_parameter_key":   paramVersion,
				"expected_parameter_value": version,
			}
			err = h.client.AlterTableWithEnvironmentContext(ctx, database, name, ht, env)
			if err == nil {
				if after != nil {
					if err := after(); err != nil {
						return nil, err
					}
				}
				return t, nil
			}
			if isTransport(err) {
				return nil, err
			}
			if casUnsupported(err) {
				noCAS.Store(h.addr, true)
				break
			}
			var me *hive_metastore.MetaException
			var iop *hive_metastore.InvalidOperationException
			if errors.As(err, &me) || errors.As(err, &iop) {
				continue // another update won the compare-and-swap: read again
			}
			return nil, classify(err, "table "+qn)
		}
		if _, broken := noCAS.Load(h.addr); !broken {
			return nil, catalog.Errorf(catalog.ErrFailedPrecondition, "table %s: too many concurrent metadata updates, retry", qn)
		}
	}
	// Updates from this process queue here first: the metastore's lock tables do not cope with
	// many concurrent lockers of one table on every database (Derby deadlocks and waits out its
	// lock timeout), and the HMS lock then only orders this process against other processes.
	local := tableMutex(h.addr + "/" + qn)
	local.Lock()
	defer local.Unlock()
	unlock, err := c.lock(ctx, h, database, name)
	if err != nil {
		return nil, err
	}
	defer unlock()
	ht, t, _, err := c.prepareUpdate(ctx, h, database, name, mutate)
	if err != nil {
		return nil, err
	}
	if err := h.client.AlterTable(ctx, database, name, ht); err != nil {
		if isTransport(err) {
			return nil, err
		}
		return nil, classify(err, "table "+qn)
	}
	if after != nil {
		if err := after(); err != nil {
			return nil, err
		}
	}
	return t, nil
}

var tableMutexes sync.Map // "host:port/db.table" -> *sync.Mutex

func tableMutex(key string) *sync.Mutex {
	m, _ := tableMutexes.LoadOrStore(key, &sync.Mutex{})
	return m.(*sync.Mutex)
}

// prepareUpdate reads the table, applies mutate and bumps the version; it returns the new Hive
// table, the table as read and the version read.
func (c *Catalog) prepareUpdate(ctx context.Context, h *conn, database, name string,
	mutate func(p map[string]string, t *catalog.Table) error) (*hive_metastore.Table, *catalog.Table, string, error) {
	ht, err := c.getHive(ctx, h, database, name)
	if err != nil {
		return nil, nil, "", err
	}
	if ht.GetParameters()[ParamDropping] != "" {
		return nil, nil, "", catalog.Errorf(catalog.ErrNotFound, "table %s.%s not found (being dropped)", database, name)
	}
	t, err := fromHive(ht, database, name, c.opts)
	if err != nil {
		return nil, nil, "", err
	}
	version := ht.Parameters[paramVersion]
	if version == "" {
		version = "0"
	}
	n, _ := strconv.ParseInt(version, 10, 64)
	if err := mutate(ht.Parameters, t); err != nil {
		return nil, nil, "", err
	}
	ht.Parameters[paramVersion] = strconv.FormatInt(n+1, 10)
	return ht, t, version, nil
}

// casUnsupported reports whether an alter_table failed because the metastore's database cannot
// run the expected-parameter update (Derby: "Comparisons between 'CLOB ..."), rather than
// because the expected value did not match.
func casUnsupported(err error) bool {
	var me *hive_metastore.MetaException
	if !errors.As(err, &me) {
		return false
	}
	return strings.Contains(me.Message, "CLOB") || strings.Contains(me.Message, "Error executing SQL")
}

// lock takes an exclusive Hive Metastore lock on a table (Hive 3), waiting up to lockWait.
func (c *Catalog) lock(ctx context.Context, h *conn, database, name string) (func(), error) {
	qn := database + "." + name
	comp := hive_metastore.NewLockComponent()
	comp.Type = hive_metastore.LockType_EXCLUSIVE
	comp.Level = hive_metastore.LockLevel_TABLE
	comp.Dbname = database
	comp.Tablename = &name
	comp.OperationType = hive_metastore.DataOperationType_NO_TXN
	req := hive_metastore.NewLockRequest()
	req.Component = []*hive_metastore.LockComponent{comp}
	req.User = c.own
	req.Hostname, _ = os.Hostname()
	req.AgentInfo = "setats"
	res, err := h.client.Lock(ctx, req)
	if err != nil {
		return nil, classifyLock(err, qn)
	}
	id := res.GetLockid()
	unlock := func() {
		ctx2, cancel := context.WithTimeout(context.Background(), c.ms.timeout)
		defer cancel()
		_ = h.client.Unlock(ctx2, &hive_metastore.UnlockRequest{Lockid: id})
	}
	deadline := time.Now().Add(lockWait)
	for wait := 10 * time.Millisecond; res.GetState() == hive_metastore.LockState_WAITING; wait = min(wait*2, 500*time.Millisecond) {
		if time.Now().After(deadline) {
			unlock()
			return nil, catalog.Errorf(catalog.ErrFailedPrecondition, "table %s: Hive Metastore lock not granted within %s", qn, lockWait)
		}
		time.Sleep(wait)
		if res, err = h.client.CheckLock(ctx, &hive_metastore.CheckLockRequest{Lockid: id}); err != nil {
			unlock()
			return nil, classifyLock(err, qn)
		}
	}
	if res.GetState() != hive_metastore.LockState_ACQUIRED {
		unlock()
		return nil, catalog.Errorf(catalog.ErrFailedPrecondition, "table %s: Hive Metastore lock %s", qn, res.GetState())
	}
	return unlock, nil
}

func classifyLock(err error, qn string) error {
	if isTransport(err) {
		return err
	}
	return catalog.Errorf(catalog.ErrInternal, "table %s: Hive Metastore lock: %v", qn, classify(err, "lock"))
}

// RemoveData deletes the data of a dropped table: Location/data, then the dropped marker, then
// Location when empty. A live table (same id in the metastore) is KindFailedPrecondition.
func (c *Catalog) RemoveData(t *catalog.Table) error {
	if t == nil {
		return nil
	}
	if live, err := c.GetTable(t.Database, t.Name); err == nil && live.TableID() == t.TableID() {
		return catalog.Errorf(catalog.ErrFailedPrecondition, "table %s is not dropped: drop it before removing its data", t.QualifiedName())
	}
	if err := os.RemoveAll(filepath.Join(t.Location, "data")); err != nil {
		return catalog.Errorf(catalog.ErrInternal, "remove data of table %s at %s: %v", t.QualifiedName(), t.Location, err)
	}
	marker := filepath.Join(t.Location, droppedMarker)
	if b, err := os.ReadFile(marker); err == nil && strings.TrimSpace(string(b)) == t.TableID() {
		_ = os.Remove(marker)
	}
	_ = os.Remove(t.Location)
	c.mu.Lock()
	delete(c.dropped, t.TableID())
	c.mu.Unlock()
	return nil
}

// DroppedTables returns the tables this catalog dropped whose data RemoveData has not removed.
func (c *Catalog) DroppedTables() []*catalog.Table {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]*catalog.Table, 0, len(c.dropped))
	for _, t := range c.dropped {
		out = append(out, t)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].TableID() < out[j].TableID() })
	return out
}

// String names the catalog for logs.
func (c *Catalog) String() string {
	return fmt.Sprintf("hive catalog %q at %s", c.name, c.ms.uriList)
}
