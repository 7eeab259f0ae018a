package gateway

import (
	"testing"

	"github.com/setats/setats/proto/setatspb"
	"google.golang.org/grpc/codes"
)

// TestTicketTableIDAfterRecreate: a ticket from GetFlightInfo names the table id, so a reader that
// resumes after the table was dropped and re-created gets NotFound naming both ids instead of
// silently reading the new table from an offset of the old one (SPEC section 5: rows are never
// skipped silently). A ticket without table_id still reads the new table.
func TestTicketTableIDAfterRecreate(t *testing.T) {
	g := startGateway(t, nil)
	cols := []*setatspb.Column{col("id", "INT"), col("v", "STRING")}
	old := g.createTable("db", "t", 1, cols, []string{"id"}, nil)
	desc := writeCmd(t, &setatspb.WriteCommand{Database: "db", Table: "t"})
	rec := intStrRecord(g.mem, []int8{0, 0}, []int32{1, 2}, []string{"a", "b"})
	if _, err := g.put(desc, rec); err != nil {
		t.Fatal(err)
	}
	rec.Release()

	oldTicket := &setatspb.ChangelogTicket{Database: "db", Table: "t", Bucket: 0,
		Start: &setatspb.ChangelogTicket_Offset{Offset: 2}, TableId: old.GetTableId()}
	if rows, err := g.readStream(ticket(t, oldTicket)); err != nil || len(rows) != 0 {
		t.Fatalf("old ticket before drop: %v %v", rows, err)
	}

	g.mustAction(ActionDropTable, &setatspb.TableRequest{Database: "db", Table: "t"}, &setatspb.Empty{})
	fresh := g.createTable("db", "t", 1, cols, []string{"id"}, nil)
	rec = intStrRecord(g.mem, []int8{0, 0, 0}, []int32{7, 8, 9}, []string{"x", "y", "z"})
	if _, err := g.put(desc, rec); err != nil {
		t.Fatal(err)
	}
	rec.Release()

	_, err := g.readStream(ticket(t, oldTicket))
	wantCode(t, err, codes.NotFound, "db.t", old.GetTableId(), fresh.GetTableId())

	oldTicket.TableId = ""
	rows, err := g.readStream(ticket(t, oldTicket))
	if err != nil || len(rows) != 1 {
		t.Fatalf("ticket without table id reads the new table from offset 2: %v %v", rows, err)
	}
}
