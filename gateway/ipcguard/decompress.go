package ipcguard

import (
	"bytes"
	"fmt"
	"io"

	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
)

// Compression codecs of BodyCompression (Message.fbs; wire values, fixed).
const (
	codecLZ4Frame = 0
	codecZSTD     = 1
)

// checkDecompress decompresses src (one compressed buffer without its 8-byte size prefix) with
// codec and checks that it yields exactly want bytes, reading at most want+1 (zstd decoding within limit bytes of memory). With keep it returns
// the bytes (want of them, allocated once), else it discards them. arrow-go's reader allocates
// the claimed size and panics when the data decompresses to less (leaking the buffer it
// allocated), so the guard decompresses first.
func checkDecompress(codec uint8, src []byte, want uint64, keep bool, limit int64) ([]byte, error) {
	var r io.Reader
	switch codec {
	case codecLZ4Frame:
		r = lz4.NewReader(bytes.NewReader(src))
	case codecZSTD:
		d, err := zstd.NewReader(bytes.NewReader(src), zstd.WithDecoderConcurrency(1),
			zstd.WithDecoderMaxMemory(uint64(limit)))
		if err != nil {
			return nil, fmt.Errorf("zstd: %v", err)
		}
		defer d.Close()
		r = d
	default:
		return nil, fmt.Errorf("unknown codec %d", codec)
	}
	var out bytes.Buffer
	var w io.Writer = io.Discard
	if keep {
		out.Grow(int(want))
		w = &out
	}
	n, err := io.Copy(w, io.LimitReader(r, int64(want)+1))
	if err != nil {
		return nil, fmt.Errorf("does not decompress: %v", err)
	}
	if uint64(n) != want {
		return nil, fmt.Errorf("decompresses to %d bytes or more, not the %d it claims", n, want)
	}
	return out.Bytes(), nil
}
