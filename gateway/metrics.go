package gateway

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// metrics are the gateway's Prometheus series, all prefixed "setats_", on a registry of their own
// (one per Server, so that several servers can run in one test process). The label "table" is
// "<database>.<table>".
type metrics struct {
	reg *prometheus.Registry

	rowsWritten    *prometheus.CounterVec   // table
	rowsRead       *prometheus.CounterVec   // table, row_kind
	changelogRows  *prometheus.CounterVec   // table, row_kind
	writeBatches   *prometheus.CounterVec   // table
	writeErrors    *prometheus.CounterVec   // table, code
	writeLatency   *prometheus.HistogramVec // table
	openStreams    prometheus.Gauge
	watchStreams   prometheus.Gauge
	watchOverflows prometheus.Counter
	openTables     prometheus.Gauge
	endOffset      *prometheus.GaugeVec // table, partition, bucket
	startOffset    *prometheus.GaugeVec // table, partition, bucket
	retentionRows  *prometheus.CounterVec
	natsPublished  prometheus.Counter
	natsPubErrors  prometheus.Counter
	natsReconnects prometheus.Counter
	failedTables   prometheus.Gauge
	pendingWrites  prometheus.Gauge
	slots          *slotMetrics     // metrics_binlog.go
	delivery       *deliveryMetrics // delivery.go
}

func newMetrics() *metrics {
	m := &metrics{reg: prometheus.NewRegistry()}
	f := func(c prometheus.Collector) { m.reg.MustRegister(c) }
	m.rowsWritten = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "setats_rows_written_total",
		Help: "Rows received by DoPut and applied, per table.",
	}, []string{"table"})
	m.rowsRead = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "setats_rows_read_total",
		Help: "Changelog rows sent by DoGet, per table and RowKind (+I, -U, +U, -D).",
	}, []string{"table", "row_kind"})
	m.changelogRows = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "setats_changelog_rows_total",
		Help: "Changelog rows written by the merge of DoPut batches, per table and RowKind (+I, -U, +U, -D).",
	}, []string{"table", "row_kind"})
	m.writeBatches = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "setats_write_batches_total",
		Help: "Record batches applied by DoPut, per table.",
	}, []string{"table"})
	m.writeErrors = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "setats_write_errors_total",
		Help: "Record batches rejected by DoPut, per table and gRPC code.",
	}, []string{"table", "code"})
	m.writeLatency = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "setats_write_latency_seconds",
		Help:    "Time from a record batch's arrival to its acknowledgement (after its durable commit), in seconds.",
		Buckets: prometheus.ExponentialBuckets(0.0005, 2, 16),
	}, []string{"table"})
	m.openStreams = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "setats_changelog_streams_open",
		Help: "DoGet changelog streams currently open.",
	})
	m.watchStreams = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "setats_watch_streams_open",
		Help: "watch action streams currently open.",
	})
	m.watchOverflows = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "setats_watch_overflows_total",
		Help: "watch streams whose buffer of unsent notifications went over its bound (the stream is then cut off with ResourceExhausted).",
	})
	m.openTables = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "setats_tables_open",
		Help: "Tables whose store is open.",
	})
	m.endOffset = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "setats_bucket_end_offset",
		Help: "Offset the next changelog row of the bucket will get, per open table.",
	}, []string{"table", "partition", "bucket"})
	m.startOffset = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "setats_bucket_start_offset",
		Help: "Oldest changelog offset the bucket still retains, per open table.",
	}, []string{"table", "partition", "bucket"})
	m.retentionRows = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "setats_retention_removed_rows_total",
		Help: "Changelog rows removed by retention, per table.",
	}, []string{"table"})
	m.natsPublished = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "setats_nats_published_total",
		Help: "Notifications published on NATS.",
	})
	m.natsPubErrors = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "setats_nats_publish_errors_total",
		Help: "Notifications that could not be published on NATS (logged and dropped; SPEC section 1).",
	})
	m.natsReconnects = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "setats_nats_reconnects_total",
		Help: "Reconnections of the gateway's NATS connection.",
	})
	m.failedTables = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "setats_tables_failed",
		Help: "Tables whose store failed (storage failure or failed open); /readyz is 503 while it is above 0.",
	})
	m.pendingWrites = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "setats_write_batches_pending",
		Help: "Record batches applied to a store and waiting for their WAL fsync.",
	})
	for _, c := range []prometheus.Collector{m.failedTables, m.pendingWrites, m.rowsWritten, m.rowsRead, m.changelogRows, m.writeBatches,
		m.writeErrors, m.writeLatency, m.openStreams, m.watchStreams, m.watchOverflows, m.openTables, m.endOffset,
		m.startOffset, m.retentionRows, m.natsPublished, m.natsPubErrors, m.natsReconnects} {
		f(c)
	}
	m.slots = newSlotMetrics(m.reg)
	m.delivery = newDeliveryMetrics(f)
	f(collectors.NewGoCollector())
	f(collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// registerNATSConnected adds setats_nats_connected: 1 while connected() holds, else 0.
func (m *metrics) registerNATSConnected(connected func() bool) {
	m.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "setats_nats_connected",
		Help: "1 while the gateway's NATS connection is up, else 0 (a NATS outage only delays notifications).",
	}, func() float64 {
		if connected() {
			return 1
		}
		return 0
	}))
}

// tableLabel is the value of the "table" label.
func tableLabel(db, table string) string { return db + "." + table }

// rowKindLabels are the values of the "row_kind" label, indexed by RowKind value.
var rowKindLabels = [4]string{"+I", "-U", "+U", "-D"}

// observeWrite records one durable record batch: rows written and changelog rows written per
// RowKind (indexed by RowKind value).
func (m *metrics) observeWrite(table string, rows int64, changelogKinds [4]int64) {
	m.rowsWritten.WithLabelValues(table).Add(float64(rows))
	for k, n := range changelogKinds {
		if n > 0 {
			m.changelogRows.WithLabelValues(table, rowKindLabels[k]).Add(float64(n))
		}
	}
	m.writeBatches.WithLabelValues(table).Inc()
}

func (m *metrics) setBucketOffsets(table, partition string, bucket int32, start, end int64) {
	b := strconv.Itoa(int(bucket))
	m.startOffset.WithLabelValues(table, partition, b).Set(float64(start))
	m.endOffset.WithLabelValues(table, partition, b).Set(float64(end))
}

// forgetBucket removes the offset series of one bucket (its partition was dropped).
func (m *metrics) forgetBucket(table, partition string, bucket int32) {
	b := strconv.Itoa(int(bucket))
	m.startOffset.DeleteLabelValues(table, partition, b)
	m.endOffset.DeleteLabelValues(table, partition, b)
}

// forgetTable removes the per-bucket series of a closed or dropped table.
func (m *metrics) forgetTable(table string) {
	m.delivery.forgetTable(table)
	m.startOffset.DeletePartialMatch(prometheus.Labels{"table": table})
	m.endOffset.DeletePartialMatch(prometheus.Labels{"table": table})
	m.slots.forget(table)
}

// readCounters returns the setats_rows_read_total counters of a table, indexed by RowKind value.
func (m *metrics) readCounters(table string) [4]prometheus.Counter {
	var out [4]prometheus.Counter
	for k, name := range rowKindLabels {
		out[k] = m.rowsRead.WithLabelValues(table, name)
	}
	return out
}
