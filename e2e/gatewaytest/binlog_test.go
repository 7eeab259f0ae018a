package gatewaytest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/setats/setats/internal/flighttest"
	"github.com/setats/setats/proto/setatspb"
)

// initialBucket is where an `initial` reader (SPEC section 9, what setats-cdc does) stands in one
// bucket: in the snapshot phase the keys <= afterKey were emitted as of viewOffset; in the
// changelog phase next is the next offset to read.
type initialBucket struct {
	snapshot   bool
	viewOffset int64 // -1: no view taken yet
	afterKey   []byte
	next       int64
}

// initialReader mirrors the connector's `initial` protocol against the gateway with random stops
// (a stop = a checkpoint and a restore: every stream is dropped and the position kept): a
// snapshot DoGet (resumed after the last key on a new view E', first catching up the keys already
// emitted with the changelog [viewOffset, E') and max_key), then the changelog from E. Its output,
// folded with the RowKind state machine checked, must equal the table.
type initialReader struct {
	t       *tdef
	rng     *rand.Rand
	buckets map[string]*initialBucket // "partition/bucket"
	fold    map[string][]any
	emitted int
	stops   int
	catchUp int
}

func newInitialReader(t *tdef, seed uint64) *initialReader {
	return &initialReader{t: t, rng: rand.New(rand.NewPCG(seed, 99)), buckets: map[string]*initialBucket{}, fold: map[string][]any{}}
}

func bucketID(part string, b int32) string { return part + "/" + strconv.Itoa(int(b)) }

// apply folds one emitted row, checking the state machine (no +I for a live key, -U and -D equal
// to the current row).
func (r *initialReader) apply(kind int8, vals []any, what string) error {
	key := r.t.keyOf(vals)
	cur, ok := r.fold[key]
	switch kind {
	case KindInsert:
		if ok {
			return fmt.Errorf("%s: +I%s for live key %s (current %s)", what, FormatValues(vals), key, FormatValues(cur))
		}
		r.fold[key] = vals
	case KindUpdateAfter:
		r.fold[key] = vals
	case KindUpdateBefore, KindDelete:
		if !ok || !valuesEqual(cur, vals) {
			return fmt.Errorf("%s: %s%s for key %s, current %s (present %v)", what, KindString(kind), FormatValues(vals), key, FormatValues(cur), ok)
		}
		if kind == KindDelete {
			delete(r.fold, key)
		}
	}
	r.emitted++
	return nil
}

// step reads every bucket (new ones start in their snapshot phase) for at most budget rows each,
// then stops all streams. toEnd: read until every bucket is at its end offset as of the call.
func (r *initialReader) step(ctx context.Context, c *Client, toEnd bool) error {
	bs, err := c.ListBuckets(ctx, e2eDB, r.t.name)
	if err != nil {
		return err
	}
	for _, b := range bs {
		id := bucketID(b.GetPartition(), b.GetBucket())
		st := r.buckets[id]
		if st == nil {
			st = &initialBucket{snapshot: true, viewOffset: -1}
			r.buckets[id] = st
		}
		for {
			budget := 1 + r.rng.IntN(40)
			if toEnd {
				budget = 1 << 30
			}
			if err := r.readBucket(ctx, c, b.GetPartition(), b.GetBucket(), st, budget); err != nil {
				return fmt.Errorf("%s bucket %s: %w", r.t.name, id, err)
			}
			r.stops++
			if !toEnd || (!st.snapshot && st.next >= b.GetEndOffset()) {
				break
			}
		}
	}
	return nil
}

func (r *initialReader) readBucket(ctx context.Context, c *Client, part string, bucket int32, st *initialBucket, budget int) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	base := setatspb.ChangelogTicket{Database: e2eDB, Table: r.t.name, Partition: part, Bucket: bucket, MaxBatchRows: int32(1 + r.rng.IntN(8))}
	if st.snapshot {
		tk := proto.Clone(&base).(*setatspb.ChangelogTicket)
		tk.Snapshot = &setatspb.SnapshotRead{}
		if len(st.afterKey) > 0 {
			tk.Snapshot.AfterKey = st.afterKey
		}
		raw, _ := proto.Marshal(tk)
		rd, err := c.OpenGet(ctx, raw)
		if err != nil {
			return fmt.Errorf("snapshot DoGet: %w", err)
		}
		defer rd.Release()
		md := rd.Schema().Metadata()
		i := md.FindKey("setats.snapshot.end_offset")
		if i < 0 {
			return errors.New("snapshot schema lacks setats.snapshot.end_offset")
		}
		e, err := strconv.ParseInt(md.Values()[i], 10, 64)
		if err != nil {
			return err
		}
		if len(st.afterKey) > 0 {
			if e < st.viewOffset {
				return fmt.Errorf("new view %d is before the view offset %d", e, st.viewOffset)
			}
			if e > st.viewOffset {
				// Catch up the keys already emitted: changelog [viewOffset, e) with max_key.
				ct := proto.Clone(&base).(*setatspb.ChangelogTicket)
				ct.Start = &setatspb.ChangelogTicket_Offset{Offset: st.viewOffset}
				ct.EndOffset = e
				ct.MaxKey = st.afterKey
				stop := errors.New("budget")
				last := st.viewOffset - 1
				err := c.DoGet(ctx, ct, func(_ *arrow.Schema, rec arrow.RecordBatch) error {
					rows, err := DecodeChangelog(rec)
					if err != nil {
						return err
					}
					for _, row := range rows {
						if row.Offset <= last || row.Offset >= e {
							return fmt.Errorf("catch-up [%d, %d): offset %d after %d", st.viewOffset, e, row.Offset, last)
						}
						if budget == 0 {
							return stop
						}
						if err := r.apply(row.Kind, row.Values, fmt.Sprintf("catch-up offset %d", row.Offset)); err != nil {
							return err
						}
						budget--
						last = row.Offset
						st.viewOffset = row.Offset + 1
						r.catchUp++
					}
					return nil
				})
				if errors.Is(err, stop) {
					return nil
				}
				if err != nil {
					return fmt.Errorf("catch-up: %w", err)
				}
			}
			st.viewOffset = e
		}
		for rd.Next() {
			rec := rd.RecordBatch()
			keys, ok := rec.Column(0).(*array.Binary)
			if !ok {
				return fmt.Errorf("snapshot column 0 is %s, want binary _key", rec.Column(0).DataType())
			}
			for i := 0; i < int(rec.NumRows()); i++ {
				if budget == 0 {
					return nil
				}
				k := bytes.Clone(keys.Value(i))
				if len(st.afterKey) > 0 && bytes.Compare(k, st.afterKey) <= 0 {
					return fmt.Errorf("snapshot key not after the resume key")
				}
				vals := make([]any, rec.NumCols()-1)
				for ci := 1; ci < int(rec.NumCols()); ci++ {
					v, err := flighttest.CellValue(rec.Column(ci), i)
					if err != nil {
						return err
					}
					vals[ci-1] = v
				}
				if err := r.apply(KindInsert, vals, "snapshot row"); err != nil {
					return err
				}
				st.afterKey, st.viewOffset = k, e
				budget--
			}
		}
		if err := rd.Err(); err != nil && !errors.Is(err, io.EOF) {
			return fmt.Errorf("snapshot read: %w", err)
		}
		st.snapshot, st.next, st.afterKey = false, e, nil
	}
	if budget == 0 {
		return nil
	}
	ct := proto.Clone(&base).(*setatspb.ChangelogTicket)
	ct.Start = &setatspb.ChangelogTicket_Offset{Offset: st.next}
	stop := errors.New("budget")
	err := c.DoGet(ctx, ct, func(_ *arrow.Schema, rec arrow.RecordBatch) error {
		rows, err := DecodeChangelog(rec)
		if err != nil {
			return err
		}
		for _, row := range rows {
			if row.Offset != st.next {
				return fmt.Errorf("changelog offset %d, want %d", row.Offset, st.next)
			}
			if budget == 0 {
				return stop
			}
			if err := r.apply(row.Kind, row.Values, fmt.Sprintf("changelog offset %d", row.Offset)); err != nil {
				return err
			}
			budget--
			st.next++
		}
		return nil
	})
	if err != nil && !errors.Is(err, stop) {
		return fmt.Errorf("changelog from %d: %w", st.next, err)
	}
	return nil
}

// checkpointPoints are the reader's positions a completed checkpoint registers in a slot: the
// buckets in their changelog phase at their next offset.
func (r *initialReader) checkpointPoints() []*setatspb.SyncPointPosition {
	var out []*setatspb.SyncPointPosition
	for id, st := range r.buckets {
		if st.snapshot {
			continue
		}
		i := strings.LastIndexByte(id, '/')
		b, _ := strconv.Atoi(id[i+1:])
		out = append(out, &setatspb.SyncPointPosition{Partition: id[:i], Bucket: int32(b), Offset: st.next})
	}
	return out
}

// slotModel is what a slot must hold: the checkpoint point registered last per bucket.
type slotModel struct {
	name, owner string
	points      map[string]int64
}

// checkSlot compares the slot's checkpoint progress rows with the model: registered buckets at
// their point, unconsumed = end - point, status active.
func checkSlot(ctx context.Context, c *Client, t *tdef, s *slotModel, p *problems) error {
	resp := &setatspb.ProgressResponse{}
	if err := c.Action(ctx, "binlog-progress", &setatspb.SlotRequest{Database: e2eDB, Table: t.name, Slot: s.name}, resp); err != nil {
		return fmt.Errorf("binlog-progress %s: %w", s.name, err)
	}
	seen := map[string]bool{}
	for _, row := range resp.GetRows() {
		if !row.GetCheckpoint() {
			continue
		}
		id := bucketID(row.GetPartition(), row.GetBucket())
		want, ok := s.points[id]
		if !ok {
			if row.GetRegistered() {
				p.add("slot", "%s slot %s bucket %s: registered at %d, model has no point", t.name, s.name, id, row.GetConsumedOffset())
			}
			continue
		}
		seen[id] = true
		if !row.GetRegistered() || row.GetConsumedOffset() != want {
			p.add("slot", "%s slot %s bucket %s: checkpoint point %d (registered %v), want %d", t.name, s.name, id, row.GetConsumedOffset(), row.GetRegistered(), want)
		}
		if row.GetUnconsumed() != row.GetEndOffset()-row.GetConsumedOffset() {
			p.add("slot", "%s slot %s bucket %s: unconsumed %d, end %d - consumed %d", t.name, s.name, id, row.GetUnconsumed(), row.GetEndOffset(), row.GetConsumedOffset())
		}
		if row.GetStatus() != setatspb.SlotStatus_SLOT_ACTIVE {
			p.add("slot", "%s slot %s: status %s", t.name, s.name, row.GetStatus())
		}
	}
	for id := range s.points {
		if !seen[id] {
			p.add("slot", "%s slot %s bucket %s: no progress row for a registered point", t.name, s.name, id)
		}
	}
	return nil
}

// register registers the reader's checkpoint points in the slot (as notifyCheckpointComplete
// does), then checks the never-backwards and one-owner rules on a bucket with a point > 0.
func register(ctx context.Context, c *Client, t *tdef, s *slotModel, points []*setatspb.SyncPointPosition, p *problems) error {
	if len(points) == 0 {
		return nil
	}
	req := &setatspb.RegisterSyncPointRequest{Database: e2eDB, Table: t.name, Slot: s.name, Owner: s.owner, Checkpoint: true, Points: points}
	if err := c.Action(ctx, "binlog-register-sync-point", req, &setatspb.SlotInfo{}); err != nil {
		return fmt.Errorf("register %s: %w", s.name, err)
	}
	for _, pt := range points {
		s.points[bucketID(pt.GetPartition(), pt.GetBucket())] = pt.GetOffset()
	}
	for _, pt := range points {
		if pt.GetOffset() == 0 {
			continue
		}
		back := proto.Clone(req).(*setatspb.RegisterSyncPointRequest)
		back.Points = []*setatspb.SyncPointPosition{{Partition: pt.GetPartition(), Bucket: pt.GetBucket(), Offset: pt.GetOffset() - 1}}
		err := c.Action(ctx, "binlog-register-sync-point", back, &setatspb.SlotInfo{})
		if st, _ := status.FromError(err); err == nil || st.Code() != codes.FailedPrecondition {
			p.add("slot", "%s slot %s: a point moved backwards (%d -> %d) gave %v, want FailedPrecondition", t.name, s.name, pt.GetOffset(), pt.GetOffset()-1, err)
		}
		other := &setatspb.AcquireSlotRequest{Database: e2eDB, Table: t.name, Slot: s.name, Owner: "another-job"}
		err = c.Action(ctx, "binlog-acquire-slot", other, &setatspb.SlotInfo{})
		if st, _ := status.FromError(err); err == nil || st.Code() != codes.FailedPrecondition || !strings.Contains(st.Message(), s.owner) {
			p.add("slot", "%s slot %s: a second owner gave %v, want FailedPrecondition naming %s", t.name, s.name, err, s.owner)
		}
		break
	}
	return nil
}

// TestRandomizedSlotsAndInitial extends the model-based test with the binlog (issue 10): rounds
// of random writes on two tables while an `initial` reader per table reads with random stops
// (each a checkpoint and restore: snapshot resumed after its last key on a newer view, catch-up,
// changelog); after each round the reader finishes, its folded output must equal the model, and
// its changelog positions are registered in a slot whose progress must match; then the gateway
// restarts (SIGTERM or SIGKILL), the slot's points must have survived and the reader goes on
// (its snapshot views are gone: resumed views). SETATS_E2E_SEED replays a run.
func TestRandomizedSlotsAndInitial(t *testing.T) {
	seed := uint64(envInt64(t, "SETATS_E2E_SEED", time.Now().UnixNano()))
	rounds := int(envInt64(t, "SETATS_E2E_ROUNDS", 4))
	t.Logf("seed %d, %d rounds (replay: SETATS_E2E_SEED=%d)", seed, rounds, seed)
	ctx := testCtx(t)
	gw := testGateway(t)
	c, err := Dial(gw.Info.FlightAddr)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { c.Close() }()

	var runs []*tableRun
	var writers []*randWriter
	var readers []*initialReader
	var slots []*slotModel
	for ti, td := range randomTables()[:2] {
		if _, err := c.CreateTable(ctx, td.spec(e2eDB)); err != nil {
			t.Fatalf("create-table %s: %v", td.name, err)
		}
		tr := &tableRun{t: td, m: newModel(td), acks: map[int]*setatspb.WriteAck{}}
		runs = append(runs, tr)
		keys := tableKeys(td)
		for wi := range 2 {
			w := &randWriter{tr: tr, rng: rand.New(rand.NewPCG(seed, uint64(100+ti*2+wi))), id: fmt.Sprintf("b%d-%d", ti, wi)}
			for ki := wi; ki < len(keys); ki += 2 {
				w.keys = append(w.keys, keys[ki])
			}
			writers = append(writers, w)
		}
		readers = append(readers, newInitialReader(td, seed+uint64(ti)))
		s := &slotModel{name: "model_slot", owner: "model-job-" + td.name, points: map[string]int64{}}
		if err := c.Action(ctx, "binlog-acquire-slot", &setatspb.AcquireSlotRequest{Database: e2eDB, Table: td.name, Slot: s.name, Owner: s.owner, LeaseMs: 600_000}, &setatspb.SlotInfo{}); err != nil {
			t.Fatalf("acquire slot of %s: %v", td.name, err)
		}
		slots = append(slots, s)
	}

	for round := range rounds {
		// Writers and the readers run at once: snapshots are taken while rows arrive.
		var wg sync.WaitGroup
		errs := make(chan error, len(writers)+len(readers))
		done := make(chan struct{})
		for _, w := range writers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range 3 + w.rng.IntN(4) {
					if err := w.stream(ctx, c); err != nil {
						errs <- err
						return
					}
				}
			}()
		}
		// Fresh `initial` readers of this round: they read with stops during the writes and
		// finish only after the restart below, so their snapshots resume on new views across it.
		var fresh []*initialReader
		for ti, td := range randomTables()[:2] {
			fresh = append(fresh, newInitialReader(td, seed+uint64(1000*(round+1)+ti)))
		}
		var rwg sync.WaitGroup
		for _, r := range append(slices.Clone(readers), fresh...) {
			rwg.Add(1)
			go func() {
				defer rwg.Done()
				for {
					select {
					case <-done:
						return
					default:
					}
					if err := r.step(ctx, c, false); err != nil {
						errs <- err
						return
					}
				}
			}()
		}
		wg.Wait()
		close(done)
		rwg.Wait()
		close(errs)
		for err := range errs {
			t.Errorf("round %d: %v", round, err)
		}
		if t.Failed() {
			t.FailNow()
		}
		for i, r := range readers {
			if err := r.step(ctx, c, true); err != nil {
				t.Fatalf("round %d: %v", round, err)
			}
			var p problems
			compareState(r.t.name, "initial reader folds to", r.fold, runs[i].m.state, &p)
			if err := register(ctx, c, r.t, slots[i], r.checkpointPoints(), &p); err != nil {
				t.Fatalf("round %d: %v", round, err)
			}
			if err := checkSlot(ctx, c, r.t, slots[i], &p); err != nil {
				t.Fatalf("round %d: %v", round, err)
			}
			if !p.empty() {
				t.Errorf("round %d, table %s (seed %d):\n%s", round, r.t.name, seed, p.String())
			}
			t.Logf("round %d: %s: %d keys, reader emitted %d rows over %d stops (%d catch-up rows)", round, r.t.name, len(r.fold), r.emitted, r.stops, r.catchUp)
		}
		if t.Failed() {
			t.FailNow()
		}

		// A restart between rounds; a reader mid-snapshot (none here: each round ends read to the
		// end) would resume on a new view. Slots must survive it.
		c.Close()
		if round%2 == 1 {
			gw.Kill()
		} else if err := gw.Stop(60 * time.Second); err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		if err := gw.Restart(); err != nil {
			t.Fatalf("round %d: restart: %v", round, err)
		}
		if c, err = Dial(gw.Info.FlightAddr); err != nil {
			t.Fatal(err)
		}
		for i, r := range readers {
			var p problems
			if err := checkSlot(ctx, c, r.t, slots[i], &p); err != nil {
				t.Fatalf("round %d after restart: %v", round, err)
			}
			if !p.empty() {
				t.Errorf("round %d after restart, table %s (seed %d):\n%s", round, r.t.name, seed, p.String())
			}
		}
		for i, r := range fresh {
			mid := 0
			for _, st := range r.buckets {
				if st.snapshot && len(st.afterKey) > 0 {
					mid++
				}
			}
			if err := r.step(ctx, c, true); err != nil {
				t.Fatalf("round %d, fresh reader after restart: %v", round, err)
			}
			var p problems
			compareState(r.t.name, "fresh initial reader (finished after the restart) folds to", r.fold, runs[i].m.state, &p)
			if !p.empty() {
				t.Errorf("round %d, table %s (seed %d):\n%s", round, r.t.name, seed, p.String())
			}
			t.Logf("round %d: fresh reader of %s: %d buckets mid-snapshot at the restart, %d stops, %d catch-up rows", round, r.t.name, mid, r.stops, r.catchUp)
		}
	}
}
