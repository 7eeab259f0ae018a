package gateway

import (
	"flag"
	"fmt"
)

// Defaults of Limits (SPEC section 14: open tables, in-flight bytes and key indexes are bounded).
const (
	// DefaultMaxOpenTables bounds the table stores open at once. An open store holds about 8
	// file descriptors and a few goroutines (Pebble's WAL, manifest, directory lock and
	// background work); 512 stores stay well under the 65536 descriptors a gateway usually gets.
	DefaultMaxOpenTables = 512
	// DefaultMaxInflightPutBytes bounds the Arrow bytes of DoPut record batches received and not
	// yet acknowledged, over all streams: 256 MiB.
	DefaultMaxInflightPutBytes = int64(256 << 20)
	// DefaultKeyIndexBytes bounds the memory of the key indexes of all open tables: 256 MiB
	// (about 16 bytes per key: some 16 million keys).
	DefaultKeyIndexBytes = int64(256 << 20)
)

// Limits bound the gateway's resources whatever its clients do (SPEC section 14; issue 7 item 4).
type Limits struct {
	// MaxOpenTables is the largest number of table stores open at once: an LRU closes the store
	// of the table used least recently when another must open, skipping stores in use (a
	// following DoGet, an open snapshot view, a write waiting for its fsync); when every open
	// store is in use the open fails with ResourceExhausted. A closed store opens again on the
	// next call that needs it. Default 512.
	MaxOpenTables int
	// MaxInflightPutBytes bounds the Arrow bytes of DoPut record batches received and not yet
	// acknowledged, over all streams. Over it a stream's next batch waits (back pressure: the
	// gateway stops reading that stream, gRPC flow control stops its client) until earlier
	// batches are acknowledged; a batch larger than the whole budget goes alone. Default 256 MiB.
	MaxInflightPutBytes int64
	// KeyIndexBytes bounds the memory of the in-memory key indexes (store.Options.KeyIndexMaxKeys)
	// of all open tables together; a table whose index would exceed the budget drops its index and
	// looks every written key up in Pebble instead (slower writes of new keys, same results).
	// Default 256 MiB; < 0 turns key indexes off.
	KeyIndexBytes int64
}

func (o *Limits) setDefaults() {
	if o.MaxOpenTables == 0 {
		o.MaxOpenTables = DefaultMaxOpenTables
	}
	if o.MaxInflightPutBytes == 0 {
		o.MaxInflightPutBytes = DefaultMaxInflightPutBytes
	}
	if o.KeyIndexBytes == 0 {
		o.KeyIndexBytes = DefaultKeyIndexBytes
	}
}

func (o *Limits) registerFlags(fs *flag.FlagSet) {
	fs.IntVar(&o.MaxOpenTables, "max-open-tables", DefaultMaxOpenTables, "largest number of table stores open at once (the least recently used idle one closes first)")
	fs.Int64Var(&o.MaxInflightPutBytes, "max-inflight-put-bytes", DefaultMaxInflightPutBytes, "bytes of DoPut record batches received and not yet acknowledged, over all streams; over it streams wait")
	fs.Int64Var(&o.KeyIndexBytes, "key-index-bytes", DefaultKeyIndexBytes, "memory of the key indexes of all open tables, in bytes (< 0: no key index)")
}

func (o *Limits) validate() error {
	if o.MaxOpenTables < 1 {
		return fmt.Errorf("--max-open-tables must be >= 1, got %d", o.MaxOpenTables)
	}
	if o.MaxInflightPutBytes < 1 {
		return fmt.Errorf("--max-inflight-put-bytes must be >= 1, got %d", o.MaxInflightPutBytes)
	}
	return nil
}
