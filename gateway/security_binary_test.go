package gateway

import (
	"crypto/tls"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"google.golang.org/grpc/codes"

	"github.com/setats/setats/proto/setatspb"
)

// TestBinarySIGHUP runs the built binary with a users file and TLS (SPEC section 14): a failed
// login is logged with user, peer and reason but never the password; SIGHUP re-reads the users
// file (a following DoGet whose user lost the grant ends with PermissionDenied, a new user can
// log in) and the TLS files (a rotated certificate, signed by another CA, is served to new
// connections; only SIGHUP reloads TLS, so this checks that SIGHUP reloads at all).
func TestBinarySIGHUP(t *testing.T) {
	oldCA, newCA := newTestPKI(t), newTestPKI(t)
	dir := t.TempDir()
	cert, key := filepath.Join(dir, "server.pem"), filepath.Join(dir, "server-key.pem")
	copyFile := func(from, to string) {
		b, err := os.ReadFile(from)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(to+".tmp", b, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(to+".tmp", to); err != nil {
			t.Fatal(err)
		}
	}
	copyFile(oldCA.CertFile, cert)
	copyFile(oldCA.KeyFile, key)
	users := writeUsersFile(t, filepath.Join(dir, "users.yaml"), testUsers)
	p := startBinary(t, nil, "--warehouse", t.TempDir(), "--users-file", users, "--tls-cert", cert, "--tls-key", key)

	g := tlsGateway(t, p.ready.FlightAddr, &tls.Config{RootCAs: oldCA.Pool})
	setupShop(t, g)
	// reader follows shop.orders.
	rdr := g.followFirst(g.asUser("reader").ctx, &setatspb.ChangelogTicket{Database: "shop", Table: "orders", Bucket: 0, Follow: true})
	const wrong = "hunter2-not-the-password"
	wantCode(t, g.as("reader", wrong).action(ActionGatewayInfo, nil, &setatspb.GatewayInfo{}), codes.Unauthenticated, `user "reader"`)
	if err := tlsInfo(t, p.ready.FlightAddr, &tls.Config{RootCAs: newCA.Pool}, true); err == nil {
		t.Fatal("a client trusting only the new CA connected before the rotation")
	}

	// reader loses its grants, late is added; the certificate is rotated; SIGHUP.
	writeUsersFile(t, users, append([]testUser{testUsers[0], {"reader", "reader-pw", "[]"}}, testUser{"late", "late-pw", `[{database: shop, privileges: [read]}]`}))
	copyFile(newCA.CertFile, cert)
	copyFile(newCA.KeyFile, key)
	if err := p.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	for rdr.Next() {
	}
	wantCode(t, rdr.Err(), codes.PermissionDenied, `user "reader"`, "shop.orders")
	waitFor(t, "the rotated certificate to be served", func() bool {
		return tlsInfo(t, p.ready.FlightAddr, &tls.Config{RootCAs: newCA.Pool}, true) == nil
	})
	late := tlsGateway(t, p.ready.FlightAddr, &tls.Config{RootCAs: newCA.Pool}).as("late", "late-pw")
	if err := late.action(ActionGetTable, &setatspb.TableRequest{Database: "shop", Table: "orders"}, &setatspb.TableInfo{}); err != nil {
		t.Fatalf("get-table as the user added before SIGHUP: %v", err)
	}

	if code := p.terminate(t); code != 0 {
		t.Fatalf("exit code %d after SIGTERM", code)
	}
	log := p.stderr.String() // the process has exited: nothing writes it any more
	for _, want := range []string{"SIGHUP: users file and TLS files reloaded", "authentication failed", "user=reader", "peer=127.0.0.1", "reason=wrong_password"} {
		if !strings.Contains(log, want) {
			t.Errorf("the gateway's log lacks %q", want)
		}
	}
	if strings.Contains(log, wrong) {
		t.Errorf("the gateway's log shows a password: %s", log)
	}
}
