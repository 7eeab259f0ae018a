package gatewaytest

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/setats/setats/proto/setatspb"
)

// Delivery guarantees across gateway crashes (SPEC section 10): the real binary is killed with
// SIGKILL between staging and commit, during a commit and after a commit before the client
// learnt of it, and between a sequenced batch becoming durable and its ack; after each restart
// nothing is lost and nothing is applied twice.

var deliveryCols = []Col{{Name: "id", Type: "BIGINT", Key: true}, {Name: "v", Type: "STRING"}}

// deliveryRun drives one table of the crash test.
type deliveryRun struct {
	t     *testing.T
	ctx   context.Context
	gw    *Gateway
	c     *Client
	table string
}

func (r *deliveryRun) restart() {
	r.t.Helper()
	r.c.Close()
	if err := r.gw.Restart(); err != nil {
		r.t.Fatal(err)
	}
	c, err := Dial(r.gw.Info.FlightAddr)
	if err != nil {
		r.t.Fatal(err)
	}
	r.c = c
}

// put sends batches on one DoPut with the command's delivery fields and returns the acks.
func (r *deliveryRun) put(cmd *setatspb.WriteCommand, batches [][]WriteRow) ([]*setatspb.WriteAck, error) {
	cmd.Database, cmd.Table = e2eDB, r.table
	schema, err := WriteSchema(deliveryCols, true)
	if err != nil {
		return nil, err
	}
	ps, err := r.c.OpenPutCmd(r.ctx, cmd, schema)
	if err != nil {
		return nil, err
	}
	defer ps.Abort()
	for _, rows := range batches {
		rec, err := BuildBatch(memory.NewGoAllocator(), deliveryCols, true, rows)
		if err != nil {
			return nil, err
		}
		err = ps.Send(rec)
		rec.Release()
		if err != nil {
			break
		}
	}
	_ = ps.CloseSend()
	var acks []*setatspb.WriteAck
	for a := range ps.Acks {
		acks = append(acks, a)
	}
	return acks, ps.Wait()
}

// changelog returns every changelog row of the table as "+I(1,'a')" strings, by bucket order.
func (r *deliveryRun) changelog() []string {
	r.t.Helper()
	bs, err := r.c.ListBuckets(r.ctx, e2eDB, r.table)
	if err != nil {
		r.t.Fatal(err)
	}
	var out []string
	for _, b := range bs {
		cl, err := r.c.ReadChangelog(r.ctx, e2eDB, r.table, b.GetPartition(), b.GetBucket())
		if err != nil {
			r.t.Fatal(err)
		}
		for _, row := range cl.Rows {
			out = append(out, KindString(row.Kind)+FormatValues(row.Values))
		}
	}
	return out
}

func (r *deliveryRun) abort(user string, restored int64) int64 {
	r.t.Helper()
	res := &setatspb.AbortStagedResponse{}
	if err := r.c.Action(r.ctx, "abort-staged", &setatspb.AbortStagedRequest{Database: e2eDB, Table: r.table,
		CommitUser: user, RestoredCheckpointId: restored}, res); err != nil {
		r.t.Fatal(err)
	}
	return res.GetEpoch()
}

func (r *deliveryRun) commit(user string, ckpt int64) (*setatspb.CommitStagedResponse, error) {
	res := &setatspb.CommitStagedResponse{}
	err := r.c.Action(r.ctx, "commit-staged", &setatspb.CommitStagedRequest{Database: e2eDB, Table: r.table,
		CommitUser: user, CheckpointId: ckpt}, res)
	return res, err
}

func upserts(id int64, vals ...string) []WriteRow {
	var out []WriteRow
	for _, v := range vals {
		out = append(out, WriteRow{Kind: 2, Values: []any{id, v}})
	}
	return out
}

func TestDeliveryCrashSIGKILL(t *testing.T) {
	ctx := testCtx(t)
	gw := testGateway(t)
	c, err := Dial(gw.Info.FlightAddr)
	if err != nil {
		t.Fatal(err)
	}
	r := &deliveryRun{t: t, ctx: ctx, gw: gw, c: c, table: "delivery_crash"}
	defer func() { r.c.Close() }()
	td := &tdef{name: r.table, buckets: 1, engine: "DEDUPLICATE", cols: deliveryCols}
	if _, err := c.CreateTable(ctx, td.spec(e2eDB)); err != nil {
		t.Fatal(err)
	}
	const user = "job-1/sink"
	stage := func(ckpt, epoch int64, writer string, first int64, batches ...[]WriteRow) {
		t.Helper()
		acks, err := r.put(&setatspb.WriteCommand{WriterId: writer, FirstSequence: first,
			Staging: &setatspb.StagingTarget{CommitUser: user, CheckpointId: ckpt, Epoch: epoch}}, batches)
		if err != nil || len(acks) != len(batches) {
			t.Fatalf("stage checkpoint %d: %d acks, %v", ckpt, len(acks), err)
		}
	}

	// 1. Crash between staging and commit: the staged rows survive, stay invisible, and the
	// commit after the restart merges them (folded per key: v1 then v2 gives +I v2).
	epoch := r.abort(user, 0)
	stage(1, epoch, "w1", 0, upserts(1, "v1"), upserts(1, "v2"))
	gw.Kill()
	r.restart()
	if got := r.changelog(); len(got) != 0 {
		t.Fatalf("staged rows visible after restart: %v", got)
	}
	if res, err := r.commit(user, 1); err != nil || res.GetAlreadyCommitted() {
		t.Fatalf("commit 1: %v %v", res, err)
	}
	want := []string{"+I(1,'v2')"}
	if got := r.changelog(); !equal(got, want) {
		t.Fatalf("after commit 1: %v, want %v", got, want)
	}

	// 2. Crash after the commit, before the client learnt of it: the second commit is a no-op.
	stage(2, epoch, "w1", 2, upserts(1, "v3"))
	if _, err := r.commit(user, 2); err != nil {
		t.Fatal(err)
	}
	gw.Kill()
	r.restart()
	if res, err := r.commit(user, 2); err != nil || !res.GetAlreadyCommitted() {
		t.Fatalf("commit 2 again: %v %v", res, err)
	}
	want = append(want, "-U(1,'v2')", "+U(1,'v3')")
	if got := r.changelog(); !equal(got, want) {
		t.Fatalf("after commit 2: %v, want %v", got, want)
	}

	// 3. Crash during a commit (kill while commit-staged runs): after the restart the commit is
	// either done (already committed) or not (it commits now); the change is there once.
	stage(3, epoch, "w1", 3, upserts(2, "x"), upserts(3, "y"), upserts(1, "v4"))
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = r.commit(user, 3)
	}()
	time.Sleep(time.Millisecond)
	gw.Kill()
	<-done
	r.restart()
	if _, err := r.commit(user, 3); err != nil {
		t.Fatal(err)
	}
	got := r.changelog()
	if n := count(got, "+U(1,'v4')"); n != 1 || count(got, "+I(2,'x')") != 1 || count(got, "+I(3,'y')") != 1 {
		t.Fatalf("after commit 3: %v", got)
	}

	// 4. A restart of the job (abort-staged from checkpoint 3) drops rows staged for 4 and
	// fences off the old epoch.
	stage(4, epoch, "w1", 6, upserts(9, "never"))
	gw.Kill()
	r.restart()
	epoch2 := r.abort(user, 3)
	if epoch2 <= epoch {
		t.Fatalf("epoch %d after %d", epoch2, epoch)
	}
	if _, err := r.put(&setatspb.WriteCommand{Staging: &setatspb.StagingTarget{CommitUser: user, CheckpointId: 4, Epoch: epoch}},
		[][]WriteRow{upserts(9, "zombie")}); err == nil || !strings.Contains(err.Error(), "fenced") {
		t.Fatalf("old epoch not fenced off: %v", err)
	}
	if _, err := r.commit(user, 4); err == nil {
		t.Fatalf("commit of a dropped checkpoint succeeded")
	}
	if got := r.changelog(); count(got, "+I(9,'never')") != 0 || count(got, "+I(9,'zombie')") != 0 {
		t.Fatalf("rows of an uncompleted checkpoint in the changelog: %v", got)
	}

	// 5. At-least-once retries across a crash: writer w2 sends 6 batches, the gateway dies after
	// some of them are durable; the client resends all from sequence 0: each batch is there once.
	batches := [][]WriteRow{upserts(5, "a"), upserts(5, "b"), upserts(5, "c"), upserts(5, "d"), upserts(5, "e"), upserts(5, "f")}
	go func() { time.Sleep(2 * time.Millisecond); gw.Kill() }()
	acks, _ := r.put(&setatspb.WriteCommand{WriterId: "w2"}, batches)
	for !gw.Exited() {
		time.Sleep(time.Millisecond)
	}
	r.restart()
	acks2, err := r.put(&setatspb.WriteCommand{WriterId: "w2"}, batches)
	if err != nil || len(acks2) != len(batches) {
		t.Fatalf("resend: %d acks, %v", len(acks2), err)
	}
	for i, a := range acks {
		if !acks2[i].GetDuplicate() || acks2[i].GetCommitMs() != a.GetCommitMs() {
			t.Fatalf("batch %d acknowledged before the crash: resend answered %v, first ack %v", i, acks2[i], a)
		}
	}
	var five []string
	for _, s := range r.changelog() {
		if strings.Contains(s, "(5,") {
			five = append(five, s)
		}
	}
	want = []string{"+I(5,'a')"}
	for _, p := range [][2]string{{"a", "b"}, {"b", "c"}, {"c", "d"}, {"d", "e"}, {"e", "f"}} {
		want = append(want, fmt.Sprintf("-U(5,'%s')", p[0]), fmt.Sprintf("+U(5,'%s')", p[1]))
	}
	if !equal(five, want) {
		t.Fatalf("key 5 after the resend: %v, want %v (acks before the crash: %d)", five, want, len(acks))
	}
	t.Logf("acks before the crash: %d of %d", len(acks), len(batches))
}

func equal(a, b []string) bool {
	return strings.Join(a, " ") == strings.Join(b, " ")
}

func count(xs []string, s string) int {
	n := 0
	for _, x := range xs {
		if x == s {
			n++
		}
	}
	return n
}
