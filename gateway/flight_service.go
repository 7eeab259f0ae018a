package gateway

import (
	"sort"
	"strings"

	"github.com/apache/arrow-go/v18/arrow/flight"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/setats/setats/catalog"
	"github.com/setats/setats/gateway/partname"
	"github.com/setats/setats/gateway/store"
	"github.com/setats/setats/internal/culprit"
	"github.com/setats/setats/proto/setatspb"
)

// DefaultDatabase is the database of a PATH descriptor ["table"] and of requests that leave the
// database empty (proto/README.md).
const DefaultDatabase = catalog.DefaultDatabase

// flightService is the Arrow Flight service of proto/README.md. Files: flight_info.go (ListFlights,
// GetSchema, GetFlightInfo), flight_put.go (DoPut), flight_get.go (DoGet), flight_action.go
// (DoAction, ListActions), flight_watch.go (the watch action).
type flightService struct {
	flight.BaseFlightServer
	s *Server
}

// dbName returns db, or DefaultDatabase when empty.
func dbName(db string) string {
	if db == "" {
		return DefaultDatabase
	}
	return db
}

// pathTable parses a PATH descriptor: ["db", "table"] or ["table"] (database "default").
func pathTable(path []string) (db, table string, err error) {
	switch len(path) {
	case 1:
		db, table = DefaultDatabase, path[0]
	case 2:
		db, table = path[0], path[1]
	default:
		return "", "", status.Errorf(codes.InvalidArgument,
			"PATH descriptor of %d elements: want [database, table] or [table]", len(path))
	}
	if table == "" {
		return "", "", status.Errorf(codes.InvalidArgument, "PATH descriptor %s: empty table name", culprit.Quote(strings.Join(path, "/")))
	}
	return dbName(db), table, nil
}

// table returns the catalog entry of db.name. A missing table is NotFound naming it.
func (s *Server) table(cat catalog.Catalog, db, name string) (*catalog.Table, error) {
	db = dbName(db)
	if name == "" {
		return nil, status.Errorf(codes.InvalidArgument, "table name is empty (database %q)", db)
	}
	// A name no table can have is InvalidArgument naming it (truncated), not NotFound.
	if err := catalog.ValidateIdentifier("database", db); err != nil {
		return nil, err
	}
	if err := catalog.ValidateIdentifier("table", name); err != nil {
		return nil, err
	}
	t, err := cat.GetTable(db, name)
	if err != nil {
		return nil, statusOr(err, codes.Internal, "get table %s.%s", db, name)
	}
	return t, nil
}

// openTable returns the catalog entry of db.name with its store open.
func (s *Server) openTable(cat catalog.Catalog, db, name string) (*openTable, error) {
	t, err := s.table(cat, db, name)
	if err != nil {
		return nil, err
	}
	return s.tables.open(t)
}

// tableHandle returns the handle of db.name without opening its store.
func (s *Server) tableHandle(cat catalog.Catalog, db, name string) (*openTable, error) {
	t, err := s.table(cat, db, name)
	if err != nil {
		return nil, err
	}
	return s.tables.handle(t)
}

// bucketsOf returns the (partition, bucket) pairs a table's readers see, ordered by partition
// then bucket: every bucket 0..bucket_count-1 of every partition known to the store (the single
// partition "" of an unpartitioned table is always known), with the store's offsets (zero for a
// bucket that has no row yet).
func bucketsOf(t *catalog.Table, st *store.Table) []store.BucketOffsets {
	have := map[store.BucketID]store.BucketOffsets{}
	parts := map[string]bool{}
	if len(t.PartitionKeys) == 0 {
		parts[""] = true
	}
	for _, b := range st.Buckets() {
		have[b.BucketID] = b
		parts[b.Partition] = true
	}
	names := make([]string, 0, len(parts))
	for p := range parts {
		names = append(names, p)
	}
	sort.Strings(names)
	out := make([]store.BucketOffsets, 0, len(names)*int(t.BucketCount))
	for _, p := range names {
		for b := int32(0); b < t.BucketCount; b++ {
			id := store.BucketID{Partition: p, Bucket: b}
			bo, ok := have[id]
			if !ok {
				bo = store.BucketOffsets{BucketID: id}
			}
			out = append(out, bo)
		}
	}
	return out
}

// checkBucket validates a (partition, bucket) of a ChangelogTicket before the store sees it (the
// store keeps an in-memory entry for every bucket it is asked to wait on): the bucket must be in
// [0, bucket_count) and the partition must be "" for an unpartitioned table, else
// "k1=v1/k2=v2" over the partition keys in order (partname.Validate, proto/README.md
// "Partition names").
// Errors are InvalidArgument naming the table, partition and bucket.
func checkBucket(t *catalog.Table, partition string, bucket int32) error {
	label := tableLabel(t.Database, t.Name)
	if bucket < 0 || bucket >= t.BucketCount {
		return status.Errorf(codes.InvalidArgument, "table %s partition %q bucket %d: bucket out of range [0, %d)",
			label, partition, bucket, t.BucketCount)
	}
	if err := partname.Validate(t, partition); err != nil {
		return status.Errorf(codes.InvalidArgument, "%s (bucket %d)", err.Error(), bucket)
	}
	return nil
}

// bucketOffsetsPB converts store offsets to the wire message.
func bucketOffsetsPB(b store.BucketOffsets) *setatspb.BucketOffsets {
	return &setatspb.BucketOffsets{
		Partition:    b.Partition,
		Bucket:       b.Bucket,
		StartOffset:  b.StartOffset,
		EndOffset:    b.EndOffset,
		LastCommitMs: b.LastCommitMs,
	}
}
