package main

import (
	"fmt"
	"io"
	"os"
	"runtime/pprof"
	"strconv"
	"strings"
)

// cpuProfileEnv names the environment variable of the benchmarking aid: when it is set to a file
// path, `setats serve` records a CPU profile (runtime/pprof) from start-up until shutdown and
// writes it there (gateway/README.md, "CPU profile"). Every "%p" in the path is replaced by the
// process id, so that several gateways started with the same environment (a test that starts
// one per run, a load generator's own gateway) write one profile each. No network endpoint.
const cpuProfileEnv = "SETATS_CPU_PROFILE"

// startCPUProfile starts the CPU profile named by SETATS_CPU_PROFILE, if any, and returns the
// function that stops it and closes the file (a no-op when none was asked for). A profile that
// cannot be started is reported on stderr and the gateway runs without it.
func startCPUProfile(stderr io.Writer) (stop func()) {
	path := cpuProfilePath(os.Getenv(cpuProfileEnv), os.Getpid())
	if path == "" {
		return func() {}
	}
	f, err := os.Create(path)
	if err != nil {
		fmt.Fprintf(stderr, "setats serve: %s: %v (running without a CPU profile)\n", cpuProfileEnv, err)
		return func() {}
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		_ = f.Close()
		fmt.Fprintf(stderr, "setats serve: %s: %v (running without a CPU profile)\n", cpuProfileEnv, err)
		return func() {}
	}
	return func() {
		pprof.StopCPUProfile()
		if err := f.Close(); err != nil {
			fmt.Fprintf(stderr, "setats serve: %s: %v\n", cpuProfileEnv, err)
		}
	}
}

// cpuProfilePath is the profile file of SETATS_CPU_PROFILE=env for process pid: env with every
// "%p" replaced by pid ("" when env is empty).
func cpuProfilePath(env string, pid int) string {
	return strings.ReplaceAll(env, "%p", strconv.Itoa(pid))
}
