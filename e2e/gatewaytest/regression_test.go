package gatewaytest

import (
	"context"
	"slices"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// regWrite is one DoPut stream of a regression case: declared columns (nil = all), and rows.
type regWrite struct {
	cols     []string
	noKind   bool // no `_row_kind` column: every row an upsert
	rows     []WriteRow
	batches  [][]WriteRow // several batches on one stream (rows ignored when set)
	wantCode codes.Code   // expected error code (OK = success)
	wantMsg  []string     // substrings the error message must contain
}

// regCase is a small case in the notation of shared/cases, run through Flight against the binary.
type regCase struct {
	name          string
	t             *tdef
	writes        []regWrite
	wantChangelog string // rows a reader from earliest gets, in bucket order, space separated
	wantTable     []string
}

// caseGateway starts one gateway binary for the cases of a test and dials it.
func caseGateway(t *testing.T) (*Client, context.Context) {
	return dial(t, testGateway(t)), testCtx(t)
}

func r(kind int8, vals ...any) WriteRow { return WriteRow{Kind: kind, Values: vals} }

func oneBucket(name, engine string, opts map[string]string, cols ...Col) *tdef {
	return &tdef{name: name, buckets: 1, engine: engine, options: opts, cols: cols}
}

var (
	idInt = Col{Name: "id", Type: "INT", Key: true}
	vStr  = Col{Name: "v", Type: "STRING"}
	aStr  = Col{Name: "a", Type: "STRING"}
	bStr  = Col{Name: "b", Type: "STRING"}
)

// regressionCases are shared/cases/merge-cases.txt at the Flight level, plus the failures the
// randomized and crash tests found (each with its expected value from SPEC section 4). A case
// whose table names no merge engine (M3, M11, M12) creates it with none: the default.
func regressionCases() []regCase {
	intCol := func(n string) Col { return Col{Name: n, Type: "INT"} }
	return []regCase{
		{name: "M1", t: oneBucket("m1", "DEDUPLICATE", nil, idInt, vStr), writes: []regWrite{
			{rows: []WriteRow{r(KindInsert, int32(1), "a")}}, {rows: []WriteRow{r(KindUpdateAfter, int32(1), "b")}}, {rows: []WriteRow{r(KindDelete, int32(1), "b")}}},
			wantChangelog: "+I(1,'a') -U(1,'a') +U(1,'b') -D(1,'b')"},
		{name: "M2", t: oneBucket("m2", "DEDUPLICATE", nil, idInt, vStr), writes: []regWrite{
			{rows: []WriteRow{r(KindInsert, int32(1), "a")}}, {rows: []WriteRow{r(KindUpdateAfter, int32(1), "a")}}},
			wantChangelog: "+I(1,'a')", wantTable: []string{"(1,'a')"}},
		{name: "M3", t: oneBucket("m3", "", nil, idInt, vStr), writes: []regWrite{
			{rows: []WriteRow{r(KindDelete, int32(7), "x")}}}},
		{name: "M4", t: oneBucket("m4", "PARTIAL_UPDATE", nil, idInt, aStr, bStr), writes: []regWrite{
			{rows: []WriteRow{r(KindInsert, int32(1), "a1", nil)}}, {rows: []WriteRow{r(KindInsert, int32(1), nil, "b1")}}, {rows: []WriteRow{r(KindInsert, int32(1), "a2", nil)}}},
			wantChangelog: "+I(1,'a1',null) -U(1,'a1',null) +U(1,'a1','b1') -U(1,'a1','b1') +U(1,'a2','b1')", wantTable: []string{"(1,'a2','b1')"}},
		{name: "M5", t: oneBucket("m5", "DEDUPLICATE", nil, idInt, aStr, bStr), writes: []regWrite{
			{cols: []string{"id", "a"}, rows: []WriteRow{r(KindInsert, int32(1), "a1")}},
			{cols: []string{"id", "b"}, rows: []WriteRow{r(KindInsert, int32(1), "b1")}},
			{cols: []string{"id", "a"}, rows: []WriteRow{r(KindInsert, int32(1), nil)}}},
			wantChangelog: "+I(1,'a1',null) -U(1,'a1',null) +U(1,'a1','b1') -U(1,'a1','b1') +U(1,null,'b1')", wantTable: []string{"(1,null,'b1')"}},
		{name: "M6", t: oneBucket("m6", "PARTIAL_UPDATE", nil, idInt, intCol("age"), Col{Name: "active", Type: "BOOLEAN"}), writes: []regWrite{
			{cols: []string{"id", "age"}, rows: []WriteRow{r(KindInsert, int32(5), int32(30))}}},
			wantChangelog: "+I(5,30,null)", wantTable: []string{"(5,30,null)"}},
		{name: "M7", t: oneBucket("m7", "PARTIAL_UPDATE", nil, idInt, aStr), writes: []regWrite{
			{rows: []WriteRow{r(KindInsert, int32(1), "a")}},
			{rows: []WriteRow{r(KindDelete, int32(1), "a")}, wantCode: codes.Unknown, wantMsg: []string{"ignore-delete", "partial-update.remove-record-on-delete"}}},
			wantChangelog: "+I(1,'a')", wantTable: []string{"(1,'a')"}},
		{name: "M8", t: oneBucket("m8", "PARTIAL_UPDATE", map[string]string{"ignore-delete": "true"}, idInt, aStr), writes: []regWrite{
			{rows: []WriteRow{r(KindInsert, int32(1), "a")}}, {rows: []WriteRow{r(KindDelete, int32(1), "a")}}},
			wantChangelog: "+I(1,'a')", wantTable: []string{"(1,'a')"}},
		{name: "M9", t: oneBucket("m9", "PARTIAL_UPDATE", map[string]string{"partial-update.remove-record-on-delete": "true"}, idInt, intCol("a"), intCol("b"), intCol("c")), writes: []regWrite{
			{rows: []WriteRow{r(KindInsert, int32(1), int32(1), int32(1), int32(1))}},
			{rows: []WriteRow{r(KindDelete, int32(1), nil, nil, nil)}},
			{rows: []WriteRow{r(KindInsert, int32(1), int32(1), int32(2), int32(2))}}},
			wantChangelog: "+I(1,1,1,1) -D(1,1,1,1) +I(1,1,2,2)", wantTable: []string{"(1,1,2,2)"}},
		{name: "M10", t: oneBucket("m10", "PARTIAL_UPDATE", map[string]string{"partial-update.remove-record-on-delete": "true"}, idInt, aStr, intCol("flag")), writes: []regWrite{
			{rows: []WriteRow{r(KindInsert, int32(12), "x", int32(0))}}, {rows: []WriteRow{r(KindUpdateBefore, int32(12), "x", int32(0))}}},
			wantChangelog: "+I(12,'x',0)", wantTable: []string{"(12,'x',0)"}},
		{name: "M11", t: oneBucket("m11", "", nil, idInt, vStr), writes: []regWrite{
			{rows: []WriteRow{r(KindInsert, int32(1), "a"), r(KindInsert, nil, "b")}, wantCode: codes.InvalidArgument, wantMsg: []string{`column "id"`, "null"}}}},
		{name: "M12", t: oneBucket("m12", "", nil, idInt, intCol("v")), writes: []regWrite{
			{rows: []WriteRow{r(KindInsert, int32(1), int32(1)), r(KindInsert, int32(2), int32(1)), r(KindUpdateAfter, int32(1), int32(2)), r(KindUpdateAfter, int32(2), int32(2)), r(KindUpdateAfter, int32(1), int32(3))}}},
			wantChangelog: "+I(1,1) +I(2,1) -U(1,1) +U(1,2) -U(2,1) +U(2,2) -U(1,2) +U(1,3)", wantTable: []string{"(1,3)", "(2,2)"}},
	}
}

// TestRegressionCases runs each case on its own table of one gateway and checks the changelog read
// from earliest, its fold (the table), the contract rules of checkChangelog and the errors.
func TestRegressionCases(t *testing.T) {
	c, ctx := caseGateway(t)
	for _, tc := range regressionCases() {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := c.CreateTable(ctx, tc.t.spec(e2eDB)); err != nil {
				t.Fatalf("create-table: %v", err)
			}
			for wi, w := range tc.writes {
				cols := tc.t.cols
				if w.cols != nil {
					cols = nil
					for _, n := range w.cols {
						cols = append(cols, tc.t.cols[tc.t.colIndex(n)])
					}
				}
				if w.wantCode == codes.InvalidArgument {
					// Send keys as nullable fields so that a null key reaches the gateway.
					cols = slices.Clone(cols)
					for i := range cols {
						cols[i].Key = false
					}
				}
				batches := w.batches
				if batches == nil {
					batches = [][]WriteRow{w.rows}
				}
				_, err := c.Put(ctx, e2eDB, tc.t.name, cols, !w.noKind, batches)
				switch {
				case len(w.wantMsg) == 0 && err != nil:
					t.Fatalf("write %d: %v", wi, err)
				case len(w.wantMsg) > 0 && err == nil:
					t.Fatalf("write %d: no error, want one naming %v", wi, w.wantMsg)
				case len(w.wantMsg) > 0:
					st, _ := status.FromError(err)
					if w.wantCode != codes.Unknown && st.Code() != w.wantCode {
						t.Errorf("write %d: code %s, want %s (%v)", wi, st.Code(), w.wantCode, err)
					}
					for _, m := range w.wantMsg {
						if !strings.Contains(st.Message(), m) {
							t.Errorf("write %d: error %q does not name %q", wi, st.Message(), m)
						}
					}
				}
			}
			read, err := readTable(ctx, c, e2eDB, tc.t)
			if err != nil {
				t.Fatal(err)
			}
			var p problems
			fold, _ := checkChangelog(tc.t, read, &p)
			if !p.empty() {
				t.Errorf("contract rules:\n%s", p.String())
			}
			var got []string
			for _, b := range read.buckets {
				for _, row := range b.log.Rows {
					got = append(got, KindString(row.Kind)+FormatValues(row.Values))
				}
			}
			if g := strings.Join(got, " "); g != tc.wantChangelog {
				t.Errorf("changelog:\n got  %s\n want %s", g, tc.wantChangelog)
			}
			var table []string
			for _, row := range fold {
				table = append(table, FormatValues(row))
			}
			slices.Sort(table)
			if !slices.Equal(table, tc.wantTable) {
				t.Errorf("table (fold of the changelog): got %v, want %v", table, tc.wantTable)
			}
		})
	}
}
