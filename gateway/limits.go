package gateway

import "github.com/setats/setats/gateway/store"

// maxRowBytes is the largest row a table stores (store.Options.MaxRowBytes, bytes as row.RowBytes
// counts them): a quarter of --max-message-bytes (16 MiB by default), so that every stored row
// fits, alone and with its Arrow IPC framing, in one DoGet, snapshot or channel record batch
// below the gateway's own send limit (SPEC section 14; issue 7 item 5).
func (s *Server) maxRowBytes() int { return s.opts.MaxMessageBytes / 4 }

// serverLimits are the gateway-wide budgets of Limits (options_limits.go).
type serverLimits struct {
	// put bounds the bytes of DoPut batches received and not yet acknowledged.
	put *putBudget
	// keys bounds the memory of the key indexes of all open tables (nil: no key index).
	keys *store.MemBudget
}

// initLimits builds the budgets from the options.
func (s *Server) initLimits() {
	s.limits.put = newPutBudget(s.opts.MaxInflightPutBytes)
	if s.opts.KeyIndexBytes > 0 {
		s.limits.keys = store.NewMemBudget(s.opts.KeyIndexBytes)
	}
}

// keyIndexMaxKeys is store.Options.KeyIndexMaxKeys: -1 (no key index) with --key-index-bytes < 0,
// else the store's default (the budget bounds the memory of all indexes together).
func (s *Server) keyIndexMaxKeys() int {
	if s.opts.KeyIndexBytes < 0 {
		return -1
	}
	return 0
}
