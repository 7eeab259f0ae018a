package gateway

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"google.golang.org/grpc/codes"

	"github.com/setats/setats/proto/setatspb"
)

// TestDoPutPipelineStopsAtFailedBatch: one DoPut stream carries good batches (each updating the
// keys of the one before, so each must see its predecessor's state while that one's fsync may
// still run), then a failing batch, then a good batch. The good batches before the failure are
// acknowledged in order with dense offsets, the call ends with the failing batch's error naming
// its sequence number, and neither the failing batch nor any batch after it is applied. The
// failure is a decode error (null key: rejected before the store) or a merge error (a delete on
// a PARTIAL_UPDATE table without a delete option, SPEC case M7: rejected by the store).
func TestDoPutPipelineStopsAtFailedBatch(t *testing.T) {
	g := startGateway(t, nil)
	g.mustAction(ActionCreateTable, &setatspb.CreateTableRequest{
		Spec: &setatspb.TableSpec{Table: "pu", Columns: idV, PrimaryKey: []string{"id"}, BucketCount: 2,
			MergeEngine: "partial-update"}}, &setatspb.TableInfo{})
	g.createTable("default", "dd", 2, idV, []string{"id"}, nil)

	const good = 6
	// Batches of one stream share a schema: with a _row_kind column (+U) when kinds is set.
	batch := func(kinds bool, ids []int32, vs []string) arrow.RecordBatch {
		var k []int8
		if kinds {
			k = make([]int8, len(ids))
			for i := range k {
				k[i] = 2
			}
		}
		return intStrRecord(g.mem, k, ids, vs)
	}
	goodBatches := func(kinds bool) []arrow.RecordBatch {
		var recs []arrow.RecordBatch
		for i := range good {
			recs = append(recs, batch(kinds, []int32{1, 2, 3}, []string{fmt.Sprint("a", i), fmt.Sprint("b", i), fmt.Sprint("c", i)}))
		}
		return recs
	}
	cases := []struct {
		name, table string
		kinds       bool
		bad         func() arrow.RecordBatch
		culprits    []string
	}{
		{name: "decode error", table: "dd", bad: func() arrow.RecordBatch {
			return recordOf(g.mem, []arrow.Field{fID, fV}, []*int32{i32(1), nil}, []string{"x", "y"})
		}, culprits: []string{"default.dd", `"id"`, "null"}},
		{name: "merge error", table: "pu", kinds: true, bad: func() arrow.RecordBatch {
			return intStrRecord(g.mem, []int8{2, 3}, []int32{5, 2}, []string{"x", "y"})
		}, culprits: []string{"default.pu", "row 1"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			recs := append(goodBatches(tc.kinds), tc.bad(), batch(tc.kinds, []int32{4}, []string{"after"}))
			defer func() {
				for _, r := range recs {
					r.Release()
				}
			}()
			acks, err := g.put(writeCmd(t, &setatspb.WriteCommand{Table: tc.table}), recs...)
			wantCode(t, err, codes.InvalidArgument, tc.culprits...)
			if len(acks) != good {
				t.Fatalf("%d acks before the error, want %d", len(acks), good)
			}
			ends := map[int32]int64{}
			for i, a := range acks {
				if a.GetBatchSeq() != int64(i) || a.GetRows() != 3 {
					t.Fatalf("ack %d: %v", i, a)
				}
				for _, bo := range a.GetBuckets() {
					// Batch 0 inserts (+1 per key), later ones update (-U, +U: +2 per key).
					if prev, ok := ends[bo.GetBucket()]; ok && bo.GetEndOffset() <= prev {
						t.Fatalf("ack %d: bucket %d end offset %d after %d", i, bo.GetBucket(), bo.GetEndOffset(), prev)
					}
					ends[bo.GetBucket()] = bo.GetEndOffset()
				}
			}
			var total int64
			for b := range int32(2) {
				rows, err := g.readStream(ticket(t, &setatspb.ChangelogTicket{Table: tc.table, Bucket: b}))
				if err != nil {
					t.Fatal(err)
				}
				if int64(len(rows)) != ends[b] {
					t.Fatalf("bucket %d holds %d changelog rows, the last ack said %d", b, len(rows), ends[b])
				}
				for _, r := range rows {
					if strings.Contains(r, ", after]") || strings.Contains(r, ", x]") || strings.Contains(r, ", y]") {
						t.Fatalf("bucket %d: the failed batch or one after it was applied: %q", b, rows)
					}
				}
				total += int64(len(rows))
			}
			if want := int64(3 + 3*2*(good-1)); total != want {
				t.Fatalf("%d changelog rows, want %d", total, want)
			}
		})
	}
}

// TestDoPutPipelineChain: updates of one key in consecutive batches of one stream fold in batch
// order (each batch looks up the row the previous one wrote, SPEC section 4), whatever the
// pipeline overlaps.
func TestDoPutPipelineChain(t *testing.T) {
	g := startGateway(t, nil)
	g.createTable("default", "chain", 1, idV, []string{"id"}, nil)
	var recs []arrow.RecordBatch
	var want []string
	const n = 40
	for i := range n {
		recs = append(recs, intStrRecord(g.mem, nil, []int32{7}, []string{fmt.Sprint("v", i)}))
		if i == 0 {
			want = append(want, "+I[7, v0] @0")
			continue
		}
		want = append(want, fmt.Sprintf("-U[7, v%d] @%d", i-1, 2*i-1), fmt.Sprintf("+U[7, v%d] @%d", i, 2*i))
	}
	defer func() {
		for _, r := range recs {
			r.Release()
		}
	}()
	acks, err := g.put(writeCmd(t, &setatspb.WriteCommand{Table: "chain"}), recs...)
	if err != nil || len(acks) != n {
		t.Fatalf("put: %d acks, %v", len(acks), err)
	}
	for i, a := range acks {
		if a.GetBatchSeq() != int64(i) || a.GetBuckets()[0].GetEndOffset() != int64(2*i+1) {
			t.Fatalf("ack %d: %v", i, a)
		}
	}
	rows, err := g.readStream(ticket(t, &setatspb.ChangelogTicket{Table: "chain"}))
	if err != nil {
		t.Fatal(err)
	}
	if got := stripTime(rows); !reflect.DeepEqual(got, want) {
		t.Fatalf("changelog %q\nwant %q", got, want)
	}
}
