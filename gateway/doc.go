// Package gateway is the Setats gateway: the server behind the `setats serve` binary.
//
// A Server (server.go) owns, for one warehouse:
//   - the catalog (package catalog) and a registry of per-table stores (package gateway/store),
//     opened lazily on first use and closed on drop-table and shutdown (tables.go);
//   - the Arrow Flight service (flight_*.go), the wire contract of proto/README.md;
//   - NATS (nats.go): an embedded nats-server or an external one, on which every commit and
//     catalog change is published as a JSON Notification, and which feeds the watch action;
//   - the admin HTTP server (admin.go): /healthz, /readyz and Prometheus /metrics (metrics.go);
//   - the retention loop (retention.go).
//
// Lifecycle, as in nats-server: NewServer(opts) validates, Start() binds and serves without
// blocking, Shutdown() stops and is safe to call more than once.
package gateway
