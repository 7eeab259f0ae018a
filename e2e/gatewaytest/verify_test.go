package gatewaytest

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow/flight"
	"google.golang.org/protobuf/proto"

	"github.com/setats/setats/proto/setatspb"
)

// bucketLog is one bucket's list-buckets entry and its changelog read from earliest.
type bucketLog struct {
	offsets *setatspb.BucketOffsets
	log     *Changelog
}

// tableRead is a table's whole changelog, bucket by bucket in list-buckets order.
type tableRead struct {
	buckets []*bucketLog
}

func (tr *tableRead) rowCount() int {
	n := 0
	for _, b := range tr.buckets {
		n += len(b.log.Rows)
	}
	return n
}

// readTable reads every bucket list-buckets names, from earliest, bounded.
func readTable(ctx context.Context, c *Client, db string, t *tdef) (*tableRead, error) {
	bs, err := c.ListBuckets(ctx, db, t.name)
	if err != nil {
		return nil, fmt.Errorf("list-buckets %s: %w", t.name, err)
	}
	tr := &tableRead{}
	for _, b := range bs {
		log, err := c.ReadChangelog(ctx, db, t.name, b.GetPartition(), b.GetBucket())
		if err != nil {
			return nil, fmt.Errorf("DoGet %s partition %q bucket %d: %w", t.name, b.GetPartition(), b.GetBucket(), err)
		}
		tr.buckets = append(tr.buckets, &bucketLog{offsets: b, log: log})
	}
	return tr, nil
}

// keyRows are the changelog rows of one key, with where they were found.
type keyRows struct {
	partition string
	bucket    int32
	rows      []ChangeRow
}

// problems collects check failures, keeping the first few of each kind.
type problems struct {
	list   []string
	counts map[string]int
}

func (p *problems) add(kind, format string, args ...any) {
	if p.counts == nil {
		p.counts = map[string]int{}
	}
	p.counts[kind]++
	if p.counts[kind] <= 5 {
		p.list = append(p.list, kind+": "+fmt.Sprintf(format, args...))
	} else if p.counts[kind] == 6 {
		p.list = append(p.list, kind+": (more left out)")
	}
}

func (p *problems) empty() bool { return len(p.list) == 0 }

func (p *problems) String() string { return strings.Join(p.list, "\n") }

// checkChangelog checks the contract rules that need no model: list-buckets entries ordered by
// partition then bucket and matching the rows read (start 0, end = row count, last commit time),
// schema metadata, offsets dense from 0, commit timestamps non-decreasing per bucket, every key in
// its own (partition, bucket) per the bucket hash, and the RowKind state machine (+I only for an
// absent key; -U equal to the stored row and immediately followed by +U of the same key; +U only
// right after its -U; -D equal to the stored row). It returns the fold of the changelog (key ->
// row) and every key's rows.
func checkChangelog(t *tdef, tr *tableRead, p *problems) (map[string][]any, map[string]*keyRows) {
	fold := map[string][]any{}
	perKey := map[string]*keyRows{}
	var wantCols []string
	for _, c := range t.cols {
		wantCols = append(wantCols, c.Name)
	}
	for i, b := range tr.buckets {
		bo, log := b.offsets, b.log
		where := fmt.Sprintf("%s partition %q bucket %d", t.name, bo.GetPartition(), bo.GetBucket())
		if i > 0 {
			prev := tr.buckets[i-1].offsets
			if prev.GetPartition() > bo.GetPartition() || (prev.GetPartition() == bo.GetPartition() && prev.GetBucket() >= bo.GetBucket()) {
				p.add("list-buckets order", "%s listed after partition %q bucket %d", where, prev.GetPartition(), prev.GetBucket())
			}
		}
		if bo.GetBucket() < 0 || bo.GetBucket() >= t.buckets {
			p.add("bucket range", "%s: bucket count %d", where, t.buckets)
		}
		n := int64(len(log.Rows))
		// A bucket of a dropped partition written again starts at its end offset at the drop.
		start := t.droppedEnd[fmt.Sprintf("%s/%d", bo.GetPartition(), bo.GetBucket())]
		if bo.GetStartOffset() != start || bo.GetEndOffset() != start+n {
			p.add("list-buckets offsets", "%s: start %d end %d, read %d rows from earliest (start %d)", where, bo.GetStartOffset(), bo.GetEndOffset(), n, start)
		}
		if n > 0 && bo.GetLastCommitMs() != log.Rows[n-1].CommitMs {
			p.add("list-buckets last_commit_ms", "%s: %d, newest row's commit time %d", where, bo.GetLastCommitMs(), log.Rows[n-1].CommitMs)
		}
		if n > 0 {
			if log.MetaPartition != bo.GetPartition() || log.MetaBucket != strconv.Itoa(int(bo.GetBucket())) {
				p.add("schema metadata", "%s: setats.partition=%q setats.bucket=%q", where, log.MetaPartition, log.MetaBucket)
			}
			if !slices.Equal(log.Columns, wantCols) {
				p.add("schema columns", "%s: %v, want %v", where, log.Columns, wantCols)
			}
		}
		for j, r := range log.Rows {
			if r.Offset != start+int64(j) {
				p.add("dense offsets", "%s: row %d has offset %d", where, j, r.Offset)
			}
			if j > 0 && r.CommitMs < log.Rows[j-1].CommitMs {
				p.add("commit timestamps", "%s: offset %d commit %d < offset %d commit %d", where, r.Offset, r.CommitMs, log.Rows[j-1].Offset, log.Rows[j-1].CommitMs)
			}
			if len(r.Values) != len(t.cols) {
				p.add("row width", "%s offset %d: %d values", where, r.Offset, len(r.Values))
				continue
			}
			key := t.keyOf(r.Values)
			part, bucket := t.location(r.Values)
			if part != bo.GetPartition() || bucket != bo.GetBucket() {
				p.add("row location", "%s offset %d: key %s belongs in partition %q bucket %d", where, r.Offset, key, part, bucket)
			}
			kr := perKey[key]
			if kr == nil {
				kr = &keyRows{partition: bo.GetPartition(), bucket: bo.GetBucket()}
				perKey[key] = kr
			} else if kr.partition != bo.GetPartition() || kr.bucket != bo.GetBucket() {
				p.add("key in two buckets", "key %s in partition %q bucket %d and in %s", key, kr.partition, kr.bucket, where)
			}
			kr.rows = append(kr.rows, r)
			stored, present := fold[key]
			switch r.Kind {
			case KindInsert:
				if present {
					p.add("state machine +I", "%s offset %d: +I%s for present key (stored %s)", where, r.Offset, FormatValues(r.Values), FormatValues(stored))
				}
				fold[key] = r.Values
			case KindUpdateBefore:
				if !present || !valuesEqual(stored, r.Values) {
					p.add("state machine -U", "%s offset %d: -U%s, stored %v", where, r.Offset, FormatValues(r.Values), fmtStored(stored, present))
				}
				if j+1 >= len(log.Rows) || log.Rows[j+1].Kind != KindUpdateAfter || t.keyOf(log.Rows[j+1].Values) != key {
					p.add("state machine -U/+U", "%s offset %d: -U%s not immediately followed by +U of its key", where, r.Offset, FormatValues(r.Values))
				}
			case KindUpdateAfter:
				if j == 0 || log.Rows[j-1].Kind != KindUpdateBefore || t.keyOf(log.Rows[j-1].Values) != key {
					p.add("state machine +U", "%s offset %d: +U%s not right after a -U of its key", where, r.Offset, FormatValues(r.Values))
				}
				if !present {
					p.add("state machine +U", "%s offset %d: +U%s for absent key", where, r.Offset, FormatValues(r.Values))
				} else if valuesEqual(stored, r.Values) {
					p.add("state machine +U", "%s offset %d: +U%s equal to the stored row (an update that changes nothing emits nothing)", where, r.Offset, FormatValues(r.Values))
				}
				fold[key] = r.Values
			case KindDelete:
				if !present || !valuesEqual(stored, r.Values) {
					p.add("state machine -D", "%s offset %d: -D%s, stored %v", where, r.Offset, FormatValues(r.Values), fmtStored(stored, present))
				}
				delete(fold, key)
			default:
				p.add("row kind", "%s offset %d: _row_kind %d", where, r.Offset, r.Kind)
			}
		}
	}
	return fold, perKey
}

func fmtStored(row []any, present bool) string {
	if !present {
		return "(none)"
	}
	return FormatValues(row)
}

// compareState checks a table state (key -> row) against the model's; what names the state
// ("changelog folds to", "store holds").
func compareState(name, what string, fold, want map[string][]any, p *problems) {
	for k, w := range want {
		g, ok := fold[k]
		if !ok {
			p.add("state", "%s key %s: model has %s, %s none", name, k, FormatValues(w), what)
		} else if !valuesEqual(g, w) {
			p.add("state", "%s key %s: model has %s, %s %s", name, k, FormatValues(w), what, FormatValues(g))
		}
	}
	for k, g := range fold {
		if _, ok := want[k]; !ok {
			p.add("state", "%s key %s: model has none, %s %s", name, k, what, FormatValues(g))
		}
	}
}

// checkFlightInfo checks GetFlightInfo on PATH [db, table]: every list-buckets entry has an endpoint
// whose ticket is a ChangelogTicket for it, endpoints ordered by partition then bucket.
func checkFlightInfo(ctx context.Context, c *Client, db string, t *tdef, tr *tableRead, p *problems) {
	fi, err := c.FC.GetFlightInfo(ctx, &flight.FlightDescriptor{Type: flight.DescriptorPATH, Path: []string{db, t.name}})
	if err != nil {
		p.add("GetFlightInfo", "%s: %v", t.name, err)
		return
	}
	type pb struct {
		part   string
		bucket int32
	}
	var eps []pb
	for _, ep := range fi.GetEndpoint() {
		tk := &setatspb.ChangelogTicket{}
		if err := proto.Unmarshal(ep.GetTicket().GetTicket(), tk); err != nil {
			p.add("GetFlightInfo", "%s: ticket not a ChangelogTicket: %v", t.name, err)
			return
		}
		if tk.GetTable() != t.name || tk.GetDatabase() != db || tk.GetFollow() {
			p.add("GetFlightInfo", "%s: ticket %v", t.name, tk)
		}
		eps = append(eps, pb{tk.GetPartition(), tk.GetBucket()})
	}
	for i := 1; i < len(eps); i++ {
		a, b := eps[i-1], eps[i]
		if a.part > b.part || (a.part == b.part && a.bucket >= b.bucket) {
			p.add("GetFlightInfo order", "%s: endpoint %v after %v", t.name, b, a)
		}
	}
	for _, b := range tr.buckets {
		if !slices.Contains(eps, pb{b.offsets.GetPartition(), b.offsets.GetBucket()}) {
			p.add("GetFlightInfo", "%s: no endpoint for partition %q bucket %d", t.name, b.offsets.GetPartition(), b.offsets.GetBucket())
		}
	}
}

// sameRead reports differences between two reads of the same table (e.g. before and after a
// restart): the rows up to the first read's end must be identical.
func sameRead(name string, before, after *tableRead, p *problems) {
	idx := map[string]*bucketLog{}
	for _, b := range after.buckets {
		idx[b.offsets.GetPartition()+"\x00"+strconv.Itoa(int(b.offsets.GetBucket()))] = b
	}
	for _, b := range before.buckets {
		a := idx[b.offsets.GetPartition()+"\x00"+strconv.Itoa(int(b.offsets.GetBucket()))]
		where := fmt.Sprintf("%s partition %q bucket %d", name, b.offsets.GetPartition(), b.offsets.GetBucket())
		if a == nil {
			p.add("restart", "%s: gone after restart", where)
			continue
		}
		if len(a.log.Rows) < len(b.log.Rows) {
			p.add("restart", "%s: %d rows before restart, %d after", where, len(b.log.Rows), len(a.log.Rows))
			continue
		}
		for i, r := range b.log.Rows {
			ar := a.log.Rows[i]
			if ar.Kind != r.Kind || ar.Offset != r.Offset || ar.CommitMs != r.CommitMs || !valuesEqual(ar.Values, r.Values) {
				p.add("restart", "%s: row %d was %s commit %d, is %s commit %d", where, i, r, r.CommitMs, ar, ar.CommitMs)
				break
			}
		}
	}
}
