package gateway

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strings"
	"sync"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/setats/setats/catalog"
	"github.com/setats/setats/gateway/partname"
	"github.com/setats/setats/gateway/row"
	"github.com/setats/setats/gateway/store"
	"github.com/setats/setats/internal/culprit"
	"github.com/setats/setats/proto/setatspb"
)

// Snapshot reads planned by GetFlightInfo (SPEC section 13, proto/README.md "Snapshot reads").
//
// GetFlightInfo with ReadCommand.snapshot (or the one-component PATH "db.table" that SQL engines'
// Flight table functions send) opens one store.SnapshotView per bucket of the selected partitions
// and hands out one endpoint per bucket whose ticket names its view (SnapshotRead.view_id). The
// views live in pinnedViews until a DoGet stream of the view reaches its end (released then), or
// until the store's lease (--snapshot-lease, renewed by every read) runs out with no reader: the
// retention pass releases it, and a later DoGet of its id is Aborted. A stream that breaks off
// leaves its view pinned, so the reader may resume with after_key on the same view while the
// lease runs.

// maxNamedCulprits is how many unknown names an InvalidArgument error lists.
const maxNamedCulprits = 8

// pinnedViews maps view ids to the snapshot views GetFlightInfo pinned. The zero value is ready.
type pinnedViews struct {
	mu sync.Mutex
	m  map[string]*pinnedView
}

// pinnedView is one pinned view and what its tickets must match.
type pinnedView struct {
	view    *store.SnapshotView
	tableID string
}

// add registers v and returns its new id.
func (p *pinnedViews) add(v *store.SnapshotView, tableID string) string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	id := hex.EncodeToString(b[:])
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.m == nil {
		p.m = map[string]*pinnedView{}
	}
	for k, pv := range p.m { // forget views released by their lease or a table close
		if pv.view.Released() {
			delete(p.m, k)
		}
	}
	p.m[id] = &pinnedView{view: v, tableID: tableID}
	return id
}

// get returns the live view of id, or nil.
func (p *pinnedViews) get(id string) *pinnedView {
	p.mu.Lock()
	defer p.mu.Unlock()
	pv := p.m[id]
	if pv != nil && pv.view.Released() {
		delete(p.m, id)
		return nil
	}
	return pv
}

// release releases the view of id and forgets it.
func (p *pinnedViews) release(id string) {
	p.mu.Lock()
	pv := p.m[id]
	delete(p.m, id)
	p.mu.Unlock()
	if pv != nil {
		pv.view.Release()
	}
}

// len returns how many views are pinned and not released.
func (p *pinnedViews) len() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for _, pv := range p.m {
		if !pv.view.Released() {
			n++
		}
	}
	return n
}

// snapshotColumns resolves SnapshotRead.columns to table column indexes (nil: every column).
// Errors: InvalidArgument naming the unknown or repeated columns (truncated).
func snapshotColumns(t *catalog.Table, names []string) ([]int, error) {
	if len(names) == 0 {
		return nil, nil
	}
	label := tableLabel(t.Database, t.Name)
	if len(names) > len(t.Columns) {
		return nil, status.Errorf(codes.InvalidArgument, "table %s: %d columns asked, the table has %d", label, len(names), len(t.Columns))
	}
	cols := make([]int, 0, len(names))
	seen := make(map[int]bool, len(names))
	var unknown, repeated []string
	for _, n := range names {
		c := t.ColumnIndex(n)
		switch {
		case c < 0:
			unknown = append(unknown, n)
		case seen[c]:
			repeated = append(repeated, n)
		default:
			seen[c] = true
			cols = append(cols, c)
		}
	}
	if len(unknown) > 0 {
		return nil, status.Errorf(codes.InvalidArgument, "table %s: unknown columns %s", label, nameList(unknown))
	}
	if len(repeated) > 0 {
		return nil, status.Errorf(codes.InvalidArgument, "table %s: columns asked twice %s", label, nameList(repeated))
	}
	return cols, nil
}

// snapshotPartitions checks SnapshotRead.partitions against the table's partitions (those that
// hold a bucket in st) and returns them as a set (nil: every partition). Errors: InvalidArgument
// naming the malformed or unknown names (truncated).
func snapshotPartitions(t *catalog.Table, st *store.Table, names []string) (map[string]bool, error) {
	if len(names) == 0 {
		return nil, nil
	}
	label := tableLabel(t.Database, t.Name)
	if len(t.PartitionKeys) == 0 {
		return nil, status.Errorf(codes.InvalidArgument, "table %s is not partitioned: partitions %s", label, nameList(names))
	}
	have := map[string]bool{}
	for _, b := range st.Buckets() {
		have[b.Partition] = true
	}
	want := make(map[string]bool, min(len(names), len(have)))
	var unknown []string
	for _, n := range names {
		if err := partname.Validate(t, n); err != nil {
			return nil, status.Errorf(codes.InvalidArgument, "table %s: partition %s: %s", label, culprit.Quote(n), culprit.Truncate(err.Error()))
		}
		if !have[n] {
			unknown = append(unknown, n)
			continue
		}
		want[n] = true
	}
	if len(unknown) > 0 {
		return nil, status.Errorf(codes.InvalidArgument, "table %s: unknown partitions %s", label, nameList(unknown))
	}
	return want, nil
}

// nameList quotes up to maxNamedCulprits names (each truncated) and counts the rest.
func nameList(names []string) string {
	q := make([]string, 0, min(len(names), maxNamedCulprits))
	for i, n := range names {
		if i == maxNamedCulprits {
			break
		}
		q = append(q, culprit.Quote(n))
	}
	s := strings.Join(q, ", ")
	if len(names) > maxNamedCulprits {
		s += fmt.Sprintf(" (and %d more)", len(names)-maxNamedCulprits)
	}
	return s
}

// snapshotSchema is the schema GetFlightInfo and GetSchema answer for a snapshot read: `_key`,
// then the projected columns, without the per-bucket metadata.
func snapshotSchema(t *catalog.Table, cols []int) *arrow.Schema {
	return arrow.NewSchema(row.ProjectedSnapshotSchema(t, cols, "", 0, 0).Fields(), nil)
}

// planSnapshot answers GetFlightInfo for a snapshot read: it pins one view per selected bucket
// (ordered by partition then bucket) and returns one endpoint per bucket. TotalRecords is -1 (a
// view's row count is not kept). Errors: InvalidArgument (after_key or view_id set, unknown
// columns or partitions), ResourceExhausted (too many views open; none is kept pinned).
func (s *Server) planSnapshot(ctx context.Context, d *flight.FlightDescriptor, req readRequest, ot *openTable) (*flight.FlightInfo, error) {
	cmd := req.cmd
	sr := cmd.GetSnapshot()
	if len(sr.GetAfterKey()) > 0 || sr.GetViewId() != "" {
		return nil, status.Errorf(codes.InvalidArgument, "table %s: a planned snapshot read starts at the first row of a new view: leave snapshot.after_key and snapshot.view_id empty", ot.label)
	}
	cols, err := snapshotColumns(ot.tbl, sr.GetColumns())
	if err != nil {
		return nil, err
	}
	info := &flight.FlightInfo{
		Schema:           flight.SerializeSchema(snapshotSchema(ot.tbl, cols), s.mem),
		FlightDescriptor: d,
		TotalRecords:     -1,
		TotalBytes:       -1,
	}
	var ids []string
	err = ot.use(s, func(st *storeTable) error {
		parts, err := snapshotPartitions(ot.tbl, st, sr.GetPartitions())
		if err != nil {
			return err
		}
		for _, b := range bucketsOf(ot.tbl, st) {
			if parts != nil && !parts[b.Partition] {
				continue
			}
			v, err := st.OpenSnapshot(ctx, b.BucketID)
			if err != nil {
				return wrapStatus(err, "%s: snapshot", bucketName(ot.label, b.BucketID))
			}
			id := s.views.add(v, ot.tbl.Info.GetTableId())
			ids = append(ids, id)
			tk := &setatspb.ChangelogTicket{
				Catalog:   cmd.GetCatalog(),
				Database:  ot.tbl.Database,
				Table:     ot.tbl.Name,
				Partition: b.Partition,
				Bucket:    b.Bucket,
				TableId:   ot.tbl.Info.GetTableId(),
				Snapshot:  &setatspb.SnapshotRead{Columns: sr.GetColumns(), Partitions: sr.GetPartitions(), ViewId: id},
			}
			payload, err := encodeMsg(req.enc, tk)
			if err != nil {
				return err
			}
			info.Endpoint = append(info.Endpoint, &flight.FlightEndpoint{Ticket: &flight.Ticket{Ticket: payload}})
		}
		return nil
	})
	if err != nil {
		for _, id := range ids {
			s.views.release(id)
		}
		return nil, err
	}
	return info, nil
}
