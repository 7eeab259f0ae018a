package gateway

import (
	"testing"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/setats/setats/proto/setatspb"
)

// TestOrphanedStagingExpiresInClosedTable: rows staged by a job that never comes back expire
// after the transaction timeout even when the LRU of open tables closed the table's store in the
// meantime (SPEC section 10; retention reopens the table when the staging is due, not only when
// changelog retention is), show in setats_staging_expired_rows_total, and leave the staging
// budget while the store is closed. A commit of the expired checkpoint is then
// FailedPrecondition.
func TestOrphanedStagingExpiresInClosedTable(t *testing.T) {
	clock := &fakeClock{}
	clock.set(1000)
	g := startGateway(t, func(o *Options) {
		o.Clock = clock.now
		o.MaxOpenTables = 3
		o.ChangelogRetention = 24 * time.Hour
	})
	g.createTable("db", "orphan", 1, idV, []string{"id"}, nil)
	abort := &setatspb.AbortStagedResponse{}
	g.mustAction(ActionAbortStaged, &setatspb.AbortStagedRequest{Database: "db", Table: "orphan",
		CommitUser: "gone-job", TransactionTimeoutMs: 1000}, abort)
	rec := intStrRecord(g.mem, nil, []int32{1, 2}, []string{"a", "b"})
	defer rec.Release()
	if _, err := g.put(writeCmd(t, &setatspb.WriteCommand{Database: "db", Table: "orphan",
		Staging: &setatspb.StagingTarget{CommitUser: "gone-job", CheckpointId: 1, Epoch: abort.GetEpoch()}}), rec); err != nil {
		t.Fatal(err)
	}
	if used := g.s.budget.usedBytes(); used <= 0 {
		t.Fatalf("staging budget used %d bytes with 2 staged rows, want > 0", used)
	}

	g.s.tables.closeIdleForTest(t)
	if n := g.openStores(); n != 0 {
		t.Fatalf("%d stores open, want 0", n)
	}
	if used := g.s.budget.usedBytes(); used != 0 {
		t.Fatalf("staging budget used %d bytes with the store closed, want 0", used)
	}
	// Before the timeout retention leaves the table closed.
	clock.set(1000 + 999)
	g.s.RunRetention()
	if n := g.openStores(); n != 0 {
		t.Fatalf("retention before the staging is due opened %d stores", n)
	}
	// Once due, retention opens it and expires the staged rows.
	clock.set(1000 + 1000)
	g.s.RunRetention()
	if got := counterSum(t, g.s.metrics.delivery.expiredRows); got != 2 {
		t.Fatalf("setats_staging_expired_rows_total %v, want 2", got)
	}
	err := g.action(ActionCommitStaged, &setatspb.CommitStagedRequest{Database: "db", Table: "orphan",
		CommitUser: "gone-job", CheckpointId: 1}, &setatspb.CommitStagedResponse{})
	wantCode(t, err, codes.FailedPrecondition, "checkpoint 1", "expired")
	if used := g.s.budget.usedBytes(); used != 0 {
		t.Fatalf("staging budget used %d bytes after expiry, want 0", used)
	}
}

// TestStagingBudgetSlowsWriters: with the staged bytes at --staging-budget-bytes, a staging
// DoPut waits (setats_staging_budget_waits_total) instead of failing, and goes through once a
// commit of the staged rows frees the budget (SPEC section 10).
func TestStagingBudgetSlowsWriters(t *testing.T) {
	g := startGateway(t, func(o *Options) { o.StagingBudgetBytes = 1 })
	g.createTable("db", "budget", 1, idV, []string{"id"}, nil)
	abort := &setatspb.AbortStagedResponse{}
	g.mustAction(ActionAbortStaged, &setatspb.AbortStagedRequest{Database: "db", Table: "budget",
		CommitUser: "job"}, abort)
	stage := func(ckpt int64, ids []int32, vs []string) error {
		rec := intStrRecord(g.mem, nil, ids, vs)
		defer rec.Release()
		_, err := g.put(writeCmd(t, &setatspb.WriteCommand{Database: "db", Table: "budget",
			Staging: &setatspb.StagingTarget{CommitUser: "job", CheckpointId: ckpt, Epoch: abort.GetEpoch()}}), rec)
		return err
	}
	if err := stage(1, []int32{1, 2}, []string{"a", "b"}); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- stage(2, []int32{3}, []string{"c"}) }()
	for counterSum(t, g.s.metrics.delivery.budgetWaits) == 0 {
		select {
		case err := <-done:
			t.Fatalf("staging over a full budget returned (%v) instead of waiting", err)
		case <-time.After(5 * time.Millisecond):
		}
	}
	select {
	case err := <-done:
		t.Fatalf("staging over a full budget returned (%v) before a commit freed it", err)
	default:
	}
	g.mustAction(ActionCommitStaged, &setatspb.CommitStagedRequest{Database: "db", Table: "budget",
		CommitUser: "job", CheckpointId: 1}, &setatspb.CommitStagedResponse{})
	if err := <-done; err != nil {
		t.Fatalf("staging after the commit freed the budget: %v", err)
	}
	g.mustAction(ActionCommitStaged, &setatspb.CommitStagedRequest{Database: "db", Table: "budget",
		CommitUser: "job", CheckpointId: 2}, &setatspb.CommitStagedResponse{})
	if used := g.s.budget.usedBytes(); used != 0 {
		t.Fatalf("staging budget used %d bytes after every commit, want 0", used)
	}
}
