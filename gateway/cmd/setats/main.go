// Command setats is the Setats gateway binary.
//
//	setats serve [flags]         start a gateway (every flag optional; each also read from SETATS_<FLAG>)
//	setats user hash-password    read a password on stdin, print its bcrypt hash (users file)
//	setats binlog ...            the table binlog functions (slots, sync points, progress; binlog.go)
//	setats subscription          manage subscription channels and consumer groups (Flight client)
//	setats version               print the version
//
// `setats serve` runs until SIGTERM or SIGINT, then shuts down gracefully (in-flight writes are
// drained, stores closed) and exits 0. SIGHUP re-reads the users file and the TLS files. Flags:
// see `setats serve -h` and gateway/README.md.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/setats/setats/gateway"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

const usage = `usage: setats <command> [flags]

commands:
  serve                start a gateway (Arrow Flight, admin HTTP, NATS); 'setats serve -h' lists the flags
  user hash-password   read a password on stdin (one line) and print its bcrypt hash for --users-file
  binlog <command>     table binlog functions: acquire-slot, sync-point, register-sync-point, changes, consumed,
                       progress, slots, drop-slot ('setats binlog -h')
  subscription         create, list, describe, drop subscription channels and consumer groups
                       ('setats subscription -h')
  version              print the version
`

// run executes the command line args and returns the process exit code.
func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	switch args[0] {
	case "version", "--version", "-version":
		fmt.Fprintf(stdout, "setats %s\n", gateway.Version)
		return 0
	case "serve":
		return serve(args[1:], stderr)
	case "user":
		return user(args[1:], os.Stdin, stdout, stderr)
	case "binlog":
		return binlogCmd(args[1:], stdout, stderr)
	case "subscription":
		return subscription(args[1:], stdout, stderr)
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return 0
	}
	fmt.Fprintf(stderr, "setats: unknown command %q\n\n%s", args[0], usage)
	return 2
}

// serve parses the flags (then the SETATS_* environment), starts the gateway and waits for
// SIGTERM/SIGINT.
func serve(args []string, stderr io.Writer) int {
	var opts gateway.Options
	fs := flag.NewFlagSet("setats serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	opts.RegisterFlags(fs)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: setats serve [flags]\n\nEvery flag may also be set by its environment variable, e.g. --flight-addr by %s.\n\n", gateway.EnvName("flight-addr"))
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "setats serve: unexpected arguments %q\n", fs.Args())
		return 2
	}
	if err := gateway.ApplyEnv(fs, nil); err != nil {
		fmt.Fprintf(stderr, "setats serve: %v\n", err)
		return 2
	}
	// Signals are caught before Start so that a SIGTERM during start-up still shuts down cleanly.
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT)
	defer signal.Stop(sigs)
	hups := make(chan os.Signal, 1)
	signal.Notify(hups, syscall.SIGHUP)
	defer signal.Stop(hups)

	stopProfile := startCPUProfile(stderr)
	defer stopProfile()
	s, err := gateway.NewServer(opts)
	if err != nil {
		fmt.Fprintf(stderr, "setats serve: %v\n", err)
		return 2
	}
	if err := s.Start(); err != nil {
		fmt.Fprintf(stderr, "setats serve: %v\n", err)
		return 1
	}
	go func() {
		for range hups {
			if err := s.Reload(); err != nil {
				s.Logger().Error("SIGHUP: reload failed; the previous files stay in force", "err", err)
			} else {
				s.Logger().Info("SIGHUP: users file and TLS files reloaded")
			}
		}
	}()
	select {
	case sig := <-sigs:
		s.Logger().Info("signal received; shutting down", "signal", sig.String())
		go func() {
			// A second signal while draining stops at once.
			if sig2, ok := <-sigs; ok {
				s.Logger().Warn("second signal; exiting without draining", "signal", sig2.String())
				os.Exit(1)
			}
		}()
		shutdown(s, opts.ShutdownTimeout)
	case err := <-s.Failed():
		// A table's storage failed (a WAL write or fsync): it cannot recover in this process
		// (gateway/README.md, "Storage failures"); a restart replays its WAL.
		s.Logger().Error("storage failure; shutting down, exiting 1 so that a restart recovers the table", "err", err)
		shutdown(s, opts.ShutdownTimeout)
		return 1
	case <-s.Done():
	}
	return 0
}

// shutdownGrace is how long past the drain timeout shutdown waits for stores, NATS and the admin
// server to close before the process exits anyway.
const shutdownGrace = 15 * time.Second

// shutdown runs s.Shutdown, bounded: a call blocked for good in a failed table's storage (a full
// disk, store/failure.go) must not keep the process from exiting; then it exits 1.
func shutdown(s *gateway.Server, drain time.Duration) {
	done := make(chan struct{})
	go func() { s.Shutdown(); close(done) }()
	select {
	case <-done:
	case <-time.After(drain + shutdownGrace):
		s.Logger().Error("shutdown did not complete; exiting without it", "waited", (drain + shutdownGrace).String())
		os.Exit(1)
	}
}
