package gateway

import (
	"crypto/tls"
	"errors"
	"net"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"

	"github.com/setats/setats/gateway/auth"
)

// startSecurity loads the users file and the TLS material (SPEC section 14).
func (s *Server) startSecurity() error {
	o := &s.opts
	if o.UsersFile != "" {
		a, err := auth.New(auth.Config{
			UsersFile:      o.UsersFile,
			TokenTTL:       o.TokenTTL,
			ReloadInterval: o.UsersReloadInterval,
			Logger:         s.log.With("component", "auth"),
			Registerer:     s.metrics.reg,
			Now:            func() time.Time { return time.UnixMilli(o.Clock()) },
		})
		if err != nil {
			return err
		}
		a.Start()
		s.auth = a
	}
	if o.TLSCert != "" {
		t, err := auth.LoadTLS(o.TLSCert, o.TLSKey, o.TLSClientCA)
		if err != nil {
			return err
		}
		s.tls = t
	}
	return nil
}

// grpcSecurityOptions returns the Flight server's transport credentials (TLS, with client
// certificates required when --tls-client-ca is set).
func (s *Server) grpcSecurityOptions() []grpc.ServerOption {
	if s.tls == nil {
		return nil
	}
	return []grpc.ServerOption{grpc.Creds(credentials.NewTLS(s.tls.ServerConfig(true, "h2")))}
}

// adminListener wraps the admin listener in TLS when --tls-cert is set (a client certificate is
// verified when offered, never required: /healthz and /metrics stay reachable).
func (s *Server) adminListener(l net.Listener) net.Listener {
	if s.tls == nil {
		return l
	}
	return tls.NewListener(l, s.tls.ServerConfig(false, "http/1.1"))
}

// Reload re-reads the users file and the TLS files (SIGHUP). A bad file is an error and keeps the
// previous content in force. Streams whose user lost the grant they need end with
// PermissionDenied; the others go on.
func (s *Server) Reload() error {
	return errors.Join(s.auth.Reload(), s.tls.Reload())
}
