package merge

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
)

// FuzzMerge drives random write sequences through a random engine and checks them against a
// direct reading of SPEC section 4 (the oracle below), plus these invariants: Merge does not
// modify its inputs, next does not change when the caller reuses in's memory, every -U is
// immediately followed by the +U of the same key, no update pair has equal rows, and the
// changelog folds to the stored state. `go test` runs the seeds; `go test -fuzz=FuzzMerge`
// explores further.
func FuzzMerge(f *testing.F) {
	for seed := uint64(0); seed < 64; seed++ {
		f.Add(seed, uint16(300))
	}
	f.Fuzz(func(t *testing.T, seed uint64, steps uint16) {
		checkRandomSequence(t, seed, int(steps%2000))
	})
}

const propCols = 4 // key int32, a string, b int64, c []byte

func randValue(r *rand.Rand, col int) any {
	if col > 0 && r.IntN(4) == 0 {
		return nil
	}
	switch col {
	case 0:
		return int32(r.IntN(5))
	case 1:
		return []string{"x", "y", "z"}[r.IntN(3)]
	case 2:
		return int64(r.IntN(3))
	default:
		return []byte{byte('p' + r.IntN(3))}
	}
}

func checkRandomSequence(t *testing.T, seed uint64, steps int) {
	r := rand.New(rand.NewPCG(seed, seed^0x5eed))
	name := []string{Deduplicate, PartialUpdate}[r.IntN(2)]
	opts := map[string]string{}
	ignoreDelete, removeOnDelete := r.IntN(3) == 0, r.IntN(2) == 0
	opts[OptionIgnoreDelete] = fmt.Sprint(ignoreDelete)
	opts[OptionRemoveRecordOnDelete] = fmt.Sprint(removeOnDelete)
	e, err := New(name, opts)
	if err != nil {
		t.Fatal(err)
	}
	desc := fmt.Sprintf("seed %d engine %s options %v", seed, name, opts)

	state := map[int32]Row{}  // what Merge returned
	oracle := map[int32]Row{} // what the oracle computed
	var log []Change
	for step := 0; step < steps; step++ {
		kind := RowKind(r.IntN(4))
		in := make(Row, propCols)
		declared := make([]bool, propCols)
		for i := range in {
			declared[i] = i == 0 || r.IntN(3) > 0
			in[i] = randValue(r, i)
		}
		key := in[0].(int32)
		old := state[key]
		oldCopy, inCopy := slices.Clone(old), slices.Clone(in)

		next, out, err := e.Merge(nil, old, kind, in, declared)

		if !reflect.DeepEqual(old, oldCopy) || !reflect.DeepEqual(in, inCopy) {
			t.Fatalf("%s step %d: Merge modified its input", desc, step)
		}
		want, wantOut, wantErr := oracleMerge(name, ignoreDelete, removeOnDelete, oracle[key], kind, in, declared)
		if (err != nil) != wantErr {
			t.Fatalf("%s step %d: %v %v: err %v, oracle error %v", desc, step, kind, in, err, wantErr)
		}
		if !reflect.DeepEqual(next, want) || !changesEqual(out, wantOut) {
			t.Fatalf("%s step %d: %v %v declared %v on %v:\n got  %v %v\n want %v %v",
				desc, step, kind, in, declared, old, next, out, want, wantOut)
		}
		// The caller reuses in's memory: next must not change.
		nextCopy := slices.Clone(next)
		for i := range in {
			if b, ok := in[i].([]byte); ok {
				b[0] = '!'
			}
		}
		if !reflect.DeepEqual(next, nextCopy) {
			t.Fatalf("%s step %d: next shares memory with in", desc, step)
		}
		if next == nil {
			delete(state, key)
		} else {
			state[key] = next
		}
		if want == nil {
			delete(oracle, key)
		} else {
			oracle[key] = want
		}
		log = append(log, out...)
	}
	checkFold(t, desc, log, state)
}

// oracleMerge is SPEC section 4 written out plainly.
func oracleMerge(engine string, ignoreDelete, removeOnDelete bool, old Row, kind RowKind, in Row, declared []bool) (Row, []Change, bool) {
	switch kind {
	case UpdateBefore:
		return old, nil, false
	case Delete:
		if ignoreDelete {
			return old, nil, false
		}
		if engine == PartialUpdate && !removeOnDelete {
			return old, nil, true
		}
		if old == nil {
			return nil, nil, false
		}
		return nil, []Change{{Delete, old}}, false
	}
	next := make(Row, len(in))
	copy(next, old)
	for i := range in {
		if declared[i] && (engine == Deduplicate || in[i] != nil) {
			next[i] = in[i]
			if b, ok := in[i].([]byte); ok {
				next[i] = slices.Clone(b)
			}
		}
	}
	switch {
	case old == nil:
		return next, []Change{{Insert, next}}, false
	case reflect.DeepEqual(old, next):
		return old, nil, false
	}
	return next, []Change{{UpdateBefore, old}, {UpdateAfter, next}}, false
}

func changesEqual(a, b []Change) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Kind != b[i].Kind || !reflect.DeepEqual(a[i].Row, b[i].Row) {
			return false
		}
	}
	return true
}

// checkFold replays a changelog and checks it is well formed and folds to state.
func checkFold(t *testing.T, desc string, log []Change, state map[int32]Row) {
	folded := map[int32]Row{}
	for i := 0; i < len(log); i++ {
		c := log[i]
		key := c.Row[0].(int32)
		cur, present := folded[key]
		switch c.Kind {
		case Insert:
			if present {
				t.Fatalf("%s offset %d: +I of a present key", desc, i)
			}
			folded[key] = c.Row
		case UpdateBefore:
			if !present || !RowEqual(cur, c.Row) {
				t.Fatalf("%s offset %d: -U %v does not match the folded row %v", desc, i, c.Row, cur)
			}
			if i+1 == len(log) || log[i+1].Kind != UpdateAfter || log[i+1].Row[0] != c.Row[0] {
				t.Fatalf("%s offset %d: -U not followed by the +U of its key", desc, i)
			}
			if RowEqual(c.Row, log[i+1].Row) {
				t.Fatalf("%s offset %d: update pair with equal rows %v", desc, i, c.Row)
			}
			folded[key] = log[i+1].Row
			i++
		case UpdateAfter:
			t.Fatalf("%s offset %d: +U without -U", desc, i)
		case Delete:
			if !present || !RowEqual(cur, c.Row) {
				t.Fatalf("%s offset %d: -D %v does not match the folded row %v", desc, i, c.Row, cur)
			}
			delete(folded, key)
		}
	}
	if len(folded) != len(state) {
		t.Fatalf("%s: changelog folds to %d rows, state has %d", desc, len(folded), len(state))
	}
	for k, row := range state {
		if !RowEqual(folded[k], row) {
			t.Fatalf("%s: key %d: fold %v, state %v", desc, k, folded[k], row)
		}
	}
}
