package main

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/setats/setats/gateway/binlog"
	"github.com/setats/setats/internal/culprit"
	"github.com/setats/setats/proto/setatspb"
)

const binlogUsage = `usage: setats binlog <command> --manager-url URL --table db.table [flags]

The table binlog functions (SPEC section 8), a thin Arrow Flight client of the gateway's
binlog-* actions. Human-readable tables by default, JSON with --json.

commands:
  acquire-slot         take a slot for a job (--slot, --owner), creating it when absent; run again, it
                       renews the ownership lease (--lease, default the gateway's 60 s; --reset)
  sync-point           a slot's sync points per bucket and each bucket's latest offset (--slot, --checkpoint)
  register-sync-point  register sync points of a slot (--slot, --points 'bucket:offset,...' or 'partition/bucket:offset', --checkpoint, --owner)
  changes              changelog rows of one bucket in an offset range (--bucket, --partition, --from, --to)
  consumed             whether every active slot consumed every row, per bucket
  progress             consume progress per slot, bucket and kind (--slot to narrow)
  slots                the table's slots
  drop-slot            drop a slot (--slot)
`

// binlogCmd runs `setats binlog ...` and returns the exit code.
func binlogCmd(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		fmt.Fprint(stdout, binlogUsage)
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	sub := args[0]
	fs := flag.NewFlagSet("setats binlog "+sub, flag.ContinueOnError)
	fs.SetOutput(stderr)
	managerURL := fs.String("manager-url", "localhost:8815", "gateway address: grpc://host:port, grpc+tls://host:port or host:port")
	table := fs.String("table", "", "the table, db.table (database default when no dot)")
	slot := fs.String("slot", "", "slot name")
	asJSON := fs.Bool("json", false, "print JSON instead of a table")
	checkpoint := fs.Bool("checkpoint", sub == "sync-point" || sub == "register-sync-point", "checkpoint sync points (false: running ones)")
	owner := fs.String("owner", "", "acquire-slot: the job id that owns the slot (required); register-sync-point: the owning job id (empty: an operator's point)")
	lease := fs.Duration("lease", 0, "acquire-slot: how long the owner holds the slot, a Go duration (0: the gateway's 60 s); acquire again to renew")
	reset := fs.Bool("reset", false, "acquire-slot: start an expired or lost slot over (active, no sync points), as startup.mode = 'initial' does")
	points := fs.String("points", "", "register-sync-point: comma list of bucket:offset (partition/bucket:offset for a partitioned table)")
	bucket := fs.Int("bucket", 0, "changes: the bucket")
	partition := fs.String("partition", "", "changes: the partition name")
	from := fs.Int64("from", 0, "changes: first offset")
	to := fs.Int64("to", -1, "changes: end offset, exclusive (-1: the bucket's end)")
	timeout := fs.Duration("timeout", 30*time.Second, "time limit of the call")
	user := fs.String("user", os.Getenv("SETATS_USER"), "user name for HTTP Basic credentials (env SETATS_USER); empty: anonymous")
	password := fs.String("password", "", "password of --user (default: env SETATS_PASSWORD)")
	caCert := tlsCACertFlag(fs)
	if err := fs.Parse(args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "setats binlog %s: unexpected arguments %q\n", sub, fs.Args())
		return 2
	}
	if *table == "" {
		fmt.Fprintf(stderr, "setats binlog %s: --table db.table is required\n", sub)
		return 2
	}
	switch sub {
	case "acquire-slot", "sync-point", "register-sync-point", "drop-slot":
		if *slot == "" {
			fmt.Fprintf(stderr, "setats binlog %s: --slot is required\n", sub)
			return 2
		}
	}
	var leaseMs int64
	if sub == "acquire-slot" {
		var err error
		if leaseMs, err = acquireArgs(*owner, *lease); err != nil {
			fmt.Fprintf(stderr, "setats binlog %s: %v\n", sub, err)
			return 2
		}
	}
	db, tbl := "default", *table
	if i := strings.IndexByte(*table, '.'); i >= 0 {
		db, tbl = (*table)[:i], (*table)[i+1:]
	}
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	if *user != "" {
		pw := *password
		if pw == "" {
			pw = os.Getenv("SETATS_PASSWORD")
		}
		ctx = metadata.AppendToOutgoingContext(ctx, "authorization",
			"Basic "+base64.StdEncoding.EncodeToString([]byte(*user+":"+pw)))
	}
	c, err := dialFlight(*managerURL, *caCert)
	if err != nil {
		fmt.Fprintf(stderr, "setats binlog %s: %v\n", sub, err)
		return 1
	}
	defer c.Close()
	fail := func(err error) int {
		if st, ok := status.FromError(err); ok {
			fmt.Fprintf(stderr, "setats binlog %s: %s: %s\n", sub, st.Code(), st.Message())
		} else {
			fmt.Fprintf(stderr, "setats binlog %s: %v\n", sub, err)
		}
		return 1
	}
	sreq := &setatspb.SlotRequest{Database: db, Table: tbl, Slot: *slot, Checkpoint: *checkpoint}
	var res proto.Message
	switch sub {
	case "acquire-slot":
		out := &setatspb.SlotInfo{}
		err, res = doAction(ctx, c, "binlog-acquire-slot", &setatspb.AcquireSlotRequest{Database: db, Table: tbl,
			Slot: *slot, Owner: *owner, Reset_: *reset, LeaseMs: leaseMs}, out), out
	case "sync-point":
		out := &setatspb.SyncPointResponse{}
		err, res = doAction(ctx, c, "binlog-sync-point", sreq, out), out
	case "register-sync-point":
		pts, perr := parsePoints(*points)
		if perr != nil {
			fmt.Fprintf(stderr, "setats binlog %s: --points: %v\n", sub, perr)
			return 2
		}
		out := &setatspb.SlotInfo{}
		err, res = doAction(ctx, c, "binlog-register-sync-point", &setatspb.RegisterSyncPointRequest{Database: db, Table: tbl,
			Slot: *slot, Owner: *owner, Checkpoint: *checkpoint, Points: pts}, out), out
	case "consumed":
		out := &setatspb.ConsumedResponse{}
		err, res = doAction(ctx, c, "binlog-consumed", sreq, out), out
	case "progress":
		out := &setatspb.ProgressResponse{}
		err, res = doAction(ctx, c, "binlog-progress", sreq, out), out
	case "slots":
		out := &setatspb.ListSlotsResponse{}
		err, res = doAction(ctx, c, "binlog-slots", sreq, out), out
	case "drop-slot":
		err, res = doAction(ctx, c, "binlog-drop-slot", sreq, &setatspb.Empty{}), &setatspb.Empty{}
	case "changes":
		tk := &setatspb.ChangelogTicket{Database: db, Table: tbl, Partition: *partition, Bucket: int32(*bucket),
			Start: &setatspb.ChangelogTicket_Offset{Offset: *from}}
		if *to >= 0 {
			if *to == *from {
				return 0
			}
			tk.EndOffset = *to
		}
		if err := printChanges(ctx, c, tk, *asJSON, stdout); err != nil {
			return fail(err)
		}
		return 0
	default:
		fmt.Fprintf(stderr, "setats binlog: unknown command %q\n\n%s", sub, binlogUsage)
		return 2
	}
	if err != nil {
		return fail(err)
	}
	if *asJSON {
		b, _ := protojson.MarshalOptions{Multiline: true, Indent: "  ", EmitUnpopulated: true}.Marshal(res)
		fmt.Fprintln(stdout, string(b))
		return 0
	}
	printHuman(stdout, sub, *slot, res)
	return 0
}

// doAction runs one single-result action with a binary body.
func doAction(ctx context.Context, c flight.Client, typ string, req, res proto.Message) error {
	body, err := proto.Marshal(req)
	if err != nil {
		return err
	}
	stream, err := c.DoAction(ctx, &flight.Action{Type: typ, Body: body})
	if err != nil {
		return err
	}
	r, err := stream.Recv()
	if err != nil {
		return err
	}
	for {
		if _, err := stream.Recv(); err != nil {
			break
		}
	}
	return proto.Unmarshal(r.GetBody(), res)
}

// acquireArgs checks the flags of acquire-slot and returns the lease in ms (0: the gateway's
// default): the owner is a job id, required and valid as the gateway checks it
// (binlog.ValidateOwner); the lease is 0 or at least 1 ms.
func acquireArgs(owner string, lease time.Duration) (int64, error) {
	if owner == "" {
		return 0, errors.New("--owner is required: the job id that owns the slot")
	}
	if err := binlog.ValidateOwner(owner); err != nil {
		return 0, fmt.Errorf("--owner %s: %v", culprit.Quote(owner), err)
	}
	if lease < 0 || (lease > 0 && lease < time.Millisecond) {
		return 0, fmt.Errorf("--lease %s: want 0 (the gateway's 60 s) or a duration of at least 1ms", lease)
	}
	return lease.Milliseconds(), nil
}

// parsePoints parses "b:off,b:off" or "part/b:off" (the last "/" separates the bucket).
func parsePoints(s string) ([]*setatspb.SyncPointPosition, error) {
	if strings.TrimSpace(s) == "" {
		return nil, errors.New("no points given (want bucket:offset,...)")
	}
	var out []*setatspb.SyncPointPosition
	for _, item := range strings.Split(s, ",") {
		item = strings.TrimSpace(item)
		i := strings.LastIndexByte(item, ':')
		if i < 0 {
			return nil, fmt.Errorf("%q: want bucket:offset", item)
		}
		off, err := strconv.ParseInt(item[i+1:], 10, 64)
		if err != nil {
			return nil, fmt.Errorf("%q: bad offset", item)
		}
		part, b := "", item[:i]
		if j := strings.LastIndexByte(b, '/'); j >= 0 {
			part, b = b[:j], b[j+1:]
		}
		n, err := strconv.Atoi(b)
		if err != nil {
			return nil, fmt.Errorf("%q: bad bucket", item)
		}
		out = append(out, &setatspb.SyncPointPosition{Partition: part, Bucket: int32(n), Offset: off})
	}
	return out, nil
}

func fmtMs(ms int64) string {
	if ms <= 0 {
		return "-"
	}
	return time.UnixMilli(ms).UTC().Format("2006-01-02 15:04:05.000Z")
}

func statusWord(s setatspb.SlotStatus) string {
	return strings.ToLower(strings.TrimPrefix(s.String(), "SLOT_"))
}

func partWord(p string) string {
	if p == "" {
		return "-"
	}
	return p
}

// printHuman prints a result as an aligned table.
func printHuman(w io.Writer, sub, slot string, res proto.Message) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	defer tw.Flush()
	switch r := res.(type) {
	case *setatspb.SyncPointResponse:
		kind := "running"
		if r.GetCheckpoint() {
			kind = "checkpoint"
		}
		fmt.Fprintf(tw, "partition\tbucket\tslot\tkind\tlast_sync_point\tlatest_sync_point\tregistered\n")
		for _, b := range r.GetBuckets() {
			fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%d\t%d\t%v\n", partWord(b.GetPartition()), b.GetBucket(), r.GetSlot(), kind,
				b.GetLastSyncPoint(), b.GetLatestSyncPoint(), b.GetRegistered())
		}
	case *setatspb.ConsumedResponse:
		fmt.Fprintf(tw, "partition\tbucket\tend_offset\tlowest_sync_point\tconsumed\n")
		for _, b := range r.GetBuckets() {
			fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%v\n", partWord(b.GetPartition()), b.GetBucket(), b.GetEndOffset(), b.GetLowestSyncPoint(), b.GetConsumed())
		}
		fmt.Fprintf(tw, "consumed: %v\n", r.GetConsumed())
	case *setatspb.ProgressResponse:
		fmt.Fprintf(tw, "slot\tpartition\tbucket\tcheckpoint\tconsumed_offset\tend_offset\tunconsumed\tconsumed_commit_time\tlatest_commit_time\tlag_s\tupdated_at\texpires_at\tstatus\n")
		for _, p := range r.GetRows() {
			fmt.Fprintf(tw, "%s\t%s\t%d\t%v\t%d\t%d\t%d\t%s\t%s\t%.3f\t%s\t%s\t%s\n", p.GetSlot(), partWord(p.GetPartition()), p.GetBucket(),
				p.GetCheckpoint(), p.GetConsumedOffset(), p.GetEndOffset(), p.GetUnconsumed(), fmtMs(p.GetConsumedCommitMs()),
				fmtMs(p.GetLatestCommitMs()), float64(p.GetLagMs())/1000, fmtMs(p.GetUpdatedAtMs()), fmtMs(p.GetExpiresAtMs()), statusWord(p.GetStatus()))
		}
	case *setatspb.ListSlotsResponse:
		fmt.Fprintf(tw, "slot\tstatus\towner\tbuckets\tcreated_at\tupdated_at\texpires_at\treason\n")
		for _, s := range r.GetSlots() {
			owner := s.GetOwner()
			if owner == "" {
				owner = "-"
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%s\t%s\t%s\n", s.GetName(), statusWord(s.GetStatus()), owner, len(s.GetBuckets()),
				fmtMs(s.GetCreatedAtMs()), fmtMs(s.GetUpdatedAtMs()), fmtMs(s.GetExpiresAtMs()), s.GetReason())
		}
	case *setatspb.SlotInfo:
		if sub == "acquire-slot" {
			fmt.Fprintf(tw, "slot\tstatus\towner\tlease_until\tcreated\tbuckets\tcreated_at\tupdated_at\texpires_at\n")
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%v\t%d\t%s\t%s\t%s\n", r.GetName(), statusWord(r.GetStatus()), r.GetOwner(),
				fmtMs(r.GetOwnerLeaseUntilMs()), r.GetCreated(), len(r.GetBuckets()), fmtMs(r.GetCreatedAtMs()),
				fmtMs(r.GetUpdatedAtMs()), fmtMs(r.GetExpiresAtMs()))
			return
		}
		fmt.Fprintf(tw, "partition\tbucket\tcheckpoint_offset\trunning_offset\n")
		for _, b := range r.GetBuckets() {
			fmt.Fprintf(tw, "%s\t%d\t%d\t%d\n", partWord(b.GetPartition()), b.GetBucket(), b.GetCheckpointOffset(), b.GetRunningOffset())
		}
	case *setatspb.Empty:
		fmt.Fprintf(tw, "slot %s dropped\n", slot)
	}
}

// printChanges reads a bounded DoGet and prints its rows (DWS pgxc_get_binlog_changes).
func printChanges(ctx context.Context, c flight.Client, tk *setatspb.ChangelogTicket, asJSON bool, w io.Writer) error {
	b, err := proto.Marshal(tk)
	if err != nil {
		return err
	}
	stream, err := c.DoGet(ctx, &flight.Ticket{Ticket: b})
	if err != nil {
		return err
	}
	rdr, err := flight.NewRecordReader(stream)
	if err != nil {
		return err
	}
	defer rdr.Release()
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	defer tw.Flush()
	header := false
	kinds := [...]string{"+I", "-U", "+U", "-D"}
	enc := json.NewEncoder(w)
	for rdr.Next() {
		rec := rdr.RecordBatch()
		sc := rec.Schema()
		if !header && !asJSON {
			names := []string{"offset", "row_kind", "commit_time"}
			for i := 3; i < sc.NumFields(); i++ {
				names = append(names, sc.Field(i).Name)
			}
			fmt.Fprintln(tw, strings.Join(names, "\t"))
			header = true
		}
		for i := 0; i < int(rec.NumRows()); i++ {
			kind := kinds[rec.Column(0).(interface{ Value(int) int8 }).Value(i)&3]
			off := rec.Column(1).(interface{ Value(int) int64 }).Value(i)
			ts := int64(rec.Column(2).(interface{ Value(int) arrow.Timestamp }).Value(i))
			if asJSON {
				m := map[string]any{"offset": off, "row_kind": kind, "commit_ms": ts}
				for c := 3; c < sc.NumFields(); c++ {
					m[sc.Field(c).Name] = rec.Column(c).GetOneForMarshal(i)
				}
				if err := enc.Encode(m); err != nil {
					return err
				}
				continue
			}
			vals := []string{strconv.FormatInt(off, 10), kind, fmtMs(ts)}
			for c := 3; c < sc.NumFields(); c++ {
				vals = append(vals, rec.Column(c).ValueStr(i))
			}
			fmt.Fprintln(tw, strings.Join(vals, "\t"))
		}
	}
	if err := rdr.Err(); err != nil {
		return err
	}
	return nil
}
