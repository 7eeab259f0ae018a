package main

import (
	"crypto/tls"
	"crypto/x509"
	"flag"
	"fmt"
	"os"
	"strings"

	"github.com/apache/arrow-go/v18/arrow/flight"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
)

// tlsCACertFlag registers --tls-ca-cert (env SETATS_TLS_CA_CERT) on an admin command: the PEM
// CA bundle that signed the gateway's --tls-cert, for grpc+tls:// (SPEC section 14).
func tlsCACertFlag(fs *flag.FlagSet) *string {
	return fs.String("tls-ca-cert", os.Getenv("SETATS_TLS_CA_CERT"),
		"with grpc+tls://: PEM file of the CA that signed the gateway's --tls-cert (env SETATS_TLS_CA_CERT; default: the system's roots)")
}

// dialFlight connects to a manager-url (SPEC section 0): grpc://host:port or host:port in
// plaintext, grpc+tls://host:port over TLS, verifying the gateway's certificate against caFile
// (a PEM bundle; "" = the system's roots). caFile with a plaintext URL is an error, so that a
// CA given by mistake does not go unnoticed.
func dialFlight(url, caFile string) (flight.Client, error) {
	addr, useTLS := url, false
	switch {
	case strings.HasPrefix(url, "grpc+tls://"):
		addr, useTLS = strings.TrimPrefix(url, "grpc+tls://"), true
	case strings.HasPrefix(url, "grpc://"):
		addr = strings.TrimPrefix(url, "grpc://")
	case strings.HasPrefix(url, "grpc+tcp://"):
		addr = strings.TrimPrefix(url, "grpc+tcp://")
	case strings.Contains(url, "://"):
		return nil, fmt.Errorf("manager-url %q: want grpc://host:port, grpc+tls://host:port or host:port", url)
	}
	creds := insecure.NewCredentials()
	if useTLS {
		cfg := &tls.Config{MinVersion: tls.VersionTLS12}
		if caFile != "" {
			pem, err := os.ReadFile(caFile)
			if err != nil {
				return nil, fmt.Errorf("--tls-ca-cert: %w", err)
			}
			cfg.RootCAs = x509.NewCertPool()
			if !cfg.RootCAs.AppendCertsFromPEM(pem) {
				return nil, fmt.Errorf("--tls-ca-cert %s: no PEM certificate in the file", caFile)
			}
		}
		creds = credentials.NewTLS(cfg)
	} else if caFile != "" {
		return nil, fmt.Errorf("--tls-ca-cert %s is for grpc+tls:// only, but manager-url is %q", caFile, url)
	}
	return flight.NewClientWithMiddleware(addr, nil, nil, grpc.WithTransportCredentials(creds))
}
