package gatewaytest

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/setats/setats/proto/setatspb"
)

// followReader keeps a follow=true DoGet open on one bucket and collects what it pushes.
type followReader struct {
	table     string
	partition string
	bucket    int32

	mu     sync.Mutex
	rows   []ChangeRow
	err    error
	cancel context.CancelFunc
	done   chan struct{}
}

// start opens the stream from offset len(rows) (the next row this reader needs).
func (f *followReader) start(ctx context.Context, c *Client) {
	ctx, f.cancel = context.WithCancel(ctx)
	f.done = make(chan struct{})
	f.mu.Lock()
	from := int64(len(f.rows))
	f.err = nil
	f.mu.Unlock()
	t := &setatspb.ChangelogTicket{Database: e2eDB, Table: f.table, Partition: f.partition, Bucket: f.bucket,
		Start: &setatspb.ChangelogTicket_Offset{Offset: from}, Follow: true, MaxBatchRows: 7}
	go func() {
		defer close(f.done)
		err := c.DoGet(ctx, t, func(_ *arrow.Schema, rec arrow.RecordBatch) error {
			rows, err := DecodeChangelog(rec)
			if err != nil {
				return err
			}
			if rec.NumRows() > 7 {
				return fmt.Errorf("record batch of %d rows, max_batch_rows 7", rec.NumRows())
			}
			f.mu.Lock()
			f.rows = append(f.rows, rows...)
			f.mu.Unlock()
			return nil
		})
		if ctx.Err() == nil {
			f.mu.Lock()
			f.err = fmt.Errorf("follow stream ended while the gateway was up: %v", err)
			f.mu.Unlock()
		}
	}()
}

func (f *followReader) stop() {
	f.cancel()
	<-f.done
}

// waitFor waits until the reader holds n rows, the stream failed, or 30 s passed; it returns the
// rows and the stream's error.
func (f *followReader) waitFor(n int) ([]ChangeRow, error) {
	deadline := time.Now().Add(30 * time.Second)
	for {
		f.mu.Lock()
		rows, err := f.rows, f.err
		f.mu.Unlock()
		if len(rows) >= n || err != nil || time.Now().After(deadline) {
			return rows, err
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// checkFollow compares what the follow readers were pushed with a bounded read of the same buckets:
// the same rows (offsets, kinds, commit times, values), none missing after 30 s, none extra.
func checkFollow(readers []*followReader, read *tableRead, p *problems) {
	for _, f := range readers {
		var want []ChangeRow
		for _, b := range read.buckets {
			if b.offsets.GetPartition() == f.partition && b.offsets.GetBucket() == f.bucket {
				want = b.log.Rows
			}
		}
		got, err := f.waitFor(len(want))
		where := fmt.Sprintf("%s partition %q bucket %d", f.table, f.partition, f.bucket)
		if err != nil {
			p.add("follow", "%s: %v", where, err)
		}
		if len(got) != len(want) {
			p.add("follow", "%s: follow reader got %d rows, bounded read %d", where, len(got), len(want))
		}
		for i := range min(len(got), len(want)) {
			g, w := got[i], want[i]
			if g.Kind != w.Kind || g.Offset != w.Offset || g.CommitMs != w.CommitMs || !valuesEqual(g.Values, w.Values) {
				p.add("follow", "%s: row %d pushed %s commit %d, bounded read %s commit %d", where, i, g, g.CommitMs, w, w.CommitMs)
				break
			}
		}
	}
}
