package main

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestCPUProfileEnv: SETATS_CPU_PROFILE makes serve's profile hooks write a non-empty profile
// when stopped, one per process id with %p; an unwritable path is reported and the gateway runs without one; without the
// variable nothing is written.
func TestCPUProfileEnv(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "cpu.prof")
	t.Setenv(cpuProfileEnv, path)
	var stderr strings.Builder
	startCPUProfile(&stderr)()
	if st, err := os.Stat(path); err != nil || st.Size() == 0 {
		t.Fatalf("profile %s: %v (stderr %q)", path, err, stderr.String())
	}

	bad := filepath.Join(dir, "missing", "cpu.prof")
	t.Setenv(cpuProfileEnv, bad)
	stderr.Reset()
	startCPUProfile(&stderr)()
	if !strings.Contains(stderr.String(), cpuProfileEnv) {
		t.Fatalf("unwritable profile path: stderr %q does not name %s", stderr.String(), cpuProfileEnv)
	}

	// %p: one profile per process.
	t.Setenv(cpuProfileEnv, filepath.Join(dir, "cpu-%p.prof"))
	stderr.Reset()
	startCPUProfile(&stderr)()
	perPid := filepath.Join(dir, "cpu-"+strconv.Itoa(os.Getpid())+".prof")
	if st, err := os.Stat(perPid); err != nil || st.Size() == 0 {
		t.Fatalf("profile %s: %v (stderr %q)", perPid, err, stderr.String())
	}
	if got := cpuProfilePath("/tmp/a-%p-%p.prof", 42); got != "/tmp/a-42-42.prof" {
		t.Fatalf("cpuProfilePath: %q", got)
	}

	t.Setenv(cpuProfileEnv, "")
	stderr.Reset()
	startCPUProfile(&stderr)()
	if stderr.Len() != 0 {
		t.Fatalf("no profile asked for: stderr %q", stderr.String())
	}
}
