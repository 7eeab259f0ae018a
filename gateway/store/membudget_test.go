package store

import "testing"

// TestKeyIndexBudget: the key indexes of tables sharing a MemBudget stay within it together: a
// table whose index would not fit drops its index (and writes stay correct: every key is looked
// up), and a closed table gives its index's memory back (issue 7 item 4: the key index had no
// gateway-wide budget).
func TestKeyIndexBudget(t *testing.T) {
	budget := NewMemBudget(100 * keyIndexBytesPerKey)
	open := func(name string) *Table {
		tbl := resolve(t, t.TempDir(), spec(name, "id INT, v STRING", "id", "", 2, "", nil))
		st, err := Open(tbl, Options{Clock: (&fakeClock{ms: 1}).now, KeyIndexBudget: budget, CacheBytes: 8 << 20})
		if err != nil {
			t.Fatal(err)
		}
		<-st.keysBuilt
		return st
	}
	ids := func(n int32) []int32 {
		out := make([]int32, n)
		for i := range out {
			out[i] = int32(i)
		}
		return out
	}
	state := func(st *Table) (disabled bool, keys int) {
		st.keys.mu.RLock()
		defer st.keys.mu.RUnlock()
		return st.keys.disabled, st.keys.set.len()
	}
	a, b := open("a"), open("b")
	mustWrite(t, a, kvBatch(ids(80), "a"))
	if d, n := state(a); d || n != 80 || budget.Used() != 80*keyIndexBytesPerKey {
		t.Fatalf("a: disabled=%v keys=%d used=%d", d, n, budget.Used())
	}
	mustWrite(t, b, kvBatch(ids(40), "b"))
	if d, _ := state(b); !d {
		t.Fatal("b's index kept beyond the shared budget")
	}
	if used := budget.Used(); used != 80*keyIndexBytesPerKey {
		t.Fatalf("used %d after b dropped its index, want %d", used, 80*keyIndexBytesPerKey)
	}
	c := mustWrite(t, b, kvBatch(ids(40), "b2")) // every key looked up: updates
	if c.ChangelogRows != 80 {
		t.Fatalf("%d changelog rows after the index was dropped, want 80", c.ChangelogRows)
	}
	checkFold(t, b)
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	if used := budget.Used(); used != 0 {
		t.Fatalf("used %d after a closed", used)
	}
	_ = b.Close()
}
