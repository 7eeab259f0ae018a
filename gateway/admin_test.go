package gateway

import (
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/setats/setats/proto/setatspb"
)

func httpGet(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}

// TestAdmin: /healthz, /readyz and the setats_ series of /metrics.
func TestAdmin(t *testing.T) {
	g := startGateway(t, nil)
	base := "http://" + g.s.AdminAddr()
	if code, body := httpGet(t, base+"/healthz"); code != 200 || body != "ok\n" {
		t.Fatalf("/healthz: %d %q", code, body)
	}
	if code, r := readyz(t, g.s); code != 200 || !r.Ready || !r.FlightServing || !r.CatalogOpen || !r.NATSConnected || r.Warehouse != g.s.Warehouse() {
		t.Fatalf("/readyz: %d %+v", code, r)
	}
	g.createTable("default", "m", 1, idV, []string{"id"}, nil)
	desc := writeCmd(t, &setatspb.WriteCommand{Table: "m"})
	// Changelog: +I x3, then -U/+U of id 1, then -D x2: distinct counts per RowKind.
	for _, w := range []struct {
		kind int8
		ids  []int32
	}{{0, []int32{1, 2, 3}}, {2, []int32{1}}, {3, []int32{2, 3}}} {
		kinds := make([]int8, len(w.ids))
		vs := make([]string, len(w.ids))
		for i := range kinds {
			kinds[i], vs[i] = w.kind, "v"+string(rune('0'+w.kind))
		}
		rec := intStrRecord(g.mem, kinds, w.ids, vs)
		if _, err := g.put(desc, rec); err != nil {
			t.Fatal(err)
		}
		rec.Release()
	}
	if _, err := g.readStream(ticket(t, &setatspb.ChangelogTicket{Table: "m"})); err != nil {
		t.Fatal(err)
	}
	_, body := httpGet(t, base+"/metrics")
	for _, want := range []string{
		`setats_rows_written_total{table="default.m"} 6`,
		`setats_changelog_rows_total{row_kind="+I",table="default.m"} 3`,
		`setats_changelog_rows_total{row_kind="-U",table="default.m"} 1`,
		`setats_changelog_rows_total{row_kind="+U",table="default.m"} 1`,
		`setats_changelog_rows_total{row_kind="-D",table="default.m"} 2`,
		`setats_rows_read_total{row_kind="+I",table="default.m"} 3`,
		`setats_rows_read_total{row_kind="-U",table="default.m"} 1`,
		`setats_rows_read_total{row_kind="+U",table="default.m"} 1`,
		`setats_rows_read_total{row_kind="-D",table="default.m"} 2`,
		`setats_bucket_end_offset{bucket="0",partition="",table="default.m"} 7`,
		`setats_bucket_start_offset{bucket="0",partition="",table="default.m"} 0`,
		`setats_write_latency_seconds_count{table="default.m"} 3`,
		`setats_changelog_streams_open 0`,
		`setats_tables_open 1`,
		`setats_nats_publish_errors_total 0`,
	} {
		if !strings.Contains(body, want+"\n") {
			t.Errorf("/metrics lacks %q", want)
		}
	}
	if t.Failed() {
		t.Logf("/metrics:\n%s", body)
	}
}

// TestShutdownTwice: Shutdown is safe to call twice, concurrently, and /readyz is gone after.
func TestShutdownTwice(t *testing.T) {
	g := startGateway(t, nil)
	addr := g.s.AdminAddr()
	var wg sync.WaitGroup
	for i := 0; i < 3; i++ {
		wg.Add(1)
		go func() { defer wg.Done(); g.s.Shutdown() }()
	}
	wg.Wait()
	g.s.Shutdown()
	if _, err := http.Get("http://" + addr + "/healthz"); err == nil {
		t.Fatal("admin server still serving after Shutdown")
	}
	select {
	case <-g.s.Done():
	default:
		t.Fatal("Done not closed after Shutdown")
	}
}

// TestNewServerValidates: NewServer rejects bad options naming the flag; Start on a taken port
// fails and cleans up.
func TestNewServerValidates(t *testing.T) {
	if _, err := NewServer(Options{DefaultBucketCount: -3}); err == nil || !strings.Contains(err.Error(), "--default-bucket-count") {
		t.Fatalf("NewServer: %v", err)
	}
	g := startGateway(t, nil)
	s, err := NewServer(Options{FlightAddr: g.s.FlightAddr(), AdminAddr: "127.0.0.1:0", NATSListen: "127.0.0.1:-1", Warehouse: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(); err == nil || !strings.Contains(err.Error(), "--flight-addr") {
		t.Fatalf("Start on a taken port: %v", err)
	}
	s.Shutdown()
}
