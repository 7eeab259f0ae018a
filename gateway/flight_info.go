package gateway

import (
	"context"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/setats/setats/catalog"
	"github.com/setats/setats/gateway/row"
	"github.com/setats/setats/gateway/store"
	"github.com/setats/setats/internal/culprit"
	"github.com/setats/setats/proto/setatspb"
)

// ListFlights answers one FlightInfo per table: PATH descriptor [db, table], the table's Arrow
// schema (its columns, without reserved columns), no endpoints. Criteria: empty for every
// database, or a database name (NotFound when it does not exist).
func (f *flightService) ListFlights(c *flight.Criteria, stream flight.FlightService_ListFlightsServer) error {
	s := f.s
	ctx := stream.Context()
	if err := s.authenticated(ctx, "ListFlights"); err != nil {
		return err
	}
	var dbs []string
	if db := string(c.GetExpression()); db != "" {
		dbs = []string{db}
	} else {
		var err error
		if dbs, err = s.cat.ListDatabases(); err != nil {
			return statusOr(err, codes.Internal, "list databases")
		}
	}
	for _, db := range dbs {
		names, err := s.cat.ListTables(db)
		if err != nil {
			return statusOr(err, codes.Internal, "list tables of database %s", db)
		}
		for _, name := range names {
			if !s.auth.SeesTable(ctx, db, name) { // only the tables the caller may read
				continue
			}
			t, err := s.cat.GetTable(db, name)
			if err != nil {
				if codeOf(err) == codes.NotFound { // dropped meanwhile
					continue
				}
				return statusOr(err, codes.Internal, "get table %s.%s", db, name)
			}
			info := &flight.FlightInfo{
				Schema:           flight.SerializeSchema(t.Schema, s.mem),
				FlightDescriptor: &flight.FlightDescriptor{Type: flight.DescriptorPATH, Path: []string{db, name}},
				TotalRecords:     -1,
				TotalBytes:       -1,
			}
			if err := stream.Send(info); err != nil {
				return err
			}
		}
	}
	return nil
}

// readRequest is a resolved GetFlightInfo / GetSchema descriptor.
type readRequest struct {
	cmd *setatspb.ReadCommand
	enc encoding        // encoding of the tickets to hand out
	cat catalog.Catalog // the catalog the CatalogContext selects
}

// parseReadDescriptor turns a PATH descriptor ([db, table] / [table]: earliest, bounded) or a
// CMD descriptor holding a ReadCommand into a readRequest, after checking its CatalogContext.
func (s *Server) parseReadDescriptor(d *flight.FlightDescriptor) (readRequest, error) {
	if d == nil {
		return readRequest{}, status.Error(codes.InvalidArgument, "missing flight descriptor")
	}
	switch d.GetType() {
	case flight.DescriptorPATH:
		if p := d.GetPath(); len(p) == 1 && strings.Contains(p[0], ".") {
			// ["db.table"], as SQL engines' Flight table functions send it: a snapshot read of
			// every column and partition (flight_snapshot_plan.go).
			db, table, _ := strings.Cut(p[0], ".")
			if db == "" || table == "" {
				return readRequest{}, status.Errorf(codes.InvalidArgument, "PATH descriptor %s: want \"db.table\"", culprit.Quote(p[0]))
			}
			return readRequest{cat: s.cat, cmd: &setatspb.ReadCommand{Database: db, Table: table, Snapshot: &setatspb.SnapshotRead{}}}, nil
		}
		db, table, err := pathTable(d.GetPath())
		if err != nil {
			return readRequest{}, err
		}
		return readRequest{cat: s.cat, cmd: &setatspb.ReadCommand{
			Database: db, Table: table,
			Start: &setatspb.ReadCommand_Position{Position: setatspb.StartPosition_EARLIEST},
		}}, nil
	case flight.DescriptorCMD:
		cmd := &setatspb.ReadCommand{}
		enc, err := decodeMsg(d.GetCmd(), cmd, "ReadCommand")
		if err != nil {
			return readRequest{}, err
		}
		cat, err := s.catalogFor(cmd.GetCatalog())
		if err != nil {
			return readRequest{}, err
		}
		cmd.Database = dbName(cmd.GetDatabase())
		return readRequest{cmd: cmd, enc: enc, cat: cat}, nil
	}
	return readRequest{}, status.Errorf(codes.InvalidArgument, "unsupported descriptor type %s", d.GetType())
}

// tableSchema returns the DoGet schema of a table without the per-bucket metadata (GetSchema,
// GetFlightInfo): reserved columns, then the table's columns in table order.
func tableSchema(t *catalog.Table) *arrow.Schema {
	sc := row.ChangelogSchema(t, "", 0)
	return arrow.NewSchema(sc.Fields(), nil)
}

// GetSchema answers the changelog schema of the table named by a PATH descriptor or a
// ReadCommand; for a snapshot read (ReadCommand.snapshot, PATH ["db.table"]) the snapshot schema
// with its projection.
func (f *flightService) GetSchema(ctx context.Context, d *flight.FlightDescriptor) (*flight.SchemaResult, error) {
	s := f.s
	req, err := s.parseReadDescriptor(d)
	if err != nil {
		return nil, err
	}
	if err := s.authorize(ctx, "GetSchema", privRead, req.cmd.GetDatabase(), req.cmd.GetTable()); err != nil {
		return nil, err
	}
	t, err := s.table(req.cat, req.cmd.GetDatabase(), req.cmd.GetTable())
	if err != nil {
		return nil, err
	}
	if sr := req.cmd.GetSnapshot(); sr != nil {
		cols, err := snapshotColumns(t, sr.GetColumns())
		if err != nil {
			return nil, err
		}
		return &flight.SchemaResult{Schema: flight.SerializeSchema(snapshotSchema(t, cols), s.mem)}, nil
	}
	return &flight.SchemaResult{Schema: flight.SerializeSchema(tableSchema(t), s.mem)}, nil
}

// GetFlightInfo answers the changelog schema and one endpoint per (partition, bucket), ordered
// (a snapshot read, ReadCommand.snapshot or PATH ["db.table"], is planned by planSnapshot),
// by partition then bucket (bucketsOf), whose ticket is a ChangelogTicket in the request's
// encoding (binary for a PATH descriptor). The start position is carried over, except LATEST,
// which is resolved here to each bucket's end offset so that no row written between planning and
// reading is lost. TotalRecords is the rows a bounded read returns, -1 when following.
func (f *flightService) GetFlightInfo(ctx context.Context, d *flight.FlightDescriptor) (*flight.FlightInfo, error) {
	s := f.s
	req, err := s.parseReadDescriptor(d)
	if err != nil {
		return nil, err
	}
	if err := s.authorize(ctx, "GetFlightInfo", privRead, req.cmd.GetDatabase(), req.cmd.GetTable()); err != nil {
		return nil, err
	}
	cmd := req.cmd
	ot, err := s.openTable(req.cat, cmd.GetDatabase(), cmd.GetTable())
	if err != nil {
		return nil, err
	}
	if cmd.GetSnapshot() != nil {
		return s.planSnapshot(ctx, d, req, ot) // flight_snapshot_plan.go
	}
	var buckets []store.BucketOffsets
	if err := ot.use(s, func(st *storeTable) error {
		buckets = bucketsOf(ot.tbl, st)
		return nil
	}); err != nil {
		return nil, err
	}
	info := &flight.FlightInfo{
		Schema:           flight.SerializeSchema(tableSchema(ot.tbl), s.mem),
		FlightDescriptor: d,
		TotalRecords:     0,
		TotalBytes:       -1,
		Ordered:          false,
	}
	if cmd.GetFollow() {
		info.TotalRecords = -1
	}
	for _, b := range buckets {
		tk := &setatspb.ChangelogTicket{
			Catalog:   cmd.GetCatalog(),
			Database:  ot.tbl.Database,
			Table:     ot.tbl.Name,
			Partition: b.Partition,
			Bucket:    b.Bucket,
			Follow:    cmd.GetFollow(),
			TableId:   ot.tbl.Info.GetTableId(),
		}
		rows := int64(0)
		switch st := cmd.GetStart().(type) {
		case *setatspb.ReadCommand_TimestampMs:
			tk.Start = &setatspb.ChangelogTicket_TimestampMs{TimestampMs: st.TimestampMs}
			rows = -1
		case *setatspb.ReadCommand_Position:
			if st.Position == setatspb.StartPosition_LATEST {
				tk.Start = &setatspb.ChangelogTicket_Offset{Offset: b.EndOffset}
			} else {
				tk.Start = &setatspb.ChangelogTicket_Position{Position: setatspb.StartPosition_EARLIEST}
				rows = b.EndOffset - b.StartOffset
			}
		default:
			tk.Start = &setatspb.ChangelogTicket_Position{Position: setatspb.StartPosition_EARLIEST}
			rows = b.EndOffset - b.StartOffset
		}
		if info.TotalRecords >= 0 {
			if rows < 0 {
				info.TotalRecords = -1
			} else {
				info.TotalRecords += rows
			}
		}
		payload, err := encodeMsg(req.enc, tk)
		if err != nil {
			return nil, err
		}
		info.Endpoint = append(info.Endpoint, &flight.FlightEndpoint{Ticket: &flight.Ticket{Ticket: payload}})
	}
	return info, nil
}
