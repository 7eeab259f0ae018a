package row

import (
	"errors"
	"fmt"

	"github.com/setats/setats/catalog"
)

// Error is an error of package row: errors.Is(err, e.Kind) holds for its kind (one of the Err*
// values of errors.go), Error() is the whole message, naming the culprit, and errors.Is and
// errors.As also reach the cause the message was built from, when there is one. The gateway maps
// kinds to gRPC codes in one place (gateway/errors.go).
type Error struct {
	Kind error
	Err  error
}

func (e *Error) Error() string { return e.Err.Error() }

// Unwrap returns the kind and the cause, for errors.Is and errors.As.
func (e *Error) Unwrap() []error { return []error{e.Kind, e.Err} }

// ErrorKind returns e.Kind. An error that wraps several typed errors has the kind of the
// outermost one (errors.As with an interface{ ErrorKind() error } finds it).
func (e *Error) ErrorKind() error { return e.Kind }

// errorf returns an *Error of kind whose message is fmt.Errorf(format, args...) (%w wraps a cause).
func errorf(kind error, format string, args ...any) error {
	return &Error{Kind: kind, Err: fmt.Errorf(format, args...)}
}

// newError returns an *Error of kind with the message msg.
func newError(kind error, msg string) error { return &Error{Kind: kind, Err: errors.New(msg)} }

// Kinds of row errors (errors.Is(err, row.ErrInvalid)).
var (
	// ErrInvalid: a DoPut record batch or a Batch that breaks the table's schema (gRPC
	// InvalidArgument).
	ErrInvalid = errors.New("invalid argument")
	// ErrInternal: a changelog row that does not fit the table (a gateway bug; Internal).
	ErrInternal = errors.New("internal error")
)

// invalidf returns an ErrInvalid error whose message starts with the table's qualified name
// (db.table).
func invalidf(tbl *catalog.Table, format string, args ...any) error {
	return errorf(ErrInvalid, "table %s: %s", tbl.QualifiedName(), fmt.Sprintf(format, args...))
}
