package gatewaytest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/setats/setats/proto/setatspb"
)

const e2eDB = "e2e"

// randomTables are the tables of the model-based test: both merge engines, both delete options of
// PARTIAL_UPDATE, partitioned and not, INT/BIGINT/STRING bucket keys, a partition value that needs
// escaping, and a three-column primary key whose bucket key is its first column (prefix lookups:
// STRING values that are byte prefixes of each other, negative BIGINTs).
func randomTables() []*tdef {
	return []*tdef{
		{name: "dedup", buckets: 4, engine: "DEDUPLICATE", cols: []Col{
			{Name: "id", Type: "INT", Key: true}, {Name: "a", Type: "STRING"}, {Name: "b", Type: "BIGINT"}, {Name: "c", Type: "DOUBLE"}}},
		{name: "dedup_part", buckets: 3, engine: "DEDUPLICATE", partKeys: []string{"dt"}, cols: []Col{
			{Name: "id", Type: "STRING", Key: true}, {Name: "dt", Type: "STRING", Key: true}, {Name: "name", Type: "STRING"}, {Name: "address", Type: "STRING"}}},
		{name: "partial", buckets: 4, engine: "PARTIAL_UPDATE", options: map[string]string{"partial-update.remove-record-on-delete": "true"}, cols: []Col{
			{Name: "id", Type: "INT", Key: true}, {Name: "a", Type: "STRING"}, {Name: "b", Type: "INT"}, {Name: "c", Type: "STRING"}, {Name: "d", Type: "BOOLEAN"}}},
		{name: "partial_part", buckets: 2, engine: "PARTIAL_UPDATE", partKeys: []string{"dt"}, options: map[string]string{"ignore-delete": "true"}, cols: []Col{
			{Name: "id", Type: "BIGINT", Key: true}, {Name: "dt", Type: "STRING", Key: true}, {Name: "a", Type: "STRING"}, {Name: "b", Type: "BIGINT"}}},
		{name: "prefix", buckets: 3, engine: "DEDUPLICATE", bucketKey: []string{"g"}, cols: []Col{
			{Name: "g", Type: "INT", Key: true}, {Name: "s", Type: "STRING", Key: true}, {Name: "n", Type: "BIGINT", Key: true}, {Name: "v", Type: "STRING"}}},
	}
}

var partitionValues = []string{"2024-01-01", "2024-01-02", "d/3=x%"}

// tableKeys returns the primary-key tuples (as full-width rows with only key columns set) of a table.
func tableKeys(t *tdef) [][]any {
	var out [][]any
	mk := func(vals map[string]any) []any {
		row := make([]any, len(t.cols))
		for k, v := range vals {
			row[t.colIndex(k)] = v
		}
		return row
	}
	switch t.name {
	case "dedup", "partial":
		for i := range 300 {
			out = append(out, mk(map[string]any{"id": int32(i - 100)}))
		}
	case "dedup_part":
		for i := range 80 {
			for _, dt := range partitionValues {
				out = append(out, mk(map[string]any{"id": fmt.Sprintf("k%03d", i), "dt": dt}))
			}
		}
	case "partial_part":
		for i := range 60 {
			for _, dt := range partitionValues {
				out = append(out, mk(map[string]any{"id": int64(i) << 33, "dt": dt}))
			}
		}
	case "prefix":
		for g := range 8 {
			for _, str := range []string{"", "a", "ab", "b"} {
				for _, n := range []int64{-(1 << 40), -1, 0, 1, 7, 8, 1 << 33, 99} {
					out = append(out, mk(map[string]any{"g": int32(g - 2), "s": str, "n": n}))
				}
			}
		}
	default:
		panic(t.name)
	}
	return out
}

func randValue(rng *rand.Rand, typ string) any {
	if rng.IntN(5) == 0 {
		return nil
	}
	switch typ {
	case "STRING":
		return []string{"a", "b", "c", "", "x y", "ü€", "a,b'c"}[rng.IntN(7)]
	case "INT":
		return int32(rng.IntN(4) - 1)
	case "BIGINT":
		return []int64{0, 1, -1, 1 << 40, -(1 << 62)}[rng.IntN(5)]
	case "DOUBLE":
		return []float64{0.5, 1.5, -2.25, 1e300}[rng.IntN(4)]
	case "BOOLEAN":
		return rng.IntN(2) == 0
	}
	panic(typ)
}

// tableRun is the shared state of one table in the randomized test.
type tableRun struct {
	t     *tdef
	mu    sync.Mutex
	m     *refModel
	acks  map[int]*setatspb.WriteAck
	batch int
	// unackedOK: batches without a recorded ack are allowed (crash test: sent, maybe applied).
	unackedOK bool
	// ackProblems are ack checks that failed while writing, reported by verifyAgainstModel.
	ackProblems []string
	// capChecks counts the lookup requests checked at the prefix-lookup row cap (checkLookupCap).
	capChecks int
}

// randWriter owns a disjoint set of keys of one table, so that concurrent writers leave every
// key's expected changelog deterministic.
type randWriter struct {
	tr   *tableRun
	rng  *rand.Rand
	keys [][]any

	// Delivery (SPEC section 10): the writer's id and next sequence (at-least-once retries), and
	// its exactly-once staging: commit user, epoch, last checkpoint and a staged checkpoint left
	// for after the restart.
	id      string
	nextSeq int64
	epoch   int64
	ckpt    int64
	pending *pendingStage
}

// pendingStage is a staged checkpoint not yet committed (committed after a restart).
type pendingStage struct {
	ckpt     int64
	declared []int
	rows     []foldRow
}

// Modes of a randWriter stream.
const (
	modeMerge   = iota // plain DoPut
	modeRetry          // sequenced DoPut, then the same batches resent: all duplicates
	modeCommit         // staged, committed (sometimes twice)
	modeAbort          // staged, then dropped by abort-staged
	modePending        // staged, committed after the next restart
)

// stream generates one DoPut stream (declared columns, with or without `_row_kind`, 1..4
// batches), applies it to the model, sends it, and checks the acks.
func (w *randWriter) stream(ctx context.Context, c *Client) error {
	t, rng := w.tr.t, w.rng
	var declared []int
	for i, col := range t.cols {
		if col.Key || rng.IntN(3) > 0 {
			declared = append(declared, i)
		}
	}
	if rng.IntN(3) == 0 { // all columns
		declared = declared[:0]
		for i := range t.cols {
			declared = append(declared, i)
		}
	}
	withKind := rng.IntN(5) > 0
	mode := modeMerge
	switch r := rng.IntN(10); {
	case r == 0:
		mode = modeRetry
	case r <= 2:
		mode = modeCommit
	case r == 3:
		mode = modeAbort
	case r == 4:
		mode = modePending
	}
	if mode >= modeCommit && w.pending != nil {
		mode = modeMerge // a subtask's staged rows all declare the same columns
	}
	staged := mode >= modeCommit
	var folded []foldRow
	allowDelete := !t.partial() || t.option("ignore-delete") || t.option("partial-update.remove-record-on-delete")
	cols := make([]Col, len(declared))
	for j, ci := range declared {
		cols[j] = t.cols[ci]
	}
	nb := 1 + rng.IntN(4)
	batches := make([][]WriteRow, nb)
	ids := make([]int, nb)
	want := make([]int, nb)
	w.tr.mu.Lock()
	for b := range nb {
		ids[b] = w.tr.batch
		w.tr.batch++
		n := 1 + rng.IntN(40)
		for range n {
			key := w.keys[rng.IntN(len(w.keys))]
			kind := KindUpdateAfter
			if withKind {
				switch r := rng.IntN(20); {
				case r < 6:
					kind = KindInsert
				case r < 12:
					kind = KindUpdateAfter
				case r < 17 && allowDelete:
					kind = KindDelete
				case r < 17:
					kind = KindInsert
				default:
					kind = KindUpdateBefore
				}
			}
			vals := make([]any, len(declared))
			for j, ci := range declared {
				if t.cols[ci].Key {
					vals[j] = key[ci]
				} else {
					vals[j] = randValue(rng, t.cols[ci].Type)
				}
			}
			batches[b] = append(batches[b], WriteRow{Kind: kind, Values: vals})
			if staged {
				folded = append(folded, foldRow{kind: kind, vals: vals})
			} else {
				want[b] += w.tr.m.apply(kind, declared, vals, ids[b])
			}
		}
	}
	w.tr.mu.Unlock()
	// One stream in eight ends with a poison batch: valid rows and one null key. The gateway must
	// refuse it with InvalidArgument and apply nothing of it (SPEC section 3, issue 2 "Bad
	// input"), after acknowledging the batches before it.
	if mode != modeMerge {
		return w.delivery(ctx, c, mode, cols, withKind, declared, batches, folded, ids, want)
	}
	poison := rng.IntN(8) == 0
	send := batches
	if poison {
		cols = slices.Clone(cols)
		for i := range cols {
			cols[i].Key = false // nullable Arrow fields, so that the null key reaches the gateway
		}
		var bad []WriteRow
		n := 1 + rng.IntN(20)
		nullAt := rng.IntN(n)
		for i := range n {
			vals := make([]any, len(declared))
			key := w.keys[rng.IntN(len(w.keys))]
			for j, ci := range declared {
				if t.cols[ci].Key {
					vals[j] = key[ci]
				} else {
					vals[j] = randValue(rng, t.cols[ci].Type)
				}
			}
			if i == nullAt {
				vals[0] = nil
			}
			bad = append(bad, WriteRow{Kind: KindUpdateAfter, Values: vals})
		}
		send = append(slices.Clone(batches), bad)
	}
	acks, err := c.Put(ctx, e2eDB, t.name, cols, withKind, send)
	if poison {
		if st, _ := status.FromError(err); err == nil || st.Code() != codes.InvalidArgument || !strings.Contains(st.Message(), t.cols[declared[0]].Name) {
			return fmt.Errorf("DoPut %s with a null %s in its last batch: %v, want InvalidArgument naming the column", t.name, t.cols[declared[0]].Name, err)
		}
		if len(acks) != nb {
			return fmt.Errorf("DoPut %s: %d acks before the refused batch, want %d", t.name, len(acks), nb)
		}
	} else if err != nil {
		return fmt.Errorf("DoPut %s (batches %v): %w", t.name, ids, err)
	}
	w.tr.mu.Lock()
	defer w.tr.mu.Unlock()
	for b, a := range acks {
		w.tr.acks[ids[b]] = a
		if a.GetRows() != int64(len(batches[b])) || a.GetChangelogRows() != int64(want[b]) {
			w.tr.ackProblems = append(w.tr.ackProblems, fmt.Sprintf("%s batch %d: ack rows %d changelog_rows %d, want %d and %d (model)",
				t.name, ids[b], a.GetRows(), a.GetChangelogRows(), len(batches[b]), want[b]))
		}
		if a.GetCommitMs() <= 0 && want[b] > 0 {
			w.tr.ackProblems = append(w.tr.ackProblems, fmt.Sprintf("%s batch %d: ack commit_ms %d", t.name, ids[b], a.GetCommitMs()))
		}
	}
	return nil
}

// delivery sends a stream of a sequenced or staging mode (SPEC section 10) and records it in the
// model: a retried sequenced stream is applied once, a committed staging is applied folded per
// key (applyFolded), an aborted one not at all.
func (w *randWriter) delivery(ctx context.Context, c *Client, mode int, cols []Col, withKind bool, declared []int,
	batches [][]WriteRow, folded []foldRow, ids, want []int) error {
	t := w.tr.t
	cmd := &setatspb.WriteCommand{Database: e2eDB, Table: t.name, WriterId: w.id, FirstSequence: w.nextSeq}
	if mode == modeRetry {
		acks, err := c.PutCmd(ctx, cmd, cols, withKind, batches)
		if err != nil {
			return fmt.Errorf("sequenced DoPut %s: %w", t.name, err)
		}
		again, err := c.PutCmd(ctx, cmd, cols, withKind, batches)
		if err != nil {
			return fmt.Errorf("resent sequenced DoPut %s: %w", t.name, err)
		}
		w.nextSeq += int64(len(batches))
		w.tr.mu.Lock()
		defer w.tr.mu.Unlock()
		for b, a := range acks {
			w.tr.acks[ids[b]] = a
			r := again[b]
			if a.GetChangelogRows() != int64(want[b]) || !r.GetDuplicate() || r.GetCommitMs() != a.GetCommitMs() ||
				r.GetChangelogRows() != a.GetChangelogRows() || r.GetSequence() != a.GetSequence() {
				w.tr.ackProblems = append(w.tr.ackProblems, fmt.Sprintf("%s batch %d: ack %v, resent ack %v (model changelog rows %d)",
					t.name, ids[b], a, r, want[b]))
			}
		}
		return nil
	}
	user := "eo-" + w.id
	if w.epoch == 0 {
		var err error
		if w.epoch, err = w.abort(ctx, c, user, 0); err != nil {
			return err
		}
	}
	w.ckpt++
	cmd.Staging = &setatspb.StagingTarget{CommitUser: user, CheckpointId: w.ckpt, Epoch: w.epoch}
	acks, err := c.PutCmd(ctx, cmd, cols, withKind, batches)
	if err != nil {
		return fmt.Errorf("staging DoPut %s: %w", t.name, err)
	}
	w.nextSeq += int64(len(batches))
	for _, a := range acks {
		if !a.GetStaged() || a.GetChangelogRows() != 0 || len(a.GetBuckets()) != 0 {
			return fmt.Errorf("staging DoPut %s: ack %v", t.name, a)
		}
	}
	switch mode {
	case modeAbort:
		epoch, err := w.abort(ctx, c, user, w.ckpt-1)
		if err != nil {
			return err
		}
		w.epoch = epoch
		return nil
	case modePending:
		w.pending = &pendingStage{ckpt: w.ckpt, declared: declared, rows: folded}
		return nil
	}
	return w.commit(ctx, c, &pendingStage{ckpt: w.ckpt, declared: declared, rows: folded}, w.rng.IntN(2) == 0)
}

func (w *randWriter) abort(ctx context.Context, c *Client, user string, restored int64) (int64, error) {
	res := &setatspb.AbortStagedResponse{}
	err := c.Action(ctx, "abort-staged", &setatspb.AbortStagedRequest{Database: e2eDB, Table: w.tr.t.name,
		CommitUser: user, RestoredCheckpointId: restored}, res)
	if err != nil {
		return 0, fmt.Errorf("abort-staged %s: %w", w.tr.t.name, err)
	}
	return res.GetEpoch(), nil
}

// commit commits a staged checkpoint (twice when again: the second must be a no-op) and applies
// it to the model.
func (w *randWriter) commit(ctx context.Context, c *Client, ps *pendingStage, again bool) error {
	t := w.tr.t
	req := &setatspb.CommitStagedRequest{Database: e2eDB, Table: t.name, CommitUser: "eo-" + w.id, CheckpointId: ps.ckpt}
	res := &setatspb.CommitStagedResponse{}
	if err := c.Action(ctx, "commit-staged", req, res); err != nil {
		return fmt.Errorf("commit-staged %s checkpoint %d: %w", t.name, ps.ckpt, err)
	}
	w.tr.mu.Lock()
	id := w.tr.batch
	w.tr.batch++
	n := w.tr.m.applyFolded(ps.declared, ps.rows, id)
	w.tr.acks[id] = &setatspb.WriteAck{Rows: res.GetRows(), ChangelogRows: res.GetChangelogRows(), CommitMs: res.GetCommitMs(), Buckets: res.GetBuckets()}
	if res.GetAlreadyCommitted() || res.GetChangelogRows() != int64(n) || res.GetRows() != int64(len(ps.rows)) {
		w.tr.ackProblems = append(w.tr.ackProblems, fmt.Sprintf("%s commit of checkpoint %d: %v, model: %d rows, %d changelog rows",
			t.name, ps.ckpt, res, len(ps.rows), n))
	}
	w.tr.mu.Unlock()
	if again {
		res2 := &setatspb.CommitStagedResponse{}
		if err := c.Action(ctx, "commit-staged", req, res2); err != nil || !res2.GetAlreadyCommitted() {
			return fmt.Errorf("second commit-staged %s checkpoint %d: %v, %v (want already_committed)", t.name, ps.ckpt, res2, err)
		}
	}
	return nil
}

// verifyAgainstModel reads the table and checks it against the contract rules and the model:
// the fold equals the model state, every key's changelog equals the model's, and every changelog
// row carries the commit time of its batch's ack, within the end offsets the ack reported, in one
// contiguous offset range per (batch, bucket).
func verifyAgainstModel(ctx context.Context, c *Client, tr *tableRun, p *problems) (*tableRead, error) {
	t := tr.t
	read, err := readTable(ctx, c, e2eDB, t)
	if err != nil {
		return nil, err
	}
	tr.mu.Lock()
	defer tr.mu.Unlock()
	for _, a := range tr.ackProblems {
		p.add("ack", "%s", a)
	}
	fold, perKey := checkChangelog(t, read, p)
	compareState(t.name, "changelog folds to", fold, tr.m.state, p)
	type bb struct {
		batch  int
		part   string
		bucket int32
	}
	ranges := map[bb][2]int64{}
	counts := map[bb]int64{}
	for _, key := range tr.m.sortedKeys() {
		exp := tr.m.log[key]
		kr := perKey[key]
		var got []ChangeRow
		if kr != nil {
			got = kr.rows
		}
		same := len(got) == len(exp)
		for i := 0; same && i < len(exp); i++ {
			same = got[i].Kind == exp[i].kind && valuesEqual(got[i].Values, exp[i].vals)
		}
		if !same {
			p.add("changelog vs model", "%s key %s:\n%s", t.name, key, tr.m.caseText(key, got))
			continue
		}
		for i, e := range exp {
			r := got[i]
			ack := tr.acks[e.batch]
			if ack == nil {
				if !tr.unackedOK {
					p.add("ack", "%s batch %d: no ack recorded", t.name, e.batch)
				}
				continue
			}
			if r.CommitMs != ack.GetCommitMs() {
				p.add("commit time vs ack", "%s key %s offset %d: commit %d, batch %d ack commit_ms %d", t.name, key, r.Offset, r.CommitMs, e.batch, ack.GetCommitMs())
			}
			found := false
			for _, bo := range ack.GetBuckets() {
				if bo.GetPartition() == kr.partition && bo.GetBucket() == kr.bucket {
					found = true
					if r.Offset >= bo.GetEndOffset() {
						p.add("ack end offset", "%s key %s: offset %d, batch %d ack end_offset %d", t.name, key, r.Offset, e.batch, bo.GetEndOffset())
					}
				}
			}
			if !found {
				p.add("ack buckets", "%s batch %d: ack does not name partition %q bucket %d where it wrote offset %d", t.name, e.batch, kr.partition, kr.bucket, r.Offset)
			}
			k := bb{e.batch, kr.partition, kr.bucket}
			rg, ok := ranges[k]
			if !ok {
				rg = [2]int64{r.Offset, r.Offset}
			}
			rg[0], rg[1] = min(rg[0], r.Offset), max(rg[1], r.Offset)
			ranges[k] = rg
			counts[k]++
		}
	}
	for k, rg := range ranges {
		if p.counts["changelog vs model"] > 0 {
			break // rows of mismatching keys are not counted
		}
		if rg[1]-rg[0]+1 != counts[k] {
			p.add("batch atomic per bucket", "%s batch %d partition %q bucket %d: %d rows spread over offsets %d..%d", t.name, k.batch, k.part, k.bucket, counts[k], rg[0], rg[1])
		}
	}
	for key, kr := range perKey {
		if _, ok := tr.m.log[key]; !ok {
			p.add("changelog vs model", "%s key %s: %d changelog rows, model expects none", t.name, key, len(kr.rows))
		}
	}
	checkFlightInfo(ctx, c, e2eDB, t, read, p)
	return read, nil
}

// dropRandomPartition drops one of partitionValues of tr's table (drop-partition, proto/README.md
// "Dropping partitions") and the model drops that partition's keys; a partition without rows
// must be NotFound. Every bucket of a dropped partition then reads, from offset 0 and as a
// follower, no row and ends with ChangelogEnd END_PARTITION_DROPPED; a bucket written again later
// starts at the end offset it had (tdef.droppedEnd).
func dropRandomPartition(ctx context.Context, c *Client, tr *tableRun, rng *rand.Rand) (string, error) {
	t := tr.t
	dt := partitionValues[rng.IntN(len(partitionValues))]
	name := t.partKeys[0] + "=" + escapePartValue(dt)
	buckets, err := c.ListBuckets(ctx, e2eDB, t.name)
	if err != nil {
		return "", err
	}
	exists := false
	for _, b := range buckets {
		exists = exists || b.GetPartition() == name
	}
	res := &setatspb.DropPartitionResponse{}
	err = c.Action(ctx, "drop-partition", &setatspb.DropPartitionRequest{Database: e2eDB, Table: t.name,
		PartitionSpec: map[string]string{t.partKeys[0]: dt}}, res)
	if !exists {
		if status.Code(err) != codes.NotFound || !strings.Contains(status.Convert(err).Message(), name) {
			return "", fmt.Errorf("drop-partition %s of %s without buckets: %v, want NotFound naming it", name, t.name, err)
		}
		return fmt.Sprintf("%s: drop-partition %s: NotFound (no rows)", t.name, name), nil
	}
	if err != nil {
		return "", fmt.Errorf("drop-partition %s of %s: %w", name, t.name, err)
	}
	tr.mu.Lock()
	keys := tr.m.dropPartition(name)
	tr.mu.Unlock()
	if res.GetPartition() != name || !res.GetDropped() || res.GetStateRows() > int64(keys) {
		return "", fmt.Errorf("drop-partition %s of %s answered %v (the model had %d keys there)", name, t.name, res, keys)
	}
	if t.droppedEnd == nil {
		t.droppedEnd = map[string]int64{}
	}
	for _, b := range res.GetBuckets() {
		t.droppedEnd[fmt.Sprintf("%s/%d", b.GetPartition(), b.GetBucket())] = b.GetEndOffset()
		for _, follow := range []bool{false, true} {
			tk := &setatspb.ChangelogTicket{Database: e2eDB, Table: t.name, Partition: b.GetPartition(), Bucket: b.GetBucket(),
				Follow: follow, Start: &setatspb.ChangelogTicket_Offset{Offset: 0}}
			if err := expectDroppedEnd(ctx, c, tk, b.GetEndOffset()); err != nil {
				return "", fmt.Errorf("%s of %s: %w", name, t.name, err)
			}
		}
	}
	return fmt.Sprintf("%s: dropped %s (%d keys, %d state rows, %d buckets)", t.name, name, keys, res.GetStateRows(), len(res.GetBuckets())), nil
}

// expectDroppedEnd reads a DoGet of tk to its end: no row, then ChangelogEnd END_PARTITION_DROPPED
// with the dropped end offset, and no error.
func expectDroppedEnd(ctx context.Context, c *Client, tk *setatspb.ChangelogTicket, end int64) error {
	b, err := proto.Marshal(tk)
	if err != nil {
		return err
	}
	rdr, err := c.OpenGet(ctx, b)
	if err != nil {
		return err
	}
	defer rdr.Release()
	var rows int64
	var got *setatspb.ChangelogEnd
	for rdr.Next() {
		rows += rdr.RecordBatch().NumRows()
		if md := rdr.LatestAppMetadata(); len(md) > 0 {
			got = &setatspb.ChangelogEnd{}
			if err := proto.Unmarshal(md, got); err != nil {
				return err
			}
		}
	}
	if err := rdr.Err(); err != nil || rows != 0 || got.GetReason() != setatspb.ChangelogEndReason_END_PARTITION_DROPPED || got.GetEndOffset() != end {
		return fmt.Errorf("DoGet %v of the dropped partition: %d rows, end %v, err %v; want no row and END_PARTITION_DROPPED at %d", tk, rows, got, err, end)
	}
	return nil
}

// TestRandomizedModel is issue 2's model-based randomized test against the real binary: rounds of
// random upserts, deletes and partial writes from concurrent writers (disjoint keys) on four
// tables, then the whole changelog is read from earliest and checked against the reference model
// and the contract rules, and the merged table is read back (a planned snapshot read, point and
// prefix lookups: checkReads) and checked against the model's table; then the gateway is restarted (SIGTERM, or SIGKILL after all acks) and
// everything is checked again. SETATS_E2E_SEED replays a run; SETATS_E2E_ROUNDS sets the rounds.
func TestRandomizedModel(t *testing.T) {
	seed := uint64(envInt64(t, "SETATS_E2E_SEED", time.Now().UnixNano()))
	rounds := int(envInt64(t, "SETATS_E2E_ROUNDS", 6))
	t.Logf("seed %d, %d rounds (replay: SETATS_E2E_SEED=%d)", seed, rounds, seed)
	ctx := testCtx(t)
	gw := testGateway(t)
	c, err := Dial(gw.Info.FlightAddr)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { c.Close() }()
	var followers []*followReader
	defer func() {
		for _, f := range followers {
			f.stop()
		}
	}()

	// readRng drives the read checks (snapshot projections and filters, lookup keys).
	readRng := rand.New(rand.NewPCG(seed, 777))
	// dropRng drives the drop-partition operations.
	dropRng := rand.New(rand.NewPCG(seed, 778))
	var runs []*tableRun
	var writers []*randWriter
	for ti, td := range randomTables() {
		if _, err := c.CreateTable(ctx, td.spec(e2eDB)); err != nil {
			t.Fatalf("create-table %s: %v", td.name, err)
		}
		tr := &tableRun{t: td, m: newModel(td), acks: map[int]*setatspb.WriteAck{}}
		runs = append(runs, tr)
		keys := tableKeys(td)
		const perTable = 2
		for wi := range perTable {
			w := &randWriter{tr: tr, rng: rand.New(rand.NewPCG(seed, uint64(ti*perTable+wi))), id: fmt.Sprintf("w%d-%d", ti, wi)}
			for ki := wi; ki < len(keys); ki += perTable {
				w.keys = append(w.keys, keys[ki])
			}
			writers = append(writers, w)
		}
	}

	// Follow readers on every bucket of `dedup` (unpartitioned), open from offset 0 before the
	// first write, re-opened from their next offset after each restart.
	for b := range runs[0].t.buckets {
		f := &followReader{table: runs[0].t.name, bucket: b}
		f.start(ctx, c)
		followers = append(followers, f)
	}

	for round := range rounds {
		// Staged checkpoints left before the last restart are committed now (SPEC section 10:
		// staged rows survive a crash between staging and commit).
		// Or, one in three, dropped: the job restored the checkpoint before it (abort-staged
		// with that id), so the model never sees those rows.
		for _, w := range writers {
			if w.pending == nil {
				continue
			}
			if w.rng.IntN(3) == 0 {
				epoch, err := w.abort(ctx, c, "eo-"+w.id, w.pending.ckpt-1)
				if err != nil {
					t.Fatalf("round %d: %v", round, err)
				}
				w.epoch = epoch
			} else if err := w.commit(ctx, c, w.pending, true); err != nil {
				t.Fatalf("round %d: %v", round, err)
			}
			w.pending = nil
		}
		var wg sync.WaitGroup
		errs := make(chan error, len(writers))
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
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Errorf("round %d: %v", round, err)
		}
		if t.Failed() {
			t.FailNow()
		}
		// Writers are idle: now and then a partition of a partitioned table is dropped.
		for _, tr := range runs {
			if len(tr.t.partKeys) > 0 && dropRng.IntN(3) == 0 {
				what, err := dropRandomPartition(ctx, c, tr, dropRng)
				if err != nil {
					t.Fatalf("round %d: %v", round, err)
				}
				t.Logf("round %d: %s", round, what)
			}
		}
		before := map[string]*tableRead{}
		for _, tr := range runs {
			var p problems
			read, err := verifyAgainstModel(ctx, c, tr, &p)
			if err != nil {
				t.Fatalf("round %d: %v", round, err)
			}
			if !p.empty() {
				t.Errorf("round %d, table %s (seed %d):\n%s", round, tr.t.name, seed, p.String())
			}
			before[tr.t.name] = read
			if tr == runs[0] {
				var fp problems
				checkFollow(followers, read, &fp)
				if !fp.empty() {
					t.Errorf("round %d, follow readers of %s (seed %d):\n%s", round, tr.t.name, seed, fp.String())
				}
			}
			t.Logf("round %d: %s: %d keys, %d changelog rows in %d buckets, %d lookup cap checks so far", round, tr.t.name, len(tr.m.state), read.rowCount(), len(read.buckets), tr.capChecks)
		}
		if t.Failed() {
			t.FailNow()
		}

		// Restart: SIGTERM (must exit 0) on even rounds, SIGKILL after every ack on odd ones.
		for _, f := range followers {
			f.stop()
		}
		c.Close()
		how := "SIGTERM"
		if round%2 == 1 {
			how = "SIGKILL"
			gw.Kill()
		} else if err := gw.Stop(60 * time.Second); err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		for _, tr := range runs {
			var p problems
			if err := checkStoredState(gw.Warehouse, tr.t, tr.m.state, &p); err != nil {
				t.Fatalf("round %d after %s: offline store: %v", round, how, err)
			}
			if !p.empty() {
				t.Errorf("round %d after %s, table %s, offline store state (seed %d):\n%s", round, how, tr.t.name, seed, p.String())
			}
		}
		if err := gw.Restart(); err != nil {
			t.Fatalf("round %d: restart after %s: %v", round, how, err)
		}
		if c, err = Dial(gw.Info.FlightAddr); err != nil {
			t.Fatal(err)
		}
		for _, f := range followers {
			f.start(ctx, c)
		}
		for _, tr := range runs {
			var p problems
			read, err := verifyAgainstModel(ctx, c, tr, &p)
			if err != nil {
				t.Fatalf("round %d after %s restart: %v", round, how, err)
			}
			sameRead(tr.t.name, before[tr.t.name], read, &p)
			// The merged table read back once per round, from the restarted gateway.
			if err := checkReads(ctx, c, tr, read, readRng, &p); err != nil {
				t.Fatalf("round %d after %s restart: %v", round, how, err)
			}
			if !p.empty() {
				t.Errorf("round %d after %s restart, table %s (seed %d):\n%s", round, how, tr.t.name, seed, p.String())
			}
		}
		if t.Failed() {
			t.FailNow()
		}
	}
}
