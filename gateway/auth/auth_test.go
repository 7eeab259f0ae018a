package auth

import (
	"context"
	"encoding/base64"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"
)

func hash(t *testing.T, pw string) string {
	t.Helper()
	h, err := bcrypt.GenerateFromPassword([]byte(pw), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	return string(h)
}

func TestParseUsers(t *testing.T) {
	h := hash(t, "pw")
	for _, tc := range []struct {
		name, yaml, err string
	}{
		{"ok", "users:\n  - {name: a, password: '" + h + "', grants: [{database: d, privileges: [read, write]}]}\n", ""},
		{"empty file", "", "no users"},
		{"empty list", "users: []", "no users"},
		{"plain password", "users: [{name: a, password: secret}]", "bcrypt"},
		{"missing name", "users: [{password: '" + h + "'}]", "name is empty"},
		{"duplicate", "users: [{name: a, password: '" + h + "'}, {name: a, password: '" + h + "'}]", "twice"},
		{"unknown privilege", "users: [{name: a, password: '" + h + "', grants: [{privileges: [root]}]}]", "root"},
		{"no privileges", "users: [{name: a, password: '" + h + "', grants: [{database: d}]}]", "privileges are missing"},
		{"unknown key", "users: [{name: a, passwd: x}]", "passwd"},
		{"colon in name", "users: [{name: 'a:b', password: '" + h + "'}]", "':'"},
		{"channel grant", "users: [{name: a, password: '" + h + "', grants: [{channel: ch, privileges: [read]}]}]", ""},
		{"channel and table", "users: [{name: a, password: '" + h + "', grants: [{channel: ch, database: d, privileges: [read]}]}]", "not both"},
		{"blank channel", "users: [{name: a, password: '" + h + "', grants: [{channel: ' ', privileges: [read]}]}]", "blank"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseUsers([]byte(tc.yaml))
			if tc.err == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Fatalf("error %v, want one naming %q", err, tc.err)
			}
		})
	}
}

func TestGrants(t *testing.T) {
	u := &User{Name: "u", Grants: []Grant{
		{Database: "shop", Table: "orders", Privileges: Write},
		{Database: "shop", Table: Any, Privileges: Read},
		{Database: "ops", Table: Any, Privileges: Admin},
	}}
	for _, tc := range []struct {
		p         Privilege
		db, table string
		want      bool
	}{
		{Read, "shop", "orders", true},
		{Write, "shop", "orders", true},
		{Write, "shop", "items", false},
		{Admin, "shop", "orders", false},
		{Read, "shop", Any, true},
		{Admin, "shop", Any, false},
		{Read, "ops", "x", true}, // admin implies read
		{Write, "ops", "x", true},
		{Admin, "ops", Any, true},
		{Admin, Any, Any, false},
		{Read, "other", "t", false},
	} {
		if got := u.Allows(tc.p, tc.db, tc.table); got != tc.want {
			t.Errorf("Allows(%s, %s, %s) = %v, want %v", tc.p, tc.db, tc.table, got, tc.want)
		}
	}
	if !u.SeesDatabase("shop") || u.SeesDatabase("other") {
		t.Error("SeesDatabase")
	}
}

// TestChannelGrants: channel grants cover channels only; a grant on every database and table
// covers every channel too; admin implies read.
func TestChannelGrants(t *testing.T) {
	h := hash(t, "pw")
	us, err := ParseUsers([]byte(`users:
  - {name: consumer, password: '` + h + `', grants: [{channel: orders, privileges: [read]}]}
  - {name: chadmin, password: '` + h + `', grants: [{channel: "*", privileges: [admin]}]}
  - {name: shop, password: '` + h + `', grants: [{database: shop, privileges: [admin]}]}
  - {name: all, password: '` + h + `', grants: [{privileges: [read]}]}
`))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		user string
		p    Privilege
		ch   string
		want bool
	}{
		{"consumer", Read, "orders", true},
		{"consumer", Read, "users", false},
		{"consumer", Admin, "orders", false},
		{"chadmin", Admin, "any", true},
		{"chadmin", Read, "any", true},
		{"shop", Read, "orders", false}, // a database grant covers no channel
		{"all", Read, "orders", true},   // every database and table: every channel
		{"all", Admin, "orders", false},
	} {
		if got := us.Lookup(tc.user).AllowsChannel(tc.p, tc.ch); got != tc.want {
			t.Errorf("%s AllowsChannel(%s, %s) = %v, want %v", tc.user, tc.p, tc.ch, got, tc.want)
		}
	}
	// A channel grant covers no table, and names no database for listings.
	if c := us.Lookup("consumer"); c.Allows(Read, "orders", Any) || c.Allows(Read, Any, Any) || c.SeesDatabase("orders") {
		t.Error("a channel grant covers a table")
	}
}

func TestDelayAfter(t *testing.T) {
	for n, want := range map[int]time.Duration{0: 0, 2: 0, 3: FirstDelay, 4: 2 * FirstDelay, 8: 32 * FirstDelay, 9: MaxDelay, 100: MaxDelay} {
		if got := DelayAfter(n); got != want {
			t.Errorf("DelayAfter(%d) = %v, want %v", n, got, want)
		}
	}
}

// TestSlowDown: failures of one peer make its next attempts wait longer and longer, other peers
// not at all; a success resets the peer; the window forgets old failures.
func TestSlowDown(t *testing.T) {
	path := filepath.Join(t.TempDir(), "u.yaml")
	if err := os.WriteFile(path, []byte("users: [{name: a, password: '"+hash(t, "pw")+"'}]"), 0o600); err != nil {
		t.Fatal(err)
	}
	now := time.Unix(1e9, 0)
	var waits []time.Duration
	a, err := New(Config{UsersFile: path, ReloadInterval: -1, Now: func() time.Time { return now },
		Sleep: func(_ context.Context, d time.Duration) error { waits = append(waits, d); return nil }})
	if err != nil {
		t.Fatal(err)
	}
	bad := "Basic " + base64.StdEncoding.EncodeToString([]byte("a:wrong"))
	good := "Basic " + base64.StdEncoding.EncodeToString([]byte("a:pw"))
	ctx := context.Background()
	for i := 0; i < 6; i++ {
		if _, err := a.Authenticate(ctx, bad, "10.0.0.1"); KindOf(err) != KindUnauthenticated {
			t.Fatalf("attempt %d: %v", i, err)
		}
	}
	want := []time.Duration{FirstDelay, 2 * FirstDelay, 4 * FirstDelay}
	if len(waits) != 3 || waits[0] != want[0] || waits[1] != want[1] || waits[2] != want[2] {
		t.Fatalf("waits %v, want %v", waits, want)
	}
	waits = nil
	if p, err := a.Authenticate(ctx, good, "10.0.0.2"); err != nil || p.User != "a" || len(waits) != 0 {
		t.Fatalf("another peer: %v %v, waits %v", p, err, waits)
	}
	if _, err := a.Authenticate(ctx, good, "10.0.0.1"); err != nil || len(waits) != 1 {
		t.Fatalf("the failing peer's right password: %v, waits %v (it still waits once)", err, waits)
	}
	waits = nil
	if _, err := a.Authenticate(ctx, bad, "10.0.0.1"); err == nil || len(waits) != 0 {
		t.Fatalf("after a success the count starts again: %v, waits %v", err, waits)
	}
	for i := 0; i < 5; i++ {
		_, _ = a.Authenticate(ctx, bad, "10.0.0.3")
	}
	now = now.Add(FailureWindow + time.Second)
	waits = nil
	if _, err := a.Authenticate(ctx, bad, "10.0.0.3"); err == nil || len(waits) != 0 {
		t.Fatalf("failures older than the window still count: waits %v", waits)
	}
}

// TestAuthorizeErrors: the kinds and messages of refusals.
func TestAuthorizeErrors(t *testing.T) {
	path := filepath.Join(t.TempDir(), "u.yaml")
	if err := os.WriteFile(path, []byte("users: [{name: r, password: '"+hash(t, "pw")+"', grants: [{database: d, privileges: [read]}]}]"), 0o600); err != nil {
		t.Fatal(err)
	}
	a, err := New(Config{UsersFile: path, ReloadInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	anon := context.Background()
	r := WithPrincipal(anon, Principal{User: "r", Method: MethodBasic})
	gone := WithPrincipal(anon, Principal{User: "x", Method: MethodBasic})
	for _, tc := range []struct {
		ctx  context.Context
		p    Privilege
		kind Kind
		msg  []string
	}{
		{anon, Read, KindUnauthenticated, []string{"DoGet", "anonymous"}},
		{r, Read, 0, nil},
		{r, Write, KindPermissionDenied, []string{"DoGet", `user "r"`, "write", "table d.t"}},
		{gone, Read, KindPermissionDenied, []string{`user "x"`, "no longer"}},
	} {
		err := a.Authorize(tc.ctx, "DoGet", tc.p, "d", "t")
		if KindOf(err) != tc.kind {
			t.Fatalf("%v: kind %v, want %v", err, KindOf(err), tc.kind)
		}
		for _, m := range tc.msg {
			if !strings.Contains(err.Error(), m) {
				t.Fatalf("%q does not name %q", err, m)
			}
		}
	}
	err = a.AuthorizeChannel(r, "subscription-drop", Admin, "orders")
	if KindOf(err) != KindPermissionDenied || !strings.Contains(err.Error(), `subscription-drop: user "r" has no admin privilege on channel orders`) {
		t.Fatalf("channel refusal: %v", err)
	}
	if err := a.AuthorizeChannel(anon, "DoGet", Read, "orders"); KindOf(err) != KindUnauthenticated {
		t.Fatalf("anonymous channel read: %v", err)
	}
	var none *Authenticator
	if err := none.AuthorizeChannel(anon, "DoGet", Admin, "orders"); err != nil {
		t.Fatalf("a nil Authenticator allows every channel: %v", err)
	}
	if err := none.Authorize(anon, "DoPut", Admin, "d", "t"); err != nil {
		t.Fatalf("a nil Authenticator allows everything: %v", err)
	}
}

func TestHashPassword(t *testing.T) {
	h, err := HashPassword([]byte("pw"), bcrypt.MinCost)
	if err != nil || bcrypt.CompareHashAndPassword(h, []byte("pw")) != nil {
		t.Fatalf("%s %v", h, err)
	}
	if _, err := HashPassword(nil, 0); err == nil {
		t.Fatal("empty password accepted")
	}
}
