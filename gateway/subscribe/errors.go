package subscribe

import (
	"errors"
	"fmt"
)

// Kind classifies an *Error; the gateway maps each kind to one gRPC code (gateway/errors.go,
// through Error.ErrorKind and the sentinel errors below).
type Kind uint8

const (
	Internal Kind = iota
	InvalidArgument
	NotFound
	AlreadyExists
	FailedPrecondition
	Unauthenticated
	PermissionDenied
	OutOfRange
	Unavailable
)

// The sentinel of each Kind (Error.ErrorKind); errors.Is(err, ErrNotFound) tests a kind.
var (
	ErrInternal           = errors.New("subscribe: internal")
	ErrInvalid            = errors.New("subscribe: invalid argument")
	ErrNotFound           = errors.New("subscribe: not found")
	ErrAlreadyExists      = errors.New("subscribe: already exists")
	ErrFailedPrecondition = errors.New("subscribe: failed precondition")
	ErrUnauthenticated    = errors.New("subscribe: unauthenticated")
	ErrPermissionDenied   = errors.New("subscribe: permission denied")
	ErrOutOfRange         = errors.New("subscribe: out of range")
	ErrUnavailable        = errors.New("subscribe: unavailable")
)

var kindErrors = [...]error{ErrInternal, ErrInvalid, ErrNotFound, ErrAlreadyExists, ErrFailedPrecondition,
	ErrUnauthenticated, ErrPermissionDenied, ErrOutOfRange, ErrUnavailable}

// Error is the typed error of this package: a kind and a message naming the culprit (channel,
// group, user, source setting).
type Error struct {
	Kind Kind
	Msg  string
}

func (e *Error) Error() string { return e.Msg }

// ErrorKind returns the sentinel error of the kind.
func (e *Error) ErrorKind() error {
	if int(e.Kind) < len(kindErrors) {
		return kindErrors[e.Kind]
	}
	return ErrInternal
}

// Is reports whether target is the sentinel of e's kind.
func (e *Error) Is(target error) bool { return target == e.ErrorKind() }

// Errorf returns a *Error of kind k.
func Errorf(k Kind, format string, args ...any) error {
	return &Error{Kind: k, Msg: fmt.Sprintf(format, args...)}
}
