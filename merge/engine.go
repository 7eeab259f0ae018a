package merge

import (
	"strings"
)

// Canonical merge engine names (SPEC sections 2 and 4), as stored in TableSpec.merge_engine.
const (
	// Deduplicate keeps the last written row of a key: written columns, nulls included, replace
	// the stored ones. The default engine.
	Deduplicate = "DEDUPLICATE"
	// PartialUpdate keeps, per column, the last non-null written value of a key.
	PartialUpdate = "PARTIAL_UPDATE"
)

// Table option keys read by New (SPEC section 4). Values are "true" or "false", case-insensitive;
// absent means false.
const (
	// OptionIgnoreDelete drops every written -D row (both engines).
	OptionIgnoreDelete = "ignore-delete"
	// OptionRemoveRecordOnDelete makes a -D on a PARTIAL_UPDATE table remove the stored row. It has
	// no effect on DEDUPLICATE, which always removes.
	OptionRemoveRecordOnDelete = "partial-update.remove-record-on-delete"
)

// Row is one row of a table: one value per table column, in table column order. A nil value is
// SQL NULL. Value types follow proto/README.md (see the package doc). A nil Row means "no row".
//
// Rows handed out by this package are never modified by it afterwards; callers treat them as
// immutable too, since a Row may be shared between the stored state and changelog rows.
type Row []any

// Change is one changelog row: its RowKind and the full row (every table column).
type Change struct {
	Kind RowKind
	Row  Row
}

// Engine is a merge engine (SPEC section 4). Implementations are stateless after New and safe for
// concurrent use.
type Engine interface {
	// Merge folds one written row into the stored row of its key.
	//
	// old is the stored row of the key, nil when the key is absent. kind is the written row's
	// RowKind. in is the written row in table column order, len(in) == number of table columns;
	// declared[i] == false means the writer did not declare column i, and in[i] is then ignored.
	// A nil declared means every column is declared; otherwise len(declared) == len(in). When old
	// is not nil, len(old) == len(in).
	//
	// Merge returns next, the stored row afterwards (nil = the key is absent), and out, dst with
	// the changelog rows to emit appended: none, +I(next), -U(old) +U(next), or -D(old).
	// When the merge result equals old (RowEqual) nothing is emitted and next is old itself.
	// UpdateBefore input is ignored (next = old, nothing emitted).
	//
	// Ownership: Merge never modifies old or in. A new next is freshly allocated (the Row slice)
	// and shares no mutable memory with in: []byte values taken from in are copied, so the caller
	// may reuse in and its byte slices after the call. string values are shared, not copied (Go
	// strings are immutable): a caller must not pass strings that alias memory it reuses, such as
	// arrow-go's String.Value over a record it releases (row.Decode copies them out). next may
	// share values with old. The Row of a +I/+U change is next itself; the Row of a -U/-D change
	// is old itself.
	//
	// Errors are ErrInvalid errors: rows of mismatched length, a kind outside
	// 0..3, and a delete on a PARTIAL_UPDATE table that has neither ignore-delete nor
	// partial-update.remove-record-on-delete set (the message names both options). On error,
	// next is old and out is dst.
	Merge(dst []Change, old Row, kind RowKind, in Row, declared []bool) (next Row, out []Change, err error)
}

// CanonicalEngine returns the canonical name of a merge engine, "DEDUPLICATE" or
// "PARTIAL_UPDATE". The match ignores case and surrounding blanks and treats '-' as '_'
// ("partial-update" is accepted); "" means DEDUPLICATE. Anything else is an ErrInvalid
// error naming the option `merge-engine` (SPEC section 2).
func CanonicalEngine(engine string) (string, error) {
	e := strings.ToUpper(strings.ReplaceAll(strings.TrimSpace(engine), "-", "_"))
	switch e {
	case "", Deduplicate:
		return Deduplicate, nil
	case PartialUpdate:
		return PartialUpdate, nil
	}
	return "", errorf(ErrInvalid,
		"invalid merge-engine %q: want DEDUPLICATE or PARTIAL_UPDATE", engine)
}

// ParseBoolOption parses the value of the boolean table option key: "true" or "false",
// case-insensitive, surrounding blanks ignored. Anything else is an ErrInvalid
// error naming the option and the value.
func ParseBoolOption(key, value string) (bool, error) {
	v := strings.TrimSpace(value)
	switch {
	case strings.EqualFold(v, "true"):
		return true, nil
	case strings.EqualFold(v, "false"):
		return false, nil
	}
	return false, errorf(ErrInvalid,
		"invalid value %q for option %s: want true or false", value, key)
}

// New returns the merge engine named engine (see CanonicalEngine) configured by the table
// options. New reads OptionIgnoreDelete and OptionRemoveRecordOnDelete and ignores every other
// key (the catalog validates the full option set). Errors are ErrInvalid errors
// naming `merge-engine` or the option with the bad value.
func New(engine string, options map[string]string) (Engine, error) {
	name, err := CanonicalEngine(engine)
	if err != nil {
		return nil, err
	}
	var ignoreDelete, removeOnDelete bool
	if v, ok := options[OptionIgnoreDelete]; ok {
		if ignoreDelete, err = ParseBoolOption(OptionIgnoreDelete, v); err != nil {
			return nil, err
		}
	}
	if v, ok := options[OptionRemoveRecordOnDelete]; ok {
		if removeOnDelete, err = ParseBoolOption(OptionRemoveRecordOnDelete, v); err != nil {
			return nil, err
		}
	}
	switch name {
	case PartialUpdate:
		return &partialUpdate{ignoreDelete: ignoreDelete, removeOnDelete: removeOnDelete}, nil
	default:
		return &deduplicate{ignoreDelete: ignoreDelete}, nil
	}
}

// checkShapes validates the row lengths of a Merge call and its kind.
func checkShapes(old Row, kind RowKind, in Row, declared []bool) error {
	if !kind.Valid() {
		return errorf(ErrInvalid, "invalid row kind %d: want 0..3", uint8(kind))
	}
	if declared != nil && len(declared) != len(in) {
		return errorf(ErrInvalid,
			"merge: %d declared flags for a row of %d columns", len(declared), len(in))
	}
	if old != nil && len(old) != len(in) {
		return errorf(ErrInvalid,
			"merge: written row has %d columns, stored row %d", len(in), len(old))
	}
	return nil
}
