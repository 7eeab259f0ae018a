package gatewaytest

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/setats/setats/proto/setatspb"
)

// readyzBody is the part of the /readyz body this test reads.
type readyzBody struct {
	Ready        bool `json:"ready"`
	FailedTables []struct {
		Table, Error string
	} `json:"failed_tables"`
}

func getReadyz(gw *Gateway) (int, readyzBody, error) {
	var r readyzBody
	resp, err := http.Get("http://" + gw.Info.AdminAddr + "/readyz")
	if err != nil {
		return 0, r, err
	}
	defer resp.Body.Close()
	err = json.NewDecoder(resp.Body).Decode(&r)
	return resp.StatusCode, r, err
}

// mountTmpfs mounts a tmpfs of size bytes at dir (unmounted at cleanup); it skips the test when
// that is not possible (not root, no mount).
func mountTmpfs(t *testing.T, dir string, size string) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root to mount a tmpfs")
	}
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size="+size, "tmpfs", dir).CombinedOutput(); err != nil {
		t.Skipf("mount tmpfs: %v %s", err, out)
	}
	t.Cleanup(func() { _ = exec.Command("umount", "-l", dir).Run() })
}

// TestDiskFull fills the warehouse (a 16 MiB tmpfs) with one table's writes. The write that does
// not fit fails with Unavailable naming the table, and the gateway exits 1 (gateway/README.md,
// "Storage failures"). Restarted on the still full disk, the table's writes keep failing naming
// the table, and while the gateway is up /readyz is 503 naming it. Once the tmpfs is grown, the
// gateway (restarted if it exited) serves the table again, /readyz is 200, and every
// acknowledged row reads back.
func TestDiskFull(t *testing.T) {
	dir := t.TempDir()
	wh := filepath.Join(dir, "warehouse")
	if err := os.Mkdir(wh, 0o755); err != nil {
		t.Fatal(err)
	}
	mountTmpfs(t, wh, "16m")
	ctx := testCtx(t)
	gw, err := StartGateway(setatsBin, wh, filepath.Join(dir, "gateway.log"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if !gw.Exited() {
			gw.Kill()
		}
		if t.Failed() {
			t.Logf("gateway log tail:\n%s", gw.LogTail(60))
		}
	})
	c, err := Dial(gw.Info.FlightAddr)
	if err != nil {
		t.Fatal(err)
	}
	cols := []Col{{Name: "id", Type: "STRING", Key: true}, {Name: "v", Type: "STRING"}}
	spec := &setatspb.TableSpec{Database: e2eDB, Table: "full", BucketCount: 2, PrimaryKey: []string{"id"},
		Columns: []*setatspb.Column{{Name: "id", Type: "STRING NOT NULL"}, {Name: "v", Type: "STRING"}}}
	if _, err := c.CreateTable(ctx, spec); err != nil {
		t.Fatal(err)
	}
	pad := strings.Repeat("x", 4000)
	batch := func(n int) [][]WriteRow {
		rows := make([]WriteRow, 50)
		for i := range rows {
			rows[i] = WriteRow{Kind: KindUpdateAfter, Values: []any{fmt.Sprintf("b%d-r%d", n, i), pad}}
		}
		return [][]WriteRow{rows}
	}
	acked := map[string]bool{}
	wantTableErr := func(err error) {
		t.Helper()
		if err == nil || !strings.Contains(err.Error(), e2eDB+".full") {
			t.Fatalf("write on a full disk: %v, want an error naming table %s.full", err, e2eDB)
		}
	}

	// Fill the disk: 200 KB batches until one fails.
	var n int
	for n = 0; ; n++ {
		if n > 200 {
			t.Fatal("16 MiB tmpfs never filled")
		}
		_, err := c.Put(ctx, e2eDB, "full", cols, false, batch(n))
		if err != nil {
			wantTableErr(err)
			if status.Code(err) != codes.Unavailable {
				t.Fatalf("failed write: %v, want Unavailable", err)
			}
			break
		}
		for _, r := range batch(n)[0] {
			acked[r.Values[0].(string)] = true
		}
	}
	t.Logf("disk full after %d acknowledged batches", n)
	c.Close()
	select {
	case <-gw.done:
	case <-time.After(time.Minute):
		t.Fatal("gateway still running a minute after its storage failed")
	}
	var ee *exec.ExitError
	if !errors.As(gw.waitErr, &ee) || ee.ExitCode() != 1 {
		t.Fatalf("gateway exit after the storage failure: %v, want exit status 1", gw.waitErr)
	}

	// Restart on the full disk: writes to the table fail naming it; while up, /readyz is 503 naming it.
	sawUnready := false
	for attempt := 0; attempt < 3 && !sawUnready; attempt++ {
		if err := gw.Restart(); err != nil {
			t.Fatal(err)
		}
		c, err = Dial(gw.Info.FlightAddr)
		if err != nil {
			t.Fatal(err)
		}
		_, err = c.Put(ctx, e2eDB, "full", cols, false, batch(1000+attempt))
		wantTableErr(err)
		if code, r, err := getReadyz(gw); err == nil {
			if code != http.StatusServiceUnavailable || len(r.FailedTables) != 1 || r.FailedTables[0].Table != e2eDB+".full" {
				t.Fatalf("/readyz on a full disk: %d %+v, want 503 naming %s.full", code, r, e2eDB)
			}
			sawUnready = true
		}
		c.Close()
		if !sawUnready {
			<-gw.done // it exited (the failed write was a WAL write again)
		}
	}
	if !sawUnready {
		t.Fatal("never saw /readyz 503 naming the table on the full disk")
	}

	// Space is back.
	if out, err := exec.Command("mount", "-o", "remount,size=256m", wh).CombinedOutput(); err != nil {
		t.Fatalf("grow the tmpfs: %v %s", err, out)
	}
	if gw.Exited() {
		if err := gw.Restart(); err != nil {
			t.Fatal(err)
		}
	}
	c, err = Dial(gw.Info.FlightAddr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	// The table serves again once Pebble's background retry of the flush that failed succeeds
	// (and the open it held up completes); until then calls fail naming the table.
	// When that has not happened after 20 s, a restart (SIGTERM must exit 0) recovers the table.
	deadline := time.Now().Add(20 * time.Second)
	restarted := false
	for {
		_, err := c.Put(ctx, e2eDB, "full", cols, false, batch(2000))
		if err == nil {
			t.Logf("table serves again (restarted after space was back: %v)", restarted)
			break
		}
		wantTableErr(err)
		if time.Now().After(deadline) {
			if restarted {
				t.Fatalf("write after space is back and a restart: %v", err)
			}
			if err := gw.Stop(time.Minute); err != nil {
				t.Fatal(err)
			}
			restarted = true
			deadline = time.Now().Add(30 * time.Second)
		}
		if gw.Exited() {
			if err := gw.Restart(); err != nil {
				t.Fatal(err)
			}
			c.Close()
			if c, err = Dial(gw.Info.FlightAddr); err != nil {
				t.Fatal(err)
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	for _, r := range batch(2000)[0] {
		acked[r.Values[0].(string)] = true
	}
	if code, r, err := getReadyz(gw); err != nil || code != http.StatusOK {
		t.Fatalf("/readyz once space is back: %d %+v %v", code, r, err)
	}
	got := map[string]bool{}
	for b := int32(0); b < 2; b++ {
		cl, err := c.ReadChangelog(ctx, e2eDB, "full", "", b)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range cl.Rows {
			got[r.Values[0].(string)] = true
		}
	}
	for id := range acked {
		if !got[id] {
			t.Fatalf("acknowledged row %s lost (%d acknowledged, %d read)", id, len(acked), len(got))
		}
	}
	if err := gw.Stop(time.Minute); err != nil {
		t.Fatal(err)
	}
}
