package gateway

import (
	"errors"
	"io"
	"sort"

	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

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
		b, err := row.Decode(tbl, rec)
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
				keys = append(keys, rowcodec.EncodeKey(tbl, b.Rows[i]))
			}
			err := ot.use(s, func(st *storeTable) error {
				v, err := st.OpenSnapshot(ctx, id)
				if err != nil {
					return err
				}
				defer v.Release()
				return v.Get(keys, func(k int, r merge.Row) error {
					hits = append(hits, hit{int32(idx[k]), r})
					return nil
				})
			})
			if err != nil {
				return wrapStatus(err, "%s: lookup", bucketName(ot.label, id))
			}
		}
		sort.Slice(hits, func(a, b int) bool { return hits[a].i < hits[b].i })
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
