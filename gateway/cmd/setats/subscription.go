package main

import (
	"context"
	"encoding/base64"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow/flight"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/setats/setats/proto/setatspb"
)

const subscriptionUsage = `usage: setats subscription <command> [flags]

Subscription channels (SPEC section 11): a thin client of the gateway's Flight actions.

commands:
  create        --channel C --source-url URL --tables db.t1,db.t2 [--start POS] [--slot S] [--publication P] [--retention 24h]
  list
  describe      --channel C
  drop          --channel C [--if-exists]
  groups        --channel C
  create-group  --channel C --group G --group-user U --group-password P   (adds U when G exists)

common flags: --manager-url host:port, grpc://host:port or grpc+tls://host:port (default localhost:8815,
  env SETATS_MANAGER_URL), --user/--password: a gateway user when the gateway has --users-file
  (env SETATS_USER, SETATS_PASSWORD), --tls-ca-cert: PEM CA of the gateway's --tls-cert (env SETATS_TLS_CA_CERT)
Answers are printed as JSON.
`

// subscription runs `setats subscription <command>`.
func subscription(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		fmt.Fprint(stderr, subscriptionUsage)
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	cmd := args[0]
	fs := flag.NewFlagSet("setats subscription "+cmd, flag.ContinueOnError)
	fs.SetOutput(stderr)
	murl := fs.String("manager-url", envOr("SETATS_MANAGER_URL", "localhost:8815"), "gateway Flight address: host:port or grpc://host:port")
	channel := fs.String("channel", "", "channel (topic) name")
	gwUser := fs.String("user", os.Getenv("SETATS_USER"), "gateway user (HTTP Basic) when the gateway has --users-file (env SETATS_USER)")
	gwPassword := fs.String("password", os.Getenv("SETATS_PASSWORD"), "password of --user (env SETATS_PASSWORD)")
	caCert := tlsCACertFlag(fs)
	var (
		sourceURL, tables, start, slot, pub *string
		retention                           *time.Duration
		ifExists                            *bool
		group, user, password               *string
	)
	switch cmd {
	case "create":
		sourceURL = fs.String("source-url", "", "postgres://user:pass@host:port/db or mysql://user:pass@host:port/db")
		tables = fs.String("tables", "", "tables to capture, comma separated: schema.table (PostgreSQL) or db.table (MySQL)")
		start = fs.String("start", "", "start position: latest (default) or a source position")
		slot = fs.String("slot", "", "PostgreSQL replication slot to use (default setats_<channel>, created)")
		pub = fs.String("publication", "", "PostgreSQL publication to use (default setats_<channel>, created)")
		retention = fs.Duration("retention", 0, "how long records are kept (default 24h)")
	case "drop":
		ifExists = fs.Bool("if-exists", false, "succeed when the channel does not exist")
	case "create-group":
		group = fs.String("group", "", "consumer group (dts.sid)")
		user = fs.String("group-user", "", "user of the group (dts.user)")
		password = fs.String("group-password", "", "password of the group user (dts.password)")
	case "list", "describe", "groups":
	default:
		fmt.Fprintf(stderr, "setats subscription: unknown command %q\n\n%s", cmd, subscriptionUsage)
		return 2
	}
	if err := fs.Parse(args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	var action string
	var body proto.Message
	switch cmd {
	case "create":
		var ts []string
		for _, t := range strings.Split(*tables, ",") {
			if t = strings.TrimSpace(t); t != "" {
				ts = append(ts, t)
			}
		}
		action, body = "subscription-create", &setatspb.CreateChannelRequest{Channel: *channel, SourceUrl: *sourceURL, Tables: ts,
			Start: *start, Slot: *slot, Publication: *pub, RetentionMs: retention.Milliseconds()}
	case "list":
		action, body = "subscription-list", &setatspb.ListChannelsRequest{}
	case "describe":
		action, body = "subscription-describe", &setatspb.ChannelRequest{Channel: *channel}
	case "drop":
		action, body = "subscription-drop", &setatspb.ChannelRequest{Channel: *channel, IgnoreIfNotExists: *ifExists}
	case "groups":
		action, body = "subscription-groups", &setatspb.ChannelRequest{Channel: *channel}
	case "create-group":
		action, body = "subscription-create-group", &setatspb.CreateGroupRequest{Channel: *channel, Group: *group, User: *user, Password: *password}
	}
	out, err := subscriptionDoAction(*murl, *caCert, *gwUser, *gwPassword, action, body)
	if err != nil {
		if st, ok := status.FromError(err); ok {
			fmt.Fprintf(stderr, "setats subscription %s: %s: %s\n", cmd, st.Code(), st.Message())
		} else {
			fmt.Fprintf(stderr, "setats subscription %s: %v\n", cmd, err)
		}
		return 1
	}
	fmt.Fprintln(stdout, string(out))
	return 0
}

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}

// subscriptionDoAction runs one Flight action with a JSON body and returns the JSON answer.
func subscriptionDoAction(managerURL, caCert, user, password, typ string, body proto.Message) ([]byte, error) {
	b, err := protojson.Marshal(body)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if user != "" {
		basic := base64.StdEncoding.EncodeToString([]byte(user + ":" + password))
		ctx = metadata.AppendToOutgoingContext(ctx, "authorization", "Basic "+basic)
	}
	c, err := dialFlight(managerURL, caCert)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	stream, err := c.DoAction(ctx, &flight.Action{Type: typ, Body: b})
	if err != nil {
		return nil, err
	}
	var out []byte
	for {
		r, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		out = append(out, r.GetBody()...)
	}
}
