package store

import (
	"errors"
	"fmt"
)

// Error is an error of package store: errors.Is(err, e.Kind) holds for its kind (one of the Err*
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

// Kinds of store errors (errors.Is(err, store.ErrClosed)). A write or read whose context ended
// first fails with an *Error whose kind is context.Canceled or context.DeadlineExceeded.
var (
	// ErrInvalid: a bad batch or key row, a row the merge engine refuses (the merge.Error is
	// wrapped), a table without a location (gRPC InvalidArgument).
	ErrInvalid = errors.New("invalid argument")
	// ErrFailedPrecondition: the table's data has another format version (FailedPrecondition).
	ErrFailedPrecondition = errors.New("failed precondition")
	// ErrOutOfRange: a read from an offset that retention removed or beyond the end offset
	// (OutOfRange, SPEC section 5).
	ErrOutOfRange = errors.New("offset out of range")
	// ErrClosed: the table is closed (Unavailable: the gateway is stopping or the table was
	// dropped).
	ErrClosed = errors.New("table closed")
	// ErrTableFailed: the table's storage failed (a WAL write or fsync, failure.go); the error is
	// an *ErrFailed, and the gateway must restart to recover the table (Unavailable).
	ErrTableFailed = errors.New("table storage failed")
	// ErrResourceExhausted: too many snapshot views open on the table (ResourceExhausted).
	ErrResourceExhausted = errors.New("resource exhausted")
	// ErrAborted: a snapshot view was released (lease ended, table closed) under its reader
	// (Aborted: resume after the last key with a new view).
	ErrAborted = errors.New("aborted")
	// ErrNotFound: DropPartition of a partition the table does not have (NotFound).
	ErrNotFound = errors.New("not found")
	// ErrPartitionDropped: a read of a bucket whose partition was dropped (partition_drop.go);
	// DoGet ends with the PARTITION_DROPPED marker rather than an error (proto/README.md).
	ErrPartitionDropped = errors.New("partition dropped")
	// ErrInternal: Pebble or the file system failed, or stored bytes are malformed (Internal).
	ErrInternal = errors.New("internal error")
)

// contextError returns the error of a write or read whose context ended: an *Error of the
// context's error as kind, with its message.
func contextError(err error) error { return &Error{Kind: err, Err: err} }
