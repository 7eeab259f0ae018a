// Package pg captures PostgreSQL changes into subscription channels with logical replication
// (pgoutput, github.com/jackc/pglogrepl): a replication slot and a publication that the gateway
// creates (setats_<channel>) or is given (SPEC section 11).
//
// Positions are LSNs ("0/16B3748"); a channel's durable position is the end LSN of the last
// transaction it holds, and the slot is confirmed up to it only after the records are durable,
// so a restarted capture neither loses nor repeats a transaction.
//
// Types (record field type, value text):
//
//	PostgreSQL                 field type          value
//	boolean                    BOOLEAN             true / false
//	smallint, integer, bigint  SMALLINT/INT/BIGINT decimal
//	real, double precision     FLOAT / DOUBLE      PostgreSQL text
//	numeric(p,s)               DECIMAL(p,s)        plain decimal (numeric without typmod: DECIMAL(38,10))
//	text, varchar, char, name  STRING              the text
//	bytea                      BYTES               the raw bytes
//	date                       DATE                yyyy-MM-dd
//	time                       TIME(p)             HH:mm:ss[.ffffff]
//	timestamp(p)               TIMESTAMP(p)        yyyy-MM-dd HH:mm:ss[.ffffff]
//	timestamptz(p)             TIMESTAMP_LTZ(p)    yyyy-MM-dd HH:mm:ss[.ffffff]+00 (UTC)
//	uuid, json, jsonb, other   STRING              PostgreSQL text
//
// Before images need REPLICA IDENTITY FULL on every captured table; channel creation refuses a
// table without it, naming the ALTER TABLE to run. Schema changes reach the channel as DDL
// records when pgoutput reports a changed relation (and TRUNCATE).
package pg

import (
	"context"
	"encoding/hex"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/jackc/pglogrepl"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/setats/setats/gateway/subscribe"
)

// New is the subscribe.SourceFactory of postgres:// URLs.
func New(cfg subscribe.SourceConfig) (subscribe.Source, error) {
	return &source{cfg: cfg, spec: cfg.Spec}, nil
}

type source struct {
	cfg  subscribe.SourceConfig
	spec subscribe.Spec
}

// statusInterval is how often the slot's confirmed position is reported to the server.
const statusInterval = 5 * time.Second

func errf(k subscribe.Kind, format string, args ...any) error {
	return subscribe.Errorf(k, format, args...)
}

// connect opens a connection; replication=true opens a logical replication connection
// (replication=database), which also runs simple SQL queries.
func (s *source) connect(ctx context.Context, replication bool) (*pgconn.PgConn, error) {
	cfg, err := pgconn.ParseConfig(s.spec.SourceURL)
	if err != nil {
		return nil, errf(subscribe.InvalidArgument, "channel %s: source URL %s: %v", s.spec.Name, subscribe.RedactURL(s.spec.SourceURL), err)
	}
	if cfg.RuntimeParams == nil {
		cfg.RuntimeParams = map[string]string{}
	}
	cfg.RuntimeParams["TimeZone"] = "UTC"
	cfg.RuntimeParams["application_name"] = "setats-" + s.spec.Name
	if replication {
		cfg.RuntimeParams["replication"] = "database"
	}
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	conn, err := pgconn.ConnectConfig(cctx, cfg)
	if err != nil {
		return nil, errf(subscribe.Unavailable, "channel %s: connect to PostgreSQL %s: %v", s.spec.Name, subscribe.RedactURL(s.spec.SourceURL), err)
	}
	return conn, nil
}

// query runs sql and returns the rows of its last result as strings (NULL = "").
func query(ctx context.Context, conn *pgconn.PgConn, sql string) ([][]string, error) {
	res, err := conn.Exec(ctx, sql).ReadAll()
	if err != nil {
		return nil, err
	}
	var out [][]string
	if len(res) == 0 {
		return nil, nil
	}
	for _, r := range res[len(res)-1].Rows {
		row := make([]string, len(r))
		for i, v := range r {
			row[i] = string(v)
		}
		out = append(out, row)
	}
	return out, nil
}

func quoteLiteral(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }
func quoteIdent(s string) string   { return `"` + strings.ReplaceAll(s, `"`, `""`) + `"` }

// splitTable splits "schema.table".
func splitTable(t string) (string, string) {
	a, b, _ := strings.Cut(t, ".")
	return a, b
}

// Check verifies wal_level=logical and that every table exists with REPLICA IDENTITY FULL.
func (s *source) Check(ctx context.Context) error {
	conn, err := s.connect(ctx, false)
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	rows, err := query(ctx, conn, "SHOW wal_level")
	if err != nil {
		return errf(subscribe.Unavailable, "channel %s: %v", s.spec.Name, err)
	}
	if len(rows) == 0 || rows[0][0] != "logical" {
		got := ""
		if len(rows) > 0 {
			got = rows[0][0]
		}
		return errf(subscribe.FailedPrecondition, "channel %s: PostgreSQL wal_level is %q; set wal_level = logical (postgresql.conf) and restart the server", s.spec.Name, got)
	}
	for _, t := range s.spec.Tables {
		sch, tb := splitTable(t)
		rows, err := query(ctx, conn, fmt.Sprintf(
			"SELECT c.relreplident FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = %s AND c.relname = %s AND c.relkind IN ('r','p')",
			quoteLiteral(sch), quoteLiteral(tb)))
		if err != nil {
			return errf(subscribe.Unavailable, "channel %s: %v", s.spec.Name, err)
		}
		if len(rows) == 0 {
			return errf(subscribe.NotFound, "channel %s: table %s does not exist in PostgreSQL", s.spec.Name, t)
		}
		if rows[0][0] != "f" {
			return errf(subscribe.FailedPrecondition,
				"channel %s: table %s has REPLICA IDENTITY %s; before images need it FULL: run ALTER TABLE %s.%s REPLICA IDENTITY FULL",
				s.spec.Name, t, identityName(rows[0][0]), quoteIdent(sch), quoteIdent(tb))
		}
	}
	return nil
}

func identityName(c string) string {
	switch c {
	case "d":
		return "DEFAULT"
	case "n":
		return "NOTHING"
	case "i":
		return "USING INDEX"
	}
	return c
}

var nonIdent = regexp.MustCompile(`[^a-z0-9_]`)

// objectName is the default slot and publication name of a channel.
func objectName(channel string) string {
	return "setats_" + nonIdent.ReplaceAllString(strings.ToLower(channel), "_")
}

// Prepare creates the publication and the slot unless given, and returns the start LSN.
func (s *source) Prepare(ctx context.Context, start string) (subscribe.Prepared, error) {
	p := subscribe.Prepared{Slot: s.spec.Slot, Publication: s.spec.Publication}
	if p.Slot == "" {
		p.Slot = objectName(s.spec.Name)
	}
	if p.Publication == "" {
		p.Publication = objectName(s.spec.Name)
	}
	conn, err := s.connect(ctx, true)
	if err != nil {
		return p, err
	}
	defer conn.Close(context.Background())
	rows, err := query(ctx, conn, "SELECT 1 FROM pg_publication WHERE pubname = "+quoteLiteral(p.Publication))
	if err != nil {
		return p, errf(subscribe.Unavailable, "channel %s: %v", s.spec.Name, err)
	}
	if len(rows) == 0 {
		var tabs []string
		for _, t := range s.spec.Tables {
			sch, tb := splitTable(t)
			tabs = append(tabs, quoteIdent(sch)+"."+quoteIdent(tb))
		}
		if _, err := query(ctx, conn, fmt.Sprintf("CREATE PUBLICATION %s FOR TABLE %s", quoteIdent(p.Publication), strings.Join(tabs, ", "))); err != nil {
			return p, errf(subscribe.FailedPrecondition, "channel %s: create publication %s: %v", s.spec.Name, p.Publication, err)
		}
		p.CreatedPublication = true
	}
	rows, err = query(ctx, conn, "SELECT coalesce(confirmed_flush_lsn::text, '') FROM pg_replication_slots WHERE slot_name = "+quoteLiteral(p.Slot))
	if err != nil {
		return p, errf(subscribe.Unavailable, "channel %s: %v", s.spec.Name, err)
	}
	if len(rows) > 0 {
		p.Position = rows[0][0]
	} else {
		res, err := pglogrepl.CreateReplicationSlot(ctx, conn, p.Slot, "pgoutput", pglogrepl.CreateReplicationSlotOptions{SnapshotAction: "NOEXPORT_SNAPSHOT"})
		if err != nil {
			if p.CreatedPublication {
				_, _ = query(context.Background(), conn, "DROP PUBLICATION IF EXISTS "+quoteIdent(p.Publication))
			}
			return p, errf(subscribe.FailedPrecondition, "channel %s: create replication slot %s: %v", s.spec.Name, p.Slot, err)
		}
		p.CreatedSlot = true
		p.Position = res.ConsistentPoint
	}
	if start != "" {
		if _, err := pglogrepl.ParseLSN(start); err != nil {
			return p, errf(subscribe.InvalidArgument, "channel %s: start %q is not a PostgreSQL LSN (like 0/16B3748)", s.spec.Name, start)
		}
		p.Position = start
	}
	return p, nil
}

// Drop drops the slot and publication the gateway created.
func (s *source) Drop(ctx context.Context) error {
	conn, err := s.connect(ctx, true)
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	var errs []string
	if s.spec.CreatedSlot {
		// The slot may still be active for a moment after the capture stopped.
		for i := 0; ; i++ {
			_, err := query(ctx, conn, fmt.Sprintf("SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots WHERE slot_name = %s", quoteLiteral(s.spec.Slot)))
			if err == nil || i >= 20 {
				if err != nil {
					errs = append(errs, err.Error())
				}
				break
			}
			time.Sleep(250 * time.Millisecond)
		}
	}
	if s.spec.CreatedPublication {
		if _, err := query(ctx, conn, "DROP PUBLICATION IF EXISTS "+quoteIdent(s.spec.Publication)); err != nil {
			errs = append(errs, err.Error())
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("%s", strings.Join(errs, "; "))
	}
	return nil
}

// relation is a relation as pgoutput described it.
type relation struct {
	object string
	fields []subscribe.Field
	oids   []uint32
	sig    string
}

// Run streams from pos (an LSN) until ctx ends or the connection fails.
func (s *source) Run(ctx context.Context, pos string, sink subscribe.Sink) error {
	start, err := pglogrepl.ParseLSN(pos)
	if err != nil {
		return errf(subscribe.Internal, "channel %s: stored position %q is not an LSN", s.spec.Name, pos)
	}
	conn, err := s.connect(ctx, true)
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	err = pglogrepl.StartReplication(ctx, conn, s.spec.Slot, start, pglogrepl.StartReplicationOptions{
		PluginArgs: []string{"proto_version '1'", "publication_names " + quoteLiteral(s.spec.Publication)},
	})
	if err != nil {
		return errf(subscribe.Unavailable, "channel %s: start replication on slot %s: %v", s.spec.Name, s.spec.Slot, err)
	}
	sink.Connected()
	tables := map[string]bool{}
	for _, t := range s.spec.Tables {
		tables[t] = true
	}
	rels := map[uint32]*relation{}
	flushed := start // durable in the channel: confirmed to the server
	var txn []subscribe.Record
	inTxn := false
	var txMs int64
	var xid string
	nextStatus := time.Now().Add(statusInterval)
	sendStatus := func() error {
		nextStatus = time.Now().Add(statusInterval)
		return pglogrepl.SendStandbyStatusUpdate(ctx, conn, pglogrepl.StandbyStatusUpdate{WALWritePosition: flushed})
	}
	for {
		if time.Now().After(nextStatus) {
			if err := sendStatus(); err != nil {
				return errf(subscribe.Unavailable, "channel %s: standby status: %v", s.spec.Name, err)
			}
		}
		rctx, cancel := context.WithDeadline(ctx, nextStatus)
		msg, err := conn.ReceiveMessage(rctx)
		cancel()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			if pgconn.Timeout(err) {
				continue
			}
			return errf(subscribe.Unavailable, "channel %s: replication stream: %v", s.spec.Name, err)
		}
		var data []byte
		switch m := msg.(type) {
		case *pgproto3.CopyData:
			data = m.Data
		case *pgproto3.ErrorResponse:
			return errf(subscribe.Unavailable, "channel %s: PostgreSQL: %s (%s)", s.spec.Name, m.Message, m.Code)
		default:
			continue
		}
		if len(data) == 0 {
			continue
		}
		switch data[0] {
		case pglogrepl.PrimaryKeepaliveMessageByteID:
			ka, err := pglogrepl.ParsePrimaryKeepaliveMessage(data[1:])
			if err != nil {
				return errf(subscribe.Internal, "channel %s: %v", s.spec.Name, err)
			}
			if ka.ReplyRequested {
				nextStatus = time.Time{}
			}
		case pglogrepl.XLogDataByteID:
			xld, err := pglogrepl.ParseXLogData(data[1:])
			if err != nil {
				return errf(subscribe.Internal, "channel %s: %v", s.spec.Name, err)
			}
			lm, err := pglogrepl.Parse(xld.WALData)
			if err != nil {
				return errf(subscribe.Internal, "channel %s: decode pgoutput at %s: %v", s.spec.Name, xld.WALStart, err)
			}
			walPos := xld.WALStart.String()
			switch m := lm.(type) {
			case *pglogrepl.RelationMessage:
				r := newRelation(m)
				if old, ok := rels[m.RelationID]; ok && old.sig != r.sig && tables[r.object] {
					txn = append(txn, ddlRecord(r, walPos, txMs, xid, "columns changed: "+r.sig))
				}
				rels[m.RelationID] = r
			case *pglogrepl.BeginMessage:
				inTxn = true
				txMs = m.CommitTime.UnixMilli()
				xid = fmt.Sprint(m.Xid)
				txn = append(txn[:0], subscribe.Record{Op: subscribe.OpBegin, Position: walPos, TimestampMs: txMs, TxID: xid})
			case *pglogrepl.InsertMessage:
				if r := rels[m.RelationID]; r != nil && tables[r.object] {
					txn = append(txn, subscribe.Record{Op: subscribe.OpInsert, Object: r.object, Position: walPos, TimestampMs: txMs, TxID: xid,
						Fields: r.fields, After: r.image(m.Tuple, nil)})
				}
			case *pglogrepl.UpdateMessage:
				if r := rels[m.RelationID]; r != nil && tables[r.object] {
					before := r.image(m.OldTuple, nil)
					txn = append(txn, subscribe.Record{Op: subscribe.OpUpdate, Object: r.object, Position: walPos, TimestampMs: txMs, TxID: xid,
						Fields: r.fields, Before: before, After: r.image(m.NewTuple, before)})
				}
			case *pglogrepl.DeleteMessage:
				if r := rels[m.RelationID]; r != nil && tables[r.object] {
					txn = append(txn, subscribe.Record{Op: subscribe.OpDelete, Object: r.object, Position: walPos, TimestampMs: txMs, TxID: xid,
						Fields: r.fields, Before: r.image(m.OldTuple, nil)})
				}
			case *pglogrepl.TruncateMessage:
				for _, id := range m.RelationIDs {
					if r := rels[id]; r != nil && tables[r.object] {
						txn = append(txn, ddlRecord(r, walPos, txMs, xid, "TRUNCATE "+r.object))
					}
				}
			case *pglogrepl.CommitMessage:
				if !inTxn {
					continue
				}
				inTxn = false
				end := m.TransactionEndLSN
				if len(txn) > 1 { // PostgreSQL 15 skips empty transactions; others are kept out too
					txn = append(txn, subscribe.Record{Op: subscribe.OpCommit, Position: end.String(), TimestampMs: txMs, TxID: xid})
				} else {
					txn = txn[:0]
				}
				if err := sink.Commit(txn, end.String()); err != nil {
					return err
				}
				txn = txn[:0]
				// Acknowledge at once: the transaction is durable in the channel.
				flushed = end
				if err := sendStatus(); err != nil {
					return errf(subscribe.Unavailable, "channel %s: standby status: %v", s.spec.Name, err)
				}
			}
		}
	}
}

func ddlRecord(r *relation, pos string, ms int64, xid, what string) subscribe.Record {
	return subscribe.Record{Op: subscribe.OpDDL, Object: r.object, Position: pos, TimestampMs: ms, TxID: xid,
		Fields: []subscribe.Field{{Name: "ddl", Type: "STRING"}}, After: [][]byte{[]byte(what)}}
}

func newRelation(m *pglogrepl.RelationMessage) *relation {
	r := &relation{object: m.Namespace + "." + m.RelationName}
	var sig []string
	for _, c := range m.Columns {
		t := fieldType(c.DataType, c.TypeModifier)
		r.fields = append(r.fields, subscribe.Field{Name: c.Name, Type: t})
		r.oids = append(r.oids, c.DataType)
		sig = append(sig, c.Name+" "+t)
	}
	r.sig = strings.Join(sig, ", ")
	return r
}

// PostgreSQL type OIDs (pg_type.dat).
const (
	oidBool        = 16
	oidBytea       = 17
	oidInt8        = 20
	oidInt2        = 21
	oidInt4        = 23
	oidFloat4      = 700
	oidFloat8      = 701
	oidNumeric     = 1700
	oidDate        = 1082
	oidTime        = 1083
	oidTimestamp   = 1114
	oidTimestampTZ = 1184
)

// fieldType maps a PostgreSQL type to the record field type (package doc table).
func fieldType(oid uint32, typmod int32) string {
	prec := func() int32 {
		if typmod < 0 || typmod > 6 {
			return 6
		}
		return typmod
	}
	switch oid {
	case oidBool:
		return "BOOLEAN"
	case oidBytea:
		return "BYTES"
	case oidInt2:
		return "SMALLINT"
	case oidInt4:
		return "INT"
	case oidInt8:
		return "BIGINT"
	case oidFloat4:
		return "FLOAT"
	case oidFloat8:
		return "DOUBLE"
	case oidNumeric:
		if typmod < 4 {
			return "DECIMAL(38,10)"
		}
		p, sc := ((typmod-4)>>16)&0xffff, (typmod-4)&0xffff
		return fmt.Sprintf("DECIMAL(%d,%d)", min(p, 38), sc)
	case oidDate:
		return "DATE"
	case oidTime:
		return fmt.Sprintf("TIME(%d)", prec())
	case oidTimestamp:
		return fmt.Sprintf("TIMESTAMP(%d)", prec())
	case oidTimestampTZ:
		return fmt.Sprintf("TIMESTAMP_LTZ(%d)", prec())
	}
	return "STRING"
}

// image converts a pgoutput tuple (text format) to record values. An unchanged TOAST value
// ('u') takes the value of the same column in prev (the before image).
func (r *relation) image(t *pglogrepl.TupleData, prev [][]byte) [][]byte {
	if t == nil {
		return nil
	}
	img := make([][]byte, len(r.fields))
	for i, c := range t.Columns {
		if i >= len(img) {
			break
		}
		switch c.DataType {
		case pglogrepl.TupleDataTypeNull:
		case pglogrepl.TupleDataTypeToast:
			if i < len(prev) {
				img[i] = prev[i]
			}
		default:
			img[i] = value(r.oids[i], c.Data)
		}
	}
	return img
}

// value normalises a text-format value (package doc table).
func value(oid uint32, b []byte) []byte {
	switch oid {
	case oidBool:
		if len(b) == 1 && b[0] == 't' {
			return []byte("true")
		}
		return []byte("false")
	case oidBytea:
		if s, ok := strings.CutPrefix(string(b), `\x`); ok {
			if raw, err := hex.DecodeString(s); err == nil {
				return raw
			}
		}
	}
	return append([]byte{}, b...)
}

// Kind is the source kind this package serves, the scheme of its URLs.
const Kind = "postgres"
