package binlog

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/cockroachdb/datadriven"
	"github.com/setats/setats/gateway/rowcodec"
	"github.com/setats/setats/gateway/store"
	"github.com/setats/setats/merge"
)

// A model of one setats-cdc split over the gateway's primitives (binlog cases S7-S9, SPEC section
// 9), so the data-driven files can show that a consistent view, its end offset E and the
// changelog from E meet exactly, across checkpoints, failures and restores. The Flink side of the
// same cases runs in SetatsInitialITCase; this model only uses store.Table.OpenSnapshot, Scan and
// Read, exactly the calls behind the snapshot DoGet and the changelog DoGet.
//
// Commands (added to TestDataDriven's):
//
//	reader name=R mode=initial|earliest|latest [bucket=B]  a split of bucket B (default 0)
//	emit name=R [rows=N]       emit up to N rows (default: all there are now); prints them
//	checkpoint name=R          the split's state as a checkpoint stores it; printed
//	fail name=R                the job fails: rows after the checkpoint are rolled back downstream
//	restore name=R [mode=M]    a new split from the checkpoint (the mode only counts without one)
//	fold name=R                the folded output and any RowKind state machine violation

// splitState is what a checkpoint of a split stores: in the snapshot phase the view's end offset
// E (-1 before the first view) and the last key emitted (nil: none yet); then the next offset.
type splitState struct {
	snapshot bool
	end      int64
	lastKey  []byte
	offset   int64
}

func (s splitState) String() string {
	if s.snapshot {
		return fmt.Sprintf("snapshot E=%d last key %s", s.end, keyWords(s.lastKey))
	}
	return fmt.Sprintf("changelog at offset %d", s.offset)
}

func keyWords(k []byte) string {
	if k == nil {
		return "none"
	}
	return fmt.Sprintf("%x", k)
}

type modelReader struct {
	bucket store.BucketID
	mode   string
	st     splitState
	view   *store.SnapshotView
	saved  *splitState
	// out is what the downstream holds (every emitted line); savedOut its length at the checkpoint.
	out      []string
	savedOut int
}

func (h *harness) readerCmd(td *datadriven.TestData, arg func(string) string) (string, bool) {
	if h.readers == nil {
		h.readers = map[string]*modelReader{}
	}
	name := arg("name")
	r := h.readers[name]
	switch td.Cmd {
	case "reader":
		if r != nil && r.view != nil {
			r.view.Release()
		}
		bn, _ := strconv.Atoi(arg("bucket"))
		r = &modelReader{bucket: store.BucketID{Bucket: int32(bn)}, mode: arg("mode")}
		h.readers[name] = r
		return h.startByMode(r), true
	case "emit":
		n, _ := strconv.Atoi(arg("rows"))
		if n <= 0 {
			n = 1 << 30
		}
		lines, err := h.emit(r, n)
		if err != nil {
			return fmt.Sprintf("error %s: %s\n", kindName(err), err), true
		}
		for _, l := range lines {
			if isRowLine(l) {
				r.out = append(r.out, l)
			}
		}
		if len(lines) == 0 {
			return "nothing\n", true
		}
		return strings.Join(lines, "\n") + "\n", true
	case "checkpoint":
		s := r.st
		s.lastKey = bytes.Clone(s.lastKey)
		r.saved, r.savedOut = &s, len(r.out)
		return s.String() + "\n", true
	case "fail":
		if r.view != nil {
			r.view.Release()
			r.view = nil
		}
		r.out = r.out[:r.savedOut]
		return fmt.Sprintf("downstream rolled back to the checkpoint: %d rows kept\n", len(r.out)), true
	case "restore":
		if m := arg("mode"); m != "" {
			r.mode = m
		}
		if r.saved == nil {
			return h.startByMode(r), true
		}
		r.st = *r.saved
		return "restored: " + r.st.String() + "\n", true
	case "fold":
		return foldWords(r.out), true
	}
	return "", false
}

func (h *harness) startByMode(r *modelReader) string {
	r.st = splitState{}
	switch r.mode {
	case "initial":
		r.st = splitState{snapshot: true, end: -1}
	case "earliest", "latest":
		for _, b := range h.st.Buckets() {
			if b.BucketID == r.bucket {
				r.st.offset = b.StartOffset
				if r.mode == "latest" {
					r.st.offset = b.EndOffset
				}
			}
		}
	default:
		return fmt.Sprintf("unknown mode %q\n", r.mode)
	}
	return r.st.String() + "\n"
}

// emit runs the split for up to n rows. Snapshot phase: a view is opened when there is none; a
// restored split whose new view has E' > E first emits the changelog [E, E') of the keys it had
// already emitted (<= last key), then the view's rows after the last key as +I; at the end of
// the view the split goes on with the changelog from the view's E.
func (h *harness) emit(r *modelReader, n int) ([]string, error) {
	var lines []string
	retried := false
	if r.st.snapshot {
	open:
		if r.view == nil {
			v, err := h.st.OpenSnapshot(context.Background(), r.bucket)
			if err != nil {
				return nil, err
			}
			r.view = v
			if r.st.end >= 0 && r.st.lastKey != nil && v.EndOffset() > r.st.end {
				entries, err := h.st.Read(r.bucket, r.st.end, int(v.EndOffset()-r.st.end), nil)
				if err != nil {
					return nil, err
				}
				for _, e := range entries {
					if e.Offset < v.EndOffset() && bytes.Compare(rowcodec.EncodeKey(h.tbl, e.Row), r.st.lastKey) <= 0 {
						lines = append(lines, fmt.Sprintf("catch-up @%d %s", e.Offset, rowWords(e.Kind, e.Row)))
					}
				}
			}
			r.st.end = v.EndOffset()
			lines = append(lines, fmt.Sprintf("view E=%d", r.st.end))
		}
		rows, more, err := r.view.Scan(r.st.lastKey, n, 0, nil)
		if errors.Is(err, store.ErrAborted) && !retried {
			// The view was released (lease, gateway restart): resume after the last key with a
			// new view, as a restore does.
			r.view = nil
			retried = true
			lines = append(lines, "view released; a new view after the last key")
			goto open
		}
		if err != nil {
			return nil, err
		}
		for _, sr := range rows {
			lines = append(lines, "snapshot "+rowWords(merge.Insert, sr.Row))
			r.st.lastKey = sr.Key
		}
		n -= len(rows)
		if more || n <= 0 {
			return lines, nil
		}
		r.view.Release()
		r.view = nil
		r.st = splitState{offset: r.st.end}
		lines = append(lines, fmt.Sprintf("snapshot done; changelog from %d", r.st.offset))
	}
	entries, err := h.st.Read(r.bucket, r.st.offset, n, nil)
	if err != nil {
		return lines, err
	}
	for _, e := range entries {
		lines = append(lines, fmt.Sprintf("@%d %s", e.Offset, rowWords(e.Kind, e.Row)))
		r.st.offset = e.Offset + 1
	}
	return lines, nil
}

// isRowLine reports whether an emitted line is a row (ends in "KIND(id,'v')").
func isRowLine(l string) bool {
	f := strings.Fields(l)
	item := f[len(f)-1]
	return len(item) >= 4 && (item[0] == '+' || item[0] == '-') && strings.HasSuffix(item, ")")
}

func rowWords(k merge.RowKind, r merge.Row) string {
	return fmt.Sprintf("%s(%v,'%v')", k, r[0], r[1])
}

// foldWords folds emitted lines into the table they describe and checks Flink's RowKind state
// machine on the way: no +I for a live key, -U/-D only for a live key and equal to its row, +U
// only after -U of the same key.
func foldWords(lines []string) string {
	live := map[string]string{}
	before := map[string]bool{}
	var bad []string
	for _, l := range lines {
		f := strings.Fields(l)
		item := f[len(f)-1]
		kind := item[:2]
		id, v, _ := strings.Cut(strings.TrimSuffix(item[3:], ")"), ",")
		cur, ok := live[id]
		switch kind {
		case "+I":
			if ok {
				bad = append(bad, "+I of live key "+id+": "+l)
			}
			live[id] = v
		case "-U", "-D":
			if !ok || cur != v {
				bad = append(bad, kind+" not equal to the current row of key "+id+": "+l)
			}
			delete(live, id)
			before[id] = kind == "-U"
		case "+U":
			if ok || !before[id] {
				bad = append(bad, "+U without -U of key "+id+": "+l)
			}
			live[id] = v
			before[id] = false
		}
	}
	ids := make([]string, 0, len(live))
	for id := range live {
		ids = append(ids, id)
	}
	slices.SortFunc(ids, func(a, b string) int {
		x, _ := strconv.Atoi(a)
		y, _ := strconv.Atoi(b)
		return x - y
	})
	var b strings.Builder
	b.WriteString("folded:")
	for _, id := range ids {
		fmt.Fprintf(&b, " %s:%s", id, live[id])
	}
	b.WriteByte('\n')
	for _, x := range bad {
		b.WriteString("violation: " + x + "\n")
	}
	return b.String()
}
