package store

import "github.com/cockroachdb/pebble/v2"

// DBMetrics is a summary of one Pebble DB of a table, from pebble.DB.Metrics, for the gateway's
// /metrics (gateway/README.md, "Metrics") and for benchmarks that must know whether a DB still
// flushes or compacts. Counters count since the store was opened.
type DBMetrics struct {
	// DB names the Pebble DB: "table" (state, changelog, committed checkpoints) or "staging"
	// (exactly-once staged rows, staging_db.go).
	DB string
	// Flushes and Compactions completed; FlushesInProgress, CompactionsInProgress running now.
	Flushes, FlushesInProgress         int64
	Compactions, CompactionsInProgress int64
	// CompactionDebtBytes is Pebble's estimate of the bytes compactions still have to rewrite
	// to bring the LSM back into shape.
	CompactionDebtBytes uint64
	// WALBytesWritten is the bytes written to the write-ahead log (physical, with its record
	// framing).
	WALBytesWritten uint64
	// FlushedBytes and CompactedBytes are the sstable bytes written by flushes and by
	// compactions, summed over the levels.
	FlushedBytes, CompactedBytes uint64
	// L0Files is the number of sstables in level 0 now.
	L0Files int64
	// BlobFiles and BlobBytes are the live blob files (values of blobMinValueBytes or more:
	// changelog chunks, and state rows that large; PebbleOptions) and their size on disk
	// (compressed, bytes). BlobValueBytes is the uncompressed size of all values in them and
	// BlobReferencedBytes of those that keys still reference: BlobValueBytes minus
	// BlobReferencedBytes is space retention freed that blob file rewrites have not reclaimed
	// yet (Pebble's BlobFiles.ValueSize and ReferencedValueSize).
	BlobFiles, BlobBytes, BlobValueBytes, BlobReferencedBytes uint64
}

// PebbleMetrics returns the metrics of the table's DB and, once opened (the first abort-staged),
// of its staging DB, in that order. Errors: ErrClosed once the table is closed.
func (t *Table) PebbleMetrics() ([]DBMetrics, error) {
	if err := t.begin(); err != nil {
		return nil, err
	}
	defer t.end()
	out := []DBMetrics{dbMetrics("table", t.db.Metrics())}
	if sdb := t.sdb.Load(); sdb != nil {
		out = append(out, dbMetrics("staging", sdb.Metrics()))
	}
	return out, nil
}

func dbMetrics(name string, m *pebble.Metrics) DBMetrics {
	d := DBMetrics{
		DB:                    name,
		Flushes:               m.Flush.Count,
		FlushesInProgress:     m.Flush.NumInProgress,
		Compactions:           m.Compact.Count,
		CompactionsInProgress: m.Compact.NumInProgress,
		CompactionDebtBytes:   m.Compact.EstimatedDebt,
		WALBytesWritten:       m.WAL.BytesWritten,
		L0Files:               m.Levels[0].TablesCount,
		BlobFiles:             m.BlobFiles.LiveCount,
		BlobBytes:             m.BlobFiles.LiveSize,
		BlobValueBytes:        m.BlobFiles.ValueSize,
		BlobReferencedBytes:   m.BlobFiles.ReferencedValueSize,
	}
	for _, l := range m.Levels {
		d.FlushedBytes += l.TableBytesFlushed + l.BlobBytesFlushed
		d.CompactedBytes += l.TableBytesCompacted + l.BlobBytesCompacted
	}
	return d
}
