package merge

import (
	"bytes"
	"strings"
)

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
			next[i] = cloneValue(in[i])
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

// cloneValue copies the values that may point into caller memory ([]byte, and strings, which
// Arrow readers may hand out without copying).
func cloneValue(v any) any {
	switch x := v.(type) {
	case []byte:
		if x == nil {
			return x
		}
		return bytes.Clone(x)
	case string:
		return strings.Clone(x)
	}
	return v
}
