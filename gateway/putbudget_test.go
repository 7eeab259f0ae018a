package gateway

import (
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/vfs/errorfs"

	"github.com/setats/setats/proto/setatspb"
)

// syncGate holds every WAL fsync while closed is false (errorfs.Injector).
type syncGate struct {
	hold    atomic.Bool
	release chan struct{}
	once    sync.Once
}

// open lets every held and later fsync through; once, and also when the test failed while
// holding them (otherwise the gateway's shutdown in the cleanup waits for them forever).
func (g *syncGate) open() {
	g.once.Do(func() {
		g.hold.Store(false)
		close(g.release)
	})
}

func (g *syncGate) MaybeError(op errorfs.Op) error {
	if g.hold.Load() && strings.HasSuffix(op.Path, ".log") &&
		(op.Kind == errorfs.OpFileSync || op.Kind == errorfs.OpFileSyncData || op.Kind == errorfs.OpFileSyncTo) {
		<-g.release
	}
	return nil
}

func (g *syncGate) String() string { return "syncGate" }

// TestPutBudgetBackPressure: batches received and not yet acknowledged count against the
// gateway-wide --max-inflight-put-bytes; a stream over it waits (neither applied nor failed)
// until earlier batches are acknowledged, then goes on (issue 7 item 4: nothing capped in-flight
// DoPut bytes across streams).
func TestPutBudgetBackPressure(t *testing.T) {
	gate := &syncGate{release: make(chan struct{})}
	g := startGateway(t, func(o *Options) {
		o.StoreFS = errorfs.Wrap(vfs.Default, gate)
		o.MaxInflightPutBytes = 1 // every batch takes the whole budget
	})
	t.Cleanup(gate.open)
	for _, name := range []string{"a", "b"} {
		g.createTable("db", name, 1, idV, []string{"id"}, nil)
		rec := intStrRecord(g.mem, nil, []int32{0}, []string{"warm"})
		_, err := g.put(writeCmd(t, &setatspb.WriteCommand{Database: "db", Table: name}), rec)
		rec.Release()
		if err != nil {
			t.Fatal(err)
		}
	}
	// The warm-up batches' gauge decrements run in goroutines of their own after the acks: wait
	// for them, or a stale count reads as a's batch applied before a's DoPut even started.
	waitWritesSettled(t, g)
	gate.hold.Store(true)
	put := func(name string) chan error {
		done := make(chan error, 1)
		rec := intStrRecord(g.mem, nil, []int32{1}, []string{name})
		go func() {
			defer rec.Release()
			_, err := g.put(writeCmd(t, &setatspb.WriteCommand{Database: "db", Table: name}), rec)
			done <- err
		}()
		return done
	}
	doneA := put("a")
	// a's batch is applied and waits for its fsync, holding the budget.
	waitFor(t, "a's batch applied with its fsync held", func() bool { return gaugeValue(t, g.s.metrics.pendingWrites) == 1 })
	doneB := put("b")
	waitFor(t, "b's DoPut waiting for the budget", func() bool { return g.s.limits.put.waiting.Load() == 1 })
	select {
	case err := <-doneB:
		t.Fatalf("b's DoPut ended while over the budget: %v", err)
	default:
	}
	if gaugeValue(t, g.s.metrics.pendingWrites) != 1 {
		t.Fatal("b's batch was applied while over the budget")
	}
	gate.open()
	for _, done := range []chan error{doneA, doneB} {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range []string{"a", "b"} {
		rows, err := g.readStream(ticket(t, &setatspb.ChangelogTicket{Database: "db", Table: name}))
		if err != nil || len(rows) != 2 {
			t.Fatalf("%s: %v %v", name, rows, err)
		}
	}
}
