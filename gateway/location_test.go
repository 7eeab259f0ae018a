package gateway

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"

	"github.com/setats/setats/proto/setatspb"
)

// TestTableLocationRefused: create-table and DoPut's create_if_absent refuse a location that
// does not resolve inside the warehouse, or that shares or nests with another table's, with
// InvalidArgument (AlreadyExists for a shared one) naming the location; nothing is created
// outside the warehouse (SPEC section 14, issue 7 item 3).
func TestTableLocationRefused(t *testing.T) {
	outside := t.TempDir()
	g := startGateway(t, nil)
	wh := g.s.opts.Warehouse
	if err := os.Symlink(outside, filepath.Join(wh, "escape")); err != nil {
		t.Fatal(err)
	}
	spec := func(name, loc string) *setatspb.TableSpec {
		return &setatspb.TableSpec{Database: "db", Table: name, Columns: []*setatspb.Column{col("id", "INT")},
			PrimaryKey: []string{"id"}, Location: loc}
	}
	g.mustAction(ActionCreateTable, &setatspb.CreateTableRequest{Spec: spec("first", "custom/first"), CreateDatabase: true}, nil)
	for _, tc := range []struct {
		loc     string
		code    codes.Code
		culprit string
	}{
		{outside, codes.InvalidArgument, "not inside the warehouse"},
		{"../../..", codes.InvalidArgument, "not inside the warehouse"},
		{"file:///", codes.InvalidArgument, "not inside the warehouse"},
		{"/proc/self/root/tmp", codes.InvalidArgument, "not inside the warehouse"},
		{"escape/t", codes.InvalidArgument, "resolves to"},
		{"\x00", codes.InvalidArgument, "NUL"},
		{"db.db/squatted", codes.InvalidArgument, "database directory"},
		{"custom/first", codes.AlreadyExists, "db.first"},
		{"custom/first/inner", codes.InvalidArgument, "db.first"},
		{"custom", codes.InvalidArgument, "db.first"},
		{"/" + strings.Repeat("a", 1<<20), codes.InvalidArgument, "bytes)"},
	} {
		err := g.action(ActionCreateTable, &setatspb.CreateTableRequest{Spec: spec("other", tc.loc), CreateDatabase: true}, nil)
		wantCode(t, err, tc.code, "location", tc.culprit)
		if n := len(err.Error()); n > 4096 {
			t.Errorf("location %.40q: error of %d bytes", tc.loc, n)
		}
		// The sink's auto-create goes the same way.
		rec := intRecord(g.mem, 1)
		_, err = g.put(writeCmd(t, &setatspb.WriteCommand{Database: "db", Table: "other", CreateIfAbsent: spec("other", tc.loc)}), rec)
		rec.Release()
		wantCode(t, err, tc.code, "location", tc.culprit)
	}
	if ents, _ := os.ReadDir(outside); len(ents) != 0 {
		t.Errorf("created outside the warehouse: %v", ents)
	}
	if _, err := os.Lstat(filepath.Join(wh, "db.db", "squatted")); err == nil {
		t.Error("db.db/squatted was created")
	}
	// Inside the warehouse is fine, and the table works.
	g.mustAction(ActionCreateTable, &setatspb.CreateTableRequest{Spec: spec("other", "custom/other")}, nil)
	rec := intRecord(g.mem, 1)
	defer rec.Release()
	if _, err := g.put(writeCmd(t, &setatspb.WriteCommand{Database: "db", Table: "other"}), rec); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(wh, "custom", "other", "data")); err != nil {
		t.Error(err)
	}
}
