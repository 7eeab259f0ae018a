package gateway

import (
	"errors"
	"fmt"
	"io"
	"sort"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/setats/setats/catalog"
	"github.com/setats/setats/gateway/buckethash"
	"github.com/setats/setats/gateway/ipcguard"
	"github.com/setats/setats/gateway/partname"
	"github.com/setats/setats/gateway/row"
	"github.com/setats/setats/gateway/rowcodec"
	"github.com/setats/setats/gateway/store"
	"github.com/setats/setats/internal/culprit"
	"github.com/setats/setats/merge"
	"github.com/setats/setats/proto/setatspb"
)

// MaxLookupKeys bounds the keys of one lookup request batch (DoExchange "lookup").
const MaxLookupKeys = 4096

// MaxLookupRows bounds the rows of one answer batch of a prefix lookup (LookupCommand.prefix):
// a request whose keys match more is ResourceExhausted, so one answer's memory stays bounded.
const MaxLookupRows = 1 << 16

// errLookupRows: a prefix lookup request matched more than MaxLookupRows rows.
var errLookupRows = errors.New("lookup rows cap")

// DoExchange serves point reads by primary key (SPEC section 13, proto LookupCommand): the first
// message's descriptor is a CMD holding a LookupCommand, and its schema the table's primary-key
// columns (by name, table types). Each record batch the client sends (at most MaxLookupKeys rows;
// every message passes gateway/ipcguard first) is one request: its keys are grouped by
// (partition, bucket), each bucket is read from one store.SnapshotView (its durable rows at one
// offset; the same mechanism as snapshot reads), and the gateway answers one record batch of
// row.LookupSchema: `_index` (the key's row in the request), then the requested columns, one row
// per key present, in request order. A key that is absent has no row. The stream ends when the
// client closes its side.
// Errors: InvalidArgument (not a LookupCommand, a column of the key schema that is not a
// primary-key column, a missing one, a null key, too many keys, unknown columns), NotFound
// (table), PermissionDenied / Unauthenticated (read privilege), ResourceExhausted (views).
func (f *flightService) DoExchange(stream flight.FlightService_DoExchangeServer) error {
	s := f.s
	in := &exchangePrelude{r: stream}
	rdr, err := flight.NewRecordReader(ipcguard.NewReader(in, s.ipcLimits()), ipc.WithAllocator(s.mem))
	if err != nil {
		return ipcStatus(err, "DoExchange: read the Arrow IPC schema message")
	}
	defer rdr.Release()
	d := rdr.LatestFlightDescriptor()
	if in.desc != nil {
		d = in.desc
	}
	if d == nil || d.GetType() != flight.DescriptorCMD {
		return status.Error(codes.InvalidArgument, "DoExchange: the first message must carry a CMD descriptor holding a LookupCommand")
	}
	cmd := &setatspb.LookupCommand{}
	if _, err := decodeMsg(d.GetCmd(), cmd, "LookupCommand"); err != nil {
		return err
	}
	cat, err := s.catalogFor(cmd.GetCatalog())
	if err != nil {
		return err
	}
	ctx := stream.Context()
	db := dbName(cmd.GetDatabase())
	if err := s.authorize(ctx, "DoExchange lookup", privRead, db, cmd.GetTable()); err != nil {
		return err
	}
	ot, err := s.openTable(cat, db, cmd.GetTable())
	if err != nil {
		return err
	}
	tbl := ot.tbl
	cols, err := snapshotColumns(tbl, cmd.GetColumns())
	if err != nil {
		return err
	}
	isKey := map[string]bool{}
	for _, c := range tbl.PrimaryKey {
		isKey[tbl.Columns[c].Name] = true
	}
	for _, fld := range rdr.Schema().Fields() {
		if !isKey[fld.Name] {
			return status.Errorf(codes.InvalidArgument, "table %s: lookup key column %s is not a primary-key column", ot.label, culprit.Quote(fld.Name))
		}
	}
	// keyTbl decodes and encodes the request keys: the table itself, or for a prefix lookup the
	// table with its primary key cut to the k columns sent.
	keyTbl, prefix := tbl, cmd.GetPrefix()
	if prefix {
		if keyTbl, err = prefixKeyTable(tbl, rdr.Schema().Fields()); err != nil {
			return status.Errorf(codes.InvalidArgument, "table %s: prefix lookup: %v", ot.label, err)
		}
		prefix = len(keyTbl.PrimaryKey) < len(tbl.PrimaryKey)
	}
	w := flight.NewRecordWriter(stream, ipc.WithSchema(row.LookupSchema(tbl, cols)), ipc.WithAllocator(s.mem))
	defer w.Close()
	bld := row.NewLookupBuilder(s.mem, tbl, cols)
	defer bld.Release()
	authChanged := s.auth.Changed()

	type hit struct {
		i int32
		r merge.Row
	}
	var hits []hit
	byBucket := map[store.BucketID][]int{}
	var keys [][]byte
	for req := 0; rdr.Next(); req++ {
		select {
		case <-authChanged:
			if err := s.authorize(ctx, "DoExchange lookup", privRead, db, cmd.GetTable()); err != nil {
				return err
			}
			authChanged = s.auth.Changed()
		default:
		}
		rec := rdr.RecordBatch()
		if rec.NumRows() > MaxLookupKeys {
			return status.Errorf(codes.InvalidArgument, "table %s: lookup request %d has %d keys, at most %d", ot.label, req, rec.NumRows(), MaxLookupKeys)
		}
		b, err := row.Decode(keyTbl, rec)
		if err != nil {
			return statusOr(err, codes.InvalidArgument, "lookup request %d", req)
		}
		clear(byBucket)
		for i, r := range b.Rows {
			id := store.BucketID{Partition: partname.Of(tbl, r), Bucket: buckethash.Bucket(tbl, r)}
			byBucket[id] = append(byBucket[id], i)
		}
		hits = hits[:0]
		for id, idx := range byBucket {
			keys = keys[:0]
			for _, i := range idx {
				keys = append(keys, rowcodec.EncodeKey(keyTbl, b.Rows[i]))
			}
			err := ot.use(s, func(st *storeTable) error {
				v, err := st.OpenSnapshot(ctx, id)
				if err != nil {
					return err
				}
				defer v.Release()
				add := func(k int, r merge.Row) error {
					hits = append(hits, hit{int32(idx[k]), r})
					return nil
				}
				if prefix {
					if err := v.GetPrefix(keys, MaxLookupRows-len(hits), add); errors.Is(err, store.ErrResourceExhausted) {
						return errLookupRows
					} else if err != nil {
						return err
					}
					return nil
				}
				return v.Get(keys, add)
			})
			if errors.Is(err, errLookupRows) {
				// The cap is per request, over all its buckets: name it and the request, not
				// what was left of it in this bucket.
				return status.Errorf(codes.ResourceExhausted, "table %s: lookup request %d: its %d keys match more than %d rows, the most one answer holds; send fewer keys per request",
					ot.label, req, rec.NumRows(), MaxLookupRows)
			}
			if err != nil {
				return wrapStatus(err, "%s: lookup", bucketName(ot.label, id))
			}
		}
		sort.SliceStable(hits, func(a, b int) bool { return hits[a].i < hits[b].i })
		for _, h := range hits {
			if err := bld.Append(h.i, h.r); err != nil {
				return err
			}
		}
		out := bld.NewRecordBatch()
		err = w.Write(out)
		out.Release()
		if err != nil {
			return err
		}
	}
	if err := rdr.Err(); err != nil && !errors.Is(err, io.EOF) {
		return ipcStatus(err, "DoExchange lookup: read a key batch")
	}
	return nil
}

// prefixKeyTable returns tbl with its primary key cut to the key columns of a prefix lookup:
// they must be the first k primary-key columns (any order) and include every partition-key and
// bucket-key column, so that each key names one bucket and its encoding is a prefix of the keys
// it matches. The copy shares everything else with tbl.
func prefixKeyTable(tbl *catalog.Table, fields []arrow.Field) (*catalog.Table, error) {
	sent := map[int]bool{}
	for _, f := range fields {
		sent[tbl.ColumnIndex(f.Name)] = true
	}
	k := len(sent)
	if k == 0 {
		return nil, errors.New("no key column")
	}
	names := func(cols []int) []string {
		var out []string
		for _, c := range cols {
			out = append(out, tbl.Columns[c].Name)
		}
		return out
	}
	for _, c := range tbl.PrimaryKey[:min(k, len(tbl.PrimaryKey))] {
		if !sent[c] {
			return nil, fmt.Errorf("the key columns %v are not the first %d primary-key columns of %v", culprit.Quote(fmt.Sprint(keyFieldNames(fields))), k, names(tbl.PrimaryKey))
		}
	}
	for _, need := range [][]int{tbl.PartitionKeys, tbl.BucketKey} {
		for _, c := range need {
			if !sent[c] {
				return nil, fmt.Errorf("the key columns must include the partition keys %v and the bucket key %v; %q is missing", names(tbl.PartitionKeys), names(tbl.BucketKey), tbl.Columns[c].Name)
			}
		}
	}
	cut := *tbl
	cut.PrimaryKey = tbl.PrimaryKey[:k:k]
	return &cut, nil
}

func keyFieldNames(fields []arrow.Field) []string {
	out := make([]string, len(fields))
	for i, f := range fields {
		out[i] = f.Name
	}
	return out
}

// exchangePrelude skips the descriptor-only message some clients send first on DoExchange
// (Arrow Java's doExchange sends the descriptor before the schema) and keeps its descriptor;
// every other message goes on to the IPC guard unchanged.
type exchangePrelude struct {
	r    flight.DataStreamReader
	desc *flight.FlightDescriptor
	seen bool
}

func (p *exchangePrelude) Recv() (*flight.FlightData, error) {
	m, err := p.r.Recv()
	if err != nil || p.seen {
		return m, err
	}
	p.seen = true
	if len(m.GetDataHeader()) == 0 && len(m.GetDataBody()) == 0 && m.GetFlightDescriptor() != nil {
		p.desc = m.GetFlightDescriptor()
		return p.r.Recv()
	}
	return m, nil
}
