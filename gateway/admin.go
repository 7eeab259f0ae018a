package gateway

import (
	"encoding/json"
	"net/http"

	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// readiness is the body of /readyz: one field per dependency the gateway needs to serve.
type readiness struct {
	Ready         bool   `json:"ready"`
	FlightServing bool   `json:"flight_serving"`
	CatalogOpen   bool   `json:"catalog_open"`
	NATSConnected bool   `json:"nats_connected"`
	Warehouse     string `json:"warehouse,omitempty"`
}

// adminHandler serves the admin HTTP endpoints (SPEC section 1):
//   - GET /healthz: 200 "ok" while the process is up.
//   - GET /readyz: 200 when Flight is serving, the catalog is open and NATS is connected, else
//     503; the JSON body names each of the three.
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
	r.Ready = r.FlightServing && r.CatalogOpen && r.NATSConnected
	return r
}
