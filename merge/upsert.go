package merge

import "bytes"

// upsert folds an insert/update-after row into old. keepStoredOnNull selects PARTIAL_UPDATE
// semantics (a written null keeps the stored value) over DEDUPLICATE (a written null overwrites).
// Undeclared columns keep the stored value, or are null for a new key.
func upsert(dst []Change, old Row, in Row, declared []bool, keepStoredOnNull bool) (Row, []Change) {
	takes := func(i int) bool {
		if declared != nil && !declared[i] {
			return false
		}
		return !(keepStoredOnNull && in[i] == nil)
	}
	if old != nil {
		changed := false
		for i := range in {
			if takes(i) && !ValueEqual(in[i], old[i]) {
				changed = true
				break
			}
		}
		if !changed {
			return old, dst
		}
	}
	next := make(Row, len(in))
	for i := range in {
		switch {
		case !takes(i):
			if old != nil {
				next[i] = old[i]
			}
		case old != nil && ValueEqual(in[i], old[i]):
			next[i] = old[i] // same value: share the stored one, no copy
		default:
			next[i] = cloneBytes(in[i])
		}
	}
	if old == nil {
		return next, append(dst, Change{Kind: Insert, Row: next})
	}
	return next, append(dst, Change{Kind: UpdateBefore, Row: old}, Change{Kind: UpdateAfter, Row: next})
}

// remove deletes the stored row: -D(old) when present, nothing when absent.
func remove(dst []Change, old Row) (Row, []Change) {
	if old == nil {
		return nil, dst
	}
	return nil, append(dst, Change{Kind: Delete, Row: old})
}

// cloneBytes copies a []byte value, the one value type whose memory a caller may reuse. Every
// other value, strings included, is returned as it is (no copy, no new interface box): Go strings
// are immutable, and the store's rows own theirs (row.Decode copies each string column out of the
// Arrow record once, rowcodec.DecodeValue copies out of Pebble). Copying every written string
// again here was ~9% of the gateway's ingest CPU (docs/PERF-NOTES.md, Gateway).
func cloneBytes(v any) any {
	if x, ok := v.([]byte); ok && x != nil {
		return bytes.Clone(x)
	}
	return v
}
