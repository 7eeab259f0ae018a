package ipcguard

import (
	"testing"

	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/ipc"

	"github.com/setats/setats/internal/fuzzcorpus"
)

// FuzzDecode feeds a schema message and one record batch message (header and body) through the
// guard and arrow-go's Flight reader, as DoPut does: whatever the bytes, nothing panics, no error
// carries Go runtime panic text, a batch the guard accepts decodes into valid arrays, the checked
// allocator ends at zero and the decoding allocates at most 16 MiB (checkDecode). Seeds: the
// messages arrow-go writes for every Setats column type, plain and compressed (and
// testdata/fuzz/FuzzDecode).
func FuzzDecode(f *testing.F) {
	for _, opts := range [][]ipc.Option{nil, {ipc.WithZstd()}, {ipc.WithLZ4()}} {
		m := sampleMessages(f, opts...)
		f.Add(m[0].DataHeader, m[1].DataHeader, m[1].DataBody)
	}
	f.Fuzz(func(t *testing.T, schema, batch, body []byte) {
		msgs := []*flight.FlightData{{DataHeader: schema}, {DataHeader: batch, DataBody: body}}
		checkDecode(t, "fuzz input", msgs)
	})
}

// TestWriteSeedCorpus writes the seeds of FuzzDecode to testdata/fuzz/FuzzDecode when
// SETATS_WRITE_FUZZ_CORPUS=1 (run once after a change of the seeds; the files are checked in).
func TestWriteSeedCorpus(t *testing.T) {
	if !fuzzcorpus.Enabled() {
		t.Skip("set SETATS_WRITE_FUZZ_CORPUS=1 to rewrite testdata/fuzz/FuzzDecode")
	}
	for name, opts := range map[string][]ipc.Option{"plain": nil, "zstd": {ipc.WithZstd()}, "lz4": {ipc.WithLZ4()}} {
		m := sampleMessages(t, opts...)
		if err := fuzzcorpus.Write(".", "FuzzDecode", "seed-"+name, m[0].DataHeader, m[1].DataHeader, m[1].DataBody); err != nil {
			t.Fatal(err)
		}
	}
}
