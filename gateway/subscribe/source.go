package subscribe

import (
	"context"
	"log/slog"
)

// Source captures one source database's changes into a channel. An implementation lives in a
// sub-package per source (pg, mysql); Options.Sources maps URL schemes to their factories.
type Source interface {
	// Check connects and verifies that the tables can be captured with before images (e.g.
	// REPLICA IDENTITY FULL, binlog_format=ROW and binlog_row_image=FULL); the error
	// (FailedPrecondition) says what to set.
	Check(ctx context.Context) error
	// Prepare creates what capture needs on the source (PostgreSQL slot and publication) and
	// returns the position capture starts from: start when it is a source position, else the
	// source's current position.
	Prepare(ctx context.Context, start string) (Prepared, error)
	// Run streams the changes after position pos into sink, one Commit per source transaction,
	// until ctx is done (nil) or the source fails (the error). The source's own position (slot)
	// is acknowledged only for transactions whose Commit returned.
	Run(ctx context.Context, pos string, sink Sink) error
	// Drop removes what Prepare created (spec.CreatedSlot, spec.CreatedPublication).
	Drop(ctx context.Context) error
}

// Prepared is what Source.Prepare created and where capture starts.
type Prepared struct {
	Position           string
	Slot, Publication  string
	CreatedSlot        bool
	CreatedPublication bool
}

// Sink receives captured transactions.
type Sink interface {
	// Commit appends recs (BEGIN ... COMMIT of one transaction, or DDL) durably with pos, the
	// position to resume after them, and returns once they are durable.
	Commit(recs []Record, pos string) error
	// Connected reports that the source is connected and streaming.
	Connected()
}

// SourceConfig configures a Source.
type SourceConfig struct {
	Spec Spec
	Log  *slog.Logger
}

// SourceFactory builds a Source for a channel; it must not connect yet.
type SourceFactory func(cfg SourceConfig) (Source, error)
