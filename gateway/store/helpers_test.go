package store

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/setats/setats/catalog"
	"github.com/setats/setats/gateway/buckethash"
	"github.com/setats/setats/gateway/partname"
	"github.com/setats/setats/gateway/row"
	"github.com/setats/setats/gateway/rowcodec"
	"github.com/setats/setats/merge"
	"github.com/setats/setats/proto/setatspb"
)

// spec builds a table spec: cols like "id INT, v STRING" (types without commas), pk and
// partition keys as comma lists.
func spec(name, cols, pk, part string, buckets int32, engine string, options map[string]string) *setatspb.TableSpec {
	s := &setatspb.TableSpec{Database: "db", Table: name, BucketCount: buckets, MergeEngine: engine, Options: options}
	for _, c := range strings.Split(cols, ",") {
		n, typ, _ := strings.Cut(strings.TrimSpace(c), " ")
		s.Columns = append(s.Columns, &setatspb.Column{Name: n, Type: typ})
	}
	s.PrimaryKey = splitList(pk)
	s.PartitionKeys = splitList(part)
	return s
}

func splitList(s string) []string {
	if s == "" {
		return nil
	}
	var out []string
	for _, x := range strings.Split(s, ",") {
		out = append(out, strings.TrimSpace(x))
	}
	return out
}

// resolve turns a spec into a table located under warehouse.
func resolve(t testing.TB, warehouse string, s *setatspb.TableSpec) *catalog.Table {
	t.Helper()
	tbl, err := catalog.ResolveSpec(s, catalog.Options{Warehouse: warehouse})
	if err != nil {
		t.Fatal(err)
	}
	return tbl
}

// fakeClock is a settable clock for Options.Clock.
type fakeClock struct{ ms int64 }

func (c *fakeClock) now() int64 { return c.ms }

// openTable opens the store of tbl with a fake clock, closing it at the end of the test.
func openTable(t testing.TB, tbl *catalog.Table, clock *fakeClock) *Table {
	t.Helper()
	st, err := Open(tbl, Options{Clock: clock.now, CacheBytes: 8 << 20})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	return st
}

// parseValue parses a test value of column type typ: null, 'string', true/false or a number.
func parseValue(typ catalog.Type, s string) (any, error) {
	s = strings.TrimSpace(s)
	if s == "null" {
		return nil, nil
	}
	switch typ.Kind {
	case catalog.Char, catalog.VarChar:
		if len(s) < 2 || s[0] != '\'' || s[len(s)-1] != '\'' {
			return nil, fmt.Errorf("string %s not in quotes", s)
		}
		return s[1 : len(s)-1], nil
	case catalog.Boolean:
		return strconv.ParseBool(s)
	case catalog.Int:
		n, err := strconv.ParseInt(s, 10, 32)
		return int32(n), err
	case catalog.BigInt:
		return strconv.ParseInt(s, 10, 64)
	case catalog.Date:
		n, err := strconv.ParseInt(s, 10, 32)
		return arrow.Date32(n), err
	}
	return nil, fmt.Errorf("test values of type %s are not supported", typ)
}

// parseRows parses lines "KIND(v1,v2,...)" (values of the columns cols, in that order) into a
// batch. An empty cols means every column.
func parseRows(tbl *catalog.Table, cols []string, lines []string) (*row.Batch, error) {
	idx := make([]int, 0, len(tbl.Columns))
	if len(cols) == 0 {
		for c := range tbl.Columns {
			idx = append(idx, c)
		}
	}
	for _, n := range cols {
		c := tbl.ColumnIndex(n)
		if c < 0 {
			return nil, fmt.Errorf("no column %q", n)
		}
		idx = append(idx, c)
	}
	b := &row.Batch{Declared: make([]bool, len(tbl.Columns))}
	for _, c := range idx {
		b.Declared[c] = true
	}
	for _, line := range lines {
		for _, item := range splitItems(line) {
			kind, err := merge.ParseRowKindString(item[:2])
			if err != nil {
				return nil, err
			}
			body := strings.TrimSuffix(strings.TrimPrefix(item[2:], "("), ")")
			vals := strings.Split(body, ",")
			if len(vals) != len(idx) {
				return nil, fmt.Errorf("%s: %d values for %d columns", item, len(vals), len(idx))
			}
			r := make(merge.Row, len(tbl.Columns))
			for i, c := range idx {
				if r[c], err = parseValue(tbl.Columns[c].Type, vals[i]); err != nil {
					return nil, err
				}
			}
			b.Kinds = append(b.Kinds, kind)
			b.Rows = append(b.Rows, r)
		}
	}
	return b, nil
}

// splitItems splits "+I(1,'a') +I(2,'b')" into its items.
func splitItems(line string) []string {
	var out []string
	for line = strings.TrimSpace(line); line != ""; line = strings.TrimSpace(line) {
		end := strings.IndexByte(line, ')')
		if end < 0 {
			return append(out, line)
		}
		out = append(out, line[:end+1])
		line = line[end+1:]
	}
	return out
}

// formatRow prints a row like the cases: (1,'a',null).
func formatRow(r merge.Row) string {
	var b strings.Builder
	b.WriteByte('(')
	for i, v := range r {
		if i > 0 {
			b.WriteByte(',')
		}
		switch x := v.(type) {
		case nil:
			b.WriteString("null")
		case string:
			b.WriteString("'" + x + "'")
		default:
			fmt.Fprint(&b, x)
		}
	}
	b.WriteByte(')')
	return b.String()
}

// changelog reads every bucket's whole retained changelog.
func changelog(t testing.TB, st *Table) map[BucketID][]Entry {
	t.Helper()
	out := map[BucketID][]Entry{}
	for _, b := range st.Buckets() {
		es, err := st.Read(b.BucketID, b.StartOffset, 0, nil)
		if err != nil {
			t.Fatal(err)
		}
		out[b.BucketID] = es
	}
	return out
}

// state returns the stored rows by encoded primary key.
func state(t testing.TB, st *Table) map[string]merge.Row {
	t.Helper()
	out := map[string]merge.Row{}
	err := st.ScanState(func(id BucketID, r merge.Row) error {
		want := BucketID{Partition: partname.Of(st.tbl, r), Bucket: buckethash.Bucket(st.tbl, r)}
		if id != want {
			return fmt.Errorf("row %v stored in bucket %v, belongs to %v", r, id, want)
		}
		out[string(rowcodec.EncodeKey(st.tbl, r))] = r
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// checkFold checks that each bucket's changelog from offset 0 folds to the stored state and
// that the RowKind state machine holds: +I only for an absent key; -U equals the stored row and
// is immediately followed by its +U; -D equals the stored row. Offsets are dense and commit
// times non-decreasing. It needs the changelog from offset 0 (no retention).
func checkFold(t testing.TB, st *Table) {
	t.Helper()
	folded := map[string]merge.Row{}
	for id, es := range changelog(t, st) {
		var lastMs int64
		for i, e := range es {
			if e.Offset != es[0].Offset+int64(i) { // from 0, or from the end offset of a dropped partition
				t.Fatalf("bucket %v: entry %d has offset %d", id, i, e.Offset)
			}
			if e.CommitMs < lastMs {
				t.Fatalf("bucket %v offset %d: commit time %d after %d", id, e.Offset, e.CommitMs, lastMs)
			}
			lastMs = e.CommitMs
			k := string(rowcodec.EncodeKey(st.tbl, e.Row))
			old, present := folded[k]
			switch e.Kind {
			case merge.Insert:
				if present {
					t.Fatalf("bucket %v offset %d: +I%s of a present key (stored %s)", id, e.Offset, formatRow(e.Row), formatRow(old))
				}
				folded[k] = e.Row
			case merge.UpdateBefore:
				if !present || !merge.RowEqual(old, e.Row) {
					t.Fatalf("bucket %v offset %d: -U%s does not equal the stored row %s", id, e.Offset, formatRow(e.Row), formatRow(old))
				}
				if i+1 >= len(es) || es[i+1].Kind != merge.UpdateAfter || string(rowcodec.EncodeKey(st.tbl, es[i+1].Row)) != k {
					t.Fatalf("bucket %v offset %d: -U not followed by the +U of its key", id, e.Offset)
				}
			case merge.UpdateAfter:
				if i == 0 || es[i-1].Kind != merge.UpdateBefore {
					t.Fatalf("bucket %v offset %d: +U without -U before it", id, e.Offset)
				}
				if merge.RowEqual(es[i-1].Row, e.Row) {
					t.Fatalf("bucket %v offset %d: -U/+U of an unchanged row %s", id, e.Offset, formatRow(e.Row))
				}
				folded[k] = e.Row
			case merge.Delete:
				if !present || !merge.RowEqual(old, e.Row) {
					t.Fatalf("bucket %v offset %d: -D%s does not equal the stored row %s", id, e.Offset, formatRow(e.Row), formatRow(old))
				}
				delete(folded, k)
			}
		}
	}
	stored := state(t, st)
	if len(stored) != len(folded) {
		t.Fatalf("state has %d rows, the changelog folds to %d", len(stored), len(folded))
	}
	for k, r := range stored {
		if !merge.RowEqual(folded[k], r) {
			t.Fatalf("state row %s, changelog folds to %s", formatRow(r), formatRow(folded[k]))
		}
	}
}

// mustWrite writes b and fails the test on error.
func mustWrite(t testing.TB, st *Table, b *row.Batch) Commit {
	t.Helper()
	c, err := st.Write(context.Background(), b)
	if err != nil {
		t.Fatal(err)
	}
	return c
}
