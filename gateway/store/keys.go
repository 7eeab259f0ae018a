package store

import (
	"bytes"
	"encoding/binary"
	"errors"

	"github.com/setats/setats/gateway/rowcodec"
)

// Keyspace tags (first byte of every key). On-disk format: never change them.
const (
	tagVersion   = 'v'
	tagMeta      = 'm'
	tagState     = 's'
	tagChangelog = 'c'
	// tagWriter keys hold sequenced writers' last sequences and acks (writerseq.go).
	tagWriter = 'q'
	// tagStaging keys hold exactly-once staged rows and commit records (staging.go).
	tagStaging = 'x'
)

// formatVersion is the value of the "v" key.
const formatVersion = "setats-store-1"

// bucketPrefix returns P B (see doc.go) of id.
func bucketPrefix(id BucketID) []byte {
	b := rowcodec.AppendEscaped(make([]byte, 0, len(id.Partition)+6), id.Partition)
	return binary.BigEndian.AppendUint32(b, uint32(id.Bucket))
}

// parseBucketPrefix reads P B from the start of k and returns the bucket and the rest of k.
func parseBucketPrefix(k []byte) (BucketID, []byte, error) {
	var part []byte
	for {
		i := bytes.IndexByte(k, 0)
		if i < 0 || i+1 >= len(k) {
			return BucketID{}, nil, errors.New("store: malformed key")
		}
		part = append(part, k[:i]...)
		esc := k[i+1]
		k = k[i+2:]
		if esc == 0x01 {
			break
		}
		if esc != 0xFF {
			return BucketID{}, nil, errors.New("store: malformed key")
		}
		part = append(part, 0)
	}
	if len(k) < 4 {
		return BucketID{}, nil, errors.New("store: malformed key")
	}
	return BucketID{Partition: string(part), Bucket: int32(binary.BigEndian.Uint32(k))}, k[4:], nil
}

func metaKey(prefix []byte) []byte {
	return append(append(make([]byte, 0, 1+len(prefix)), tagMeta), prefix...)
}

// appendStateKey appends "s" P B to dst; the caller appends the encoded primary key.
func appendStateKey(dst, prefix []byte) []byte {
	return append(append(dst, tagState), prefix...)
}

func appendChangelogKey(dst, prefix []byte, offset int64) []byte {
	dst = append(append(dst, tagChangelog), prefix...)
	return binary.BigEndian.AppendUint64(dst, uint64(offset))
}

// changelogKeyOffset returns the offset at the end of a changelog key.
func changelogKeyOffset(k []byte) int64 {
	return int64(binary.BigEndian.Uint64(k[len(k)-8:]))
}

// meta is the persisted metadata of a bucket.
type meta struct {
	start, end, lastCommitMs int64
}

func (m meta) encode() []byte {
	b := binary.AppendUvarint(nil, uint64(m.start))
	b = binary.AppendUvarint(b, uint64(m.end))
	return binary.AppendVarint(b, m.lastCommitMs)
}

func decodeMeta(b []byte) (meta, error) {
	var m meta
	s, n := binary.Uvarint(b)
	if n <= 0 {
		return m, errors.New("store: malformed bucket metadata")
	}
	b = b[n:]
	e, n := binary.Uvarint(b)
	if n <= 0 {
		return m, errors.New("store: malformed bucket metadata")
	}
	b = b[n:]
	c, n := binary.Varint(b)
	if n <= 0 || s > e {
		return m, errors.New("store: malformed bucket metadata")
	}
	return meta{start: int64(s), end: int64(e), lastCommitMs: c}, nil
}

// prefixEnd returns the smallest key greater than every key starting with p.
func prefixEnd(p []byte) []byte {
	end := bytes.Clone(p)
	for i := len(end) - 1; i >= 0; i-- {
		end[i]++
		if end[i] != 0 {
			return end[:i+1]
		}
	}
	return nil
}
