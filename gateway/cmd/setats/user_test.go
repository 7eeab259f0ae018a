package main

import (
	"bytes"
	"strings"
	"testing"

	"golang.org/x/crypto/bcrypt"
)

func TestHashPasswordCommand(t *testing.T) {
	var out, errb bytes.Buffer
	if code := user([]string{"hash-password", "--cost", "4"}, strings.NewReader("s3cret\n"), &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	h := strings.TrimSpace(out.String())
	if bcrypt.CompareHashAndPassword([]byte(h), []byte("s3cret")) != nil || strings.Contains(h, "s3cret") {
		t.Fatalf("hash %q does not match the password", h)
	}
	if code := user([]string{"hash-password"}, strings.NewReader(""), &out, &errb); code == 0 {
		t.Fatal("an empty password was hashed")
	}
}

// TestServeRefusesOpenBind: without --users-file a non-loopback address fails at start, naming
// --users-file and --allow-anonymous.
func TestServeRefusesOpenBind(t *testing.T) {
	var errb bytes.Buffer
	code := serve([]string{"--flight-addr", ":0", "--admin-addr", "127.0.0.1:0", "--nats-listen", "127.0.0.1:-1",
		"--warehouse", t.TempDir()}, &errb)
	if code == 0 || !strings.Contains(errb.String(), "--users-file") || !strings.Contains(errb.String(), "--allow-anonymous") {
		t.Fatalf("exit %d, stderr %q", code, errb.String())
	}
}
