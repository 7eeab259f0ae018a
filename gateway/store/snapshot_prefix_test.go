package store

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sort"
	"testing"

	"github.com/setats/setats/catalog"

	"github.com/setats/setats/gateway/row"
	"github.com/setats/setats/gateway/rowcodec"
	"github.com/setats/setats/merge"
)

// TestSnapshotViewGetPrefix: a prefix of the first k key columns gives exactly the view's rows
// whose first k key values are equal, in key order, and nothing of a string that merely starts
// with the prefix's string ("x" against "xy" and "x\x00"); more rows than maxRows is
// ErrResourceExhausted before found sees the extra row.
func TestSnapshotViewGetPrefix(t *testing.T) {
	sp := spec("pfx", "a INT, s STRING, b INT, v STRING", "a,s,b", "", 1, "", nil)
	sp.BucketKey = []string{"a"}
	tbl := resolve(t, t.TempDir(), sp)
	st := openTable(t, tbl, &fakeClock{ms: 1})
	ctx := context.Background()
	b := &row.Batch{Declared: []bool{true, true, true, true}}
	var all []merge.Row
	for a := range 3 {
		for _, s := range []string{"x", "xy", "x\x00", "", "y"} {
			for bb := range 3 {
				r := merge.Row{int32(a), s, int32(bb), fmt.Sprintf("%d/%q/%d", a, s, bb)}
				b.Kinds = append(b.Kinds, merge.UpdateAfter)
				b.Rows = append(b.Rows, r)
				all = append(all, r)
			}
		}
	}
	// Delete one row: the view must not return it.
	b.Kinds = append(b.Kinds, merge.Delete)
	b.Rows = append(b.Rows, merge.Row{int32(1), "x", int32(2), nil})
	if _, err := st.Write(ctx, b); err != nil {
		t.Fatal(err)
	}
	v, err := st.OpenSnapshot(ctx, BucketID{})
	if err != nil {
		t.Fatal(err)
	}
	defer v.Release()
	probes := []merge.Row{{int32(1), "x", nil, nil}, {int32(2), "", nil, nil}, {int32(0), "xy", nil, nil}, {int32(7), "x", nil, nil}, {int32(1), nil, nil, nil}}
	ks := []int{2, 2, 2, 2, 1}
	var prefixes [][]byte
	for i, p := range probes {
		prefixes = append(prefixes, rowcodec.AppendKeyPrefix(nil, tbl, p, ks[i]))
	}
	got := map[int][]string{}
	if err := v.GetPrefix(prefixes, 1000, func(i int, r merge.Row) error {
		got[i] = append(got[i], r[3].(string))
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	for i, p := range probes {
		var want []string
		for _, r := range all {
			if r[0] != p[0] || (ks[i] == 2 && r[1] != p[1]) {
				continue
			}
			if r[0] == int32(1) && r[1] == "x" && r[2] == int32(2) {
				continue // deleted
			}
			want = append(want, r[3].(string))
		}
		// Rows come in key order; build the expectation in key order too.
		if fmt.Sprint(sortedByKey(t, tbl, all, want)) != fmt.Sprint(got[i]) {
			t.Errorf("prefix %d %v: got %q, want %q", i, p[:ks[i]], got[i], sortedByKey(t, tbl, all, want))
		}
	}
	if len(got[3]) != 0 {
		t.Errorf("absent prefix: got %q", got[3])
	}
	seen := 0
	err = v.GetPrefix(prefixes, 4, func(int, merge.Row) error { seen++; return nil })
	if !errors.Is(err, ErrResourceExhausted) || seen != 4 {
		t.Fatalf("maxRows 4: err %v after %d rows, want ErrResourceExhausted after 4", err, seen)
	}
	v.Release()
	if err := v.GetPrefix(prefixes, 10, func(int, merge.Row) error { return nil }); !errors.Is(err, ErrAborted) {
		t.Fatalf("released view: %v, want ErrAborted", err)
	}
}

// sortedByKey orders the values (column v) of want as the store orders their rows: by encoded key.
func sortedByKey(t *testing.T, tbl *catalog.Table, all []merge.Row, want []string) []string {
	t.Helper()
	in := map[string]bool{}
	for _, w := range want {
		in[w] = true
	}
	var rows []merge.Row
	for _, r := range all {
		if in[r[3].(string)] {
			rows = append(rows, r)
		}
	}
	sort.Slice(rows, func(i, j int) bool {
		return bytes.Compare(rowcodec.EncodeKey(tbl, rows[i]), rowcodec.EncodeKey(tbl, rows[j])) < 0
	})
	var out []string
	for _, r := range rows {
		out = append(out, r[3].(string))
	}
	return out
}
