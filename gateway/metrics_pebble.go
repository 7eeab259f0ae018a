package gateway

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/setats/setats/gateway/store"
)

// pebbleCollector exports store.Table.PebbleMetrics of every table whose store is open, at each
// scrape, with the labels table and db ("table" or "staging", store.DBMetrics.DB). Counters
// count since the store was opened (an LRU close and reopen starts them again). What they are
// for: telling the flush and compaction work of a table's DB from its staging DB's, and a
// benchmark's settle step (no flush or compaction in progress).
type pebbleCollector struct {
	tables func() []labeledStore

	flushes, flushing, compactions, compacting, debt, wal, flushed, compacted, l0, blobFiles, blobBytes, blobValue, blobRef *prometheus.Desc
}

func newPebbleCollector(tables func() []labeledStore) *pebbleCollector {
	d := func(name, help string) *prometheus.Desc {
		return prometheus.NewDesc(name, help, []string{"table", "db"}, nil)
	}
	return &pebbleCollector{
		tables:      tables,
		flushes:     d("setats_pebble_flushes_total", "Memtable flushes completed by the Pebble DB (db: table or staging) since the store opened."),
		flushing:    d("setats_pebble_flushes_in_progress", "Memtable flushes running in the Pebble DB."),
		compactions: d("setats_pebble_compactions_total", "Compactions completed by the Pebble DB since the store opened."),
		compacting:  d("setats_pebble_compactions_in_progress", "Compactions running in the Pebble DB."),
		debt:        d("setats_pebble_compaction_debt_bytes", "Pebble's estimate of the bytes compactions still have to rewrite."),
		wal:         d("setats_pebble_wal_bytes_written_total", "Bytes written to the Pebble DB's write-ahead log since the store opened."),
		flushed:     d("setats_pebble_flushed_bytes_total", "Sstable bytes written by flushes since the store opened."),
		compacted:   d("setats_pebble_compacted_bytes_total", "Sstable bytes written by compactions since the store opened."),
		l0:          d("setats_pebble_l0_files", "Sstables in level 0 of the Pebble DB."),
		blobFiles:   d("setats_pebble_blob_files", "Live blob files of the Pebble DB (values of 1 KiB or more kept out of the sstables: changelog chunks, large state rows)."),
		blobBytes:   d("setats_pebble_blob_bytes", "Size on disk of the Pebble DB's live blob files (compressed), bytes."),
		blobValue:   d("setats_pebble_blob_value_bytes", "Uncompressed bytes of all values in the Pebble DB's live blob files."),
		blobRef:     d("setats_pebble_blob_referenced_value_bytes", "Uncompressed bytes of the values in live blob files that keys still reference; setats_pebble_blob_value_bytes minus this is space not reclaimed yet."),
	}
}

func (c *pebbleCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.flushes, c.flushing, c.compactions, c.compacting, c.debt, c.wal, c.flushed, c.compacted, c.l0, c.blobFiles, c.blobBytes, c.blobValue, c.blobRef} {
		ch <- d
	}
}

func (c *pebbleCollector) Collect(ch chan<- prometheus.Metric) {
	for _, ls := range c.tables() {
		ms, err := ls.st.PebbleMetrics()
		if err != nil {
			continue // closed meanwhile
		}
		label := ls.label
		for _, m := range ms {
			cnt := func(d *prometheus.Desc, v float64) {
				ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, v, label, m.DB)
			}
			gauge := func(d *prometheus.Desc, v float64) {
				ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, label, m.DB)
			}
			cnt(c.flushes, float64(m.Flushes))
			gauge(c.flushing, float64(m.FlushesInProgress))
			cnt(c.compactions, float64(m.Compactions))
			gauge(c.compacting, float64(m.CompactionsInProgress))
			gauge(c.debt, float64(m.CompactionDebtBytes))
			cnt(c.wal, float64(m.WALBytesWritten))
			cnt(c.flushed, float64(m.FlushedBytes))
			cnt(c.compacted, float64(m.CompactedBytes))
			gauge(c.l0, float64(m.L0Files))
			gauge(c.blobFiles, float64(m.BlobFiles))
			gauge(c.blobBytes, float64(m.BlobBytes))
			gauge(c.blobValue, float64(m.BlobValueBytes))
			gauge(c.blobRef, float64(m.BlobReferencedBytes))
		}
	}
}

// labeledStore is an open store with its metrics label.
type labeledStore struct {
	label string
	st    *store.Table
}

// openStores returns the stores of the tables whose store is open now.
func (r *tableRegistry) openStores() []labeledStore {
	var out []labeledStore
	for _, ot := range r.openHandles() {
		if st := ot.cur.Load(); st != nil {
			out = append(out, labeledStore{ot.label, st})
		}
	}
	return out
}
