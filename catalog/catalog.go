package catalog

import (
	"strings"

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
}

// Catalog keeps databases and table metadata (SPEC sections 2-3). Implementations are safe for
// concurrent use. Errors are *Error values of the kinds ErrInvalid (bad names, bad specs),
// ErrNotFound, ErrAlreadyExists, ErrFailedPrecondition (dropping a database that still has
// tables without cascade, re-creating a table whose data is not removed yet), ErrInternal (file
// system failures, naming the path).
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

// CatalogTypeHadoop is the catalog type served: metadata in files under the warehouse.
const CatalogTypeHadoop = "hadoop"

// CheckCatalogType checks a catalog-type option (SPEC section 2): "" or "hadoop" (any case) is
// fine; "hive" is an ErrFailedPrecondition error naming catalog-type (the Hive
// Metastore catalog comes later, SPEC section 8); anything else is ErrInvalid naming
// catalog-type.
func CheckCatalogType(catalogType string) error {
	switch strings.ToLower(strings.TrimSpace(catalogType)) {
	case "", CatalogTypeHadoop:
		return nil
	case "hive":
		return newError(ErrFailedPrecondition,
			"catalog-type 'hive' (Hive Metastore) is not supported yet (SPEC section 8); use catalog-type 'hadoop'")
	}
	return errorf(ErrInvalid, "unknown catalog-type %q: want 'hadoop' (or 'hive', not supported yet)", catalogType)
}

// Open opens the catalog of the given type on opts.Warehouse, creating the warehouse directory
// and the database DefaultDatabase when missing, and reading back every database and table
// stored there (see the package doc for the layout). Drops interrupted by a crash are finished.
// catalogType is checked by CheckCatalogType. opts.Warehouse must pass NormalizeWarehouse and
// opts.DefaultBucketCount must be at most MaxBucketCount (InvalidArgument otherwise).
func Open(catalogType string, opts Options) (Catalog, error) {
	if err := CheckCatalogType(catalogType); err != nil {
		return nil, err
	}
	if opts.DefaultBucketCount > MaxBucketCount {
		return nil, errorf(ErrInvalid, "default bucket count %d is above the maximum %d",
			opts.DefaultBucketCount, MaxBucketCount)
	}
	return openHadoop(opts)
}
