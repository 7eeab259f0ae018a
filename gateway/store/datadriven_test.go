package store

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"
	"github.com/setats/setats/merge"
)

// TestDataDriven runs the files in testdata/ (SPEC cases M1-M12, R1 and more, through the store).
// Commands:
//
//	table [engine=E] [buckets=N] [part=cols] [option=value ...]   input: "cols", then "pk=cols"
//	write [cols=c1,c2] [at=MS]      input: rows "KIND(v,...)", one batch; prints the commit or error
//	changelog                       every bucket's retained changelog
//	state                           the stored rows
//	offset-for ts=MS [bucket=N]     OffsetForTimestamp
//	read [bucket=N] from=OFF [max=N] Read
//	retention now=MS                ApplyRetention
//	buckets                         Buckets()
//	reopen                          close and open the store again
//	check                           checkFold
//	write-seq writer=W seq=N [cols=] [at=MS]   ApplySequenced (SPEC section 10, cases X1)
//	stage user=U subtask=N ckpt=N epoch=N [writer=W seq=N] [cols=] [at=MS]   Stage
//	abort user=U subtask=N restored=N [timeout=MS] [at=MS]   AbortStaged
//	commit user=U subtask=N ckpt=N [at=MS]      CommitStaged
//	staging                         StagingStats and Staging
//	committed user=U [bucket=N]     CommittedCheckpoint
//	expire now=MS                   ExpireStaging
//	drop-partition partition=P [at=MS]   DropPartition
func TestDataDriven(t *testing.T) {
	datadriven.Walk(t, "testdata", func(t *testing.T, path string) {
		var st *Table
		clock := &fakeClock{ms: 1}
		defer func() {
			if st != nil {
				_ = st.Close()
			}
		}()
		datadriven.RunTest(t, path, func(t *testing.T, td *datadriven.TestData) string {
			bucketArg := func() BucketID {
				id := BucketID{}
				if td.HasArg("bucket") {
					td.ScanArgs(t, "bucket", &id.Bucket)
				}
				if td.HasArg("partition") {
					td.ScanArgs(t, "partition", &id.Partition)
				}
				return id
			}
			switch td.Cmd {
			case "table":
				engine, part := "", ""
				var buckets int
				options := map[string]string{}
				for _, a := range td.CmdArgs {
					switch a.Key {
					case "engine":
						engine = a.Vals[0]
					case "buckets":
						td.ScanArgs(t, "buckets", &buckets)
					case "part":
						part = strings.Join(a.Vals, ",")
					default:
						options[a.Key] = a.Vals[0]
					}
				}
				lines := strings.Split(td.Input, "\n")
				pk := strings.TrimPrefix(lines[1], "pk=")
				name := strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))
				tbl := resolve(t, t.TempDir(), spec(strings.ReplaceAll(name, "-", "_"), lines[0], pk, part, int32(buckets), engine, options))
				if st != nil {
					_ = st.Close()
				}
				st = openTable(t, tbl, clock)
				return ""
			case "write":
				var cols []string
				if a, ok := td.Arg("cols"); ok {
					cols = a.Vals
				}
				if td.HasArg("at") {
					td.ScanArgs(t, "at", &clock.ms)
				}
				b, err := parseRows(st.tbl, cols, strings.Split(td.Input, "\n"))
				if err != nil {
					t.Fatal(err)
				}
				c, err := st.Write(context.Background(), b)
				return formatCommit(c, err)
			case "write-seq", "stage":
				var cols []string
				if a, ok := td.Arg("cols"); ok {
					cols = a.Vals
				}
				if td.HasArg("at") {
					td.ScanArgs(t, "at", &clock.ms)
				}
				var lines []string
				if td.Input != "" {
					lines = strings.Split(td.Input, "\n")
				}
				b, err := parseRows(st.tbl, cols, lines)
				if err != nil {
					return formatError(err)
				}
				var seq *Sequence
				if td.HasArg("writer") {
					seq = &Sequence{}
					td.ScanArgs(t, "writer", &seq.Writer)
					td.ScanArgs(t, "seq", &seq.Seq)
				}
				var p *Pending
				if td.Cmd == "stage" {
					var tg StageTarget
					td.ScanArgs(t, "user", &tg.CommitUser)
					td.ScanArgs(t, "subtask", &tg.Subtask)
					td.ScanArgs(t, "ckpt", &tg.Checkpoint)
					td.ScanArgs(t, "epoch", &tg.Epoch)
					p, err = st.Stage(context.Background(), tg, b, seq)
				} else {
					p, err = st.ApplySequenced(context.Background(), b, *seq)
				}
				if err != nil {
					return formatCommit(Commit{}, err)
				}
				return formatCommit(p.Wait())
			case "abort":
				var user string
				var sub int32
				var restored, timeout int64
				td.ScanArgs(t, "user", &user)
				td.ScanArgs(t, "subtask", &sub)
				td.ScanArgs(t, "restored", &restored)
				if td.HasArg("timeout") {
					td.ScanArgs(t, "timeout", &timeout)
				}
				if td.HasArg("at") {
					td.ScanArgs(t, "at", &clock.ms)
				}
				r, err := st.AbortStaged(user, sub, restored, timeout)
				if err != nil {
					return formatCommit(Commit{}, err)
				}
				return fmt.Sprintf("epoch=%d dropped rows=%d bytes>0=%v\n", r.Epoch, r.DroppedRows, r.DroppedBytes > 0)
			case "commit":
				var user string
				var sub int32
				var ckpt int64
				td.ScanArgs(t, "user", &user)
				td.ScanArgs(t, "subtask", &sub)
				td.ScanArgs(t, "ckpt", &ckpt)
				if td.HasArg("at") {
					td.ScanArgs(t, "at", &clock.ms)
				}
				r, err := st.CommitStaged(context.Background(), user, sub, ckpt)
				if err != nil {
					return formatCommit(Commit{}, err)
				}
				if r.AlreadyCommitted {
					return "already committed\n"
				}
				return formatCommit(r.Pending.Wait())
			case "staging":
				var sb strings.Builder
				bytes, rows := st.StagingStats()
				fmt.Fprintf(&sb, "staged rows=%d bytes>0=%v\n", rows, bytes > 0)
				for _, si := range st.Staging() {
					fmt.Fprintf(&sb, "%s/%d epoch=%d committed=%d rows=%d checkpoints=%v timeout=%d\n",
						si.CommitUser, si.Subtask, si.Epoch, si.Committed, si.StagedRows, si.StagedCheckpoints, si.TimeoutMs)
				}
				return sb.String()
			case "committed":
				var user string
				td.ScanArgs(t, "user", &user)
				c, err := st.CommittedCheckpoint(user, bucketArg())
				if err != nil {
					t.Fatal(err)
				}
				return fmt.Sprintf("%d\n", c)
			case "expire":
				var now int64
				td.ScanArgs(t, "now", &now)
				r, err := st.ExpireStaging(now)
				if err != nil {
					return fmt.Sprintf("error: %v\n", err)
				}
				return fmt.Sprintf("expired rows=%d writers=%d\n", r.Rows, r.Writers)
			case "changelog":
				var sb strings.Builder
				for _, b := range st.Buckets() {
					es, err := st.Read(b.BucketID, b.StartOffset, 0, nil)
					if err != nil {
						return fmt.Sprintf("error: %v\n", err)
					}
					for _, e := range es {
						fmt.Fprintf(&sb, "%q/%d @%d %s%s ts=%d\n", b.Partition, b.Bucket, e.Offset, e.Kind, formatRow(e.Row), e.CommitMs)
					}
				}
				if sb.Len() == 0 {
					return "(none)\n"
				}
				return sb.String()
			case "state":
				var sb strings.Builder
				err := st.ScanState(func(id BucketID, r merge.Row) error {
					fmt.Fprintf(&sb, "%q/%d %s\n", id.Partition, id.Bucket, formatRow(r))
					return nil
				})
				if err != nil {
					t.Fatal(err)
				}
				if sb.Len() == 0 {
					return "(none)\n"
				}
				return sb.String()
			case "offset-for":
				var ts int64
				td.ScanArgs(t, "ts", &ts)
				off, resolved, err := st.OffsetForTimestamp(bucketArg(), ts)
				if err != nil {
					return fmt.Sprintf("error: %v\n", err)
				}
				return fmt.Sprintf("offset=%d resolved=%v\n", off, resolved)
			case "read":
				var from int64
				max := 0
				td.ScanArgs(t, "from", &from)
				if td.HasArg("max") {
					td.ScanArgs(t, "max", &max)
				}
				es, err := st.Read(bucketArg(), from, max, nil)
				if err != nil {
					return formatError(err)
				}
				var sb strings.Builder
				for _, e := range es {
					fmt.Fprintf(&sb, "@%d %s%s ts=%d\n", e.Offset, e.Kind, formatRow(e.Row), e.CommitMs)
				}
				if sb.Len() == 0 {
					return "(none)\n"
				}
				return sb.String()
			case "retention":
				var now int64
				td.ScanArgs(t, "now", &now)
				n, err := st.ApplyRetention(now)
				if err != nil {
					return fmt.Sprintf("error: %v\n", err)
				}
				return fmt.Sprintf("removed=%d\n", n)
			case "buckets":
				var sb strings.Builder
				for _, o := range st.Buckets() {
					fmt.Fprintf(&sb, "%q/%d [%d, %d) last=%d\n", o.Partition, o.Bucket, o.StartOffset, o.EndOffset, o.LastCommitMs)
				}
				return sb.String()
			case "drop-partition":
				var part string
				td.ScanArgs(t, "partition", &part)
				if td.HasArg("at") {
					td.ScanArgs(t, "at", &clock.ms)
				}
				r, err := st.DropPartition(part)
				if err != nil {
					return formatError(err)
				}
				var sb strings.Builder
				fmt.Fprintf(&sb, "dropped %q state=%d at=%d\n", r.Partition, r.StateRows, r.DroppedMs)
				for _, b := range r.Buckets {
					fmt.Fprintf(&sb, "bucket %q/%d end=%d rows=%d\n", b.Partition, b.Bucket, b.EndOffset, b.Rows)
				}
				return sb.String()
			case "reopen":
				tbl := st.tbl
				if err := st.Close(); err != nil {
					t.Fatal(err)
				}
				st = openTable(t, tbl, clock)
				return ""
			case "check":
				checkFold(t, st)
				return "ok\n"
			}
			t.Fatalf("unknown command %s", td.Cmd)
			return ""
		})
	})
}

// formatCommit prints a commit (or its error) as the write commands do.
func formatCommit(c Commit, err error) string {
	if err != nil {
		return formatError(err)
	}
	var sb strings.Builder
	var flags string
	if c.Duplicate {
		flags += " duplicate"
	}
	if c.Staged {
		flags += " staged"
	}
	fmt.Fprintf(&sb, "rows=%d changelog=%d%s commit=%d%s\n", c.Rows, c.ChangelogRows, formatKinds(c.ChangelogKinds), c.CommitMs, flags)
	for _, o := range c.Buckets {
		fmt.Fprintf(&sb, "bucket %q/%d [%d, %d) last=%d\n", o.Partition, o.Bucket, o.StartOffset, o.EndOffset, o.LastCommitMs)
	}
	for _, n := range c.NewBuckets {
		fmt.Fprintf(&sb, "new bucket %q/%d\n", n.Partition, n.Bucket)
	}
	return sb.String()
}

// formatKinds prints the nonzero per-RowKind changelog counts of a commit: " (+I=1 -U=2)", or ""
// when there are none.
func formatKinds(kinds [4]int64) string {
	var parts []string
	for k, n := range kinds {
		if n > 0 {
			parts = append(parts, fmt.Sprintf("%s=%d", merge.RowKind(k), n))
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return " (" + strings.Join(parts, " ") + ")"
}
