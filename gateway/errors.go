package gateway

import (
	"context"
	"errors"
	"fmt"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/setats/setats/catalog"
	"github.com/setats/setats/gateway/binlog"
	"github.com/setats/setats/gateway/partname"
	"github.com/setats/setats/gateway/row"
	"github.com/setats/setats/gateway/store"
	"github.com/setats/setats/gateway/subscribe"
	"github.com/setats/setats/merge"
)

// errorCodes maps the kinds of the typed errors of the packages below the gateway (catalog,
// merge, row, partname, store: each an *Error with an ErrorKind) to the gRPC codes the gateway
// answers with. This is the one place where Go errors become gRPC codes; the message stays the
// error's own. A typed error whose kind is missing here is Internal.
var errorCodes = map[error]codes.Code{
	catalog.ErrInvalid:              codes.InvalidArgument,
	catalog.ErrNotFound:             codes.NotFound,
	catalog.ErrAlreadyExists:        codes.AlreadyExists,
	catalog.ErrFailedPrecondition:   codes.FailedPrecondition,
	catalog.ErrUnavailable:          codes.Unavailable,
	catalog.ErrInternal:             codes.Internal,
	merge.ErrInvalid:                codes.InvalidArgument,
	row.ErrInvalid:                  codes.InvalidArgument,
	row.ErrInternal:                 codes.Internal,
	partname.ErrInvalid:             codes.InvalidArgument,
	store.ErrInvalid:                codes.InvalidArgument,
	store.ErrFailedPrecondition:     codes.FailedPrecondition,
	store.ErrOutOfRange:             codes.OutOfRange,
	store.ErrClosed:                 codes.Unavailable,
	store.ErrTableFailed:            codes.Unavailable,
	store.ErrInternal:               codes.Internal,
	store.ErrResourceExhausted:      codes.ResourceExhausted,
	store.ErrAborted:                codes.Aborted,
	store.ErrNotFound:               codes.NotFound,
	store.ErrPartitionDropped:       codes.NotFound,
	binlog.ErrInvalid:               codes.InvalidArgument,
	binlog.ErrNotFound:              codes.NotFound,
	binlog.ErrFailedPrecondition:    codes.FailedPrecondition,
	binlog.ErrOutOfRange:            codes.OutOfRange,
	binlog.ErrResourceExhausted:     codes.ResourceExhausted,
	subscribe.ErrInternal:           codes.Internal,
	subscribe.ErrInvalid:            codes.InvalidArgument,
	subscribe.ErrNotFound:           codes.NotFound,
	subscribe.ErrAlreadyExists:      codes.AlreadyExists,
	subscribe.ErrFailedPrecondition: codes.FailedPrecondition,
	subscribe.ErrUnauthenticated:    codes.Unauthenticated,
	subscribe.ErrPermissionDenied:   codes.PermissionDenied,
	subscribe.ErrOutOfRange:         codes.OutOfRange,
	subscribe.ErrUnavailable:        codes.Unavailable,
	context.Canceled:                codes.Canceled,
	context.DeadlineExceeded:        codes.DeadlineExceeded,
}

// kindedError is the typed error of a package below the gateway (catalog.Error, store.Error, ...).
type kindedError interface {
	error
	ErrorKind() error
}

// toStatus returns err as a gRPC status error and true when err is one (returned as it is) or is a
// typed error of a package below the gateway (its outermost one decides the code, errorCodes;
// the message is err.Error()); else err and false. nil gives nil and true.
func toStatus(err error) (error, bool) {
	if err == nil {
		return nil, true
	}
	if _, ok := status.FromError(err); ok {
		return err, true
	}
	var k kindedError
	if !errors.As(err, &k) {
		return err, false
	}
	code, ok := errorCodes[k.ErrorKind()]
	if !ok {
		code = codes.Internal
	}
	return status.Error(code, err.Error()), true
}

// codeOf returns the gRPC code the gateway answers err with (codes.OK for nil, codes.Unknown for
// an untyped error).
func codeOf(err error) codes.Code {
	st, _ := toStatus(err)
	return status.Code(st)
}

// statusOr returns err as a gRPC status error when it is one or is a typed error of a package
// below the gateway (toStatus: its code, its message), else a status error with code whose
// message is the formatted prefix followed by err. Context errors map to Canceled and
// DeadlineExceeded.
func statusOr(err error, code codes.Code, format string, args ...any) error {
	if st, ok := toStatus(err); ok {
		return st
	}
	switch {
	case errors.Is(err, context.Canceled):
		code = codes.Canceled
	case errors.Is(err, context.DeadlineExceeded):
		code = codes.DeadlineExceeded
	}
	return status.Errorf(code, "%s: %v", fmt.Sprintf(format, args...), err)
}

// wrapStatus prefixes the message of a status error (or of a typed error, toStatus) with the
// formatted context, keeping its code.
func wrapStatus(err error, format string, args ...any) error {
	if err == nil {
		return nil
	}
	err, _ = toStatus(err)
	st, ok := status.FromError(err)
	if !ok {
		return fmt.Errorf("%s: %w", fmt.Sprintf(format, args...), err)
	}
	return status.Errorf(st.Code(), "%s: %s", fmt.Sprintf(format, args...), st.Message())
}
