package gateway

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/setats/setats/gateway/store"
)

// slotMetrics are the binlog gauges (SPEC section 8), one series per (table, slot), never per
// bucket. They are refreshed by every retention pass (--retention-interval) and by every
// binlog-progress action. deploy/prometheus/setats-alerts.yml holds the alert rules on them.
type slotMetrics struct {
	unconsumed    *prometheus.GaugeVec // table, slot
	lag           *prometheus.GaugeVec // table, slot
	status        *prometheus.GaugeVec // table, slot
	sinceProgress *prometheus.GaugeVec // table, slot
	expiresIn     *prometheus.GaugeVec // table, slot
}

func newSlotMetrics(reg *prometheus.Registry) *slotMetrics {
	g := func(name, help string) *prometheus.GaugeVec {
		v := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: name, Help: help}, []string{"table", "slot"})
		reg.MustRegister(v)
		return v
	}
	return &slotMetrics{
		unconsumed: g("setats_binlog_slot_unconsumed_rows",
			"Changelog rows at or above the slot's checkpoint sync points, summed over the buckets (DWS unconsumed_binlog_count)."),
		lag: g("setats_binlog_slot_lag_seconds",
			"How long the oldest row the slot has not consumed has waited, the largest over the buckets; 0 when caught up."),
		status: g("setats_binlog_slot_status",
			"Slot status: 0 active, 1 expired, 2 lost."),
		sinceProgress: g("setats_binlog_slot_seconds_since_checkpoint",
			"Seconds since the slot last registered a checkpoint sync point (slot.ttl counts from it)."),
		expiresIn: g("setats_binlog_slot_expires_in_seconds",
			"Seconds until the slot expires unless it registers a checkpoint sync point; 0 unless active."),
	}
}

func (m *slotMetrics) forget(table string) {
	for _, v := range []*prometheus.GaugeVec{m.unconsumed, m.lag, m.status, m.sinceProgress, m.expiresIn} {
		v.DeletePartialMatch(prometheus.Labels{"table": table})
	}
}

// updateSlotMetrics sets the gauges of every slot of ot (and drops those of dropped slots).
// Called with the table held open.
func (s *Server) updateSlotMetrics(ot *openTable) {
	sums, err := ot.slots.Summaries()
	if err != nil {
		s.log.Warn("binlog: slot metrics", "table", ot.label, "err", err)
		return
	}
	m := s.metrics.slots
	m.forget(ot.label)
	for _, sm := range sums {
		l := []string{ot.label, sm.Slot}
		m.unconsumed.WithLabelValues(l...).Set(float64(sm.Unconsumed))
		m.lag.WithLabelValues(l...).Set(float64(sm.LagMs) / 1000)
		m.status.WithLabelValues(l...).Set(float64(statusGauge(sm.Status)))
		m.sinceProgress.WithLabelValues(l...).Set(float64(sm.SinceProgressMs) / 1000)
		m.expiresIn.WithLabelValues(l...).Set(float64(sm.ExpiresInMs) / 1000)
	}
}

func statusGauge(st store.SlotStatus) int { return int(st) }
