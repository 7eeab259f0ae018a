package merge

import ()

// partialUpdate is the PARTIAL_UPDATE merge engine (SPEC section 4): for each declared column the
// written value when not null, else the stored value; undeclared columns keep the stored value
// (null for a new key).
//
// A -D is dropped with ignore-delete, removes the row with partial-update.remove-record-on-delete
// (ignore-delete wins when both are set), and is an error otherwise, whether or not the key is
// stored, so that the outcome does not depend on the state.
type partialUpdate struct {
	ignoreDelete   bool
	removeOnDelete bool
}

// Merge implements Engine.
func (e *partialUpdate) Merge(dst []Change, old Row, kind RowKind, in Row, declared []bool) (Row, []Change, error) {
	if err := checkShapes(old, kind, in, declared); err != nil {
		return old, dst, err
	}
	switch kind {
	case UpdateBefore:
		return old, dst, nil
	case Delete:
		switch {
		case e.ignoreDelete:
			return old, dst, nil
		case e.removeOnDelete:
			next, out := remove(dst, old)
			return next, out, nil
		}
		return old, dst, errorf(ErrInvalid,
			"merge engine PARTIAL_UPDATE cannot apply a delete (-D): set table option %s = true to drop deletes, or %s = true to remove the row",
			OptionIgnoreDelete, OptionRemoveRecordOnDelete)
	}
	next, out := upsert(dst, old, in, declared, true)
	return next, out, nil
}
