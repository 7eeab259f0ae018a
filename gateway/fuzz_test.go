package gateway

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/flight"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/setats/setats/internal/fuzzcorpus"
	"github.com/setats/setats/proto/setatspb"
)

// fuzzCallTimeout bounds one fuzzed call (a following DoGet or a watch runs until it); a call that
// ends by it is a valid outcome, not a failure.
const fuzzCallTimeout = 2 * time.Second

// checkRefusal fails on the outcomes no client input may cause: Internal, Unknown or DataLoss,
// Go runtime panic text, or a message over about 1 KiB.
func checkRefusal(t *testing.T, what string, err error) {
	t.Helper()
	if err == nil || errors.Is(err, io.EOF) {
		return
	}
	st := status.Convert(err)
	switch st.Code() {
	case codes.Internal, codes.Unknown, codes.DataLoss:
		t.Fatalf("%s: code %s: %s", what, st.Code(), st.Message())
	}
	if m := st.Message(); strings.Contains(m, "runtime error") || strings.Contains(m, "goroutine ") || len(m) > 1200 {
		t.Fatalf("%s: message of %d bytes: %.300s", what, len(m), m)
	}
}

// FuzzDoPut sends a schema message and a record batch message (header, body) in one DoPut to a
// gateway on loopback, through the IPC guard and the decoder: the call succeeds or is refused
// with a client error code (checkRefusal), allocates at most 64 MiB in the process, and the
// gateway still serves. Seeds: honest messages (testdata/fuzz/FuzzDoPut holds more).
func FuzzDoPut(f *testing.F) {
	g := startGateway(f, nil)
	g.createTable("default", "f", 2, idV, []string{"id"}, nil)
	desc := writeCmd(f, &setatspb.WriteCommand{Table: "f"})
	rec := intStrRecord(g.mem, []int8{0, 2, 3}, []int32{1, 2, 1}, []string{"a", "bb", ""})
	base := encodeFlightData(f, g.mem, desc, rec)
	rec.Release()
	seeds := map[string][3][]byte{
		"seed-honest":          {base[0].DataHeader, base[1].DataHeader, base[1].DataBody},
		"seed-schema-only":     {schemaMessage(1), nil, nil},
		"seed-schema-bomb":     {schemaMessage(1 << 31), nil, nil},
		"seed-batch-as-schema": {base[1].DataHeader, base[1].DataHeader, base[1].DataBody},
	}
	for name, s := range seeds {
		f.Add(s[0], s[1], s[2])
		if fuzzcorpus.Enabled() {
			if err := fuzzcorpus.Write(".", "FuzzDoPut", name, s[0], s[1], s[2]); err != nil {
				f.Fatal(err)
			}
		}
	}
	f.Fuzz(func(t *testing.T, schema, batch, body []byte) {
		before := heapAllocated()
		msgs := []*flight.FlightData{{FlightDescriptor: desc, DataHeader: schema}, {DataHeader: batch, DataBody: body}}
		ctx, cancel := context.WithTimeout(context.Background(), fuzzCallTimeout)
		defer cancel()
		err := putRawCtx(ctx, g, msgs)
		if grown := heapAllocated() - before; grown > 64<<20 {
			t.Fatalf("the DoPut allocated %d MiB (%v)", grown>>20, err)
		}
		checkRefusal(t, "DoPut", err)
	})
}

// putRawCtx is putRaw with its own context.
func putRawCtx(ctx context.Context, g *testGateway, msgs []*flight.FlightData) error {
	stream, err := g.client.DoPut(ctx)
	if err != nil {
		return err
	}
	for _, m := range msgs {
		if err := stream.Send(m); err != nil {
			break
		}
	}
	_ = stream.CloseSend()
	for {
		if _, err := stream.Recv(); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
	}
}

// fuzzRequests are the Flight requests FuzzRequests drives with a fuzzed payload: every action
// type (the body), GetFlightInfo (the CMD descriptor), DoGet (the ticket) and DoPut (the CMD
// descriptor of a WriteCommand, with an honest batch).
var fuzzRequests = []string{ActionGatewayInfo, ActionCreateDatabase, ActionDropDatabase, ActionListDatabases,
	ActionCreateTable, ActionDropTable, ActionGetTable, ActionListTables, ActionListBuckets, ActionLookupOffsets,
	ActionWatch, "GetFlightInfo", "DoGet", "DoPut"}

// FuzzRequests sends a fuzzed payload to one Flight command or action body decoder of a gateway on
// loopback (kind picks it, modulo len(fuzzRequests)): every outcome is a result or a client error
// (checkRefusal), and the gateway keeps serving. Seeds: a valid binary and JSON payload of each.
func FuzzRequests(f *testing.F) {
	g := startGateway(f, nil)
	g.createTable("default", "t", 2, idV, []string{"id"}, nil)
	bin := func(m proto.Message) []byte { b, _ := proto.Marshal(m); return b }
	seeds := map[string][][]byte{
		ActionCreateTable: {bin(&setatspb.CreateTableRequest{Spec: &setatspb.TableSpec{Table: "n", Columns: idV, PrimaryKey: []string{"id"}}}),
			[]byte(`{"spec": {"table": "j", "columns": [{"name": "id", "type": "INT"}], "primary_key": ["id"], "location": "x"}}`)},
		ActionGetTable:      {bin(&setatspb.TableRequest{Table: "t"}), []byte(`{"table": "t"}`)},
		ActionLookupOffsets: {bin(&setatspb.LookupOffsetsRequest{Table: "t"}), []byte(`{"table": "t", "start": "LATEST"}`)},
		ActionWatch:         {bin(&setatspb.WatchRequest{Table: "t"})},
		"GetFlightInfo":     {bin(&setatspb.ReadCommand{Table: "t"}), []byte(`{"table": "t", "follow": true}`)},
		"DoGet":             {bin(&setatspb.ChangelogTicket{Table: "t", Bucket: 1}), []byte(`{"table": "t", "offset": "-1"}`)},
		"DoPut":             {bin(&setatspb.WriteCommand{Table: "t"}), []byte(`{"table": "t"}`)},
	}
	for i, kind := range fuzzRequests {
		f.Add(uint8(i), []byte{})
		for j, s := range seeds[kind] {
			f.Add(uint8(i), s)
			if fuzzcorpus.Enabled() {
				if err := fuzzcorpus.Write(".", "FuzzRequests", fmt.Sprintf("seed-%s-%d", kind, j), uint8(i), s); err != nil {
					f.Fatal(err)
				}
			}
		}
	}
	rec := intStrRecord(g.mem, nil, []int32{1}, []string{"a"})
	batch := encodeFlightData(f, g.mem, writeCmd(f, &setatspb.WriteCommand{Table: "t"}), rec)
	rec.Release()
	f.Fuzz(func(t *testing.T, kind uint8, payload []byte) {
		k := fuzzRequests[int(kind)%len(fuzzRequests)]
		ctx, cancel := context.WithTimeout(context.Background(), fuzzCallTimeout)
		defer cancel()
		var err error
		switch k {
		case "GetFlightInfo":
			_, err = g.client.GetFlightInfo(ctx, &flight.FlightDescriptor{Type: flight.DescriptorCMD, Cmd: payload})
		case "DoGet":
			var stream flight.FlightService_DoGetClient
			if stream, err = g.client.DoGet(ctx, &flight.Ticket{Ticket: payload}); err == nil {
				for err == nil {
					_, err = stream.Recv()
				}
			}
		case "DoPut":
			msgs := []*flight.FlightData{cloneFD(batch[0]), cloneFD(batch[1])}
			msgs[0].FlightDescriptor = &flight.FlightDescriptor{Type: flight.DescriptorCMD, Cmd: payload}
			err = putRawCtx(ctx, g, msgs)
		default:
			var stream flight.FlightService_DoActionClient
			if stream, err = g.client.DoAction(ctx, &flight.Action{Type: k, Body: payload}); err == nil {
				for err == nil {
					_, err = stream.Recv()
				}
			}
		}
		if status.Code(err) == codes.DeadlineExceeded {
			return // a following read or a watch, ended by the call's deadline
		}
		checkRefusal(t, k, err)
	})
}
