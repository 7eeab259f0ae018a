package gatewaytest

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/setats/setats/internal/flighttest"
	"github.com/setats/setats/proto/setatspb"
)

// Reads of the merged table against the model (SPEC section 13, issue 14): a planned snapshot
// read with a random projection and partition filter, and lookups by whole primary key (present,
// absent and repeated keys) and by primary-key prefix (LookupCommand.prefix), including requests
// on both sides of the 65,536-row cap. They run while no write is in flight, so the durable table
// is the model's.

// maxLookupRows is the row cap of one prefix-lookup answer (proto LookupCommand.prefix).
const maxLookupRows = 1 << 16

// MaxLookupKeys is the most keys of one lookup request (proto/README.md "Lookups").
const MaxLookupKeys = 4096

// checkReads runs the read checks of one table; read is the table's changelog read just before.
func checkReads(ctx context.Context, c *Client, tr *tableRun, read *tableRead, rng *rand.Rand, p *problems) error {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	if err := checkSnapshotRead(ctx, c, tr, read, rng, p); err != nil {
		return err
	}
	if err := checkPointLookups(ctx, c, tr, rng, p); err != nil {
		return err
	}
	return checkPrefixLookups(ctx, c, tr, rng, p)
}

// randProjection returns a random projection (nil: all columns) and its column indexes.
func randProjection(t *tdef, rng *rand.Rand) ([]string, []int) {
	idx := make([]int, len(t.cols))
	for i := range idx {
		idx[i] = i
	}
	if rng.IntN(3) == 0 {
		return nil, idx
	}
	perm := rng.Perm(len(t.cols))[:1+rng.IntN(len(t.cols))]
	names := make([]string, len(perm))
	for i, ci := range perm {
		names[i] = t.cols[ci].Name
	}
	return names, perm
}

func project(row []any, idx []int) []any {
	out := make([]any, len(idx))
	for i, ci := range idx {
		out[i] = row[ci]
	}
	return out
}

// checkSnapshotRead: GetFlightInfo with a snapshot ReadCommand gives one endpoint per bucket of
// the selected partitions; each stream's view is at the bucket's end offset, its `_key`s ascend,
// and together they hold exactly the model's rows of those partitions, projected.
func checkSnapshotRead(ctx context.Context, c *Client, tr *tableRun, read *tableRead, rng *rand.Rand, p *problems) error {
	t := tr.t
	names, idx := randProjection(t, rng)
	var parts []string
	if len(t.partKeys) > 0 && rng.IntN(2) == 0 {
		for _, b := range read.buckets {
			if !slices.Contains(parts, b.offsets.GetPartition()) && rng.IntN(2) == 0 {
				parts = append(parts, b.offsets.GetPartition())
			}
		}
	}
	selected := func(part string) bool { return len(parts) == 0 || slices.Contains(parts, part) }
	got, err := c.ReadSnapshot(ctx, &setatspb.ReadCommand{Database: e2eDB, Table: t.name,
		Snapshot: &setatspb.SnapshotRead{Columns: names, Partitions: parts}})
	if err != nil {
		return fmt.Errorf("snapshot read of %s (columns %v, partitions %q): %w", t.name, names, parts, err)
	}
	what := fmt.Sprintf("%s snapshot (columns %v, partitions %q)", t.name, names, parts)
	type pb struct {
		part   string
		bucket int32
	}
	ends := map[pb]int64{}
	for _, b := range read.buckets {
		if selected(b.offsets.GetPartition()) {
			ends[pb{b.offsets.GetPartition(), b.offsets.GetBucket()}] = b.offsets.GetEndOffset()
		}
	}
	if len(got) != len(ends) {
		p.add("snapshot", "%s: %d endpoints, want one per selected bucket: %d", what, len(got), len(ends))
	}
	var wantCols []string
	for _, ci := range idx {
		wantCols = append(wantCols, t.cols[ci].Name)
	}
	// Per bucket, the multiset of projected rows: the model's (rows grouped by their location)
	// against the stream's.
	want := map[pb]map[string]int{}
	for _, row := range tr.m.state {
		if part, b := t.location(row); selected(part) {
			k := pb{part, b}
			if want[k] == nil {
				want[k] = map[string]int{}
			}
			want[k][FormatValues(project(row, idx))]++
		}
	}
	for _, sp := range got {
		where := fmt.Sprintf("%s partition %q bucket %d", what, sp.Partition, sp.Bucket)
		k := pb{sp.Partition, sp.Bucket}
		end, ok := ends[k]
		if !ok {
			p.add("snapshot", "%s: not a selected bucket", where)
			continue
		}
		if sp.EndOffset != end {
			p.add("snapshot", "%s: view end offset %d, the bucket's end offset is %d (no write in flight)", where, sp.EndOffset, end)
		}
		if !slices.Equal(sp.Columns, wantCols) {
			p.add("snapshot", "%s: columns %v, want %v", where, sp.Columns, wantCols)
		}
		for i, vals := range sp.Rows {
			if i > 0 && bytes.Compare(sp.Keys[i-1], sp.Keys[i]) >= 0 {
				p.add("snapshot", "%s: row %d's _key does not ascend", where, i)
			}
			f := FormatValues(vals)
			if want[k][f] == 0 {
				p.add("snapshot", "%s: row %s is not a model row of this bucket (or is there once more)", where, f)
				continue
			}
			want[k][f]--
		}
	}
	for k, rows := range want {
		for f, n := range rows {
			if n > 0 {
				p.add("snapshot", "%s partition %q bucket %d: model row %s missing (%d times)", what, k.part, k.bucket, f, n)
			}
		}
	}
	return nil
}

// keyCols are the first k primary-key columns as lookup key columns, in a random order, and
// their column indexes.
func keyCols(t *tdef, k int, rng *rand.Rand) ([]Col, []int) {
	pk := slices.Clone(t.pkIdx()[:k])
	rng.Shuffle(len(pk), func(i, j int) { pk[i], pk[j] = pk[j], pk[i] })
	cols := make([]Col, len(pk))
	for i, ci := range pk {
		cols[i] = t.cols[ci]
		cols[i].Key = true
	}
	return cols, pk
}

// absentKey returns a key no writer of the model test uses (keys of tableKeys only are written).
func absentKey(t *tdef, rng *rand.Rand) []any {
	row := make([]any, len(t.cols))
	for _, ci := range t.pkIdx() {
		switch t.cols[ci].Type {
		case "INT":
			row[ci] = int32(100_000 + rng.IntN(1000))
		case "BIGINT":
			row[ci] = int64(3) // tableKeys' BIGINT keys are multiples of 2^33 or in {-2^40,-1,0,1,7}
		case "STRING":
			row[ci] = []string{"zz", "k", "2024-01-0"}[rng.IntN(3)]
		}
	}
	return row
}

func lookupWhat(t *tdef, cmd *setatspb.LookupCommand, cols []Col) string {
	var names []string
	for _, c := range cols {
		names = append(names, c.Name)
	}
	return fmt.Sprintf("%s lookup (prefix %v, key columns %v, columns %v)", t.name, cmd.GetPrefix(), names, cmd.GetColumns())
}

// checkPointLookups: a request of whole keys (present, absent, repeated; several buckets and
// partitions) answers one row per present key, in request order, with the requested columns.
func checkPointLookups(ctx context.Context, c *Client, tr *tableRun, rng *rand.Rand, p *problems) error {
	t := tr.t
	all := tableKeys(t)
	names, idx := randProjection(t, rng)
	cols, kidx := keyCols(t, len(t.pkIdx()), rng)
	cmd := &setatspb.LookupCommand{Database: e2eDB, Table: t.name, Columns: names}
	var reqs [][][]any
	var want [][]flighttest.LookupRow
	for range 1 + rng.IntN(3) {
		var req [][]any
		var exp []flighttest.LookupRow
		for i := range 1 + rng.IntN(200) {
			row := all[rng.IntN(len(all))]
			if rng.IntN(8) == 0 {
				row = absentKey(t, rng)
			}
			req = append(req, project(row, kidx))
			if st, ok := tr.m.state[t.keyOf(row)]; ok {
				exp = append(exp, flighttest.LookupRow{Index: int32(i), Values: project(st, idx)})
			}
		}
		reqs, want = append(reqs, req), append(want, exp)
	}
	got, err := c.Lookup(ctx, cmd, cols, reqs...)
	if err != nil {
		return fmt.Errorf("%s: %w", lookupWhat(t, cmd, cols), err)
	}
	compareLookup(lookupWhat(t, cmd, cols), got, want, p)
	return nil
}

func compareLookup(what string, got, want [][]flighttest.LookupRow, p *problems) {
	if len(got) != len(want) {
		p.add("lookup", "%s: %d answers to %d requests", what, len(got), len(want))
		return
	}
	for r := range want {
		g, w := got[r], want[r]
		same := len(g) == len(w)
		for i := 0; same && i < len(w); i++ {
			same = g[i].Index == w[i].Index && valuesEqual(g[i].Values, w[i].Values)
		}
		if !same {
			p.add("lookup", "%s request %d:\n got  %s\n want %s", what, r, fmtLookup(g), fmtLookup(w))
		}
	}
}

func fmtLookup(rows []flighttest.LookupRow) string {
	const most = 12
	var parts []string
	for i, r := range rows {
		if i == most {
			parts = append(parts, fmt.Sprintf("... (%d rows)", len(rows)))
			break
		}
		parts = append(parts, fmt.Sprintf("#%d%s", r.Index, FormatValues(r.Values)))
	}
	return strings.Join(parts, " ")
}

// prefixK is the fewest primary-key columns a prefix lookup must send: up to the last
// partition-key or bucket-key column in primary-key order.
func prefixK(t *tdef) int {
	need := append(slices.Clone(t.bucketKeyIdx()), func() []int {
		var out []int
		for _, n := range t.partKeys {
			out = append(out, t.colIndex(n))
		}
		return out
	}()...)
	k := 0
	for i, ci := range t.pkIdx() {
		if slices.Contains(need, ci) {
			k = i + 1
		}
	}
	return k
}

// compareKeyValue orders key values as the primary key's memcomparable encoding does: numbers by
// value, strings by bytes, false before true.
func compareKeyValue(a, b any) int {
	switch x := a.(type) {
	case int32:
		return cmp.Compare(x, b.(int32))
	case int64:
		return cmp.Compare(x, b.(int64))
	case string:
		return strings.Compare(x, b.(string))
	case bool:
		if x == b.(bool) {
			return 0
		} else if x {
			return 1
		}
		return -1
	}
	panic(fmt.Sprintf("key value %T", a))
}

// prefixMatches returns the model rows whose first k primary-key values are prefix's (a
// full-width row), in primary-key order.
func prefixMatches(t *tdef, m *refModel, prefix []any, k int) [][]any {
	pk := t.pkIdx()
	var out [][]any
	for _, row := range m.state {
		ok := true
		for _, ci := range pk[:k] {
			ok = ok && row[ci] == prefix[ci]
		}
		if ok {
			out = append(out, row)
		}
	}
	slices.SortFunc(out, func(a, b []any) int {
		for _, ci := range pk {
			if c := compareKeyValue(a[ci], b[ci]); c != 0 {
				return c
			}
		}
		return 0
	})
	return out
}

// checkPrefixLookups: LookupCommand.prefix with the first k key columns (k from the fewest
// allowed to the whole key) answers, per key, every model row starting with it in primary-key
// order; a request matching more than 65,536 rows is ResourceExhausted and one matching exactly
// up to the cap is answered in full.
func checkPrefixLookups(ctx context.Context, c *Client, tr *tableRun, rng *rand.Rand, p *problems) error {
	t := tr.t
	all := tableKeys(t)
	kmin, npk := prefixK(t), len(t.pkIdx())
	k := kmin + rng.IntN(npk-kmin+1)
	names, idx := randProjection(t, rng)
	cols, kidx := keyCols(t, k, rng)
	cmd := &setatspb.LookupCommand{Database: e2eDB, Table: t.name, Columns: names, Prefix: true}
	expect := func(req [][]any) []flighttest.LookupRow {
		var exp []flighttest.LookupRow
		for i, kv := range req {
			full := make([]any, len(t.cols))
			for j, ci := range kidx {
				full[ci] = kv[j]
			}
			for _, row := range prefixMatches(t, tr.m, full, k) {
				exp = append(exp, flighttest.LookupRow{Index: int32(i), Values: project(row, idx)})
			}
		}
		return exp
	}
	var req [][]any
	for range 1 + rng.IntN(50) {
		row := all[rng.IntN(len(all))]
		if rng.IntN(8) == 0 {
			row = absentKey(t, rng)
		}
		req = append(req, project(row, kidx))
	}
	got, err := c.Lookup(ctx, cmd, cols, req)
	if err != nil {
		return fmt.Errorf("%s: %w", lookupWhat(t, cmd, cols), err)
	}
	compareLookup(lookupWhat(t, cmd, cols), got, [][]flighttest.LookupRow{expect(req)}, p)

	return checkLookupCap(ctx, c, tr, rng, p)
}

// checkLookupCap: prefix keys of the fewest columns allowed, of several buckets, are added to one
// request while their matches stay within the 65,536-row cap (at most 4096 keys): that request
// is answered in full; one key more whose matches pass the cap is ResourceExhausted. Tables
// whose 4096 keys cannot match that many rows are skipped.
func checkLookupCap(ctx context.Context, c *Client, tr *tableRun, rng *rand.Rand, p *problems) error {
	t := tr.t
	k := prefixK(t)
	cols, kidx := keyCols(t, k, rng)
	cmd := &setatspb.LookupCommand{Database: e2eDB, Table: t.name, Prefix: k < len(t.pkIdx())}
	type cand struct {
		key  []any
		rows []flighttest.LookupRow // with Index 0
	}
	var cands []cand
	seen := map[string]bool{}
	most := 0
	for _, i := range rng.Perm(len(tableKeys(t))) {
		full := tableKeys(t)[i]
		key := project(full, kidx)
		if seen[FormatValues(key)] {
			continue
		}
		seen[FormatValues(key)] = true
		var rows []flighttest.LookupRow
		for _, row := range prefixMatches(t, tr.m, full, k) {
			rows = append(rows, flighttest.LookupRow{Values: row})
		}
		if len(rows) > 0 {
			cands = append(cands, cand{key, rows})
			most = max(most, len(rows))
		}
	}
	if most*MaxLookupKeys <= maxLookupRows {
		return nil
	}
	var req [][]any
	var want []flighttest.LookupRow
	total := 0
	for more := true; more && len(req) < MaxLookupKeys; {
		more = false
		for _, cd := range cands {
			if len(req) < MaxLookupKeys && total+len(cd.rows) <= maxLookupRows {
				for _, r := range cd.rows {
					want = append(want, flighttest.LookupRow{Index: int32(len(req)), Values: r.Values})
				}
				req = append(req, cd.key)
				total += len(cd.rows)
				more = true
			}
		}
	}
	what := fmt.Sprintf("%s, %d keys matching %d rows (cap %d)", lookupWhat(t, cmd, cols), len(req), total, maxLookupRows)
	got, err := c.Lookup(ctx, cmd, cols, req)
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	compareLookup(what, got, [][]flighttest.LookupRow{want}, p)
	tr.capChecks++
	if len(req) == MaxLookupKeys {
		return nil
	}
	for _, cd := range cands {
		if total+len(cd.rows) > maxLookupRows {
			req = append(req, cd.key)
			_, err = c.Lookup(ctx, cmd, cols, req)
			if st, _ := status.FromError(err); err == nil || st.Code() != codes.ResourceExhausted || !strings.Contains(st.Message(), "65536") {
				p.add("lookup cap", "%s, plus a key matching %d rows: %v, want ResourceExhausted naming the cap 65536", what, len(cd.rows), err)
			}
			break
		}
	}
	return nil
}
