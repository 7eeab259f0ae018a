package gateway

import (
	"encoding/json"
	"net/http"

	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// readiness is the body of /readyz. Ready = FlightServing and CatalogOpen and no FailedTables;
// NATSConnected is reported, not required (a NATS outage only delays notifications, SPEC
// section 1).
type readiness struct {
	Ready         bool          `json:"ready"`
	FlightServing bool          `json:"flight_serving"`
	CatalogOpen   bool          `json:"catalog_open"`
	NATSConnected bool          `json:"nats_connected"`
	FailedTables  []failedTable `json:"failed_tables"`
	Warehouse     string        `json:"warehouse,omitempty"`
	// ChannelOutages names, per subscription channel whose source database is down, the last
	// capture error. An outage does not make the gateway unready (the channel keeps serving).
	ChannelOutages map[string]string `json:"channel_outages,omitempty"`
}

// failedTable names a table whose store failed and why.
type failedTable struct {
	Table string `json:"table"` // "db.table"
	Error string `json:"error"` // the failure, at most 512 bytes
}

// adminHandler serves the admin HTTP endpoints (SPEC section 1):
//   - GET /healthz: 200 "ok" while the process is up.
//   - GET /readyz: 200 when Flight is serving, the catalog is open and no table has failed, else
//     503; the JSON body reports each, the failed tables with their errors, and whether NATS is
//     connected (which does not make it 503).
//   - GET /metrics: Prometheus text format, series prefixed setats_.
func (s *Server) adminHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = w.Write([]byte("ok\n"))
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, _ *http.Request) {
		r := s.readiness()
		w.Header().Set("Content-Type", "application/json")
		if !r.Ready {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
		_ = json.NewEncoder(w).Encode(r)
	})
	mux.Handle("GET /metrics", promhttp.HandlerFor(s.metrics.reg, promhttp.HandlerOpts{Registry: s.metrics.reg}))
	return mux
}

// readiness reports the state /readyz serves.
func (s *Server) readiness() readiness {
	r := readiness{
		FlightServing: s.serving.Load() && !s.shuttingDown.Load(),
		CatalogOpen:   s.cat != nil && !s.shuttingDown.Load(),
		NATSConnected: s.nats.connected(),
	}
	if s.cat != nil {
		r.Warehouse = s.cat.Warehouse()
	}
	r.FailedTables = []failedTable{}
	if s.tables != nil {
		r.FailedTables = s.tables.failedTables()
	}
	if s.subs != nil {
		if o := s.subs.Outages(); len(o) > 0 {
			r.ChannelOutages = o
		}
	}
	r.Ready = r.FlightServing && r.CatalogOpen && len(r.FailedTables) == 0
	return r
}
