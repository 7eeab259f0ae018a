package gateway

import (
	"context"
	"errors"
	"fmt"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// statusOr returns err when it already is a gRPC status error (the packages below the gateway
// return status errors with the right code), else a status error with code whose message is the
// formatted prefix followed by err. Context errors map to Canceled and DeadlineExceeded.
func statusOr(err error, code codes.Code, format string, args ...any) error {
	if err == nil {
		return nil
	}
	if _, ok := status.FromError(err); ok {
		return err
	}
	switch {
	case errors.Is(err, context.Canceled):
		code = codes.Canceled
	case errors.Is(err, context.DeadlineExceeded):
		code = codes.DeadlineExceeded
	}
	return status.Errorf(code, "%s: %v", fmt.Sprintf(format, args...), err)
}

// wrapStatus prefixes the message of a status error with the formatted context, keeping its code.
func wrapStatus(err error, format string, args ...any) error {
	if err == nil {
		return nil
	}
	st, ok := status.FromError(err)
	if !ok {
		return fmt.Errorf("%s: %w", fmt.Sprintf(format, args...), err)
	}
	return status.Errorf(st.Code(), "%s: %s", fmt.Sprintf(format, args...), st.Message())
}
