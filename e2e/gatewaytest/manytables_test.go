package gatewaytest

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/setats/setats/proto/setatspb"
)

// errStopFollow ends a follow DoGet from its callback.
var errStopFollow = errors.New("stop following")

// Bounds of the many-tables test (gateway/README.md, "Bounded resources"): with the default
// --max-open-tables (512), whatever the number of tables.
const (
	manyMaxOpenTables = 512
	// Per open store about 8 file descriptors, 5 goroutines and 1.7 MiB of RSS were measured
	// (Pebble's files, background goroutines, memtable and caches); the bounds leave room.
	manyMaxFDs          = 10*manyMaxOpenTables + 200
	manyMaxGoroutines   = 6*manyMaxOpenTables + 200
	manyMaxRSSBytes     = 128<<20 + manyMaxOpenTables*(5<<19) // 128 MiB + 2.5 MiB per open store
	manyMaxDiskPerTable = 64 << 10
	// Follow DoGets on partitions that do not exist (the heap is logged: without a forced GC it
	// is no bound; TestFollowNonexistentPartitions in package gateway checks nothing is left).
	manyFollowNonexistent = 2000
)

// metricsOf reads the unlabelled series of the gateway's /metrics.
func metricsOf(t *testing.T, gw *Gateway) map[string]float64 {
	t.Helper()
	resp, err := http.Get("http://" + gw.Info.AdminAddr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	out := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "#") || strings.Contains(line, "{") {
			continue
		}
		name, v, ok := strings.Cut(line, " ")
		if !ok {
			continue
		}
		if f, err := strconv.ParseFloat(strings.TrimSpace(v), 64); err == nil {
			out[name] = f
		}
	}
	return out
}

// openFDs counts the open file descriptors of pid.
func openFDs(t *testing.T, pid int) int {
	t.Helper()
	ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		t.Fatal(err)
	}
	return len(ents)
}

// TestManyTables creates SETATS_MANY_TABLES (5,000) tables on a small tmpfs and writes each once
// through the real binary, then follows partitions that do not exist, restarts the gateway and
// lets retention run: open file descriptors, goroutines and RSS stay under the documented bounds
// (the LRU of open tables closes idle stores; retention does not open idle tables; follower state
// is freed), and the disk used per idle table is small (issue 7 item 4, "many-tables test").
// Skipped when not root (it mounts the tmpfs).
func TestManyTables(t *testing.T) {
	n := int(envInt64(t, "SETATS_MANY_TABLES", 5000))
	dir := t.TempDir()
	wh := filepath.Join(dir, "warehouse")
	if err := os.Mkdir(wh, 0o755); err != nil {
		t.Fatal(err)
	}
	mountTmpfs(t, wh, "512m")
	ctx := testCtx(t)
	gw, err := StartGateway(setatsBin, wh, filepath.Join(dir, "gateway.log"), "--retention-interval", "1s")
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
	check := func(when string) {
		t.Helper()
		m := metricsOf(t, gw)
		fds := openFDs(t, gw.Pid())
		rss, err := ProcStatus(gw.Pid(), "VmRSS")
		if err != nil {
			t.Fatal(err)
		}
		gor, open := int(m["go_goroutines"]), int(m["setats_tables_open"])
		t.Logf("%s: open stores %d, fds %d, goroutines %d, RSS %d MiB", when, open, fds, gor, rss>>20)
		if open > manyMaxOpenTables || fds > manyMaxFDs || gor > manyMaxGoroutines || rss > manyMaxRSSBytes {
			t.Fatalf("%s: open stores %d (max %d), fds %d (max %d), goroutines %d (max %d), RSS %d (max %d)",
				when, open, manyMaxOpenTables, fds, manyMaxFDs, gor, manyMaxGoroutines, rss, manyMaxRSSBytes)
		}
	}

	cols := []Col{{Name: "id", Type: "INT", Key: true}, {Name: "v", Type: "STRING"}}
	const workers = 4
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	start := time.Now()
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := Dial(gw.Info.FlightAddr)
			if err != nil {
				errs <- err
				return
			}
			defer c.Close()
			for i := w; i < n; i += workers {
				name := fmt.Sprintf("t%05d", i)
				spec := &setatspb.TableSpec{Database: "many", Table: name, BucketCount: 1, PrimaryKey: []string{"id"},
					Columns: []*setatspb.Column{{Name: "id", Type: "INT"}, {Name: "v", Type: "STRING"}}}
				if _, err := c.CreateTable(ctx, spec); err != nil {
					errs <- fmt.Errorf("create %s: %w", name, err)
					return
				}
				if _, err := c.Put(ctx, "many", name, cols, false, [][]WriteRow{{{Kind: KindInsert, Values: []any{int32(i), name}}}}); err != nil {
					errs <- fmt.Errorf("write %s: %w", name, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	t.Logf("%d tables created and written once in %s", n, time.Since(start).Round(time.Millisecond))
	check(fmt.Sprintf("after %d tables", n))

	// Follow DoGets on partitions that do not exist leave nothing behind.
	c := dial(t, gw)
	pspec := &setatspb.TableSpec{Database: "many", Table: "parted", BucketCount: 1, PrimaryKey: []string{"dt", "id"},
		PartitionKeys: []string{"dt"}, Columns: []*setatspb.Column{{Name: "dt", Type: "STRING"}, {Name: "id", Type: "INT"}}}
	if _, err := c.CreateTable(ctx, pspec); err != nil {
		t.Fatal(err)
	}
	before := metricsOf(t, gw)["go_memstats_heap_inuse_bytes"]
	for i := range manyFollowNonexistent {
		fctx, cancel := context.WithCancel(ctx)
		err := c.DoGet(fctx, &setatspb.ChangelogTicket{Database: "many", Table: "parted", Partition: fmt.Sprintf("dt=nope%d", i), Follow: true},
			func(_ *arrow.Schema, _ arrow.RecordBatch) error { return errStopFollow })
		cancel()
		if err != nil && err != errStopFollow {
			t.Fatal(err)
		}
	}
	after := metricsOf(t, gw)["go_memstats_heap_inuse_bytes"]
	t.Logf("heap in use %d MiB before and %d MiB after %d follow DoGets on partitions that do not exist",
		int64(before)>>20, int64(after)>>20, manyFollowNonexistent)
	check("after the follow DoGets")

	// Disk per idle table, after a graceful stop (no WAL preallocation).
	if err := gw.Stop(30 * time.Second); err != nil {
		t.Fatal(err)
	}
	var sfs syscall.Statfs_t
	if err := syscall.Statfs(wh, &sfs); err != nil {
		t.Fatal(err)
	}
	used := int64(sfs.Blocks-sfs.Bfree) * sfs.Bsize
	t.Logf("disk used: %d MiB for %d tables, %d KiB per table", used>>20, n, used/int64(n)>>10)
	if per := used / int64(n); per > manyMaxDiskPerTable {
		t.Fatalf("disk per idle table %d bytes, max %d", per, manyMaxDiskPerTable)
	}

	// Restarted, retention (every second) leaves the idle tables closed.
	if err := gw.Restart(); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		time.Sleep(1500 * time.Millisecond) // let retention passes run; the assertion is a count, not a time
		if open := metricsOf(t, gw)["setats_tables_open"]; open != 0 {
			t.Fatalf("%v stores open after a restart with only retention running, want 0", open)
		}
	}
	check("after the restart and retention passes")
	// Every table still reads back (opening through the LRU).
	rc := dial(t, gw)
	for i := 0; i < n; i += max(1, n/200) {
		name := fmt.Sprintf("t%05d", i)
		cl, err := rc.ReadChangelog(ctx, "many", name, "", 0)
		if err != nil || len(cl.Rows) != 1 {
			t.Fatalf("read %s: %v %v", name, cl, err)
		}
	}
	check("after reading back")
}
