package gatewaytest

import (
	"slices"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/setats/setats/proto/setatspb"
)

// sinkStep is one step of a sink delivery case (shared/cases/sink-cases.txt, SPEC section 10), as
// the setats sink drives the gateway through Flight:
//
//	put     a sequenced DoPut of writer/seq (at-least-once); wantSameAck: answered with the ack of
//	        the step at index sameAckAs, duplicate set
//	stage   a DoPut staged for checkpoint ckpt in the current epoch (exactly-once)
//	abort   abort-staged restored from checkpoint restored (a job start or restore); sets the epoch
//	commit  commit-staged of checkpoint ckpt; wantAlready: answered already_committed
//
// After the step, wantChangelog (when not nil) is the whole changelog from earliest, and every key
// of invisible is absent from the changelog, a snapshot read and a lookup.
type sinkStep struct {
	op            string
	writer        string
	seq           int64
	ckpt          int64
	restored      int64
	rows          []WriteRow
	sameAckAs     int // put: index of the step whose ack this one repeats; -1 = a new ack
	wantAlready   bool
	wantChangelog []string
	invisible     []int32
}

type sinkCase struct {
	name  string
	steps []sinkStep
}

// sinkCases are shared/cases/sink-cases.txt X1-X4 with the values written there; the commit user
// stands for (job and sink), one subtask.
func sinkCases() []sinkCase {
	put := func(writer string, seq int64, sameAckAs int, rows ...WriteRow) sinkStep {
		return sinkStep{op: "put", writer: writer, seq: seq, rows: rows, sameAckAs: sameAckAs}
	}
	stage := func(ckpt int64, rows ...WriteRow) sinkStep { return sinkStep{op: "stage", ckpt: ckpt, rows: rows} }
	abort := func(restored int64) sinkStep { return sinkStep{op: "abort", restored: restored} }
	commit := func(ckpt int64, already bool, changelog ...string) sinkStep {
		return sinkStep{op: "commit", ckpt: ckpt, wantAlready: already, wantChangelog: changelog}
	}
	return []sinkCase{
		// X1 at-least-once: batch B (seq 5) of writer w; the ack is lost; the client resends B.
		{name: "X1", steps: []sinkStep{
			put("w", 5, -1, r(KindUpdateAfter, int32(1), "a")),
			put("w", 5, 0, r(KindUpdateAfter, int32(1), "a")),
			{op: "check", wantChangelog: []string{"+I(1,'a')"}},
		}},
		// X2 exactly-once: (1,'v2') stored by checkpoint 3; checkpoint 4 stages +U(1,'v1') +U(1,'v2')
		// and fails before completing; restore from 3, replay, checkpoint 4 completes: nothing new.
		{name: "X2", steps: []sinkStep{
			abort(0),
			stage(3, r(KindUpdateAfter, int32(1), "v2")),
			commit(3, false, "+I(1,'v2')"),
			stage(4, r(KindUpdateAfter, int32(1), "v1"), r(KindUpdateAfter, int32(1), "v2")),
			abort(3),
			stage(4, r(KindUpdateAfter, int32(1), "v1"), r(KindUpdateAfter, int32(1), "v2")),
			commit(4, false, "+I(1,'v2')"),
		}},
		// X2 at-least-once instead (README "Delivery guarantee"): the replay of the same rows after
		// the failover is merged again and emits -U(1,'v2') +U(1,'v1') -U(1,'v1') +U(1,'v2').
		{name: "X2 at-least-once", steps: []sinkStep{
			put("w1", 0, -1, r(KindUpdateAfter, int32(1), "v2")),
			put("w2", 0, -1, r(KindUpdateAfter, int32(1), "v1"), r(KindUpdateAfter, int32(1), "v2")),
			{op: "check", wantChangelog: []string{"+I(1,'v2')", "-U(1,'v2')", "+U(1,'v1')", "-U(1,'v1')", "+U(1,'v2')"}},
		}},
		// X3 exactly-once: +I(7,'x') staged for checkpoint 9 is invisible until checkpoint 9 completes.
		{name: "X3", steps: []sinkStep{
			abort(0),
			{op: "stage", ckpt: 9, rows: []WriteRow{r(KindInsert, int32(7), "x")}, wantChangelog: []string{}, invisible: []int32{7}},
			commit(9, false, "+I(7,'x')"),
		}},
		// X4 exactly-once: commit 9 succeeded on the gateway, the committer failed before it learnt
		// of it; the restore (from checkpoint 9) commits 9 again: +I(7,'x') once.
		{name: "X4", steps: []sinkStep{
			abort(0),
			stage(9, r(KindInsert, int32(7), "x")),
			commit(9, false, "+I(7,'x')"),
			abort(9),
			commit(9, true, "+I(7,'x')"),
		}},
	}
}

// TestSinkCases runs each case of sinkCases on its own one-bucket table of one gateway binary.
func TestSinkCases(t *testing.T) {
	c, ctx := caseGateway(t)
	for i, tc := range sinkCases() {
		t.Run(tc.name, func(t *testing.T) {
			td := oneBucket("x"+string(rune('a'+i)), "DEDUPLICATE", nil, idInt, vStr)
			if _, err := c.CreateTable(ctx, td.spec(e2eDB)); err != nil {
				t.Fatalf("create-table: %v", err)
			}
			const user = "job-x/sink"
			var epoch int64
			acks := make([]*setatspb.WriteAck, len(tc.steps))
			for si, s := range tc.steps {
				switch s.op {
				case "put", "stage":
					cmd := &setatspb.WriteCommand{Database: e2eDB, Table: td.name, WriterId: s.writer, FirstSequence: s.seq}
					if s.op == "stage" {
						cmd.Staging = &setatspb.StagingTarget{CommitUser: user, CheckpointId: s.ckpt, Epoch: epoch}
					}
					a, err := c.PutCmd(ctx, cmd, td.cols, true, [][]WriteRow{s.rows})
					if err != nil {
						t.Fatalf("step %d %s: %v", si, s.op, err)
					}
					acks[si] = a[0]
					if s.op == "put" && s.sameAckAs >= 0 {
						again := proto.Clone(a[0]).(*setatspb.WriteAck)
						if !again.GetDuplicate() {
							t.Errorf("step %d: resent batch not answered as a duplicate: %v", si, a[0])
						}
						again.Duplicate = false
						if !proto.Equal(again, acks[s.sameAckAs]) {
							t.Errorf("step %d: resent batch answered %v, want the original ack %v", si, a[0], acks[s.sameAckAs])
						}
					}
				case "abort":
					res := &setatspb.AbortStagedResponse{}
					if err := c.Action(ctx, "abort-staged", &setatspb.AbortStagedRequest{Database: e2eDB, Table: td.name,
						CommitUser: user, RestoredCheckpointId: s.restored}, res); err != nil {
						t.Fatalf("step %d abort-staged: %v", si, err)
					}
					epoch = res.GetEpoch()
				case "commit":
					res := &setatspb.CommitStagedResponse{}
					if err := c.Action(ctx, "commit-staged", &setatspb.CommitStagedRequest{Database: e2eDB, Table: td.name,
						CommitUser: user, CheckpointId: s.ckpt}, res); err != nil {
						t.Fatalf("step %d commit-staged %d: %v", si, s.ckpt, err)
					}
					if res.GetAlreadyCommitted() != s.wantAlready {
						t.Errorf("step %d commit-staged %d: already_committed %v, want %v", si, s.ckpt, res.GetAlreadyCommitted(), s.wantAlready)
					}
				case "check":
				default:
					t.Fatalf("step %d: unknown op %q", si, s.op)
				}
				if s.wantChangelog != nil {
					got := changelogOf(t, c, td)
					if !slices.Equal(got, s.wantChangelog) {
						t.Errorf("step %d %s: changelog %v, want %v", si, s.op, got, s.wantChangelog)
					}
				}
				for _, k := range s.invisible {
					checkInvisible(t, c, td, k)
				}
			}
		})
	}
}

// changelogRows is the table's whole changelog from earliest, in bucket order.
func changelogRows(t *testing.T, c *Client, td *tdef) []ChangeRow {
	t.Helper()
	ctx := testCtx(t)
	bs, err := c.ListBuckets(ctx, e2eDB, td.name)
	if err != nil {
		t.Fatal(err)
	}
	var out []ChangeRow
	for _, b := range bs {
		cl, err := c.ReadChangelog(ctx, e2eDB, td.name, b.GetPartition(), b.GetBucket())
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, cl.Rows...)
	}
	return out
}

// changelogOf is changelogRows as "+I(1,'a')" strings.
func changelogOf(t *testing.T, c *Client, td *tdef) []string {
	t.Helper()
	out := []string{}
	for _, row := range changelogRows(t, c, td) {
		out = append(out, KindString(row.Kind)+FormatValues(row.Values))
	}
	return out
}

// checkInvisible fails when key id (the INT primary key, column 0) is in the changelog, a snapshot
// read or a lookup of the table (X3: "a setats-cdc reader, a snapshot read and the table have no
// key 7").
func checkInvisible(t *testing.T, c *Client, td *tdef, id int32) {
	t.Helper()
	ctx := testCtx(t)
	for _, row := range changelogRows(t, c, td) {
		if row.Values[0] == id {
			t.Errorf("key %d in the changelog before the commit: %s%s", id, KindString(row.Kind), FormatValues(row.Values))
		}
	}
	parts, err := c.ReadSnapshot(ctx, &setatspb.ReadCommand{Database: e2eDB, Table: td.name, Snapshot: &setatspb.SnapshotRead{}})
	if err != nil {
		t.Fatalf("snapshot read: %v", err)
	}
	for _, p := range parts {
		for _, row := range p.Rows {
			if row[0] == id {
				t.Errorf("key %d in the snapshot read before the commit: %v", id, row)
			}
		}
	}
	got, err := c.Lookup(ctx, &setatspb.LookupCommand{Database: e2eDB, Table: td.name}, []Col{idInt}, [][]any{{id}})
	if err != nil {
		t.Fatalf("lookup: %v", err)
	}
	if len(got) != 1 || len(got[0]) != 0 {
		t.Errorf("lookup of key %d before the commit: %v, want no row", id, got)
	}
}
