package gateway

import (
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/flight"
	flatbuffers "github.com/google/flatbuffers/go"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/setats/setats/proto/setatspb"
)

// schemaMessage builds, by hand with the flatbuffers builder, the Arrow IPC Message of a schema
// of one field "id" Int32 whose fields vector claims claimed elements (1 for an honest schema):
// the ~284-byte schema bomb of issue 7 claims 2^31 fields, and arrow-go (unguarded) allocated a
// []arrow.Field of that length (~187 GB).
func schemaMessage(claimed int) []byte {
	b := flatbuffers.NewBuilder(256)
	name := b.CreateString("id")
	b.StartObject(2) // Int {bitWidth, is_signed}
	b.PrependInt32Slot(0, 32, 0)
	b.PrependBoolSlot(1, true, false)
	intType := b.EndObject()
	b.StartObject(7) // Field {name, nullable, type_type, type, dictionary, children, custom_metadata}
	b.PrependUOffsetTSlot(0, name, 0)
	b.PrependByteSlot(2, 2, 0) // Type.Int
	b.PrependUOffsetTSlot(3, intType, 0)
	field := b.EndObject()
	b.StartVector(4, 1, 4)
	b.PrependUOffsetT(field)
	fields := b.EndVector(claimed)
	b.StartObject(4) // Schema {endianness, fields, custom_metadata, features}
	b.PrependUOffsetTSlot(1, fields, 0)
	schema := b.EndObject()
	b.StartObject(5)            // Message {version, header_type, header, bodyLength, custom_metadata}
	b.PrependInt16Slot(0, 4, 0) // V5
	b.PrependByteSlot(1, 1, 0)  // MessageHeader.Schema
	b.PrependUOffsetTSlot(2, schema, 0)
	msg := b.EndObject()
	b.Finish(msg)
	return b.FinishedBytes()
}

// heapAllocated returns the bytes allocated on the Go heap so far (runtime.MemStats.TotalAlloc).
func heapAllocated() uint64 {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.TotalAlloc
}

// TestSchemaBomb: a DoPut whose schema message claims 2^31 fields (and variants claiming other
// counts) is refused with InvalidArgument naming the field count and the limit, before anything
// is allocated from it (the whole process, server and client, allocates less than 16 MiB per
// request), and the gateway keeps serving. Before the IPC guard, the 2^31 bomb killed the process
// with "fatal error: out of memory".
func TestSchemaBomb(t *testing.T) {
	g := startGateway(t, nil)
	g.createTable("default", "t", 1, idV, []string{"id"}, nil)
	desc := writeCmd(t, &setatspb.WriteCommand{Table: "t"})
	if honest := schemaMessage(1); len(honest) > 300 {
		t.Fatalf("honest schema message of %d bytes", len(honest))
	}
	for _, tc := range []struct {
		claimed int
		want    []string
	}{
		{1 << 31, []string{"field count 2147483648 > limit 4096"}},
		{1<<32 - 1, []string{"field count 4294967295 > limit 4096"}},
		{4096, []string{"vector of 4096 elements", "does not fit"}},
		{2, []string{"field 1", "malformed flatbuffer"}},
	} {
		t.Run(fmt.Sprint(tc.claimed), func(t *testing.T) {
			bomb := schemaMessage(tc.claimed)
			before := heapAllocated()
			err := g.putRaw([]*flight.FlightData{{FlightDescriptor: desc, DataHeader: bomb}})
			if grown := heapAllocated() - before; grown > 16<<20 {
				t.Errorf("a %d-byte DoPut allocated %d MiB", len(bomb), grown>>20)
			}
			wantCode(t, err, codes.InvalidArgument, append([]string{"DoPut", "schema message 0"}, tc.want...)...)
		})
	}
	// Still serving.
	rec := intStrRecord(g.mem, nil, []int32{1}, []string{"a"})
	defer rec.Release()
	if _, err := g.put(desc, rec); err != nil {
		t.Fatal(err)
	}
}

// TestOneByteVariants: every byte of an honest DoPut (schema and record batch messages) set to
// hostile values: each request is either accepted or refused with InvalidArgument, none
// allocates more than 16 MiB in the process, no error carries Go runtime panic text, and the
// gateway serves a good write afterwards. Before the IPC guard single-byte variants cost
// 82-698 MiB each.
func TestOneByteVariants(t *testing.T) {
	g := startGateway(t, nil)
	g.createTable("default", "v", 1, idV, []string{"id"}, nil)
	desc := writeCmd(t, &setatspb.WriteCommand{Table: "v"})
	rec := intStrRecord(g.mem, nil, []int32{1, 2, 3}, []string{"a", "bb", "ccc"})
	defer rec.Release()
	base := encodeFlightData(t, g.mem, desc, rec)
	parts := []struct {
		name string
		msg  int
		body bool
	}{{"schema header", 0, false}, {"batch header", 1, false}, {"batch body", 1, true}}
	n := 0
	for _, part := range parts {
		size := len(base[part.msg].DataHeader)
		if part.body {
			size = len(base[part.msg].DataBody)
		}
		for i := 0; i < size; i++ {
			for _, v := range []byte{0x00, 0x7f, 0xff} {
				msgs := []*flight.FlightData{cloneFD(base[0]), cloneFD(base[1])}
				b := msgs[part.msg].DataHeader
				if part.body {
					b = msgs[part.msg].DataBody
				}
				if b[i] == v {
					continue
				}
				b[i] = v
				n++
				before := heapAllocated()
				err := g.putRaw(msgs)
				if grown := heapAllocated() - before; grown > 16<<20 {
					t.Fatalf("%s byte %d = %#x: the request allocated %d MiB (%v)", part.name, i, v, grown>>20, err)
				}
				if err == nil {
					continue
				}
				msg := status.Convert(err).Message()
				if c := status.Code(err); c != codes.InvalidArgument && c != codes.NotFound {
					t.Fatalf("%s byte %d = %#x: code %s: %s", part.name, i, v, c, msg)
				}
				if strings.Contains(msg, "runtime error") || strings.Contains(msg, "goroutine") || strings.Contains(msg, "unknown error") {
					t.Fatalf("%s byte %d = %#x: panic text in %q", part.name, i, v, msg)
				}
			}
		}
	}
	t.Logf("%d variants", n)
	good := intStrRecord(g.mem, nil, []int32{9}, []string{"fine"})
	defer good.Release()
	if _, err := g.put(desc, good); err != nil {
		t.Fatal(err)
	}
}

func cloneFD(d *flight.FlightData) *flight.FlightData {
	return &flight.FlightData{
		FlightDescriptor: d.FlightDescriptor,
		DataHeader:       append([]byte(nil), d.DataHeader...),
		DataBody:         append([]byte(nil), d.DataBody...),
		AppMetadata:      d.AppMetadata,
	}
}

// TestBinarySchemaBomb: the built `setats serve` survives the schema bomb: the DoPut is refused
// with InvalidArgument, the process keeps serving writes and reads, and its peak RSS stays far
// below what the bomb asked for.
func TestBinarySchemaBomb(t *testing.T) {
	p := startBinary(t, nil, "--warehouse", t.TempDir())
	g := p.client(t)
	g.createTable("default", "t", 1, idV, []string{"id"}, nil)
	desc := writeCmd(t, &setatspb.WriteCommand{Table: "t"})
	for _, claimed := range []int{1 << 31, 1<<32 - 1, 1 << 20} {
		err := g.putRaw([]*flight.FlightData{{FlightDescriptor: desc, DataHeader: schemaMessage(claimed)}})
		wantCode(t, err, codes.InvalidArgument, "schema message 0")
	}
	rec := intStrRecord(g.mem, nil, []int32{1}, []string{"a"})
	defer rec.Release()
	if _, err := g.put(desc, rec); err != nil {
		t.Fatalf("write after the bombs: %v", err)
	}
	rows, err := g.readStream(ticket(t, &setatspb.ChangelogTicket{Table: "t"}))
	if err != nil || len(rows) != 1 {
		t.Fatalf("read after the bombs: %q %v", rows, err)
	}
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", p.cmd.Process.Pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(status), "\n") {
		if strings.HasPrefix(line, "VmHWM:") { // peak RSS, kB
			var kb int
			if _, err := fmt.Sscanf(strings.TrimSpace(strings.TrimPrefix(line, "VmHWM:")), "%d kB", &kb); err != nil {
				t.Fatal(err)
			}
			if kb > 1<<20 {
				t.Fatalf("peak RSS %d kB after the bombs", kb)
			}
			t.Logf("peak RSS %d MiB", kb>>10)
		}
	}
	if code := p.terminate(t); code != 0 {
		t.Fatalf("exit code %d after SIGTERM", code)
	}
}

// TestClearErrors: every refusal has the right code and names its culprit, truncated: a 1 MiB
// name comes back in a message of about 1 KiB, offset -1 is InvalidArgument (not "removed by
// retention"), and the Handshake ends OK without authentication.
func TestClearErrors(t *testing.T) {
	g := startGateway(t, nil)
	g.createTable("default", "t", 1, idV, []string{"id"}, nil)
	huge := strings.Repeat("n", 1<<20)
	short := func(t *testing.T, err error, code codes.Code, culprits ...string) {
		t.Helper()
		wantCode(t, err, code, culprits...)
		if msg := status.Convert(err).Message(); len(msg) > 1200 {
			t.Fatalf("message of %d bytes", len(msg))
		}
	}
	t.Run("1 MiB names", func(t *testing.T) {
		err := g.action(ActionGetTable, &setatspb.TableRequest{Table: huge}, nil)
		short(t, err, codes.InvalidArgument, "nnnn", "(1048576 bytes)")
		err = g.action(ActionGetTable, &setatspb.TableRequest{Database: huge, Table: "t"}, nil)
		short(t, err, codes.InvalidArgument, "nnnn", "(1048576 bytes)")
		err = g.rawAction(huge, nil, func([]byte) error { return nil })
		short(t, err, codes.InvalidArgument, "unknown action type", "(1048576 bytes)")
		_, err = g.readStream(ticket(t, &setatspb.ChangelogTicket{Table: huge}))
		short(t, err, codes.InvalidArgument, "(1048576 bytes)")
		_, err = g.client.GetFlightInfo(g.ctx, &flight.FlightDescriptor{Type: flight.DescriptorPATH, Path: []string{"default", huge}})
		short(t, err, codes.InvalidArgument, "(1048576 bytes)")
		err = g.action(ActionCreateTable, &setatspb.CreateTableRequest{Spec: &setatspb.TableSpec{Table: "c",
			Columns: []*setatspb.Column{col("id", "INT"), col(huge, "INT")}, PrimaryKey: []string{"id"}}}, nil)
		short(t, err, codes.InvalidArgument, "column", "(1048576 bytes)")
	})
	t.Run("negative offset", func(t *testing.T) {
		for _, follow := range []bool{false, true} {
			_, err := g.readStream(ticket(t, &setatspb.ChangelogTicket{Table: "t",
				Start: &setatspb.ChangelogTicket_Offset{Offset: -1}, Follow: follow}))
			short(t, err, codes.InvalidArgument, "default.t", "offset -1 is negative")
		}
	})
	t.Run("handshake", func(t *testing.T) {
		// Without --users-file the Handshake (gateway/authz.go) ends OK at once: no token, no
		// error (never Unknown "EOF").
		hs, err := g.client.Handshake(g.ctx)
		if err != nil {
			t.Fatal(err)
		}
		_ = hs.Send(&flight.HandshakeRequest{ProtocolVersion: 1, Payload: []byte("x")})
		_ = hs.CloseSend()
		for err == nil {
			_, err = hs.Recv()
		}
		if !errors.Is(err, io.EOF) {
			t.Fatalf("handshake: %v, want the call to end OK", err)
		}
	})
}
