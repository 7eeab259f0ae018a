package gateway

import (
	"context"
	"runtime/debug"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/setats/setats/internal/culprit"
)

// unaryInterceptor logs failed unary Flight calls, turns the typed errors of the packages below
// the gateway into gRPC status errors (toStatus) and a panic into an Internal error, so that one
// bad request never takes the gateway down.
func (s *Server) unaryInterceptor(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (res any, err error) {
	begin := time.Now()
	defer func() {
		if r := recover(); r != nil {
			err = s.recovered(info.FullMethod, r)
		}
		err, _ = toStatus(err)
		err = capStatus(err)
		s.logCall(info.FullMethod, begin, err)
	}()
	return h(ctx, req)
}

// streamInterceptor is unaryInterceptor for streaming Flight calls.
func (s *Server) streamInterceptor(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, h grpc.StreamHandler) (err error) {
	begin := time.Now()
	defer func() {
		if r := recover(); r != nil {
			err = s.recovered(info.FullMethod, r)
		}
		err, _ = toStatus(err)
		err = capStatus(err)
		s.logCall(info.FullMethod, begin, err)
	}()
	return h(srv, ss)
}

func (s *Server) recovered(method string, r any) error {
	s.log.Error("panic in flight call", "method", method, "panic", r, "stack", string(debug.Stack()))
	// The panic's text and stack go to the log only: a client gets no Go runtime text.
	return status.Errorf(codes.Internal, "%s: internal error (logged by the gateway)", method)
}

// capStatus caps the message of a status error at culprit.MaxMessageBytes, keeping its code and
// both ends of the message: the safety net for a message that names a long client input.
func capStatus(err error) error {
	if err == nil {
		return nil
	}
	st, ok := status.FromError(err)
	if !ok || len(st.Message()) <= culprit.MaxMessageBytes {
		return err
	}
	return status.Error(st.Code(), culprit.Cap(st.Message()))
}

// logCall logs a failed call: Internal and Unknown errors at error level (a gateway bug or a
// storage failure), client errors at debug level.
func (s *Server) logCall(method string, begin time.Time, err error) {
	if err == nil {
		return
	}
	code := status.Code(err)
	switch code {
	case codes.Internal, codes.Unknown, codes.DataLoss:
		s.log.Error("flight call failed", "method", method, "code", code.String(), "err", err, "duration", time.Since(begin))
	default:
		s.log.Debug("flight call failed", "method", method, "code", code.String(), "err", err, "duration", time.Since(begin))
	}
}
