package gateway

import (
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/setats/setats/internal/flighttest"
	"github.com/setats/setats/proto/setatspb"
)

// TestLookupExchangePrefixCap: the 65,536-row cap of a prefix lookup is per request over all its
// buckets. Prefixes u=1 (16 rows) and u=2 (17 rows): 4096 keys u=1 matching exactly 65,536 rows
// are answered in full; 4096 keys with two of them u=2 (65,538 rows) are ResourceExhausted naming
// the request and the cap (before the fix the message named what was left of the cap in
// the last bucket read and the key's position in that bucket).
func TestLookupExchangePrefixCap(t *testing.T) {
	g := startGateway(t, nil)
	g.mustAction(ActionCreateTable, &setatspb.CreateTableRequest{
		Spec: &setatspb.TableSpec{Database: "default", Table: "cap",
			Columns:    []*setatspb.Column{col("u", "INT"), col("s", "INT"), col("v", "STRING")},
			PrimaryKey: []string{"u", "s"}, BucketKey: []string{"u"}, BucketCount: 4},
	}, &setatspb.TableInfo{})
	cols := []flighttest.Col{{Name: "u", Type: "INT", Key: true}, {Name: "s", Type: "INT", Key: true}, {Name: "v", Type: "STRING"}}
	var rows []flighttest.WriteRow
	for u, n := range map[int32]int32{1: 16, 2: 17} {
		for s := range n {
			rows = append(rows, flighttest.WriteRow{Values: []any{u, s, "x"}})
		}
	}
	if _, err := g.fc.Put(g.ctx, "default", "cap", cols, false, [][]flighttest.WriteRow{rows}); err != nil {
		t.Fatal(err)
	}
	cmd := &setatspb.LookupCommand{Table: "cap", Columns: []string{"s"}, Prefix: true}
	key := []flighttest.Col{{Name: "u", Type: "INT", Key: true}}
	exact := make([][]any, 0, MaxLookupKeys)
	for range MaxLookupKeys {
		exact = append(exact, []any{int32(1)})
	}
	got, err := g.fc.Lookup(g.ctx, cmd, key, exact)
	if err != nil || len(got) != 1 || len(got[0]) != MaxLookupRows {
		t.Fatalf("4096 keys matching 65536 rows: %d answers, %v", len(got), err)
	}
	over := append(exact[:MaxLookupKeys-1:MaxLookupKeys-1], []any{int32(2)})
	over[0] = []any{int32(2)}
	_, err = g.fc.Lookup(g.ctx, cmd, key, over)
	st, _ := status.FromError(err)
	if st.Code() != codes.ResourceExhausted || !strings.Contains(st.Message(), "lookup request 0: its 4096 keys match more than 65536 rows") {
		t.Fatalf("4096 keys matching %d rows: %v, want ResourceExhausted naming request 0 and the cap 65536", 4094*16+2*17, err)
	}
}
