package gateway

import (
	"context"
	"net"
	"strings"

	"github.com/apache/arrow-go/v18/arrow/flight"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"

	"github.com/setats/setats/gateway/auth"
)

// Authentication and authorization at the Flight edge (SPEC section 14, gateway/auth).
//
// The interceptors below resolve each call's principal from its `authorization` header (HTTP
// Basic credentials or a handshake's bearer token) and refuse wrong credentials with
// Unauthenticated; a call without credentials goes on as anonymous. Every handler then calls
// s.authorize once it knows the table or action, after decoding the request: anonymous callers
// fail there with Unauthenticated, callers beyond their grants with PermissionDenied. A handler
// reading a subscription channel checks both: the gateway user's read privilege on the channel
// (s.authorizeChannel) and the consumer group's credentials carried in the request. Without
// --users-file (s.auth nil) everything is allowed, but channel reads still need the consumer
// group's credentials. TestAuthorizeEveryCall fails when an action or RPC is not in its table.

// Re-exported privileges for the handlers.
const (
	privRead  = auth.Read
	privWrite = auth.Write
	privAdmin = auth.Admin
)

// authorize checks that the caller of ctx holds p on db.table (table auth.Any: the whole
// database). call names the Flight call or action in the error.
func (s *Server) authorize(ctx context.Context, call string, p auth.Privilege, db, table string) error {
	return authStatus(s.auth.Authorize(ctx, call, p, db, table))
}

// authorizeChannel checks that the caller of ctx holds p on the subscription channel ch.
func (s *Server) authorizeChannel(ctx context.Context, call string, p auth.Privilege, ch string) error {
	return authStatus(s.auth.AuthorizeChannel(ctx, call, p, ch))
}

// authenticated checks that the caller of ctx is a user of the users file.
func (s *Server) authenticated(ctx context.Context, call string) error {
	return authStatus(s.auth.Authenticated(ctx, call))
}

// authStatus maps an auth error to its gRPC status (the gateway edge, errors.go's rule).
func authStatus(err error) error {
	if err == nil {
		return nil
	}
	switch auth.KindOf(err) {
	case auth.KindUnauthenticated:
		return status.Error(codes.Unauthenticated, err.Error())
	case auth.KindPermissionDenied:
		return status.Error(codes.PermissionDenied, err.Error())
	}
	return statusOr(err, codes.Internal, "authentication")
}

// authenticate resolves the principal of a call into its context.
func (s *Server) authenticate(ctx context.Context) (context.Context, error) {
	if s.auth == nil {
		return ctx, nil
	}
	var header string
	if md, ok := metadata.FromIncomingContext(ctx); ok {
		vals := md.Get("authorization")
		if len(vals) > 1 {
			return ctx, status.Error(codes.Unauthenticated, "the call carries several authorization headers; send one")
		}
		if len(vals) == 1 {
			header = vals[0]
		}
	}
	p, err := s.auth.Authenticate(ctx, header, peerHost(ctx))
	if err != nil {
		return ctx, authStatus(err)
	}
	return auth.WithPrincipal(ctx, p), nil
}

// peerHost is the remote host of a call ("" when unknown), the key of the per-peer slow-down.
func peerHost(ctx context.Context) string {
	p, ok := peer.FromContext(ctx)
	if !ok || p.Addr == nil {
		return ""
	}
	a := p.Addr.String()
	if h, _, err := net.SplitHostPort(a); err == nil {
		return h
	}
	return a
}

// authUnaryInterceptor authenticates unary calls.
func (s *Server) authUnaryInterceptor(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
	ctx, err := s.authenticate(ctx)
	if err != nil {
		return nil, err
	}
	return h(ctx, req)
}

// authStreamInterceptor authenticates streaming calls.
func (s *Server) authStreamInterceptor(srv any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, h grpc.StreamHandler) error {
	ctx, err := s.authenticate(ss.Context())
	if err != nil {
		return err
	}
	if s.auth == nil {
		return h(srv, ss)
	}
	return h(srv, &authedStream{ServerStream: ss, ctx: ctx})
}

// authedStream is a server stream whose context carries the principal.
type authedStream struct {
	grpc.ServerStream
	ctx context.Context
}

func (a *authedStream) Context() context.Context { return a.ctx }

// Handshake hands out a bearer token (what pyarrow's authenticate_basic_token and Arrow Java's
// ClientIncomingAuthHeaderMiddleware expect): the call carries HTTP Basic credentials (checked by
// the interceptor), the answer's headers and trailers carry "authorization: Bearer <token>",
// valid for --token-ttl. Handshake payloads are not read. Without --users-file there is nothing
// to authenticate and no token. Errors: Unauthenticated without credentials.
func (f *flightService) Handshake(stream flight.FlightService_HandshakeServer) error {
	s := f.s
	if s.auth == nil {
		return nil
	}
	tok, _, err := s.auth.IssueToken(stream.Context())
	if err != nil {
		return authStatus(err)
	}
	md := metadata.Pairs("authorization", "Bearer "+tok)
	if err := stream.SetHeader(md); err != nil {
		return err
	}
	stream.SetTrailer(md)
	return nil
}

// watchAllowed reports whether a notification about db.table may be relayed to the caller of ctx
// (a watch over a database or every database shows only tables the caller may read).
func (s *Server) watchAllowed(ctx context.Context, db, table string) bool {
	if s.auth == nil {
		return true
	}
	if table == "" {
		return s.auth.SeesDatabase(ctx, db)
	}
	return s.auth.SeesTable(ctx, db, table)
}

// callName is the short name of a gRPC method for messages ("/arrow.flight.protocol.FlightService/DoGet" -> "DoGet").
func callName(fullMethod string) string {
	return fullMethod[strings.LastIndex(fullMethod, "/")+1:]
}
