package merge

import (
	"errors"
	"strings"
	"testing"
)

func TestCanonicalEngine(t *testing.T) {
	for _, tc := range []struct {
		in, want string
	}{
		{"", Deduplicate},
		{"DEDUPLICATE", Deduplicate},
		{"deduplicate", Deduplicate},
		{" Deduplicate ", Deduplicate},
		{"PARTIAL_UPDATE", PartialUpdate},
		{"partial_update", PartialUpdate},
		{"partial-update", PartialUpdate},
		{"Partial-Update", PartialUpdate},
	} {
		got, err := CanonicalEngine(tc.in)
		if err != nil || got != tc.want {
			t.Errorf("CanonicalEngine(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
	for _, bad := range []string{"first-row", "aggregation", "partial update", "PARTIALUPDATE"} {
		_, err := CanonicalEngine(bad)
		if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "merge-engine") {
			t.Errorf("CanonicalEngine(%q): err %v, want InvalidArgument naming merge-engine", bad, err)
		}
	}
}

func TestNewOptions(t *testing.T) {
	for _, tc := range []struct {
		engine  string
		options map[string]string
		errName string // "" = no error
	}{
		{"", nil, ""},
		{"PARTIAL_UPDATE", map[string]string{"ignore-delete": "FALSE", "changelog.retention.ms": "1000"}, ""},
		{"PARTIAL_UPDATE", map[string]string{"ignore-delete": " true "}, ""},
		{"PARTIAL_UPDATE", map[string]string{"ignore-delete": ""}, "ignore-delete"},
		{"DEDUPLICATE", map[string]string{"partial-update.remove-record-on-delete": "on"}, "partial-update.remove-record-on-delete"},
		{"nope", nil, "merge-engine"},
	} {
		e, err := New(tc.engine, tc.options)
		if tc.errName == "" {
			if err != nil || e == nil {
				t.Errorf("New(%q, %v) = %v, %v", tc.engine, tc.options, e, err)
			}
			continue
		}
		if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tc.errName) {
			t.Errorf("New(%q, %v): err %v, want InvalidArgument naming %s", tc.engine, tc.options, err, tc.errName)
		}
	}
}

// TestPartialUpdateDeleteError is case M7: the error names both delete options.
func TestPartialUpdateDeleteError(t *testing.T) {
	e, err := New("PARTIAL_UPDATE", nil)
	if err != nil {
		t.Fatal(err)
	}
	old := Row{int32(1), "a"}
	for _, stored := range []Row{old, nil} {
		next, out, err := e.Merge(nil, stored, Delete, Row{int32(1), "a"}, nil)
		if !errors.Is(err, ErrInvalid) {
			t.Fatalf("err %v, want InvalidArgument", err)
		}
		for _, name := range []string{"ignore-delete", "partial-update.remove-record-on-delete"} {
			if !strings.Contains(err.Error(), name) {
				t.Errorf("error %q does not name %s", err, name)
			}
		}
		if len(out) != 0 || !RowEqual(next, stored) {
			t.Errorf("on error: next %v out %v, want the stored row and nothing", next, out)
		}
	}
}

func TestMergeShapeErrors(t *testing.T) {
	for _, name := range []string{Deduplicate, PartialUpdate} {
		e, err := New(name, nil)
		if err != nil {
			t.Fatal(err)
		}
		dst := []Change{{Kind: Insert, Row: Row{int32(0)}}}
		for _, tc := range []struct {
			label    string
			old      Row
			kind     RowKind
			in       Row
			declared []bool
		}{
			{"declared length", nil, Insert, Row{int32(1), "a"}, []bool{true}},
			{"stored length", Row{int32(1)}, UpdateAfter, Row{int32(1), "a"}, nil},
			{"bad kind", nil, RowKind(4), Row{int32(1)}, nil},
		} {
			next, out, err := e.Merge(dst, tc.old, tc.kind, tc.in, tc.declared)
			if !errors.Is(err, ErrInvalid) {
				t.Errorf("%s %s: err %v, want InvalidArgument", name, tc.label, err)
			}
			if len(out) != 1 || !RowEqual(next, tc.old) {
				t.Errorf("%s %s: on error out=%v next=%v", name, tc.label, out, next)
			}
		}
	}
}

// TestMergeOwnership checks that next shares no memory with in and that dst is appended to.
func TestMergeOwnership(t *testing.T) {
	for _, name := range []string{Deduplicate, PartialUpdate} {
		e, _ := New(name, nil)
		buf := []byte("payload")
		in := Row{int32(1), buf, "s"}
		dst := make([]Change, 1, 8)
		next, out, err := e.Merge(dst, nil, Insert, in, nil)
		if err != nil {
			t.Fatal(err)
		}
		if len(out) != 2 || out[1].Kind != Insert || &out[0] != &dst[0] {
			t.Fatalf("%s: out = %v, want dst with +I appended", name, out)
		}
		in[1] = nil
		buf[0] = 'X'
		if string(next[1].([]byte)) != "payload" || next[1] == nil {
			t.Errorf("%s: next changed with the caller's buffer: %q", name, next[1])
		}
		// An unchanged update returns the stored row itself without allocating.
		old := next
		next2, out2, err := e.Merge(nil, old, UpdateAfter, Row{int32(1), []byte("payload"), "s"}, nil)
		if err != nil || len(out2) != 0 || &next2[0] != &old[0] {
			t.Errorf("%s: unchanged update: next %p old %p out %v err %v", name, next2, old, out2, err)
		}
		// A new row of strings costs one allocation, its Row: the strings (owned by the
		// caller, immutable) are shared, neither copied nor boxed again.
		strs := Row{int32(2), nil, strings.Repeat("v", 64)}
		chs := make([]Change, 0, 2)
		if allocs := testing.AllocsPerRun(100, func() { _, _, _ = e.Merge(chs[:0], nil, Insert, strs, nil) }); allocs != 1 {
			t.Errorf("%s: insert of a string row allocates %v times, want 1 (the Row)", name, allocs)
		}
		same := Row{int32(1), []byte("payload"), "s"}
		allocs := testing.AllocsPerRun(100, func() {
			_, _, _ = e.Merge(nil, old, UpdateAfter, same, nil)
		})
		if allocs != 0 {
			t.Errorf("%s: unchanged update allocates %v times", name, allocs)
		}
	}
}
