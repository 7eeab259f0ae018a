package gatewaytest

import (
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"

	"github.com/twmb/murmur3"

	"github.com/setats/setats/proto/setatspb"
)

// This file is the reference model: SPEC section 4 written out plainly, from the SPEC and
// proto/README.md only (no product code), plus the bucket hash and partition names of
// proto/README.md.

// tdef is a test table.
type tdef struct {
	name     string
	cols     []Col // table columns in order; Key marks primary-key columns
	partKeys []string
	// bucketKey: the table's bucket key (empty: the default, primary key minus partition keys).
	bucketKey []string
	buckets   int32
	engine    string // DEDUPLICATE or PARTIAL_UPDATE
	options   map[string]string
	// droppedEnd: "partition/bucket" -> the bucket's end offset when the randomized test dropped
	// its partition (a bucket written again starts there).
	droppedEnd map[string]int64
}

func (t *tdef) spec(db string) *setatspb.TableSpec {
	s := &setatspb.TableSpec{Database: db, Table: t.name, PartitionKeys: t.partKeys, BucketCount: t.buckets,
		MergeEngine: t.engine, Options: t.options, BucketKey: t.bucketKey}
	for _, c := range t.cols {
		s.Columns = append(s.Columns, &setatspb.Column{Name: c.Name, Type: c.Type, NotNull: c.Key})
		if c.Key {
			s.PrimaryKey = append(s.PrimaryKey, c.Name)
		}
	}
	return s
}

func (t *tdef) colIndex(name string) int {
	for i, c := range t.cols {
		if c.Name == name {
			return i
		}
	}
	panic("no column " + name)
}

func (t *tdef) pkIdx() []int {
	var out []int
	for i, c := range t.cols {
		if c.Key {
			out = append(out, i)
		}
	}
	return out
}

// bucketKeyIdx is the bucket key's columns: the declared bucket key, else the default (primary
// key minus partition keys, in primary-key order).
func (t *tdef) bucketKeyIdx() []int {
	var out []int
	if len(t.bucketKey) > 0 {
		for _, n := range t.bucketKey {
			out = append(out, t.colIndex(n))
		}
		return out
	}
	for _, i := range t.pkIdx() {
		if !slices.Contains(t.partKeys, t.cols[i].Name) {
			out = append(out, i)
		}
	}
	return out
}

func (t *tdef) keyOf(row []any) string {
	var parts []string
	for _, i := range t.pkIdx() {
		parts = append(parts, FormatValue(row[i]))
	}
	return strings.Join(parts, ",")
}

func (t *tdef) option(k string) bool { return strings.EqualFold(t.options[k], "true") }

func (t *tdef) partial() bool { return strings.EqualFold(t.engine, "PARTIAL_UPDATE") }

// location is the (partition, bucket) of a row per proto/README.md.
func (t *tdef) location(row []any) (string, int32) {
	var parts []string
	for _, pk := range t.partKeys {
		parts = append(parts, pk+"="+escapePartValue(partString(row[t.colIndex(pk)])))
	}
	var kb []byte
	for _, i := range t.bucketKeyIdx() {
		kb = appendKeyBytes(kb, row[i])
	}
	h := murmur3.SeedSum32(0, kb)
	return strings.Join(parts, "/"), int32((h & 0x7fffffff) % uint32(t.buckets))
}

func partString(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	return fmt.Sprint(v)
}

// escapePartValue escapes %, /, = and control characters as %XX (upper-case hex).
func escapePartValue(s string) string {
	var sb strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '%' || c == '/' || c == '=' || c < 0x20 || c == 0x7f {
			fmt.Fprintf(&sb, "%%%02X", c)
		} else {
			sb.WriteByte(c)
		}
	}
	return sb.String()
}

func appendKeyBytes(b []byte, v any) []byte {
	switch x := v.(type) {
	case int32:
		return binary.LittleEndian.AppendUint64(b, uint64(int64(x)))
	case int64:
		return binary.LittleEndian.AppendUint64(b, uint64(x))
	case string:
		b = binary.LittleEndian.AppendUint32(b, uint32(len(x)))
		return append(b, x...)
	case bool:
		if x {
			return append(b, 1)
		}
		return append(b, 0)
	case float64:
		if x == 0 {
			x = 0
		}
		bits := math.Float64bits(x)
		if math.IsNaN(x) {
			bits = 0x7ff8000000000000
		}
		return binary.LittleEndian.AppendUint64(b, bits)
	}
	panic(fmt.Sprintf("key bytes of %T", v))
}

func valuesEqual(a, b []any) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// expChange is a changelog row the model expects, with the id of the batch that produced it.
type expChange struct {
	kind  int8
	vals  []any
	batch int
}

func (e expChange) String() string { return KindString(e.kind) + FormatValues(e.vals) }

// refModel is one table's reference state and expected per-key changelog.
type refModel struct {
	t     *tdef
	state map[string][]any
	log   map[string][]expChange
	// history of writes per key, for failure reports: "batch 3 [id,a]: +U(1,'x')".
	hist map[string][]string
}

func newModel(t *tdef) *refModel {
	return &refModel{t: t, state: map[string][]any{}, log: map[string][]expChange{}, hist: map[string][]string{}}
}

// apply writes one row (SPEC section 4). declared are column indexes (including the whole primary
// key), vals aligned with them. It returns the number of changelog rows the write produces.
func (m *refModel) apply(kind int8, declared []int, vals []any, batch int) int {
	t := m.t
	full := make([]any, len(t.cols))
	names := make([]string, len(declared))
	for j, ci := range declared {
		full[ci] = vals[j]
		names[j] = t.cols[ci].Name
	}
	key := t.keyOf(full)
	m.hist[key] = append(m.hist[key], fmt.Sprintf("batch %d [%s]: %s%s", batch, strings.Join(names, ","), KindString(kind), FormatValues(vals)))
	old, present := m.state[key]
	emit := func(k int8, row []any) {
		m.log[key] = append(m.log[key], expChange{kind: k, vals: slices.Clone(row), batch: batch})
	}
	switch kind {
	case KindUpdateBefore:
		return 0 // -U input is ignored by both engines
	case KindDelete:
		if t.option("ignore-delete") {
			return 0
		}
		if t.partial() && !t.option("partial-update.remove-record-on-delete") {
			panic("model: delete on a PARTIAL_UPDATE table without a delete option")
		}
		if !present {
			return 0
		}
		emit(KindDelete, old)
		delete(m.state, key)
		return 1
	}
	// +I and +U are upserts.
	next := make([]any, len(t.cols))
	if present {
		copy(next, old)
	}
	for j, ci := range declared {
		v := vals[j]
		if t.partial() && v == nil && !t.cols[ci].Key {
			continue
		}
		next[ci] = v
	}
	if !present {
		emit(KindInsert, next)
		m.state[key] = next
		return 1
	}
	if valuesEqual(next, old) {
		return 0
	}
	emit(KindUpdateBefore, old)
	emit(KindUpdateAfter, next)
	m.state[key] = next
	return 2
}

// dropPartition forgets every key of partition (its name, tdef.location): a dropped partition
// leaves no state and no changelog rows (drop-partition); a key written again starts with +I.
func (m *refModel) dropPartition(partition string) (keys int) {
	for key, log := range m.log {
		if part, _ := m.t.location(log[0].vals); part == partition {
			delete(m.log, key)
			delete(m.state, key)
			m.hist[key] = append(m.hist[key], "partition dropped")
			keys++
		}
	}
	return keys
}

// sortedKeys returns the model's keys with an expected changelog, sorted.
func (m *refModel) sortedKeys() []string {
	keys := make([]string, 0, len(m.log))
	for k := range m.log {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// caseText renders a failing key as a small case in the notation of shared/cases.
func (m *refModel) caseText(key string, got []ChangeRow) string {
	var sb strings.Builder
	t := m.t
	var cols []string
	for _, c := range t.cols {
		cols = append(cols, c.Name+" "+c.Type)
	}
	fmt.Fprintf(&sb, "table: %s; pk=%s", strings.Join(cols, ", "), strings.Join(t.spec("").PrimaryKey, ","))
	if len(t.partKeys) > 0 {
		fmt.Fprintf(&sb, "; partitioned by %s", strings.Join(t.partKeys, ","))
	}
	fmt.Fprintf(&sb, "; merge-engine=%s", t.engine)
	for k, v := range t.options {
		fmt.Fprintf(&sb, "; %s=%s", k, v)
	}
	sb.WriteString("\n")
	for _, h := range m.hist[key] {
		sb.WriteString("write " + h + "\n")
	}
	var exp, act []string
	for _, e := range m.log[key] {
		exp = append(exp, e.String())
	}
	for _, r := range got {
		act = append(act, KindString(r.Kind)+FormatValues(r.Values))
	}
	fmt.Fprintf(&sb, "expect changelog: %s\ngot changelog:    %s\n", strings.Join(exp, " "), strings.Join(act, " "))
	if st, ok := m.state[key]; ok {
		fmt.Fprintf(&sb, "expect table: %s\n", FormatValues(st))
	} else {
		sb.WriteString("expect table: (none)\n")
	}
	return sb.String()
}

// foldRow is one row of an exactly-once commit for applyFolded.
type foldRow struct {
	kind int8
	vals []any
}

// applyFolded applies the rows of an exactly-once commit (SPEC section 10, proto/README.md
// "Exactly-once staging"): each key's rows are merged in order from the stored row, and the key
// gets one change from the stored row to the result (+I, -U/+U, -D or nothing). It returns the
// number of changelog rows.
func (m *refModel) applyFolded(declared []int, rows []foldRow, batch int) int {
	type before struct {
		row     []any
		present bool
		logLen  int
	}
	orig := map[string]before{}
	var order []string
	for _, r := range rows {
		full := make([]any, len(m.t.cols))
		for j, ci := range declared {
			full[ci] = r.vals[j]
		}
		key := m.t.keyOf(full)
		if _, ok := orig[key]; !ok {
			old, present := m.state[key]
			orig[key] = before{row: old, present: present, logLen: len(m.log[key])}
			order = append(order, key)
		}
		m.apply(r.kind, declared, r.vals, batch)
	}
	n := 0
	for _, key := range order {
		o := orig[key]
		m.log[key] = m.log[key][:o.logLen]
		if len(m.log[key]) == 0 {
			delete(m.log, key)
		}
		cur, present := m.state[key]
		emit := func(k int8, row []any) {
			m.log[key] = append(m.log[key], expChange{kind: k, vals: slices.Clone(row), batch: batch})
			n++
		}
		switch {
		case !o.present && present:
			emit(KindInsert, cur)
		case o.present && !present:
			emit(KindDelete, o.row)
		case o.present && present && !valuesEqual(o.row, cur):
			emit(KindUpdateBefore, o.row)
			emit(KindUpdateAfter, cur)
		}
	}
	return n
}
