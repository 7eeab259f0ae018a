package gateway

import (
	"context"
	"runtime/debug"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
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
		s.logCall(info.FullMethod, begin, err)
	}()
	return h(srv, ss)
}

func (s *Server) recovered(method string, r any) error {
	s.log.Error("panic in flight call", "method", method, "panic", r, "stack", string(debug.Stack()))
	return status.Errorf(codes.Internal, "%s: internal error: %v", method, r)
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
