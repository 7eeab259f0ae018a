package catalog

import (
	"errors"
	"fmt"
)

// Error is an error of package catalog: errors.Is(err, e.Kind) holds for its kind (one of the Err*
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

// Errorf returns an *Error of kind whose message is fmt.Errorf(format, args...), for the catalog
// implementations in sub-packages (catalog/hive).
func Errorf(kind error, format string, args ...any) error { return errorf(kind, format, args...) }

// newError returns an *Error of kind with the message msg.
func newError(kind error, msg string) error { return &Error{Kind: kind, Err: errors.New(msg)} }

// Kinds of catalog errors (errors.Is(err, catalog.ErrNotFound)).
var (
	// ErrInvalid: a malformed request: table spec, type, option, name, warehouse URI, catalog
	// type or Arrow schema (gRPC InvalidArgument).
	ErrInvalid = errors.New("invalid argument")
	// ErrNotFound: the database or table does not exist (NotFound).
	ErrNotFound = errors.New("not found")
	// ErrAlreadyExists: the database or table exists already (AlreadyExists).
	ErrAlreadyExists = errors.New("already exists")
	// ErrFailedPrecondition: the request is valid but the catalog's state refuses it: a database
	// that is not empty, a table that is (not) dropped, overlapping locations, an unsupported
	// catalog type (FailedPrecondition).
	ErrFailedPrecondition = errors.New("failed precondition")
	// ErrUnavailable: the metadata store cannot be reached: every Hive Metastore URI failed
	// (Unavailable).
	ErrUnavailable = errors.New("unavailable")
	// ErrInternal: the warehouse could not be read or written, or holds malformed metadata
	// (Internal).
	ErrInternal = errors.New("internal error")
)
