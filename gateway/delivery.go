package gateway

import (
	"context"
	"sync"
	"time"

	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/setats/setats/catalog"
	"github.com/setats/setats/gateway/row"
	"github.com/setats/setats/gateway/store"
	"github.com/setats/setats/proto/setatspb"
)

// Delivery guarantees of the setats sink (SPEC section 10): sequenced writers (at-least-once
// retries applied once) and exactly-once staging, commit and abort. The store does the work
// (store/writerseq.go, store/staging.go); this file holds the actions, the staging budget and
// the metrics.

// Action types of exactly-once staging (proto/README.md "Exactly-once staging").
const (
	ActionAbortStaged  = "abort-staged"
	ActionCommitStaged = "commit-staged"
)

func init() {
	actionTypes = append(actionTypes,
		&flight.ActionType{Type: ActionAbortStaged, Description: "body: AbortStagedRequest; result: AbortStagedResponse"},
		&flight.ActionType{Type: ActionCommitStaged, Description: "body: CommitStagedRequest; result: CommitStagedResponse"},
	)
}

// deliveryAction runs abort-staged and commit-staged; ok is false for other action types.
func (s *Server) deliveryAction(ctx context.Context, typ string, body []byte) (enc encoding, res proto.Message, ok bool, err error) {
	switch typ {
	case ActionAbortStaged:
		req := &setatspb.AbortStagedRequest{}
		enc, cat, err := s.decodeChecked(body, req, typ, req.GetCatalog)
		if err != nil {
			return enc, nil, true, err
		}
		if err := s.authorize(ctx, typ, privWrite, dbName(req.GetDatabase()), req.GetTable()); err != nil {
			return enc, nil, true, err
		}
		r, err := s.abortStaged(cat, req)
		return enc, r, true, err
	case ActionCommitStaged:
		req := &setatspb.CommitStagedRequest{}
		enc, cat, err := s.decodeChecked(body, req, typ, req.GetCatalog)
		if err != nil {
			return enc, nil, true, err
		}
		if err := s.authorize(ctx, typ, privWrite, dbName(req.GetDatabase()), req.GetTable()); err != nil {
			return enc, nil, true, err
		}
		r, err := s.commitStaged(ctx, cat, req)
		return enc, r, true, err
	}
	return encBinary, nil, false, nil
}

func (s *Server) abortStaged(cat catalog.Catalog, req *setatspb.AbortStagedRequest) (*setatspb.AbortStagedResponse, error) {
	ot, err := s.openTable(cat, dbName(req.GetDatabase()), req.GetTable())
	if err != nil {
		return nil, err
	}
	res := &setatspb.AbortStagedResponse{}
	err = ot.use(s, func(st *storeTable) error {
		r, err := st.AbortStaged(req.GetCommitUser(), req.GetSubtask(), req.GetRestoredCheckpointId(), req.GetTransactionTimeoutMs())
		if err != nil {
			return wrapStatus(statusOr(err, codes.Internal, "abort-staged"), "abort-staged")
		}
		res.Epoch, res.DroppedRows, res.DroppedBytes = r.Epoch, r.DroppedRows, r.DroppedBytes
		return nil
	})
	if err == nil && res.DroppedRows > 0 {
		s.metrics.delivery.abortedRows.WithLabelValues(ot.label).Add(float64(res.DroppedRows))
	}
	return res, err
}

// commitStaged merges the staged rows of a checkpoint; once durable, the store's commit hook
// records it like a DoPut batch (metrics, NEW_BUCKET and NEW_DATA notifications).
func (s *Server) commitStaged(ctx context.Context, cat catalog.Catalog, req *setatspb.CommitStagedRequest) (*setatspb.CommitStagedResponse, error) {
	ot, err := s.openTable(cat, dbName(req.GetDatabase()), req.GetTable())
	if err != nil {
		return nil, err
	}
	begin := time.Now()
	var r store.CommitResult
	err = ot.use(s, func(st *storeTable) error {
		var err error
		r, err = st.CommitStaged(ctx, req.GetCommitUser(), req.GetSubtask(), req.GetCheckpointId())
		return err
	})
	if err != nil {
		return nil, wrapStatus(statusOr(err, codes.Internal, "commit-staged"), "commit-staged")
	}
	res := &setatspb.CommitStagedResponse{AlreadyCommitted: r.AlreadyCommitted}
	if r.AlreadyCommitted {
		s.metrics.delivery.commits.WithLabelValues(ot.label, "already_committed").Inc()
		return res, nil
	}
	c, err := r.Pending.Wait()
	if err != nil {
		return nil, wrapStatus(statusOr(err, codes.Internal, "commit-staged"), "commit-staged")
	}
	res.Rows, res.ChangelogRows, res.CommitMs = c.Rows, c.ChangelogRows, c.CommitMs
	for _, bo := range c.Buckets {
		res.Buckets = append(res.Buckets, bucketOffsetsPB(bo))
	}
	// Metrics and notifications came from the store's commit hook (Server.committed).
	s.metrics.writeLatency.WithLabelValues(ot.label).Observe(time.Since(begin).Seconds())
	s.metrics.delivery.commits.WithLabelValues(ot.label, "committed").Inc()
	return res, nil
}

// expireStaging runs store.ExpireStaging on a table (retention loop) and counts what expired.
func (s *Server) expireStaging(ot *openTable, now int64) {
	var r store.ExpireResult
	err := ot.run(s, false, func(st *storeTable) error {
		var err error
		r, err = st.ExpireStaging(now)
		return err
	})
	if err != nil {
		if c := codeOf(err); c != codes.NotFound && c != codes.Unavailable {
			s.log.Warn("staging expiry failed", "table", ot.label, "err", err)
		}
		return
	}
	if r.Rows > 0 {
		s.metrics.delivery.expiredRows.WithLabelValues(ot.label).Add(float64(r.Rows))
		s.metrics.delivery.expiredBytes.WithLabelValues(ot.label).Add(float64(r.Bytes))
	}
}

// onStaging returns the store.Options.OnStaging callback of a table: it moves the table's staged
// gauges and the gateway-wide staging budget.
func (s *Server) onStaging(label string) func(dBytes, dRows int64) {
	return func(dBytes, dRows int64) {
		s.metrics.delivery.stagedBytes.WithLabelValues(label).Add(float64(dBytes))
		s.metrics.delivery.stagedRows.WithLabelValues(label).Add(float64(dRows))
		s.budget.add(dBytes)
		s.metrics.delivery.budgetUsed.Set(float64(s.budget.usedBytes()))
	}
}

// stagingBudget bounds the staged bytes of all tables (Options.StagingBudgetBytes). Staging
// writes call wait before they stage: while the staged bytes are at or above the limit they wait
// (back pressure on the writer, which then holds its batches) until commits, aborts or expiry
// bring the bytes below it, or ctx ends.
type stagingBudget struct {
	limit int64
	mu    sync.Mutex
	used  int64
	freed chan struct{} // closed and replaced whenever used decreases
}

func newStagingBudget(limit int64) *stagingBudget {
	return &stagingBudget{limit: limit, freed: make(chan struct{})}
}

func (b *stagingBudget) add(d int64) {
	b.mu.Lock()
	b.used += d
	if d < 0 {
		close(b.freed)
		b.freed = make(chan struct{})
	}
	b.mu.Unlock()
}

func (b *stagingBudget) usedBytes() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.used
}

// wait returns once the staged bytes are below the limit (at once with no limit); ctx's error
// (Canceled, DeadlineExceeded) otherwise. onWait (may be nil) is called once, when it starts
// waiting, so that a stalled writer shows in the metrics while it waits.
func (b *stagingBudget) wait(ctx context.Context, onWait func()) error {
	waited := false
	for {
		b.mu.Lock()
		if b.limit <= 0 || b.used < b.limit {
			b.mu.Unlock()
			return nil
		}
		ch := b.freed
		b.mu.Unlock()
		if !waited && onWait != nil {
			onWait()
		}
		waited = true
		select {
		case <-ch:
		case <-ctx.Done():
			return status.FromContextError(ctx.Err()).Err()
		}
	}
}

// deliveryMetrics are the series of SPEC section 10.
type deliveryMetrics struct {
	stagedBytes  *prometheus.GaugeVec   // table
	stagedRows   *prometheus.GaugeVec   // table
	stagedBatch  *prometheus.CounterVec // table
	expiredRows  *prometheus.CounterVec // table
	expiredBytes *prometheus.CounterVec // table
	abortedRows  *prometheus.CounterVec // table
	commits      *prometheus.CounterVec // table, result
	duplicates   *prometheus.CounterVec // table
	budgetUsed   prometheus.Gauge
	budgetWaits  prometheus.Counter
}

func newDeliveryMetrics(register func(prometheus.Collector)) *deliveryMetrics {
	m := &deliveryMetrics{
		stagedBytes: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "setats_staged_bytes",
			Help: "Bytes of exactly-once rows staged and not yet committed, dropped or expired, per open table.",
		}, []string{"table"}),
		stagedRows: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "setats_staged_rows",
			Help: "Exactly-once rows staged and not yet committed, dropped or expired, per open table.",
		}, []string{"table"}),
		stagedBatch: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "setats_staged_batches_total",
			Help: "DoPut record batches staged durably and acknowledged for an exactly-once commit (a commit counts once in setats_write_batches_total), per table.",
		}, []string{"table"}),
		expiredRows: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "setats_staging_expired_rows_total",
			Help: "Staged rows dropped because their staging was not written to for its transaction timeout, per table.",
		}, []string{"table"}),
		expiredBytes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "setats_staging_expired_bytes_total",
			Help: "Staged bytes dropped by expiry (transaction timeout), per table.",
		}, []string{"table"}),
		abortedRows: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "setats_staging_aborted_rows_total",
			Help: "Staged rows dropped by abort-staged (rows of checkpoints after the restored one), per table.",
		}, []string{"table"}),
		commits: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "setats_staging_commits_total",
			Help: "commit-staged calls, per table and result (committed, already_committed).",
		}, []string{"table", "result"}),
		duplicates: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "setats_write_duplicates_total",
			Help: "DoPut batches of a sequenced writer that had been applied before and were answered with the original WriteAck, per table.",
		}, []string{"table"}),
		budgetUsed: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "setats_staging_budget_used_bytes",
			Help: "Staged bytes of all open tables, counted against --staging-budget-bytes.",
		}),
		budgetWaits: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "setats_staging_budget_waits_total",
			Help: "Staging DoPut batches that waited because the staging budget was full.",
		}),
	}
	for _, c := range []prometheus.Collector{m.stagedBytes, m.stagedRows, m.stagedBatch, m.expiredRows, m.expiredBytes, m.abortedRows,
		m.commits, m.duplicates, m.budgetUsed, m.budgetWaits} {
		register(c)
	}
	return m
}

func (m *deliveryMetrics) forgetTable(table string) {
	m.stagedBytes.DeleteLabelValues(table)
	m.stagedRows.DeleteLabelValues(table)
}

// deliveryMode is how a DoPut applies its batches (WriteCommand.writer_id, first_sequence,
// staging): merged, merged once per writer sequence, or staged.
type deliveryMode struct {
	writer  string
	first   int64
	staging *store.StageTarget
}

// newDeliveryMode checks the delivery fields of a WriteCommand (nil for a PATH descriptor).
func newDeliveryMode(cmd *setatspb.WriteCommand) (deliveryMode, error) {
	var dm deliveryMode
	if cmd == nil {
		return dm, nil
	}
	dm.writer, dm.first = cmd.GetWriterId(), cmd.GetFirstSequence()
	if len(dm.writer) > store.MaxIDBytes {
		return dm, status.Errorf(codes.InvalidArgument, "WriteCommand.writer_id has %d bytes, at most %d are allowed", len(dm.writer), store.MaxIDBytes)
	}
	if dm.first < 0 {
		return dm, status.Errorf(codes.InvalidArgument, "WriteCommand.first_sequence %d is negative", dm.first)
	}
	if dm.writer == "" && dm.first != 0 {
		return dm, status.Errorf(codes.InvalidArgument, "WriteCommand.first_sequence %d needs writer_id", dm.first)
	}
	if st := cmd.GetStaging(); st != nil {
		dm.staging = &store.StageTarget{CommitUser: st.GetCommitUser(), Subtask: st.GetSubtask(), Checkpoint: st.GetCheckpointId(), Epoch: st.GetEpoch()}
		if dm.staging.CommitUser == "" || len(dm.staging.CommitUser) > store.MaxIDBytes {
			return dm, status.Errorf(codes.InvalidArgument, "WriteCommand.staging.commit_user must have 1 to %d bytes, got %d", store.MaxIDBytes, len(dm.staging.CommitUser))
		}
		if dm.staging.Checkpoint <= 0 || dm.staging.Subtask < 0 {
			return dm, status.Errorf(codes.InvalidArgument, "WriteCommand.staging: checkpoint_id %d must be > 0 and subtask %d >= 0", dm.staging.Checkpoint, dm.staging.Subtask)
		}
	}
	return dm, nil
}

// sequence returns the writer sequence of batch i of the stream (0 without a writer).
func (dm deliveryMode) sequence(i int64) int64 {
	if dm.writer == "" {
		return 0
	}
	return dm.first + i
}

// apply hands batch i of the stream to the store.
func (dm deliveryMode) apply(ctx context.Context, st *storeTable, b *row.Batch, i int64) (*store.Pending, error) {
	var seq *store.Sequence
	if dm.writer != "" {
		seq = &store.Sequence{Writer: dm.writer, Seq: dm.first + i}
	}
	switch {
	case dm.staging != nil:
		return st.Stage(ctx, *dm.staging, b, seq)
	case seq != nil:
		return st.ApplySequenced(ctx, b, *seq)
	}
	return st.Apply(ctx, b)
}
