package merge

import (
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/cockroachdb/datadriven"
)

// TestDataDriven runs the files under testdata/. Commands:
//
//	table pk=(k1,...) [engine=NAME] [option=value ...]   body: one "name TYPE" per column
//	    starts a new empty table with one bucket; prints "ok" or the error of New.
//	write [cols=(c1,...)]                                 body: rows such as +I(1,'a',null)
//	    one write batch: values are given for cols (default: every column) in that order. The
//	    batch is checked first (row kind, value syntax, null primary key) and merged row by row
//	    in order; on any error nothing of the batch is applied. Prints the emitted changelog rows
//	    with their offsets (@N), "(none)", or "error: ..." with the gRPC code and message.
//	changelog                                            the whole changelog on one line, as the
//	    "expect changelog:" lines of /work/shared/cases/merge-cases.txt print it.
//	scan                                                 the stored rows ordered by primary key.
//
// Values: null, integers, floats (NaN, -0 accepted), true/false, 'text' (a doubled quote inside stands for one),
// x'hex' for BYTES, decimals as written (DECIMAL(p, s) columns). Rewrite with -rewrite.
func TestDataDriven(t *testing.T) {
	datadriven.Walk(t, "testdata", func(t *testing.T, path string) {
		h := &harness{}
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			return h.run(t, d)
		})
	})
}

// column is a test table column: its name and a type from the subset the harness parses.
type column struct {
	name      string
	typ       string // BOOLEAN, TINYINT, SMALLINT, INT, BIGINT, FLOAT, DOUBLE, STRING, BYTES, DECIMAL
	precision int32
	scale     int32
}

// harness is one table of one bucket: its stored rows and its changelog.
type harness struct {
	cols      []column
	pk        []int
	engine    Engine
	state     map[string]Row
	changelog []Change
}

func (h *harness) run(t *testing.T, d *datadriven.TestData) string {
	switch d.Cmd {
	case "table":
		return h.newTable(t, d)
	case "write":
		return h.write(t, d)
	case "changelog":
		if len(h.changelog) == 0 {
			return "(none)\n"
		}
		parts := make([]string, len(h.changelog))
		for i, c := range h.changelog {
			parts[i] = h.formatChange(c)
		}
		return strings.Join(parts, " ") + "\n"
	case "scan":
		rows := h.sortedRows()
		if len(rows) == 0 {
			return "(none)\n"
		}
		var b strings.Builder
		for _, r := range rows {
			b.WriteString(h.formatRow(r))
			b.WriteByte('\n')
		}
		return b.String()
	}
	d.Fatalf(t, "unknown command %q", d.Cmd)
	return ""
}

func (h *harness) newTable(t *testing.T, d *datadriven.TestData) string {
	*h = harness{state: map[string]Row{}}
	for _, line := range strings.Split(strings.TrimSpace(d.Input), "\n") {
		f := strings.Fields(line)
		if len(f) != 2 {
			d.Fatalf(t, "bad column line %q", line)
		}
		c := column{name: f[0], typ: strings.ToUpper(f[1])}
		if strings.HasPrefix(c.typ, "DECIMAL(") {
			var p, s int32
			if _, err := fmt.Sscanf(c.typ, "DECIMAL(%d,%d)", &p, &s); err != nil {
				d.Fatalf(t, "bad decimal type %q: %v", f[1], err)
			}
			c.typ, c.precision, c.scale = "DECIMAL", p, s
		}
		h.cols = append(h.cols, c)
	}
	engine := ""
	options := map[string]string{}
	for _, arg := range d.CmdArgs {
		switch arg.Key {
		case "pk":
			for _, name := range arg.Vals {
				h.pk = append(h.pk, h.columnIndex(t, d, name))
			}
		case "engine":
			engine = arg.SingleVal(t)
		default:
			options[arg.Key] = arg.SingleVal(t)
		}
	}
	if len(h.pk) == 0 {
		d.Fatalf(t, "table needs pk=")
	}
	e, err := New(engine, options)
	if err != nil {
		return formatError(err)
	}
	h.engine = e
	return "ok\n"
}

func (h *harness) columnIndex(t *testing.T, d *datadriven.TestData, name string) int {
	for i, c := range h.cols {
		if c.name == name {
			return i
		}
	}
	d.Fatalf(t, "unknown column %q", name)
	return -1
}

// write applies one batch atomically: parse and validate every row, merge them in order against
// an overlay of the state, and commit the overlay and the changelog rows only when all succeeded.
func (h *harness) write(t *testing.T, d *datadriven.TestData) string {
	if h.engine == nil {
		d.Fatalf(t, "write before a successful table command")
	}
	declared := make([]bool, len(h.cols))
	var order []int
	if d.HasArg("cols") {
		var arg datadriven.CmdArg
		for _, a := range d.CmdArgs {
			if a.Key == "cols" {
				arg = a
			}
		}
		for _, name := range arg.Vals {
			i := h.columnIndex(t, d, name)
			declared[i] = true
			order = append(order, i)
		}
	} else {
		for i := range h.cols {
			declared[i] = true
			order = append(order, i)
		}
	}
	type written struct {
		kind RowKind
		row  Row
	}
	var batch []written
	for _, line := range strings.Split(strings.TrimSpace(d.Input), "\n") {
		kind, vals, err := parseRowText(strings.TrimSpace(line))
		if err != nil {
			d.Fatalf(t, "%v", err)
		}
		if len(vals) != len(order) {
			d.Fatalf(t, "row %q has %d values, want %d", line, len(vals), len(order))
		}
		row := make(Row, len(h.cols))
		for j, tok := range vals {
			c := h.cols[order[j]]
			v, err := parseValue(c, tok)
			if err != nil {
				d.Fatalf(t, "column %s: %v", c.name, err)
			}
			row[order[j]] = v
		}
		// The batch-validation layer's job (SPEC section 3, case M11): a null key rejects the batch.
		for _, k := range h.pk {
			if !declared[k] {
				return formatError(errorf(ErrInvalid, "primary-key column %s not declared", h.cols[k].name))
			}
			if row[k] == nil {
				return formatError(errorf(ErrInvalid, "null value in primary-key column %s", h.cols[k].name))
			}
		}
		batch = append(batch, written{kind, row})
	}

	overlay := map[string]Row{}
	present := map[string]bool{}
	var out []Change
	for _, w := range batch {
		key := h.key(w.row)
		old, ok := overlay[key]
		if !present[key] {
			old, ok = h.state[key]
		}
		if !ok {
			old = nil
		}
		oldCopy, inCopy := slices.Clone(old), slices.Clone(w.row)
		n := len(out)
		next, got, err := h.engine.Merge(out, old, w.kind, w.row, declared)
		if !RowEqual(old, oldCopy) || !RowEqual(w.row, inCopy) {
			t.Fatalf("%s: Merge modified its input", d.Pos)
		}
		if err != nil {
			if len(got) != n || !RowEqual(next, old) {
				t.Fatalf("%s: Merge returned changes with an error", d.Pos)
			}
			return formatError(err)
		}
		out = got
		overlay[key], present[key] = next, true
	}
	for key, row := range overlay {
		if row == nil {
			delete(h.state, key)
		} else {
			h.state[key] = row
		}
	}
	if len(out) == 0 {
		return "(none)\n"
	}
	var b strings.Builder
	for _, c := range out {
		fmt.Fprintf(&b, "%s @%d\n", h.formatChange(c), len(h.changelog))
		h.changelog = append(h.changelog, c)
	}
	return b.String()
}

func (h *harness) key(r Row) string {
	parts := make([]string, len(h.pk))
	for i, k := range h.pk {
		parts[i] = h.formatValue(k, r[k])
	}
	return strings.Join(parts, "\x00")
}

func (h *harness) sortedRows() []Row {
	rows := make([]Row, 0, len(h.state))
	for _, r := range h.state {
		rows = append(rows, r)
	}
	slices.SortFunc(rows, func(a, b Row) int {
		for _, k := range h.pk {
			if c := compareValues(a[k], b[k]); c != 0 {
				return c
			}
		}
		return 0
	})
	return rows
}

func compareValues(a, b any) int {
	if ia, ok := asInt(a); ok {
		if ib, ok := asInt(b); ok {
			return cmpInt(ia, ib)
		}
	}
	return strings.Compare(fmt.Sprint(a), fmt.Sprint(b))
}

func cmpInt(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func asInt(v any) (int64, bool) {
	switch x := v.(type) {
	case int8:
		return int64(x), true
	case int16:
		return int64(x), true
	case int32:
		return int64(x), true
	case int64:
		return x, true
	}
	return 0, false
}

func (h *harness) formatChange(c Change) string {
	return c.Kind.String() + h.formatRow(c.Row)
}

func (h *harness) formatRow(r Row) string {
	parts := make([]string, len(r))
	for i, v := range r {
		parts[i] = h.formatValue(i, v)
	}
	return "(" + strings.Join(parts, ",") + ")"
}

func (h *harness) formatValue(col int, v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case string:
		return "'" + strings.ReplaceAll(x, "'", "''") + "'"
	case []byte:
		return "x'" + hex.EncodeToString(x) + "'"
	case decimal128.Num:
		return x.ToString(h.cols[col].scale)
	case float64:
		return strconv.FormatFloat(x, 'g', -1, 64)
	case float32:
		return strconv.FormatFloat(float64(x), 'g', -1, 32)
	}
	return fmt.Sprint(v)
}

func formatError(err error) string {
	kind := "Unknown"
	if errors.Is(err, ErrInvalid) {
		kind = "InvalidArgument" // the gRPC code the gateway answers with (gateway/errors.go)
	}
	return fmt.Sprintf("error: %s: %s\n", kind, err.Error())
}

// parseRowText splits "+I(1,'a,b',null)" into its kind and raw value tokens.
func parseRowText(s string) (RowKind, []string, error) {
	if len(s) < 4 || s[2] != '(' || s[len(s)-1] != ')' {
		return 0, nil, fmt.Errorf("bad row %q: want KIND(v1,...)", s)
	}
	kind, err := ParseRowKindString(s[:2])
	if err != nil {
		return 0, nil, err
	}
	body := s[3 : len(s)-1]
	var toks []string
	var cur strings.Builder
	inQuote := false
	for i := 0; i < len(body); i++ {
		c := body[i]
		switch {
		case inQuote && c == '\'' && i+1 < len(body) && body[i+1] == '\'':
			cur.WriteString("''")
			i++
		case c == '\'':
			inQuote = !inQuote
			cur.WriteByte(c)
		case c == ',' && !inQuote:
			toks = append(toks, strings.TrimSpace(cur.String()))
			cur.Reset()
		default:
			cur.WriteByte(c)
		}
	}
	if inQuote {
		return 0, nil, fmt.Errorf("bad row %q: unterminated quote", s)
	}
	toks = append(toks, strings.TrimSpace(cur.String()))
	return kind, toks, nil
}

// parseValue converts one token to the Go value of column c (proto/README.md type table).
func parseValue(c column, tok string) (any, error) {
	if strings.EqualFold(tok, "null") {
		return nil, nil
	}
	switch c.typ {
	case "BOOLEAN":
		return strconv.ParseBool(tok)
	case "TINYINT":
		v, err := strconv.ParseInt(tok, 10, 8)
		return int8(v), err
	case "SMALLINT":
		v, err := strconv.ParseInt(tok, 10, 16)
		return int16(v), err
	case "INT":
		v, err := strconv.ParseInt(tok, 10, 32)
		return int32(v), err
	case "BIGINT":
		return strconv.ParseInt(tok, 10, 64)
	case "FLOAT":
		v, err := strconv.ParseFloat(tok, 32)
		return float32(v), err
	case "DOUBLE":
		v, err := strconv.ParseFloat(tok, 64)
		return v, err
	case "DECIMAL":
		return decimal128.FromString(tok, c.precision, c.scale)
	case "STRING":
		if len(tok) < 2 || tok[0] != '\'' || tok[len(tok)-1] != '\'' {
			return nil, fmt.Errorf("want a quoted string, got %s", tok)
		}
		return strings.ReplaceAll(tok[1:len(tok)-1], "''", "'"), nil
	case "BYTES":
		if len(tok) < 3 || !strings.HasPrefix(tok, "x'") || tok[len(tok)-1] != '\'' {
			return nil, fmt.Errorf("want x'hex', got %s", tok)
		}
		return hex.DecodeString(tok[2 : len(tok)-1])
	}
	return nil, fmt.Errorf("unsupported test type %s", c.typ)
}
