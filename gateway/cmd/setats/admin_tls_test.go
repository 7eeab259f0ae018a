package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"
	"google.golang.org/grpc/metadata"

	"github.com/setats/setats/gateway"
	"github.com/setats/setats/internal/testpki"
	"github.com/setats/setats/proto/setatspb"
)

// startTestGateway starts an in-process gateway on free loopback ports in a temporary warehouse,
// with the security options sec; it stops at the end of the test.
func startTestGateway(t *testing.T, sec gateway.Security) *gateway.Server {
	t.Helper()
	s, err := gateway.NewServer(gateway.Options{FlightAddr: "127.0.0.1:0", AdminAddr: "127.0.0.1:0", NATSListen: "127.0.0.1:-1",
		Warehouse: t.TempDir(), ShutdownTimeout: 5 * time.Second, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Security: sec})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Shutdown)
	return s
}

// TestAdminCommandsOverTLS: the admin commands reach a gateway with a users file and TLS signed
// by a private CA (SPEC section 14): `setats binlog` and `setats subscription` take
// grpc+tls://, --tls-ca-cert and a user. A read-only consuming account (the DWS seed's least
// privilege) acquires its slot and lists slots, but dropping a slot needs admin.
func TestAdminCommandsOverTLS(t *testing.T) {
	pki := testpki.New(t)
	users := filepath.Join(t.TempDir(), "users.yaml")
	var b strings.Builder
	b.WriteString("users:\n")
	for _, u := range []struct{ name, grants string }{
		{"admin", "[{privileges: [admin]}]"},
		{"reader", "[{database: shop, privileges: [read]}]"},
	} {
		h, err := bcrypt.GenerateFromPassword([]byte(u.name+"-pw"), bcrypt.MinCost)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&b, "  - name: %s\n    password: %q\n    grants: %s\n", u.name, h, u.grants)
	}
	if err := os.WriteFile(users, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	s := startTestGateway(t, gateway.Security{UsersFile: users, TLSCert: pki.CertFile, TLSKey: pki.KeyFile})
	url := "grpc+tls://" + s.FlightAddr()

	// The table and the reader's slot, through the same dial as the commands.
	c, err := dialFlight(url, pki.CAFile)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	as := func(user string) context.Context {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		t.Cleanup(cancel)
		return metadata.AppendToOutgoingContext(ctx, "authorization",
			"Basic "+base64.StdEncoding.EncodeToString([]byte(user+":"+user+"-pw")))
	}
	spec := &setatspb.TableSpec{Database: "shop", Table: "orders", BucketCount: 1, PrimaryKey: []string{"c1"},
		Columns: []*setatspb.Column{{Name: "c1", Type: "INT"}, {Name: "c2", Type: "INT"}}}
	if err := doAction(as("admin"), c, "create-table", &setatspb.CreateTableRequest{Spec: spec, CreateDatabase: true}, &setatspb.TableInfo{}); err != nil {
		t.Fatal(err)
	}
	if err := doAction(as("reader"), c, "binlog-acquire-slot", &setatspb.AcquireSlotRequest{Database: "shop", Table: "orders",
		Slot: "s1", Owner: "job-1"}, &setatspb.SlotInfo{}); err != nil {
		t.Fatalf("a read-only user acquires its slot: %v", err)
	}

	cmd := func(want int, args ...string) string {
		t.Helper()
		var out, errb bytes.Buffer
		if rc := run(args, &out, &errb); rc != want {
			t.Fatalf("setats %q: exit %d, want %d; stdout %s stderr %s", args, rc, want, out.String(), errb.String())
		}
		return out.String() + errb.String()
	}
	conn := func(user string) []string {
		return []string{"--manager-url", url, "--tls-ca-cert", pki.CAFile, "--user", user, "--password", user + "-pw"}
	}
	binlog := func(sub, user string, extra ...string) []string {
		return append(append([]string{"binlog", sub, "--table", "shop.orders"}, conn(user)...), extra...)
	}

	if out := cmd(0, binlog("slots", "reader")...); !strings.Contains(out, "s1") {
		t.Fatalf("binlog slots as reader: %s", out)
	}
	out := cmd(1, binlog("drop-slot", "reader", "--slot", "s1")...)
	for _, want := range []string{"PermissionDenied", `user "reader"`, "binlog-drop-slot", "shop.orders", "admin"} {
		if !strings.Contains(out, want) {
			t.Fatalf("drop-slot as reader: %q does not name %s", out, want)
		}
	}
	cmd(0, binlog("drop-slot", "admin", "--slot", "s1")...)
	if out := cmd(0, binlog("slots", "admin")...); strings.Contains(out, "s1") {
		t.Fatalf("slot s1 still listed after drop-slot: %s", out)
	}
	if out := cmd(0, append([]string{"subscription", "list"}, conn("admin")...)...); !strings.Contains(out, "{") {
		t.Fatalf("subscription list over TLS: %s", out)
	}

	// The gateway's private CA is needed, and a CA with a plaintext URL is a mistake.
	out = cmd(1, "binlog", "slots", "--table", "shop.orders", "--manager-url", url, "--user", "admin", "--password", "admin-pw")
	if !strings.Contains(out, "certificate") {
		t.Fatalf("binlog slots without --tls-ca-cert: %s, want a certificate error", out)
	}
	out = cmd(1, "subscription", "list", "--manager-url", "grpc://"+s.FlightAddr(), "--tls-ca-cert", pki.CAFile)
	if !strings.Contains(out, "grpc+tls://") {
		t.Fatalf("--tls-ca-cert with grpc://: %s", out)
	}
}
