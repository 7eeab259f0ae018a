package gateway

import (
	"regexp"
	"strconv"
	"testing"

	"github.com/setats/setats/proto/setatspb"
)

// seriesValue returns the value of the series name{labels} in a Prometheus text body (labels as
// exported: sorted by name, e.g. `db="table",table="db.m"`), and whether it is there.
func seriesValue(body, name, labels string) (float64, bool) {
	m := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(name+"{"+labels+"}") + ` (\S+)$`).FindStringSubmatch(body)
	if m == nil {
		return 0, false
	}
	v, err := strconv.ParseFloat(m[1], 64)
	return v, err == nil
}

// TestStagingAndPebbleMetrics: /metrics has the Pebble series of a table's DB once it is written,
// and of its staging DB once it stages (db="staging", WAL bytes written by the staged batches);
// staged DoPut batches count in setats_staged_batches_total, not in setats_write_batches_total,
// where the commit counts once.
func TestStagingAndPebbleMetrics(t *testing.T) {
	g := startGateway(t, nil)
	base := "http://" + g.s.AdminAddr() + "/metrics"
	g.createTable("db", "m", 1, idV, []string{"id"}, nil)
	rec := intStrRecord(g.mem, nil, []int32{1, 2}, []string{"a", "b"})
	defer rec.Release()
	if _, err := g.put(writeCmd(t, &setatspb.WriteCommand{Database: "db", Table: "m"}), rec); err != nil {
		t.Fatal(err)
	}
	_, body := httpGet(t, base)
	if v, ok := seriesValue(body, "setats_pebble_wal_bytes_written_total", `db="table",table="db.m"`); !ok || v <= 0 {
		t.Fatalf("table DB WAL bytes: %v (present %v), want > 0", v, ok)
	}
	for _, name := range []string{"setats_pebble_flushes_total", "setats_pebble_flushes_in_progress", "setats_pebble_compactions_total",
		"setats_pebble_compactions_in_progress", "setats_pebble_compaction_debt_bytes", "setats_pebble_flushed_bytes_total",
		"setats_pebble_compacted_bytes_total", "setats_pebble_l0_files", "setats_pebble_blob_files", "setats_pebble_blob_bytes",
		"setats_pebble_blob_value_bytes", "setats_pebble_blob_referenced_value_bytes"} {
		if _, ok := seriesValue(body, name, `db="table",table="db.m"`); !ok {
			t.Errorf("no %s for the table's DB", name)
		}
	}
	if _, ok := seriesValue(body, "setats_pebble_wal_bytes_written_total", `db="staging",table="db.m"`); ok {
		t.Fatal("staging DB series before the table staged anything")
	}

	abort := &setatspb.AbortStagedResponse{}
	g.mustAction(ActionAbortStaged, &setatspb.AbortStagedRequest{Database: "db", Table: "m", CommitUser: "job"}, abort)
	staged := writeCmd(t, &setatspb.WriteCommand{Database: "db", Table: "m",
		Staging: &setatspb.StagingTarget{CommitUser: "job", CheckpointId: 1, Epoch: abort.GetEpoch()}})
	if _, err := g.put(staged, rec, rec); err != nil {
		t.Fatal(err)
	}
	_, body = httpGet(t, base)
	if v, _ := seriesValue(body, "setats_staged_batches_total", `table="db.m"`); v != 2 {
		t.Errorf("setats_staged_batches_total %v, want 2", v)
	}
	if v, _ := seriesValue(body, "setats_write_batches_total", `table="db.m"`); v != 1 {
		t.Errorf("setats_write_batches_total %v after staging, want 1 (the at-least-once batch)", v)
	}
	if v, ok := seriesValue(body, "setats_pebble_wal_bytes_written_total", `db="staging",table="db.m"`); !ok || v <= 0 {
		t.Fatalf("staging DB WAL bytes: %v (present %v), want > 0", v, ok)
	}
	g.mustAction(ActionCommitStaged, &setatspb.CommitStagedRequest{Database: "db", Table: "m",
		CommitUser: "job", CheckpointId: 1}, &setatspb.CommitStagedResponse{})
	_, body = httpGet(t, base)
	if v, _ := seriesValue(body, "setats_write_batches_total", `table="db.m"`); v != 2 {
		t.Errorf("setats_write_batches_total %v after the commit, want 2", v)
	}
}
