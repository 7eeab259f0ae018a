package gateway

import (
	"context"
	"sort"

	"github.com/apache/arrow-go/v18/arrow/flight"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/setats/setats/catalog"
	"github.com/setats/setats/gateway/auth"
	"github.com/setats/setats/gateway/store"
	"github.com/setats/setats/internal/culprit"
	"github.com/setats/setats/proto/setatspb"
)

// Action types of DoAction (proto/README.md "Actions").
const (
	ActionGatewayInfo    = "gateway-info"
	ActionCreateDatabase = "create-database"
	ActionDropDatabase   = "drop-database"
	ActionListDatabases  = "list-databases"
	ActionCreateTable    = "create-table"
	ActionDropTable      = "drop-table"
	ActionGetTable       = "get-table"
	ActionListTables     = "list-tables"
	ActionListBuckets    = "list-buckets"
	ActionLookupOffsets  = "lookup-offsets"
	ActionWatch          = "watch"
)

func init() { actionTypes = append(actionTypes, binlogActionTypes...) }

// actionTypes lists the actions in ListActions order, with their descriptions.
var actionTypes = []*flight.ActionType{
	{Type: ActionGatewayInfo, Description: "body: empty or Empty; result: GatewayInfo"},
	{Type: ActionCreateDatabase, Description: "body: DatabaseRequest; result: Empty"},
	{Type: ActionDropDatabase, Description: "body: DatabaseRequest; result: Empty"},
	{Type: ActionListDatabases, Description: "body: ListDatabasesRequest; result: ListDatabasesResponse"},
	{Type: ActionCreateTable, Description: "body: CreateTableRequest; result: TableInfo"},
	{Type: ActionDropTable, Description: "body: TableRequest; result: Empty"},
	{Type: ActionGetTable, Description: "body: TableRequest; result: TableInfo"},
	{Type: ActionListTables, Description: "body: ListTablesRequest; result: ListTablesResponse"},
	{Type: ActionListBuckets, Description: "body: TableRequest; result: ListBucketsResponse"},
	{Type: ActionLookupOffsets, Description: "body: LookupOffsetsRequest; result: LookupOffsetsResponse"},
	{Type: ActionWatch, Description: "body: WatchRequest; results: a stream of Notification, the first READY, until the client cancels"},
}

// ListActions answers the action types of proto/README.md.
func (f *flightService) ListActions(_ *flight.Empty, stream flight.FlightService_ListActionsServer) error {
	for _, a := range actionTypes {
		if err := stream.Send(a); err != nil {
			return err
		}
	}
	return nil
}

// DoAction serves the actions of proto/README.md. The body is decoded as binary protobuf or
// JSON (codec.go) and every result is encoded the same way. Each action checks the request's
// CatalogContext first, then authorizes the caller (authz.go; privileges in gateway/README.md).
// An unknown type is InvalidArgument naming it.
func (f *flightService) DoAction(a *flight.Action, stream flight.FlightService_DoActionServer) error {
	s := f.s
	if a.GetType() == ActionWatch {
		return s.watch(a.GetBody(), stream)
	}
	enc, res, handled, err := s.subscriptionAction(stream.Context(), a.GetType(), a.GetBody())
	if !handled {
		enc, res, handled, err = s.deliveryAction(stream.Context(), a.GetType(), a.GetBody())
	}
	if !handled {
		enc, res, err = s.action(stream.Context(), a.GetType(), a.GetBody())
	}
	if err != nil {
		return err
	}
	payload, err := encodeMsg(enc, res)
	if err != nil {
		return err
	}
	return stream.Send(&flight.Result{Body: payload})
}

// action runs one single-result action and returns the request's encoding and the result.
func (s *Server) action(ctx context.Context, typ string, body []byte) (encoding, proto.Message, error) {
	switch typ {
	case ActionGatewayInfo:
		enc, err := decodeMsg(body, &setatspb.Empty{}, typ+" body")
		if err != nil {
			return enc, nil, err
		}
		if err := s.authenticated(ctx, typ); err != nil {
			return enc, nil, err
		}
		return enc, &setatspb.GatewayInfo{
			Version:              s.opts.Version,
			Warehouse:            s.cat.Warehouse(),
			DefaultBucketCount:   s.opts.DefaultBucketCount,
			ChangelogRetentionMs: s.opts.ChangelogRetention.Milliseconds(),
			CatalogTypes:         CatalogTypes,
		}, nil

	case ActionCreateDatabase, ActionDropDatabase:
		req := &setatspb.DatabaseRequest{}
		enc, cat, err := s.decodeChecked(body, req, typ, req.GetCatalog)
		if err != nil {
			return enc, nil, err
		}
		if err := s.authorize(ctx, typ, privAdmin, req.GetDatabase(), auth.Any); err != nil {
			return enc, nil, err
		}
		if req.GetDatabase() == "" {
			return enc, nil, status.Errorf(codes.InvalidArgument, "%s: database name is empty", typ)
		}
		if typ == ActionCreateDatabase {
			err = cat.CreateDatabase(req.GetDatabase(), req.GetIgnoreExistence())
		} else {
			err = s.dropDatabase(cat, req.GetDatabase(), req.GetIgnoreExistence(), req.GetCascade())
		}
		if err != nil {
			return enc, nil, statusOr(err, codes.Internal, "%s %s", typ, req.GetDatabase())
		}
		return enc, &setatspb.Empty{}, nil

	case ActionListDatabases:
		req := &setatspb.ListDatabasesRequest{}
		enc, cat, err := s.decodeChecked(body, req, typ, req.GetCatalog)
		if err != nil {
			return enc, nil, err
		}
		if err := s.authenticated(ctx, typ); err != nil {
			return enc, nil, err
		}
		dbs, err := cat.ListDatabases()
		if err != nil {
			return enc, nil, statusOr(err, codes.Internal, "list databases")
		}
		visible := make([]string, 0, len(dbs))
		for _, db := range dbs { // only the databases the caller holds a grant on
			if s.auth.SeesDatabase(ctx, db) {
				visible = append(visible, db)
			}
		}
		return enc, &setatspb.ListDatabasesResponse{Databases: visible}, nil

	case ActionCreateTable:
		req := &setatspb.CreateTableRequest{}
		enc, cat, err := s.decodeChecked(body, req, typ, req.GetCatalog)
		if err != nil {
			return enc, nil, err
		}
		if err := s.authorizeCreate(ctx, cat, typ, req.GetSpec(), req.GetIgnoreIfExists()); err != nil {
			return enc, nil, err
		}
		if req.GetSpec() == nil {
			return enc, nil, status.Errorf(codes.InvalidArgument, "%s: spec is missing", typ)
		}
		t, _, err := s.createTable(cat, req.GetSpec(), req.GetIgnoreIfExists(), req.GetCreateDatabase())
		if err != nil {
			return enc, nil, err
		}
		return enc, t.Info, nil

	case ActionDropTable, ActionGetTable, ActionListBuckets:
		req := &setatspb.TableRequest{}
		enc, cat, err := s.decodeChecked(body, req, typ, req.GetCatalog)
		if err != nil {
			return enc, nil, err
		}
		db := dbName(req.GetDatabase())
		priv := privRead
		if typ == ActionDropTable {
			priv = privAdmin
		}
		if err := s.authorize(ctx, typ, priv, db, req.GetTable()); err != nil {
			return enc, nil, err
		}
		switch typ {
		case ActionDropTable:
			if err := s.dropTable(cat, db, req.GetTable(), req.GetIgnoreIfNotExists()); err != nil {
				return enc, nil, err
			}
			return enc, &setatspb.Empty{}, nil
		case ActionGetTable:
			t, err := s.table(cat, db, req.GetTable())
			if err != nil {
				return enc, nil, err
			}
			return enc, t.Info, nil
		default:
			ot, err := s.openTable(cat, db, req.GetTable())
			if err != nil {
				return enc, nil, err
			}
			res := &setatspb.ListBucketsResponse{}
			err = ot.use(s, func(st *storeTable) error {
				bs := st.Buckets()
				sort.Slice(bs, func(i, j int) bool { return bucketLess(bs[i].BucketID, bs[j].BucketID) })
				for _, b := range bs {
					res.Buckets = append(res.Buckets, bucketOffsetsPB(b))
				}
				return nil
			})
			return enc, res, err
		}

	case ActionListTables:
		req := &setatspb.ListTablesRequest{}
		enc, cat, err := s.decodeChecked(body, req, typ, req.GetCatalog)
		if err != nil {
			return enc, nil, err
		}
		if err := s.authenticated(ctx, typ); err != nil {
			return enc, nil, err
		}
		db := dbName(req.GetDatabase())
		names, err := cat.ListTables(db)
		if err != nil {
			return enc, nil, statusOr(err, codes.Internal, "list tables of database %s", db)
		}
		visible := make([]string, 0, len(names))
		for _, n := range names { // only the tables the caller may read
			if s.auth.SeesTable(ctx, db, n) {
				visible = append(visible, n)
			}
		}
		return enc, &setatspb.ListTablesResponse{Tables: visible}, nil

	case ActionLookupOffsets:
		req := &setatspb.LookupOffsetsRequest{}
		enc, cat, err := s.decodeChecked(body, req, typ, req.GetCatalog)
		if err != nil {
			return enc, nil, err
		}
		if err := s.authorize(ctx, typ, privRead, dbName(req.GetDatabase()), req.GetTable()); err != nil {
			return enc, nil, err
		}
		res, err := s.lookupOffsets(cat, req)
		return enc, res, err
	}
	if enc, res, err, ok := s.binlogAction(ctx, typ, body); ok {
		return enc, res, err
	}
	if enc, res, err, ok := s.partitionAction(ctx, typ, body); ok { // partition_drop.go
		return enc, res, err
	}
	return encBinary, nil, status.Errorf(codes.InvalidArgument, "unknown action type %s (ListActions lists the action types)", culprit.Quote(typ))
}

// authorizeCreate authorizes creating the table of spec (create-table, DoPut's
// create_if_absent): admin on the table, which covers creating its database when missing. With
// ignoreIfExists and an existing table nothing is created, and write (what a sink that creates
// its table on first use holds) or read on it is enough.
func (s *Server) authorizeCreate(ctx context.Context, cat catalog.Catalog, call string, spec *setatspb.TableSpec, ignoreIfExists bool) error {
	db := dbName(spec.GetDatabase())
	if ignoreIfExists && spec.GetTable() != "" {
		if _, err := cat.GetTable(db, spec.GetTable()); err == nil {
			err := s.authorize(ctx, call, privWrite, db, spec.GetTable())
			if err != nil && s.authorize(ctx, call, privRead, db, spec.GetTable()) == nil {
				return nil
			}
			return err
		}
	}
	return s.authorize(ctx, call, privAdmin, db, spec.GetTable())
}

// decodeChecked decodes an action body, checks the CatalogContext it carries and returns the
// catalog it selects (catalogFor).
func (s *Server) decodeChecked(body []byte, m proto.Message, typ string, cc func() *setatspb.CatalogContext) (encoding, catalog.Catalog, error) {
	enc, err := decodeMsg(body, m, typ+" body")
	if err != nil {
		return enc, nil, err
	}
	cat, err := s.catalogFor(cc())
	return enc, cat, err
}

// bucketLess orders buckets by partition then bucket.
func bucketLess(a, b store.BucketID) bool {
	if a.Partition != b.Partition {
		return a.Partition < b.Partition
	}
	return a.Bucket < b.Bucket
}

// lookupOffsets resolves a start position for every bucket readers see (bucketsOf): EARLIEST is
// the oldest retained offset, LATEST the end offset, a timestamp the first row whose commit
// timestamp >= it (resolved=false and the end offset when it lies beyond the newest row).
func (s *Server) lookupOffsets(cat catalog.Catalog, req *setatspb.LookupOffsetsRequest) (*setatspb.LookupOffsetsResponse, error) {
	ot, err := s.openTable(cat, req.GetDatabase(), req.GetTable())
	if err != nil {
		return nil, err
	}
	res := &setatspb.LookupOffsetsResponse{}
	err = ot.use(s, func(st *storeTable) error {
		for _, b := range bucketsOf(ot.tbl, st) {
			ro := &setatspb.ResolvedOffset{Partition: b.Partition, Bucket: b.Bucket, Resolved: true}
			switch start := req.GetStart().(type) {
			case *setatspb.LookupOffsetsRequest_TimestampMs:
				off, ok, err := st.OffsetForTimestamp(b.BucketID, start.TimestampMs)
				if err != nil {
					return statusOr(err, codes.Internal, "%s: offset for timestamp %d", bucketName(ot.label, b.BucketID), start.TimestampMs)
				}
				ro.Offset, ro.Resolved = off, ok
			case *setatspb.LookupOffsetsRequest_Position:
				if start.Position == setatspb.StartPosition_LATEST {
					ro.Offset = b.EndOffset
				} else {
					ro.Offset = b.StartOffset
				}
			default:
				ro.Offset = b.StartOffset
			}
			res.Offsets = append(res.Offsets, ro)
		}
		return nil
	})
	return res, err
}

// createTable creates a table from spec (create-table and DoPut auto-create) and publishes
// TABLE_CREATED. With ignoreIfExists an existing table is returned as it is (created false).
func (s *Server) createTable(cat catalog.Catalog, spec *setatspb.TableSpec, ignoreIfExists, createDatabase bool) (*catalog.Table, bool, error) {
	db := dbName(spec.GetDatabase())
	if ignoreIfExists && spec.GetTable() != "" {
		if t, err := cat.GetTable(db, spec.GetTable()); err == nil {
			return t, false, nil
		}
	}
	spec = proto.Clone(spec).(*setatspb.TableSpec)
	spec.Database = db
	t, err := cat.CreateTable(spec, ignoreIfExists, createDatabase)
	if err != nil {
		return nil, false, statusOr(err, codes.Internal, "create table %s.%s", db, spec.GetTable())
	}
	s.nats.publish(&setatspb.Notification{
		Kind: setatspb.NotificationKind_TABLE_CREATED, Database: t.Database, Table: t.Name,
		TableId: t.Info.GetTableId(), CommitMs: t.Info.GetCreatedAtMs(),
	})
	s.log.Info("table created", "table", tableLabel(t.Database, t.Name), "table_id", t.Info.GetTableId(),
		"buckets", t.BucketCount, "merge_engine", t.MergeEngine)
	return t, true, nil
}

// dropTable drops db.name: catalog entry first, then its store is closed (waiting for running
// calls; following streams end with NotFound) and its data removed; TABLE_DROPPED is published.
func (s *Server) dropTable(cat catalog.Catalog, db, name string, ignoreIfNotExists bool) error {
	t, err := cat.DropTable(db, name, ignoreIfNotExists)
	if err != nil {
		return statusOr(err, codes.Internal, "drop table %s.%s", db, name)
	}
	if t == nil { // did not exist, ignored
		return nil
	}
	label := tableLabel(t.Database, t.Name)
	if _, err := s.tables.remove(t.Info.GetTableId()); err != nil {
		s.log.Error("close store of dropped table", "table", label, "err", err)
	}
	s.removeMu.Lock()
	err = cat.RemoveData(t)
	s.removeMu.Unlock()
	if err != nil {
		s.log.Error("remove data of dropped table; retried by the retention loop", "table", label, "location", t.Location, "err", err)
	}
	s.nats.publish(&setatspb.Notification{
		Kind: setatspb.NotificationKind_TABLE_DROPPED, Database: t.Database, Table: t.Name,
		TableId: t.Info.GetTableId(), CommitMs: s.opts.Clock(),
	})
	s.log.Info("table dropped", "table", label, "table_id", t.Info.GetTableId())
	return nil
}

// dropDatabase drops a database; with cascade its tables are dropped first through dropTable, so
// their stores are closed and their data removed.
func (s *Server) dropDatabase(cat catalog.Catalog, db string, ignoreIfNotExists, cascade bool) error {
	if cascade {
		names, err := cat.ListTables(db)
		if err != nil && !(ignoreIfNotExists && codeOf(err) == codes.NotFound) {
			return err
		}
		for _, n := range names {
			if err := s.dropTable(cat, db, n, true); err != nil {
				return err
			}
		}
	}
	return cat.DropDatabase(db, ignoreIfNotExists, cascade)
}
