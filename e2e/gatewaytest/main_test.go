package gatewaytest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// setatsBin is the binary TestMain built (or SETATS_BIN).
var setatsBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "setats-e2e-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	setatsBin, err = BuildBinary(dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, "gatewaytest:", err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// envInt64 reads an integer environment variable, def when unset.
func envInt64(t testing.TB, name string, def int64) int64 {
	s := os.Getenv(name)
	if s == "" {
		return def
	}
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		t.Fatalf("%s=%q: %v", name, s, err)
	}
	return v
}

// testGateway starts the binary on a fresh warehouse under t.TempDir; it is killed at cleanup and
// its log tail printed when the test failed.
func testGateway(t testing.TB) *Gateway {
	t.Helper()
	dir := t.TempDir()
	gw, err := StartGateway(setatsBin, filepath.Join(dir, "warehouse"), filepath.Join(dir, "gateway.log"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if !gw.Exited() {
			gw.Kill()
		}
		if t.Failed() {
			t.Logf("gateway log tail (%s):\n%s", gw.LogPath, gw.LogTail(60))
		}
	})
	return gw
}

// dial connects to the gateway's Flight address; closed at cleanup.
func dial(t testing.TB, gw *Gateway) *Client {
	t.Helper()
	c, err := Dial(gw.Info.FlightAddr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// testCtx is a context bounded by the test deadline (or 10 minutes).
func testCtx(t testing.TB) context.Context {
	d := time.Now().Add(10 * time.Minute)
	if tt, ok := t.(*testing.T); ok {
		if dl, ok := tt.Deadline(); ok {
			d = dl.Add(-5 * time.Second)
		}
	}
	ctx, cancel := context.WithDeadline(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}
