package gateway

// maxRowBytes is the largest row a table stores (store.Options.MaxRowBytes, bytes as row.RowBytes
// counts them): a quarter of --max-message-bytes (16 MiB by default), so that every stored row
// fits, alone and with its Arrow IPC framing, in one DoGet, snapshot or channel record batch
// below the gateway's own send limit (SPEC section 14; issue 7 item 5).
func (s *Server) maxRowBytes() int { return s.opts.MaxMessageBytes / 4 }
