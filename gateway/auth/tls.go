package auth

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"sync/atomic"
)

// TLSFiles holds the gateway's TLS material (--tls-cert, --tls-key, --tls-client-ca) and hands
// out server configurations that always use the files' current content: Reload (SIGHUP)
// re-reads them without a restart, new connections use the new certificate.
type TLSFiles struct {
	certFile, keyFile, clientCAFile string
	cert                            atomic.Pointer[tls.Certificate]
	clientCAs                       atomic.Pointer[x509.CertPool] // nil: no client certificates
}

// LoadTLS reads a PEM certificate chain and key, and optionally a PEM bundle of CAs that client
// certificates must chain to (clientCAFile "" = no client certificates). Errors name the flag
// and file.
func LoadTLS(certFile, keyFile, clientCAFile string) (*TLSFiles, error) {
	if certFile == "" || keyFile == "" {
		return nil, errors.New("--tls-cert and --tls-key go together: give both or neither")
	}
	t := &TLSFiles{certFile: certFile, keyFile: keyFile, clientCAFile: clientCAFile}
	if err := t.Reload(); err != nil {
		return nil, err
	}
	return t, nil
}

// Reload re-reads the files; on error the previous material stays in force.
func (t *TLSFiles) Reload() error {
	if t == nil {
		return nil
	}
	cert, err := tls.LoadX509KeyPair(t.certFile, t.keyFile)
	if err != nil {
		return fmt.Errorf("--tls-cert %s / --tls-key %s: %w", t.certFile, t.keyFile, err)
	}
	var pool *x509.CertPool
	if t.clientCAFile != "" {
		pem, err := os.ReadFile(t.clientCAFile)
		if err != nil {
			return fmt.Errorf("--tls-client-ca: %w", err)
		}
		pool = x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return fmt.Errorf("--tls-client-ca %s: no PEM certificate in the file", t.clientCAFile)
		}
	}
	t.cert.Store(&cert)
	t.clientCAs.Store(pool)
	return nil
}

// ClientCertificates reports whether client certificates are configured (--tls-client-ca).
func (t *TLSFiles) ClientCertificates() bool { return t != nil && t.clientCAFile != "" }

// ServerConfig returns a TLS 1.2+ server configuration using the current material. With a client
// CA, requireClientCert demands a client certificate that chains to it (Flight); otherwise a
// certificate a client offers is verified, none is needed (admin HTTP, so that /metrics and
// /healthz stay reachable). nextProtos are the ALPN protocols ("h2" for gRPC).
func (t *TLSFiles) ServerConfig(requireClientCert bool, nextProtos ...string) *tls.Config {
	return &tls.Config{
		MinVersion: tls.VersionTLS12,
		NextProtos: nextProtos,
		GetConfigForClient: func(*tls.ClientHelloInfo) (*tls.Config, error) {
			c := &tls.Config{
				MinVersion:   tls.VersionTLS12,
				NextProtos:   nextProtos,
				Certificates: []tls.Certificate{*t.cert.Load()},
			}
			if pool := t.clientCAs.Load(); pool != nil {
				c.ClientCAs = pool
				c.ClientAuth = tls.VerifyClientCertIfGiven
				if requireClientCert {
					c.ClientAuth = tls.RequireAndVerifyClientCert
				}
			}
			return c, nil
		},
	}
}
