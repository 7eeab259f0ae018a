package binlog

import (
	"errors"
	"fmt"
)

// Error is an error of package binlog: errors.Is(err, e.Kind) holds for its kind (one of the
// Err* values below), Error() is the whole message naming the table, slot and bucket. The gateway
// maps kinds to gRPC codes in one place (gateway/errors.go).
type Error struct {
	Kind error
	Err  error
}

func (e *Error) Error() string { return e.Err.Error() }

// Unwrap returns the kind and the cause, for errors.Is and errors.As.
func (e *Error) Unwrap() []error { return []error{e.Kind, e.Err} }

// ErrorKind returns e.Kind.
func (e *Error) ErrorKind() error { return e.Kind }

func errorf(kind error, format string, args ...any) error {
	return &Error{Kind: kind, Err: fmt.Errorf(format, args...)}
}

// Kinds of binlog errors (SPEC section 8).
var (
	// ErrInvalid: a bad slot name, an empty owner, a bucket or partition the table does not have
	// (gRPC InvalidArgument).
	ErrInvalid = errors.New("invalid argument")
	// ErrNotFound: no such slot (NotFound).
	ErrNotFound = errors.New("slot not found")
	// ErrFailedPrecondition: the slot is owned by another running job, expired, or the table has
	// changelog.enabled = false, or a checkpoint sync point would move backwards
	// (FailedPrecondition).
	ErrFailedPrecondition = errors.New("failed precondition")
	// ErrOutOfRange: a sync point past the bucket's end, or a lost slot (OutOfRange).
	ErrOutOfRange = errors.New("out of range")
	// ErrResourceExhausted: MaxSlotsPerTable slots exist (ResourceExhausted).
	ErrResourceExhausted = errors.New("resource exhausted")
)
