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
