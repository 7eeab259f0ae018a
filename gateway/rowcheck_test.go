package gateway

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"google.golang.org/grpc/codes"

	"github.com/setats/setats/proto/setatspb"
)

// errStopRead ends a DoGet read from its callback.
var errStopRead = errors.New("stop reading")

// TestPoisonRow: a row larger than a quarter of --max-message-bytes is refused with
// InvalidArgument naming the table, the column and the sizes, and nothing of its batch is
// applied; the largest accepted row is read back through DoGet (follow and not), so no stored
// row can block its bucket (issue 7 item 5). Before the cap, a value just below the message
// limit was stored and its bucket could never be read past it.
func TestPoisonRow(t *testing.T) {
	const maxMsg = 4 << 20
	g := startGateway(t, func(o *Options) { o.MaxMessageBytes = maxMsg })
	limit := g.s.maxRowBytes()
	if limit != maxMsg/4 {
		t.Fatalf("row cap %d, want %d", limit, maxMsg/4)
	}
	g.createTable("db", "big", 1, idV, []string{"id"}, nil)
	desc := writeCmd(t, &setatspb.WriteCommand{Database: "db", Table: "big"})
	// A row (id INT, v STRING) counts 17 + 8*2 + len(v) bytes (row.RowBytes).
	largest := limit - 33
	put := func(ids []int32, vs []string) error {
		rec := intStrRecord(g.mem, nil, ids, vs)
		defer rec.Release()
		_, err := g.put(desc, rec)
		return err
	}
	if err := put([]int32{1}, []string{strings.Repeat("a", largest)}); err != nil {
		t.Fatalf("largest row refused: %v", err)
	}
	err := put([]int32{2, 3}, []string{"small", strings.Repeat("b", largest+1)})
	wantCode(t, err, codes.InvalidArgument, "db.big", "column v", strconv.Itoa(largest+1), strconv.Itoa(limit))

	// A partial update whose merged row grows over the cap is refused the same way.
	cols := []*setatspb.Column{col("id", "INT"), col("v", "STRING"), col("w", "STRING")}
	g.mustAction(ActionCreateTable, &setatspb.CreateTableRequest{Spec: &setatspb.TableSpec{Database: "db", Table: "pu",
		Columns: cols, PrimaryKey: []string{"id"}, BucketCount: 1, MergeEngine: "PARTIAL_UPDATE"}}, nil)
	puDesc := writeCmd(t, &setatspb.WriteCommand{Database: "db", Table: "pu"})
	half := strings.Repeat("h", limit/2)
	for i, name := range []string{"v", "w"} {
		b := array.NewRecordBuilder(g.mem, arrow.NewSchema([]arrow.Field{fID, {Name: name, Type: arrow.BinaryTypes.String, Nullable: true}}, nil))
		b.Field(0).(*array.Int32Builder).Append(7)
		b.Field(1).(*array.StringBuilder).Append(half)
		rec := b.NewRecordBatch()
		b.Release()
		_, err := g.put(puDesc, rec)
		rec.Release()
		if i == 0 && err != nil {
			t.Fatal(err)
		}
		if i == 1 {
			wantCode(t, err, codes.InvalidArgument, "db.pu", "column", "bytes")
		}
	}

	// Nothing of the refused batch was applied: only key 1, at offset 0.
	for _, follow := range []bool{false, true} {
		var got []string
		var sizes []int
		tk := &setatspb.ChangelogTicket{Database: "db", Table: "big", Bucket: 0, Follow: follow}
		ctx, cancel := context.WithCancel(g.ctx)
		err := g.fc.DoGet(ctx, tk, func(_ *arrow.Schema, rec arrow.RecordBatch) error {
			for i := 0; i < int(rec.NumRows()); i++ {
				got = append(got, rec.Column(3).ValueStr(i))
				sizes = append(sizes, len(rec.Column(4).(*array.String).Value(i)))
			}
			if follow && len(got) > 0 {
				return errStopRead
			}
			return nil
		})
		cancel()
		if err != nil && err != errStopRead {
			t.Fatalf("follow=%v: %v", follow, err)
		}
		if len(got) != 1 || got[0] != "1" || sizes[0] != largest {
			t.Fatalf("follow=%v: rows %v of sizes %v, want key 1 of %d bytes", follow, got, sizes, largest)
		}
	}
}

// TestNotNullColumn: a new key written without a NOT NULL column (a sink declaring a subset of
// the columns) is refused with InvalidArgument naming the column, nothing of its batch applied,
// for every merge engine; once a stored row supplies the value, such partial writes are fine,
// and reads never serve a null in the column the read schema marks non-nullable (issue 7 item 6).
func TestNotNullColumn(t *testing.T) {
	g := startGateway(t, nil)
	cols := []*setatspb.Column{col("id", "INT"), col("a", "STRING NOT NULL"), col("b", "STRING")}
	fA := arrow.Field{Name: "a", Type: arrow.BinaryTypes.String}
	fB := arrow.Field{Name: "b", Type: arrow.BinaryTypes.String, Nullable: true}
	for _, engine := range []string{"DEDUPLICATE", "PARTIAL_UPDATE"} {
		t.Run(engine, func(t *testing.T) {
			name := strings.ToLower(engine)
			g.mustAction(ActionCreateTable, &setatspb.CreateTableRequest{Spec: &setatspb.TableSpec{Database: "db", Table: name,
				Columns: cols, PrimaryKey: []string{"id"}, BucketCount: 1, MergeEngine: engine}, CreateDatabase: true}, nil)
			desc := writeCmd(t, &setatspb.WriteCommand{Database: "db", Table: name})
			put := func(fields []arrow.Field, cols ...any) error {
				rec := recordOf(g.mem, fields, cols...)
				defer rec.Release()
				_, err := g.put(desc, rec)
				return err
			}
			// New keys 1 and 2 without a: refused, naming a; nothing applied.
			err := put([]arrow.Field{fID, fB}, []int32{1, 2}, []string{"x", "y"})
			wantCode(t, err, codes.InvalidArgument, "db."+name, "column a", "NOT NULL")
			// A full row for key 1 and a partial one for new key 3 in one batch: refused whole.
			err = put([]arrow.Field{fID, fA, fB}, []int32{1}, []string{"a1"}, []string{"b1"})
			if err != nil {
				t.Fatal(err)
			}
			err = put([]arrow.Field{fID, fB}, []int32{1, 3}, []string{"b1'", "b3"})
			wantCode(t, err, codes.InvalidArgument, "column a")
			// Key 1 is stored: a partial write of it keeps a.
			if err := put([]arrow.Field{fID, fB}, []int32{1}, []string{"b1''"}); err != nil {
				t.Fatal(err)
			}
			rows, err := g.readStream(ticket(t, &setatspb.ChangelogTicket{Database: "db", Table: name, Bucket: 0}))
			if err != nil {
				t.Fatal(err)
			}
			want := []string{"+I[1, a1, b1] @0", "-U[1, a1, b1] @1", "+U[1, a1, b1''] @2"}
			if len(rows) != len(want) {
				t.Fatalf("changelog %v, want %v", rows, want)
			}
			for i := range want {
				if !strings.HasPrefix(rows[i], want[i]) {
					t.Fatalf("changelog %v, want %v", rows, want)
				}
			}
		})
	}
}
