// Package gatewaytest holds end-to-end tests of the `setats` gateway binary, driven only through the
// wire contract (proto/setats.proto, proto/README.md) with the Flight client of internal/flighttest:
// a model-based randomized test with restarts, a SIGKILL crash test, and the ingest/read/latency/RSS
// benchmarks (SPEC sections 4, 6, 7; issue 2).
//
// The non-test files hold what the tests and the load generator (e2e/cmd/setats-loadgen) share: a
// process handle for the built binary (Gateway) and the benchmark driver (RunBench).
package gatewaytest
