package binlog

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"errors"
	"github.com/cockroachdb/datadriven"
	"github.com/setats/setats/catalog"
	"github.com/setats/setats/gateway/row"
	"github.com/setats/setats/gateway/store"
	"github.com/setats/setats/merge"
	"github.com/setats/setats/proto/setatspb"
)

// TestDataDriven runs testdata/ (SPEC sections 8 and 9; binlog cases S1-S10 and the seed's orders
// example at the gateway level; the split model of S7-S9 is in reader_model_test.go).
// Every table has columns "id INT, v STRING" with primary key id, or "id INT" alone with
// cols=(id) (a case whose table is "id INT; pk=id"). Commands:
//
//	table [buckets=N] [cols=(id)] [option=value ...]   a new table (options as table options)
//	write [at=MS]                              input: "KIND(id,'v') ..." (cols=(id): "KIND(id) ...") one batch
//	clock ms=MS                                set the clock
//	acquire slot=S owner=J [reset] [lease=MS]  Acquire
//	release slot=S owner=J                     Release
//	register slot=S owner=J [checkpoint] points=B:OFF,...   Register
//	drop slot=S                                Drop
//	slots                                      List
//	progress [slot=S]                          Progress
//	consumed                                   Consumed
//	clean                                      Clean
//	changelog                                  every bucket's retained offsets
//	reopen                                     close and open the store again
func TestDataDriven(t *testing.T) {
	datadriven.Walk(t, "testdata", func(t *testing.T, path string) {
		var h *harness
		defer func() {
			if h != nil {
				h.close()
			}
		}()
		datadriven.RunTest(t, path, func(t *testing.T, td *datadriven.TestData) string {
			arg := func(k string) string {
				for _, a := range td.CmdArgs {
					if a.Key == k {
						if len(a.Vals) == 0 {
							return "true"
						}
						return strings.Join(a.Vals, ",")
					}
				}
				return ""
			}
			errOr := func(err error, ok string) string {
				if err != nil {
					return fmt.Sprintf("error %s: %s\n", kindName(err), err)
				}
				return ok
			}
			switch td.Cmd {
			case "table":
				if h != nil {
					h.close()
				}
				opts := map[string]string{}
				buckets := int32(1)
				cols := idAndV
				for _, a := range td.CmdArgs {
					switch a.Key {
					case "buckets":
						n, _ := strconv.Atoi(a.Vals[0])
						buckets = int32(n)
					case "cols":
						if strings.Join(a.Vals, ",") != "id" {
							td.Fatalf(t, "cols=%v: only cols=(id) is known (the default is id, v)", a.Vals)
						}
						cols = idOnly
					default:
						opts[a.Key] = strings.Join(a.Vals, ",")
					}
				}
				var err error
				h, err = newTableHarness(t.TempDir(), buckets, opts, cols)
				return errOr(err, "ok\n")
			case "clock":
				n, _ := strconv.ParseInt(arg("ms"), 10, 64)
				h.now = n
				return ""
			case "write":
				if at := arg("at"); at != "" {
					h.now, _ = strconv.ParseInt(at, 10, 64)
				}
				c, err := h.write(td.Input)
				if err != nil {
					return errOr(err, "")
				}
				var b strings.Builder
				for _, o := range c.Buckets {
					fmt.Fprintf(&b, "bucket %d: end %d\n", o.Bucket, o.EndOffset)
				}
				return b.String()
			case "acquire":
				lease, _ := strconv.ParseInt(arg("lease"), 10, 64)
				r, created, err := h.slots.Acquire(arg("slot"), arg("owner"), arg("reset") == "true", lease)
				if err != nil {
					return errOr(err, "")
				}
				return fmt.Sprintf("created=%v %s", created, formatSlot(r))
			case "release":
				return errOr(h.slots.Release(arg("slot"), arg("owner")), "ok\n")
			case "register":
				var pts []Point
				for _, p := range strings.Split(arg("points"), ",") {
					b, off, _ := strings.Cut(p, ":")
					bn, _ := strconv.Atoi(b)
					o, _ := strconv.ParseInt(off, 10, 64)
					pts = append(pts, Point{Bucket: store.BucketID{Bucket: int32(bn)}, Offset: o})
				}
				r, err := h.slots.Register(arg("slot"), arg("owner"), pts, arg("checkpoint") == "true")
				if err != nil {
					return errOr(err, "")
				}
				return formatSlot(r)
			case "drop":
				ok, err := h.slots.Drop(arg("slot"))
				return errOr(err, fmt.Sprintf("dropped=%v\n", ok))
			case "slots":
				recs, err := h.slots.List()
				if err != nil {
					return errOr(err, "")
				}
				var b strings.Builder
				for _, r := range recs {
					b.WriteString(formatSlot(r))
				}
				return b.String()
			case "progress":
				rows, err := h.slots.Progress(arg("slot"))
				if err != nil {
					return errOr(err, "")
				}
				var b strings.Builder
				for _, pr := range rows {
					kind := "running"
					if pr.Checkpoint {
						kind = "checkpoint"
					}
					fmt.Fprintf(&b, "%s bucket %d %s: consumed %d end %d unconsumed %d consumed_at %d latest_at %d lag %d updated %d expires %d %s\n",
						pr.Slot, pr.Bucket.Bucket, kind, pr.ConsumedOffset, pr.EndOffset, pr.Unconsumed, pr.ConsumedCommitMs,
						pr.LatestCommitMs, pr.LagMs, pr.UpdatedMs, pr.ExpiresMs, pr.Status)
				}
				return b.String()
			case "consumed":
				all, per, err := h.slots.Consumed()
				if err != nil {
					return errOr(err, "")
				}
				var b strings.Builder
				fmt.Fprintf(&b, "all consumed: %v\n", all)
				for _, bc := range per {
					fmt.Fprintf(&b, "bucket %d: end %d lowest point %d consumed %v\n", bc.Bucket.Bucket, bc.EndOffset, bc.LowestPoint, bc.Consumed)
				}
				return b.String()
			case "clean":
				res, err := h.slots.Clean()
				return errOr(err, fmt.Sprintf("removed %d expired %v lost %v\n", res.Removed, res.Expired, res.Lost))
			case "changelog":
				var b strings.Builder
				for _, o := range h.st.Buckets() {
					fmt.Fprintf(&b, "bucket %d: [%d, %d)\n", o.Bucket, o.StartOffset, o.EndOffset)
				}
				return b.String()
			case "reopen":
				return errOr(h.reopen(), "ok\n")
			}
			if out, ok := h.readerCmd(td, arg); ok {
				return out
			}
			t.Fatalf("unknown command %s", td.Cmd)
			return ""
		})
	})
}

func formatSlot(r store.SlotRecord) string {
	var b strings.Builder
	fmt.Fprintf(&b, "slot %s: %s owner=%q created %d updated %d", r.Name, r.Status, r.Owner, r.CreatedMs, r.UpdatedMs)
	if r.Reason != "" {
		fmt.Fprintf(&b, " reason: %s", r.Reason)
	}
	b.WriteByte('\n')
	for _, id := range r.SortedBuckets() {
		p := r.Points[id]
		fmt.Fprintf(&b, "  bucket %d: checkpoint %d @%d running %d @%d\n", id.Bucket, p.Checkpoint, p.CheckpointMs, p.Running, p.RunningMs)
	}
	return b.String()
}

// harness is one table's store and slot rules with a settable clock.
type harness struct {
	tbl   *catalog.Table
	st    *store.Table
	slots *Slots
	now   int64
	// readers are the split models of reader_model_test.go, by name.
	readers map[string]*modelReader
}

// The harness's table columns: "id INT, v STRING" (the default) or "id INT" alone (cols=(id)).
var (
	idAndV = []*setatspb.Column{{Name: "id", Type: "INT"}, {Name: "v", Type: "STRING"}}
	idOnly = []*setatspb.Column{{Name: "id", Type: "INT"}}
)

// newHarness is newTableHarness for a table of "id INT, v STRING".
func newHarness(dir string, buckets int32, opts map[string]string) (*harness, error) {
	return newTableHarness(dir, buckets, opts, idAndV)
}

// newTableHarness opens table db.orders with the given columns (the first one "id INT", the
// primary key), buckets and table options.
func newTableHarness(dir string, buckets int32, opts map[string]string, cols []*setatspb.Column) (*harness, error) {
	spec := &setatspb.TableSpec{Database: "db", Table: "orders", BucketCount: buckets, Options: opts,
		Columns: cols, PrimaryKey: []string{"id"}}
	tbl, err := catalog.ResolveSpec(spec, catalog.Options{Warehouse: dir})
	if err != nil {
		return nil, err
	}
	h := &harness{tbl: tbl, now: 1000}
	return h, h.open()
}

func (h *harness) clock() int64 { return h.now }

func (h *harness) open() error {
	st, err := store.Open(h.tbl, store.Options{Clock: h.clock, CacheBytes: 4 << 20})
	if err != nil {
		return err
	}
	h.st, h.slots = st, New(st, Options{Clock: h.clock})
	return nil
}

func (h *harness) reopen() error {
	if err := h.st.Close(); err != nil {
		return err
	}
	return h.open()
}

func (h *harness) close() {
	for _, r := range h.readers {
		if r.view != nil {
			r.view.Release()
		}
	}
	_ = h.st.Close()
}

// write parses "KIND(id,'v') ..." ("KIND(id) ..." on a table of id alone) and writes it as one
// batch.
func (h *harness) write(input string) (store.Commit, error) {
	oneColumn := len(h.tbl.Columns) == 1
	b := &row.Batch{Declared: []bool{true, true}}
	if oneColumn {
		b.Declared = []bool{true}
	}
	for _, item := range strings.Fields(input) {
		kind, err := merge.ParseRowKindString(item[:2])
		if err != nil {
			return store.Commit{}, err
		}
		id, v, hasV := strings.Cut(strings.TrimSuffix(item[3:], ")"), ",")
		if hasV == oneColumn {
			return store.Commit{}, fmt.Errorf("row %q: want %d values", item, len(h.tbl.Columns))
		}
		n, err := strconv.Atoi(id)
		if err != nil {
			return store.Commit{}, err
		}
		b.Kinds = append(b.Kinds, kind)
		if oneColumn {
			b.Rows = append(b.Rows, merge.Row{int32(n)})
		} else {
			b.Rows = append(b.Rows, merge.Row{int32(n), strings.Trim(v, "'")})
		}
	}
	return h.st.Write(context.Background(), b)
}

var _ = time.Second

// kindName names the kind of a binlog error as the gateway's gRPC code for it.
func kindName(err error) string {
	for _, k := range []struct {
		kind error
		name string
	}{{ErrInvalid, "InvalidArgument"}, {ErrNotFound, "NotFound"}, {ErrFailedPrecondition, "FailedPrecondition"},
		{ErrOutOfRange, "OutOfRange"}, {ErrResourceExhausted, "ResourceExhausted"},
		{store.ErrAborted, "Aborted"}} {
		if errors.Is(err, k.kind) {
			return k.name
		}
	}
	return "other"
}

// TestHostileOwnersAreRefused: an owner (job id) a client sends is stored in the slot's record and
// printed in tables and messages, so Acquire and Register refuse one with control characters or
// over MaxOwnerBytes (InvalidArgument, naming it quoted and truncated), and leave the slot as it
// was; the owner at the limit is taken.
func TestHostileOwnersAreRefused(t *testing.T) {
	h, err := newHarness(t.TempDir(), 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer h.close()
	for _, c := range []struct {
		name, owner, want string
	}{
		{"terminal escape", "job\x1b[2J", `owner (job id) "job\x1b[2J": a job id has no control characters`},
		{"newline", "job\nforged line", `owner (job id) "job\nforged line": a job id has no control characters`},
		{"too long", strings.Repeat("j", MaxOwnerBytes+1), "a job id has at most 256 bytes, not 257"},
	} {
		t.Run(c.name, func(t *testing.T) {
			for _, call := range []func() error{
				func() error { _, _, err := h.slots.Acquire("s", c.owner, false, 0); return err },
				func() error { _, err := h.slots.Register("s", c.owner, nil, true); return err },
			} {
				err := call()
				if kindName(err) != "InvalidArgument" || !strings.Contains(err.Error(), c.want) ||
					!strings.Contains(err.Error(), `slot "s"`) || len(err.Error()) > 400 {
					t.Fatalf("got %v (%s), want InvalidArgument naming slot \"s\" and %q, short", err, kindName(err), c.want)
				}
			}
		})
	}
	if _, ok, err := h.slots.load("s", h.now); err != nil || ok {
		t.Fatalf("slot s after the refusals: exists %v, err %v; want none", ok, err)
	}
	if _, created, err := h.slots.Acquire("s", strings.Repeat("j", MaxOwnerBytes), false, 0); err != nil || !created {
		t.Fatalf("owner of %d bytes: created %v, err %v", MaxOwnerBytes, created, err)
	}
}
