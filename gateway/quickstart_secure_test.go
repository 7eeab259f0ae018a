package gateway

import (
	"context"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/flight"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/protobuf/proto"

	"github.com/setats/setats/proto/setatspb"
)

// secureClient is the "users and TLS" part of the Go quickstart in gateway/README.md (same code):
// TLS trusting the CA in caFile (PEM), then a Flight handshake with the user's password; the
// returned context carries the bearer token for every later call.
func secureClient(ctx context.Context, addr, caFile, user, password string) (flight.Client, context.Context, error) {
	creds, err := credentials.NewClientTLSFromFile(caFile, "")
	if err != nil {
		return nil, nil, err
	}
	client, err := flight.NewClientWithMiddleware(addr, nil, nil, grpc.WithTransportCredentials(creds))
	if err != nil {
		return nil, nil, err
	}
	ctx, err = client.AuthenticateBasicToken(ctx, user, password)
	if err != nil {
		client.Close()
		return nil, nil, err
	}
	return client, ctx, nil
}

// TestQuickstartSecure runs secureClient against a gateway with users and TLS and makes a call
// with the token.
func TestQuickstartSecure(t *testing.T) {
	p := newTestPKI(t)
	g, _ := startAuthGateway(t, func(o *Options) { o.TLSCert, o.TLSKey = p.CertFile, p.KeyFile })
	client, ctx, err := secureClient(g.ctx, g.s.FlightAddr(), p.CAFile, "reader", "reader-pw")
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	stream, err := client.DoAction(ctx, &flight.Action{Type: ActionGatewayInfo})
	if err != nil {
		t.Fatal(err)
	}
	r, err := stream.Recv()
	if err != nil {
		t.Fatalf("gateway-info with the handshake's token: %v", err)
	}
	info := &setatspb.GatewayInfo{}
	if err := proto.Unmarshal(r.GetBody(), info); err != nil || info.GetWarehouse() == "" {
		t.Fatalf("gateway-info: %v %v", info, err)
	}
	if _, _, err := secureClient(g.ctx, g.s.FlightAddr(), p.CAFile, "reader", "wrong"); err == nil {
		t.Fatal("a wrong password got a token")
	}
}
