package catalog

import (
	"sort"
	"strings"
	"sync"

	"github.com/setats/setats/proto/setatspb"
)

// Options configure a Catalog.
type Options struct {
	// Warehouse is the warehouse root: a plain path (relative to the current directory) or a
	// file: URI; see NormalizeWarehouse. Required.
	Warehouse string
	// DefaultBucketCount is the bucket count of tables created with bucket_count <= 0; <= 0 means
	// DefaultBucketCount (4). At most MaxBucketCount.
	DefaultBucketCount int32
	// URIs are the Hive Metastore thrift URIs, comma separated (catalog type "hive" only).
	URIs string
	// CatalogName is the Flink-side catalog name (catalog-name); messages only.
	CatalogName string
}

// Catalog keeps databases and table metadata (SPEC sections 2-3). Implementations are safe for
// concurrent use. Errors are *Error values of the kinds ErrInvalid (bad names, bad specs),
// ErrNotFound, ErrAlreadyExists, ErrFailedPrecondition (dropping a database that still has
// tables without cascade, re-creating a table whose data is not removed yet, a Hive table that is
// not a Setats table), ErrUnavailable (the Hive Metastore cannot be reached, naming its URIs),
// ErrInternal (file system or metastore failures, naming the path or table).
type Catalog interface {
	// Warehouse returns the normalized warehouse URI, "file:///abs/path".
	Warehouse() string
	// CreateDatabase creates a database. An existing one is AlreadyExists unless ignoreIfExists.
	CreateDatabase(name string, ignoreIfExists bool) error
	// DropDatabase drops a database. A missing one is NotFound unless ignoreIfNotExists. One that
	// still has tables is FailedPrecondition unless cascade, which drops each table as DropTable
	// does; their data is then left to RemoveData (see DroppedTables).
	DropDatabase(name string, ignoreIfNotExists, cascade bool) error
	// ListDatabases returns the database names, sorted.
	ListDatabases() ([]string, error)
	// CreateTable resolves spec (ResolveSpec with the catalog's Options) and stores it with a new
	// table id. A missing database is NotFound unless createDatabase. An existing table is
	// AlreadyExists, unless ignoreIfExists: then the existing table is returned (specs are not
	// compared). A location that overlaps another table's, or whose data directory holds files no
	// table owns, is FailedPrecondition; so is a table of that name dropped and not yet removed.
	CreateTable(spec *setatspb.TableSpec, ignoreIfExists bool, createDatabase bool) (*Table, error)
	// DropTable removes a table from the catalog and returns it; a missing table is NotFound, or
	// (nil, nil) with ignoreIfNotExists. The data stays: the caller closes the table's storage and
	// then calls RemoveData. Until then the table is listed by DroppedTables and its name cannot
	// be re-created.
	DropTable(database, table string, ignoreIfNotExists bool) (*Table, error)
	// GetTable returns a table; NotFound names it.
	GetTable(database, table string) (*Table, error)
	// ListTables returns the table names of a database, sorted; NotFound for a missing database.
	ListTables(database string) ([]string, error)
	// RemoveData deletes the data of a dropped table (t as DropTable returned it): its
	// Location/data directory, then Location and the table's metadata directory when empty.
	// Calling it for a live table is FailedPrecondition; calling it twice is fine. Drops that a
	// crash interrupted are finished by the next Open.
	RemoveData(t *Table) error
	// DroppedTables returns the tables dropped (by DropTable or a cascading DropDatabase) whose
	// data RemoveData has not removed yet.
	DroppedTables() []*Table
}

// Catalog types (SPEC section 2, catalog-type).
const (
	// CatalogTypeHadoop keeps metadata in files under the warehouse.
	CatalogTypeHadoop = "hadoop"
	// CatalogTypeHive keeps metadata in a Hive Metastore (package catalog/hive, SPEC section 12).
	CatalogTypeHive = "hive"
)

// Opener opens a catalog of one type.
type Opener func(Options) (Catalog, error)

var (
	openersMu sync.Mutex
	openers   = map[string]Opener{}
)

// Register makes a catalog type available to Open; package catalog/hive registers "hive" in its
// init. Registering a type twice replaces the opener.
func Register(catalogType string, open Opener) {
	openersMu.Lock()
	defer openersMu.Unlock()
	openers[strings.ToLower(catalogType)] = open
}

// CatalogTypes returns the catalog types, sorted: "hadoop", "hive" (served once package
// catalog/hive is linked in) and any other registered type.
func CatalogTypes() []string {
	openersMu.Lock()
	defer openersMu.Unlock()
	out := []string{CatalogTypeHadoop, CatalogTypeHive}
	for t := range openers {
		if t != CatalogTypeHadoop && t != CatalogTypeHive {
			out = append(out, t)
		}
	}
	sort.Strings(out)
	return out
}

// NormalizeCatalogType returns the canonical catalog type ("" means hadoop): one of
// CatalogTypes, any case. Anything else is an ErrInvalid error naming catalog-type and the types.
func NormalizeCatalogType(catalogType string) (string, error) {
	t := strings.ToLower(strings.TrimSpace(catalogType))
	if t == "" {
		t = CatalogTypeHadoop
	}
	for _, k := range CatalogTypes() {
		if k == t {
			return t, nil
		}
	}
	return "", errorf(ErrInvalid, "unknown catalog-type %q: want one of %s", truncate(catalogType, 100),
		strings.Join(CatalogTypes(), ", "))
}

// CheckCatalogType checks a catalog-type option (SPEC section 2) as NormalizeCatalogType does.
func CheckCatalogType(catalogType string) error {
	_, err := NormalizeCatalogType(catalogType)
	return err
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}

// Open opens the catalog of the given type (NormalizeCatalogType) with opts. The hadoop catalog
// works on opts.Warehouse, creating the warehouse directory and the database DefaultDatabase
// when missing, and reading back every database and table stored there (see the package doc
// for the layout); drops interrupted by a crash are finished. opts.Warehouse must pass
// NormalizeWarehouse and opts.DefaultBucketCount must be at most MaxBucketCount (ErrInvalid
// otherwise). Other types are opened by their registered Opener; a type not linked into the
// program is ErrFailedPrecondition naming catalog-type.
func Open(catalogType string, opts Options) (Catalog, error) {
	t, err := NormalizeCatalogType(catalogType)
	if err != nil {
		return nil, err
	}
	if opts.DefaultBucketCount > MaxBucketCount {
		return nil, errorf(ErrInvalid, "default bucket count %d is above the maximum %d",
			opts.DefaultBucketCount, MaxBucketCount)
	}
	if t != CatalogTypeHadoop {
		openersMu.Lock()
		open := openers[t]
		openersMu.Unlock()
		if open == nil {
			return nil, errorf(ErrFailedPrecondition,
				"catalog-type %q is not linked into this program (import github.com/setats/setats/catalog/%s)", t, t)
		}
		return open(opts)
	}
	return openHadoop(opts)
}
