package merge

// deduplicate is the DEDUPLICATE merge engine (SPEC section 4): the written row replaces the
// stored one column by column for every declared column, nulls included; undeclared columns keep
// the stored value (null for a new key). A -D removes the row unless ignore-delete is set.
type deduplicate struct {
	ignoreDelete bool
}

// Merge implements Engine.
func (e *deduplicate) Merge(dst []Change, old Row, kind RowKind, in Row, declared []bool) (Row, []Change, error) {
	if err := checkShapes(old, kind, in, declared); err != nil {
		return old, dst, err
	}
	switch kind {
	case UpdateBefore:
		return old, dst, nil
	case Delete:
		if e.ignoreDelete {
			return old, dst, nil
		}
		next, out := remove(dst, old)
		return next, out, nil
	}
	next, out := upsert(dst, old, in, declared, false)
	return next, out, nil
}
