// Package mysql captures MySQL and MariaDB changes into subscription channels from the ROW
// binlog, read with the vitess.io/vitess go/mysql replication client (SPEC section 11). The
// gateway connects as a replica (COM_BINLOG_DUMP from a GTID position); column names and types
// come from information_schema and are refreshed after DDL.
//
// Positions are vitess-encoded GTID positions ("MariaDB/0-1-27", "MySQL56/<uuid>:1-5"); a
// channel's durable position is the GTID set after the last transaction it holds, so a restarted
// capture asks the server for exactly the transactions after it.
//
// Types (record field type, value text):
//
//	MySQL / MariaDB                    field type        value
//	tinyint, smallint, mediumint, int  TINYINT/SMALLINT/INT (unsigned: the next wider type)  decimal
//	bigint                             BIGINT (unsigned: DECIMAL(20,0))  decimal
//	float, double                      FLOAT / DOUBLE    decimal text
//	decimal(p,s)                       DECIMAL(p,s)      plain decimal
//	char, varchar, text, json          STRING            the text
//	enum, set                          STRING            the member index / bit set as decimal (binlog form)
//	binary, varbinary, blob, bit       BYTES             the raw bytes
//	date                               DATE              yyyy-MM-dd
//	time(p)                            TIME(p)           HH:mm:ss[.ffffff]
//	datetime(p)                        TIMESTAMP(p)      yyyy-MM-dd HH:mm:ss[.ffffff]
//	timestamp(p)                       TIMESTAMP_LTZ(p)  yyyy-MM-dd HH:mm:ss[.ffffff] in UTC
//	year                               INT               decimal
//
// Before images need binlog_format=ROW and binlog_row_image=FULL (and log_bin on); channel
// creation refuses a server without them, naming the setting. DDL statements of the captured
// databases become DDL records.
package mysql

import (
	"context"
	"fmt"
	"hash/fnv"
	"net"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	vtmysql "vitess.io/vitess/go/mysql"
	"vitess.io/vitess/go/mysql/replication"
	querypb "vitess.io/vitess/go/vt/proto/query"

	"github.com/setats/setats/gateway/subscribe"
)

// New is the subscribe.SourceFactory of mysql:// URLs.
func New(cfg subscribe.SourceConfig) (subscribe.Source, error) {
	return &source{spec: cfg.Spec}, nil
}

type source struct {
	spec subscribe.Spec
}

func errf(k subscribe.Kind, format string, args ...any) error {
	return subscribe.Errorf(k, format, args...)
}

func (s *source) params() (*vtmysql.ConnParams, error) {
	u, err := url.Parse(s.spec.SourceURL)
	if err != nil {
		return nil, errf(subscribe.InvalidArgument, "channel %s: source URL: %v", s.spec.Name, err)
	}
	host, portStr, err := net.SplitHostPort(u.Host)
	if err != nil {
		host, portStr = u.Host, "3306"
	}
	port, err := strconv.Atoi(portStr)
	if err != nil {
		return nil, errf(subscribe.InvalidArgument, "channel %s: source URL port %q", s.spec.Name, portStr)
	}
	p := &vtmysql.ConnParams{Host: host, Port: port, DbName: strings.TrimPrefix(u.Path, "/")}
	if u.User != nil {
		p.Uname = u.User.Username()
		p.Pass, _ = u.User.Password()
	}
	return p, nil
}

func (s *source) connect(ctx context.Context) (*vtmysql.Conn, error) {
	p, err := s.params()
	if err != nil {
		return nil, err
	}
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	c, err := vtmysql.Connect(cctx, p)
	if err != nil {
		return nil, errf(subscribe.Unavailable, "channel %s: connect to MySQL %s: %v", s.spec.Name, subscribe.RedactURL(s.spec.SourceURL), err)
	}
	return c, nil
}

func queryStrings(c *vtmysql.Conn, sql string) ([][]string, error) {
	res, err := c.ExecuteFetch(sql, 100000, false)
	if err != nil {
		return nil, err
	}
	out := make([][]string, len(res.Rows))
	for i, r := range res.Rows {
		for _, v := range r {
			out[i] = append(out[i], v.ToString())
		}
	}
	return out, nil
}

func quote(s string) string {
	return "'" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(s) + "'"
}

// Check verifies log_bin, binlog_format=ROW, binlog_row_image=FULL and that the tables exist.
func (s *source) Check(ctx context.Context) error {
	c, err := s.connect(ctx)
	if err != nil {
		return err
	}
	defer c.Close()
	rows, err := queryStrings(c, "SELECT @@log_bin, @@binlog_format, @@binlog_row_image")
	if err != nil {
		return errf(subscribe.Unavailable, "channel %s: %v", s.spec.Name, err)
	}
	v := rows[0]
	if v[0] != "1" {
		return errf(subscribe.FailedPrecondition, "channel %s: the MySQL binlog is off; set log_bin (e.g. log_bin = mysql-bin in my.cnf) and restart the server", s.spec.Name)
	}
	if !strings.EqualFold(v[1], "ROW") {
		return errf(subscribe.FailedPrecondition, "channel %s: binlog_format is %s; set binlog_format = ROW", s.spec.Name, v[1])
	}
	if !strings.EqualFold(v[2], "FULL") {
		return errf(subscribe.FailedPrecondition, "channel %s: binlog_row_image is %s; before images need binlog_row_image = FULL", s.spec.Name, v[2])
	}
	for _, t := range s.spec.Tables {
		db, tb, _ := strings.Cut(t, ".")
		rows, err := queryStrings(c, fmt.Sprintf("SELECT 1 FROM information_schema.TABLES WHERE TABLE_SCHEMA = %s AND TABLE_NAME = %s", quote(db), quote(tb)))
		if err != nil {
			return errf(subscribe.Unavailable, "channel %s: %v", s.spec.Name, err)
		}
		if len(rows) == 0 {
			return errf(subscribe.NotFound, "channel %s: table %s does not exist in MySQL", s.spec.Name, t)
		}
	}
	return nil
}

// Prepare returns the server's current GTID position (or start, when given).
func (s *source) Prepare(ctx context.Context, start string) (subscribe.Prepared, error) {
	if start != "" {
		if _, err := replication.DecodePosition(start); err != nil {
			return subscribe.Prepared{}, errf(subscribe.InvalidArgument, "channel %s: start %q is not a GTID position (like MariaDB/0-1-27): %v", s.spec.Name, start, err)
		}
		return subscribe.Prepared{Position: start}, nil
	}
	c, err := s.connect(ctx)
	if err != nil {
		return subscribe.Prepared{}, err
	}
	defer c.Close()
	pos, err := c.PrimaryPosition()
	if err != nil {
		return subscribe.Prepared{}, errf(subscribe.FailedPrecondition, "channel %s: read the server's GTID position: %v", s.spec.Name, err)
	}
	return subscribe.Prepared{Position: replication.EncodePosition(pos)}, nil
}

// Drop has nothing to remove: a binlog reader leaves nothing on the server.
func (s *source) Drop(context.Context) error { return nil }

// table is a captured table's columns.
type table struct {
	object string
	fields []subscribe.Field
	vt     []*querypb.Field
	// latin1 marks columns whose character set is latin1 (MySQL's latin1 is cp1252): their
	// values are converted to UTF-8.
	latin1 []bool
}

// prefix returns the table limited to its first n columns: a binlog event written before
// columns were added at the end (replayed after a restart) has fewer columns than
// information_schema now reports.
func (t *table) prefix(n int) *table {
	return &table{object: t.object, fields: t.fields[:n], vt: t.vt[:n], latin1: t.latin1[:n]}
}

// columns reads the columns of db.tb from information_schema.
func columns(c *vtmysql.Conn, db, tb string) (*table, error) {
	rows, err := queryStrings(c, fmt.Sprintf(
		"SELECT COLUMN_NAME, DATA_TYPE, COLUMN_TYPE, COALESCE(NUMERIC_PRECISION, 0), COALESCE(NUMERIC_SCALE, 0), COALESCE(DATETIME_PRECISION, 0), COALESCE(CHARACTER_SET_NAME, '') "+
			"FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = %s AND TABLE_NAME = %s ORDER BY ORDINAL_POSITION", quote(db), quote(tb)))
	if err != nil {
		return nil, err
	}
	t := &table{object: db + "." + tb}
	for _, r := range rows {
		ft, vt := fieldType(r[1], r[2], atoi(r[3]), atoi(r[4]), atoi(r[5]))
		t.fields = append(t.fields, subscribe.Field{Name: r[0], Type: ft})
		t.vt = append(t.vt, &querypb.Field{Name: r[0], Type: vt, ColumnType: r[2]})
		t.latin1 = append(t.latin1, r[6] == "latin1")
	}
	return t, nil
}

func atoi(s string) int { n, _ := strconv.Atoi(s); return n }

// fieldType maps a column to its record field type (package doc table) and the vitess type that
// tells CellValue its signedness and binary-ness.
func fieldType(dataType, columnType string, prec, scale, dtPrec int) (string, querypb.Type) {
	unsigned := strings.Contains(columnType, "unsigned")
	switch dataType {
	case "tinyint":
		if unsigned {
			return "SMALLINT", querypb.Type_UINT8
		}
		return "TINYINT", querypb.Type_INT8
	case "smallint":
		if unsigned {
			return "INT", querypb.Type_UINT16
		}
		return "SMALLINT", querypb.Type_INT16
	case "mediumint":
		if unsigned {
			return "INT", querypb.Type_UINT24
		}
		return "INT", querypb.Type_INT24
	case "int", "integer":
		if unsigned {
			return "BIGINT", querypb.Type_UINT32
		}
		return "INT", querypb.Type_INT32
	case "bigint":
		if unsigned {
			return "DECIMAL(20,0)", querypb.Type_UINT64
		}
		return "BIGINT", querypb.Type_INT64
	case "float":
		return "FLOAT", querypb.Type_FLOAT32
	case "double", "real":
		return "DOUBLE", querypb.Type_FLOAT64
	case "decimal", "numeric":
		return fmt.Sprintf("DECIMAL(%d,%d)", min(prec, 38), scale), querypb.Type_DECIMAL
	case "date":
		return "DATE", querypb.Type_DATE
	case "time":
		return fmt.Sprintf("TIME(%d)", dtPrec), querypb.Type_TIME
	case "datetime":
		return fmt.Sprintf("TIMESTAMP(%d)", dtPrec), querypb.Type_DATETIME
	case "timestamp":
		return fmt.Sprintf("TIMESTAMP_LTZ(%d)", dtPrec), querypb.Type_TIMESTAMP
	case "year":
		return "INT", querypb.Type_YEAR
	case "binary":
		return "BYTES", querypb.Type_BINARY
	case "varbinary":
		return "BYTES", querypb.Type_VARBINARY
	case "tinyblob", "blob", "mediumblob", "longblob":
		return "BYTES", querypb.Type_BLOB
	case "bit":
		return "BYTES", querypb.Type_BIT
	case "json":
		return "STRING", querypb.Type_JSON
	case "enum":
		return "STRING", querypb.Type_ENUM
	case "set":
		return "STRING", querypb.Type_SET
	case "text", "tinytext", "mediumtext", "longtext":
		return "STRING", querypb.Type_TEXT
	}
	return "STRING", querypb.Type_VARCHAR
}

// serverID is this channel's replica server id (stable, away from small hand-picked ids).
func serverID(channel string) uint32 {
	h := fnv.New32a()
	_, _ = h.Write([]byte(channel))
	return 1<<30 | h.Sum32()>>2
}

var ddlTable = regexp.MustCompile("(?i)^\\s*(?:ALTER|CREATE|DROP|RENAME|TRUNCATE)\\s+(?:TEMPORARY\\s+)?TABLE\\s+(?:IF\\s+(?:NOT\\s+)?EXISTS\\s+)?`?([A-Za-z0-9_$]+)`?(?:\\.`?([A-Za-z0-9_$]+)`?)?")

// Run streams the binlog from pos until ctx ends or the connection fails.
func (s *source) Run(ctx context.Context, pos string, sink subscribe.Sink) error {
	start, err := replication.DecodePosition(pos)
	if err != nil {
		return errf(subscribe.Internal, "channel %s: stored position %q: %v", s.spec.Name, pos, err)
	}
	meta, err := s.connect(ctx) // information_schema queries
	if err != nil {
		return err
	}
	defer meta.Close()
	c, err := s.connect(ctx)
	if err != nil {
		return err
	}
	var closeOnce sync.Once
	closeConn := func() { closeOnce.Do(c.Close) }
	defer closeConn()
	var lastEvent atomic.Int64
	lastEvent.Store(time.Now().UnixNano())
	stop := make(chan struct{})
	defer close(stop)
	go func() { // ends a blocked read on cancel or when the server went silent (heartbeats stopped)
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				closeConn()
				return
			case <-stop:
				return
			case <-t.C:
				if time.Since(time.Unix(0, lastEvent.Load())) > 15*time.Second {
					closeConn()
					return
				}
			}
		}
	}()
	for _, q := range []string{
		"SET @master_binlog_checksum = @@global.binlog_checksum",
		"SET @master_heartbeat_period = 1000000000",
	} {
		if _, err := c.ExecuteFetch(q, 0, false); err != nil {
			return errf(subscribe.Unavailable, "channel %s: %s: %v", s.spec.Name, q, err)
		}
	}
	if err := c.SendBinlogDumpGTIDCommand(serverID(s.spec.Name), "", 4, start, 0); err != nil {
		return errf(subscribe.Unavailable, "channel %s: binlog dump from %s: %v", s.spec.Name, pos, err)
	}
	sink.Connected()
	want := map[string]bool{}
	for _, t := range s.spec.Tables {
		want[t] = true
	}
	tables := map[string]*table{}
	tableMaps := map[uint64]*vtmysql.TableMap{}
	cur := start
	var format vtmysql.BinlogFormat
	var txn []subscribe.Record
	inTxn := false
	var gtid string
	lookup := func(db, tb string) (*table, error) {
		k := db + "." + tb
		if t := tables[k]; t != nil {
			return t, nil
		}
		t, err := columns(meta, db, tb)
		if err != nil {
			return nil, errf(subscribe.Unavailable, "channel %s: columns of %s: %v", s.spec.Name, k, err)
		}
		tables[k] = t
		return t, nil
	}
	commit := func(ms int64) error {
		inTxn = false
		p := replication.EncodePosition(cur)
		if len(txn) > 1 {
			txn = append(txn, subscribe.Record{Op: subscribe.OpCommit, Position: p, TimestampMs: ms, TxID: gtid})
		} else {
			txn = txn[:0]
		}
		err := sink.Commit(txn, p)
		txn = txn[:0]
		return err
	}
	for {
		ev, err := c.ReadBinlogEvent()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return errf(subscribe.Unavailable, "channel %s: binlog stream: %v", s.spec.Name, err)
		}
		lastEvent.Store(time.Now().UnixNano())
		if !ev.IsValid() {
			return errf(subscribe.Internal, "channel %s: invalid binlog event", s.spec.Name)
		}
		if ev.IsFormatDescription() {
			if format, err = ev.Format(); err != nil {
				return errf(subscribe.Internal, "channel %s: format description: %v", s.spec.Name, err)
			}
			continue
		}
		if format.IsZero() {
			continue
		}
		if ev, _, err = ev.StripChecksum(format); err != nil {
			return errf(subscribe.Internal, "channel %s: %v", s.spec.Name, err)
		}
		ms := int64(ev.Timestamp()) * 1000
		switch {
		case ev.IsGTID():
			g, hasBegin, _, _, err := ev.GTID(format)
			if err != nil {
				return errf(subscribe.Internal, "channel %s: GTID event: %v", s.spec.Name, err)
			}
			cur = replication.AppendGTID(cur, g)
			gtid = g.String()
			if hasBegin {
				inTxn = true
				txn = append(txn[:0], subscribe.Record{Op: subscribe.OpBegin, Position: replication.EncodePosition(cur), TimestampMs: ms, TxID: gtid})
			}
		case ev.IsQuery():
			q, err := ev.Query(format)
			if err != nil {
				return errf(subscribe.Internal, "channel %s: query event: %v", s.spec.Name, err)
			}
			sql := strings.TrimSpace(q.SQL)
			switch strings.ToUpper(sql) {
			case "BEGIN":
				if !inTxn {
					inTxn = true
					txn = append(txn[:0], subscribe.Record{Op: subscribe.OpBegin, Position: replication.EncodePosition(cur), TimestampMs: ms, TxID: gtid})
				}
				continue
			case "COMMIT":
				if err := commit(ms); err != nil {
					return err
				}
				continue
			}
			// Anything else is DDL (its own transaction) or, inside a transaction, a statement
			// such as SAVEPOINT that changes no row.
			m := ddlTable.FindStringSubmatch(sql)
			if m == nil && inTxn {
				continue
			}
			db, tb := q.Database, ""
			if m != nil {
				if m[2] != "" {
					db, tb = m[1], m[2]
				} else {
					tb = m[1]
				}
				for k := range tables {
					if strings.HasPrefix(k, db+".") {
						delete(tables, k)
					}
				}
			}
			obj := db + "." + tb
			if m != nil && want[obj] {
				p := replication.EncodePosition(cur)
				txn = append(txn[:0], subscribe.Record{Op: subscribe.OpBegin, Position: p, TimestampMs: ms, TxID: gtid},
					subscribe.Record{Op: subscribe.OpDDL, Object: obj, Position: p, TimestampMs: ms, TxID: gtid,
						Fields: []subscribe.Field{{Name: "ddl", Type: "STRING"}}, After: [][]byte{[]byte(truncate(sql, 1<<16))}})
			} else {
				txn = txn[:0]
			}
			if err := commit(ms); err != nil {
				return err
			}
		case ev.IsXID():
			if err := commit(ms); err != nil {
				return err
			}
		case ev.IsTableMap():
			tm, err := ev.TableMap(format)
			if err != nil {
				return errf(subscribe.Internal, "channel %s: table map: %v", s.spec.Name, err)
			}
			tableMaps[ev.TableID(format)] = tm
		case ev.IsWriteRows(), ev.IsUpdateRows(), ev.IsDeleteRows():
			tm := tableMaps[ev.TableID(format)]
			if tm == nil {
				return errf(subscribe.Internal, "channel %s: rows event without a table map", s.spec.Name)
			}
			obj := tm.Database + "." + tm.Name
			if !want[obj] {
				continue
			}
			t, err := lookup(tm.Database, tm.Name)
			if err != nil {
				return err
			}
			if len(t.fields) != len(tm.Types) { // schema changed since we read it
				delete(tables, obj)
				if t, err = lookup(tm.Database, tm.Name); err != nil {
					return err
				}
				if len(t.fields) > len(tm.Types) {
					// An event from before columns were added at the end (see table.prefix).
					t = t.prefix(len(tm.Types))
				} else if len(t.fields) != len(tm.Types) {
					return errf(subscribe.FailedPrecondition, "channel %s: table %s has %d columns in the binlog but %d in information_schema", s.spec.Name, obj, len(tm.Types), len(t.fields))
				}
			}
			rows, err := ev.Rows(format, tm)
			if err != nil {
				return errf(subscribe.Internal, "channel %s: rows of %s: %v", s.spec.Name, obj, err)
			}
			p := replication.EncodePosition(cur)
			for i := range rows.Rows {
				r := subscribe.Record{Object: obj, Position: p, TimestampMs: ms, TxID: gtid, Fields: t.fields}
				switch {
				case ev.IsWriteRows():
					r.Op = subscribe.OpInsert
					r.After, err = image(tm, t, rows.DataColumns, rows.Rows[i].NullColumns, rows.Rows[i].Data)
				case ev.IsUpdateRows():
					r.Op = subscribe.OpUpdate
					if r.Before, err = image(tm, t, rows.IdentifyColumns, rows.Rows[i].NullIdentifyColumns, rows.Rows[i].Identify); err == nil {
						r.After, err = image(tm, t, rows.DataColumns, rows.Rows[i].NullColumns, rows.Rows[i].Data)
					}
				default:
					r.Op = subscribe.OpDelete
					r.Before, err = image(tm, t, rows.IdentifyColumns, rows.Rows[i].NullIdentifyColumns, rows.Rows[i].Identify)
				}
				if err != nil {
					return errf(subscribe.Internal, "channel %s: row of %s: %v", s.spec.Name, obj, err)
				}
				txn = append(txn, r)
			}
		}
	}
}

// image decodes one row image: columns present per the bitmap, NULLs per nulls.
func image(tm *vtmysql.TableMap, t *table, present vtmysql.Bitmap, nulls vtmysql.Bitmap, data []byte) ([][]byte, error) {
	img := make([][]byte, len(t.fields))
	pos, vi := 0, 0
	for c := 0; c < present.Count(); c++ {
		if !present.Bit(c) {
			continue
		}
		if nulls.Bit(vi) {
			vi++
			continue
		}
		v, l, err := binlogCell(data, pos, tm.Types[c], tm.Metadata[c], t.vt[c], t.latin1[c])
		if err != nil {
			return nil, err
		}
		img[c] = v
		pos += l
		vi++
	}
	return img, nil
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n]
}
