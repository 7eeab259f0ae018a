package gatewaytest

import (
	"fmt"
	"math/rand/v2"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/setats/setats/proto/setatspb"
)

// seedsTable is the seeds' table shape: id, dt, name, address STRING; pk(id, dt); partitioned by dt.
func seedsTable(name string, buckets int32) *tdef {
	return &tdef{name: name, buckets: buckets, engine: "DEDUPLICATE", partKeys: []string{"dt"}, cols: []Col{
		{Name: "id", Type: "STRING", Key: true}, {Name: "dt", Type: "STRING", Key: true},
		{Name: "name", Type: "STRING"}, {Name: "address", Type: "STRING"}}}
}

var crashTag = regexp.MustCompile(`^c(\d+)-r\d+$`)

// TestCrashSIGKILLMidStream kills the real binary with SIGKILL in the middle of a DoPut stream of
// many batches (after some acks), restarts it on the same warehouse and checks SPEC section 7:
// every acknowledged batch is in the changelog and the table, every unacknowledged batch is wholly
// present or wholly absent (and the present ones are a prefix of the stream), the changelog still
// obeys the contract rules and folds to the model of the present batches; then the restarted
// gateway takes new writes with offsets going on densely. Two kills on the same warehouse.
func TestCrashSIGKILLMidStream(t *testing.T) {
	seed := uint64(envInt64(t, "SETATS_E2E_SEED", time.Now().UnixNano()))
	t.Logf("seed %d (replay: SETATS_E2E_SEED=%d)", seed, seed)
	rng := rand.New(rand.NewPCG(seed, 99))
	ctx := testCtx(t)
	gw := testGateway(t)
	c, err := Dial(gw.Info.FlightAddr)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { c.Close() }()
	td := seedsTable("crash", 4)
	if _, err := c.CreateTable(ctx, td.spec(e2eDB)); err != nil {
		t.Fatal(err)
	}
	tr := &tableRun{t: td, m: newModel(td), acks: map[int]*setatspb.WriteAck{}, unackedOK: true}
	cols := td.cols
	declared := []int{0, 1, 2, 3}
	dts := []string{"2024-05-01", "2024-05-02", "2024-05-03"}
	var written [][]any // keys (id, dt) written so far, for updates
	nextBatch := 0

	// SIGKILL right at the 20th ack, at the 70th, and 0-20 ms after the 40th (so that the kill
	// can land between a batch becoming durable and its ack); last, SIGTERM at the 30th ack, which
	// must drain and exit 0 (issue 2) with the same guarantees.
	for iter, killAfter := range []int{20, 70, 40, 30} {
		const nb, rowsPer = 250, 200
		first := nextBatch
		batches := make([][]WriteRow, nb)
		pending := written
		for b := range nb {
			seen := map[string]bool{}
			for j := range rowsPer {
				var id, dt string
				if len(pending) > 0 && rng.IntN(5) == 0 { // 20% updates of earlier keys
					k := pending[rng.IntN(len(pending))]
					id, dt = k[0].(string), k[1].(string)
				} else {
					id, dt = fmt.Sprintf("i%d-b%d-r%d", iter, b, j), dts[rng.IntN(len(dts))]
				}
				if seen[id+"/"+dt] {
					id, dt = fmt.Sprintf("i%d-b%d-r%d", iter, b, j), dts[rng.IntN(len(dts))]
				}
				seen[id+"/"+dt] = true
				name := fmt.Sprintf("c%d-r%d", nextBatch+b, j)
				batches[b] = append(batches[b], WriteRow{Kind: KindUpdateAfter, Values: []any{id, dt, name, fmt.Sprintf("addr %d", rng.IntN(1000))}})
			}
			for _, r := range batches[b] {
				pending = append(pending, []any{r.Values[0], r.Values[1]})
			}
		}

		schema, err := WriteSchema(cols, false)
		if err != nil {
			t.Fatal(err)
		}
		ps, err := c.OpenPut(ctx, e2eDB, td.name, schema)
		if err != nil {
			t.Fatal(err)
		}
		sendDone := make(chan int)
		go func() {
			sent := 0
			alloc := memory.NewGoAllocator()
			for _, rows := range batches {
				rec, err := BuildBatch(alloc, cols, false, rows)
				if err != nil {
					break
				}
				err = ps.Send(rec)
				rec.Release()
				if err != nil {
					break
				}
				sent++
			}
			if sent == len(batches) {
				_ = ps.CloseSend()
			}
			sendDone <- sent
		}()
		var acks []*setatspb.WriteAck
		killed := false
		termErr := make(chan error, 1)
		for a := range ps.Acks {
			acks = append(acks, a)
			if len(acks) == killAfter && !killed {
				killed = true
				switch iter {
				case 2:
					delay := time.Duration(rng.IntN(20_000)) * time.Microsecond
					go func() {
						time.Sleep(delay)
						gw.Kill()
					}()
				case 3:
					go func() { termErr <- gw.Stop(time.Minute) }()
				default:
					gw.Kill()
				}
			}
		}
		sent := <-sendDone
		<-gw.done
		how := "SIGKILL"
		if iter == 3 {
			how = "SIGTERM"
			if err := <-termErr; err != nil {
				t.Errorf("iteration %d: SIGTERM during a write stream: %v", iter, err)
			}
		}
		if !killed {
			t.Fatalf("iteration %d: the stream ended after %d acks before the kill (err %v)", iter, len(acks), ps.Err())
		}
		t.Logf("iteration %d: %s after %d acks; %d of %d batches acknowledged, %d sent (stream: %v)", iter, how, killAfter, len(acks), nb, sent, ps.Err())
		for i, a := range acks {
			if a.GetBatchSeq() != int64(i) || a.GetRows() != rowsPer {
				t.Fatalf("iteration %d: ack %d: batch_seq %d rows %d", iter, i, a.GetBatchSeq(), a.GetRows())
			}
			tr.acks[first+i] = a
		}
		c.Close()
		var sp problems
		stored, err := scanStoredState(gw.Warehouse, td, &sp)
		if err != nil {
			t.Fatalf("iteration %d: offline store after %s: %v", iter, how, err)
		}

		if err := gw.Restart(); err != nil {
			t.Fatalf("iteration %d: restart after %s: %v", iter, how, err)
		}
		if c, err = Dial(gw.Info.FlightAddr); err != nil {
			t.Fatal(err)
		}
		read, err := readTable(ctx, c, e2eDB, td)
		if err != nil {
			t.Fatal(err)
		}
		// Which batches are in the changelog, and wholly?
		count := map[int]int{}
		for _, b := range read.buckets {
			for _, r := range b.log.Rows {
				if r.Kind != KindInsert && r.Kind != KindUpdateAfter {
					continue
				}
				if m := crashTag.FindStringSubmatch(r.Values[2].(string)); m != nil {
					n, _ := strconv.Atoi(m[1])
					count[n]++
				}
			}
		}
		present := 0
		for b := range nb {
			n := count[first+b]
			switch {
			case b < len(acks) && n != rowsPer:
				t.Errorf("iteration %d: acknowledged batch %d has %d of %d rows after restart", iter, b, n, rowsPer)
			case n != 0 && n != rowsPer:
				t.Errorf("iteration %d: unacknowledged batch %d is half there: %d of %d rows", iter, b, n, rowsPer)
			}
			if n > 0 {
				if present != b {
					t.Errorf("iteration %d: batch %d present after absent batch %d", iter, b, present)
				}
				present = b + 1
			}
		}
		t.Logf("iteration %d: %d batches present after restart (%d acknowledged)", iter, present, len(acks))
		if t.Failed() {
			t.FailNow()
		}
		for b := range present {
			for _, r := range batches[b] {
				tr.m.apply(KindUpdateAfter, declared, r.Values, first+b)
				written = append(written, []any{r.Values[0], r.Values[1]})
			}
		}
		nextBatch += nb

		compareState(td.name, "store holds (offline ScanState after "+how+")", stored, tr.m.state, &sp)
		if !sp.empty() {
			t.Errorf("iteration %d: stored state after %s:\n%s", iter, how, sp.String())
		}
		var p problems
		if _, err := verifyAgainstModel(ctx, c, tr, &p); err != nil {
			t.Fatal(err)
		}
		if !p.empty() {
			t.Fatalf("iteration %d after %s and restart:\n%s", iter, how, p.String())
		}

		// The restarted gateway goes on: one more acknowledged batch, offsets continue densely.
		var more []WriteRow
		for j := range 50 {
			k := written[rng.IntN(len(written))]
			if j%2 == 0 {
				k = []any{fmt.Sprintf("after%d-%d", iter, j), dts[j%len(dts)]}
			}
			dup := false
			for _, r := range more {
				dup = dup || (r.Values[0] == k[0] && r.Values[1] == k[1])
			}
			if dup {
				continue
			}
			more = append(more, WriteRow{Kind: KindUpdateAfter, Values: []any{k[0], k[1], fmt.Sprintf("c%d-r%d", nextBatch, j), "after"}})
		}
		want := 0
		for _, r := range more {
			want += tr.m.apply(KindUpdateAfter, declared, r.Values, nextBatch)
			written = append(written, []any{r.Values[0], r.Values[1]})
		}
		acks2, err := c.Put(ctx, e2eDB, td.name, cols, false, [][]WriteRow{more})
		if err != nil {
			t.Fatalf("iteration %d: write after restart: %v", iter, err)
		}
		if acks2[0].GetChangelogRows() != int64(want) {
			t.Errorf("iteration %d: write after restart: ack changelog_rows %d, model %d", iter, acks2[0].GetChangelogRows(), want)
		}
		tr.acks[nextBatch] = acks2[0]
		nextBatch++
		p = problems{}
		if _, err := verifyAgainstModel(ctx, c, tr, &p); err != nil {
			t.Fatal(err)
		}
		if !p.empty() {
			t.Fatalf("iteration %d, write after restart:\n%s", iter, p.String())
		}
	}
}
