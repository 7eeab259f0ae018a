package gateway

import (
	"flag"
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/setats/setats/gateway/auth"
)

// Security holds the options of SPEC section 14 (embedded in Options; flags in registerFlags).
type Security struct {
	// UsersFile is the users file (YAML: users, bcrypt password hashes, grants; gateway/auth). It
	// is re-read on SIGHUP (Server.Reload) and when its content changes. Empty: no users, every
	// call is allowed anonymously, and the gateway listens only on loopback unless
	// AllowAnonymous.
	UsersFile string
	// AllowAnonymous lets a gateway without UsersFile listen beyond loopback (every caller may do
	// everything: a trusted network only). An error together with UsersFile.
	AllowAnonymous bool
	// TokenTTL is the lifetime of the bearer tokens Flight handshakes hand out. Default 1h.
	TokenTTL time.Duration
	// UsersReloadInterval is how often the users file is checked for changes. Default 2s; < 0
	// checks only on SIGHUP. Not a flag.
	UsersReloadInterval time.Duration
	// TLSCert and TLSKey are PEM files of the server certificate (chain) and key; both set turn
	// TLS on for Flight (clients use grpc+tls://) and admin HTTP (https). Re-read on SIGHUP.
	TLSCert, TLSKey string
	// TLSClientCA is a PEM bundle of CAs; when set, Flight clients must present a certificate
	// that chains to one of them (admin HTTP verifies one if offered). Needs TLSCert.
	TLSClientCA string
	// NATSCreds is a NATS credentials file (JWT and nkey seed) for the external NATS server of
	// NATSURL. A user and password may also be given in NATSURL (nats://user:pass@host:4222).
	NATSCreds string
}

// setDefaults fills the zero fields of the security options.
func (o *Security) setDefaults() {
	if o.TokenTTL == 0 {
		o.TokenTTL = auth.DefaultTokenTTL
	}
	if o.UsersReloadInterval == 0 {
		o.UsersReloadInterval = auth.DefaultReloadInterval
	}
}

// registerFlags binds the security flags.
func (o *Security) registerFlags(fs *flag.FlagSet) {
	fs.StringVar(&o.UsersFile, "users-file", "", "users file (YAML: users, bcrypt password hashes, grants); re-read on SIGHUP and on change. Without it every call is anonymous and the gateway listens on loopback only")
	fs.BoolVar(&o.AllowAnonymous, "allow-anonymous", false, "without --users-file, allow listening beyond loopback with no authentication (trusted networks only)")
	fs.DurationVar(&o.TokenTTL, "token-ttl", auth.DefaultTokenTTL, "lifetime of the bearer tokens handed out by Flight handshakes (Go duration)")
	fs.StringVar(&o.TLSCert, "tls-cert", "", "PEM certificate (chain) for TLS on Flight (grpc+tls://) and admin HTTP; needs --tls-key")
	fs.StringVar(&o.TLSKey, "tls-key", "", "PEM private key of --tls-cert")
	fs.StringVar(&o.TLSClientCA, "tls-client-ca", "", "PEM CA bundle; when set, Flight clients must present a certificate signed by it")
	fs.StringVar(&o.NATSCreds, "nats-creds", "", "NATS credentials file (JWT + nkey) for the external server of --nats-url")
}

// validateSecurity checks the security options against the listen addresses (SPEC section 14:
// nothing listens unprotected by default).
func (o *Options) validateSecurity() error {
	if o.UsersFile != "" && o.AllowAnonymous {
		return fmt.Errorf("--allow-anonymous cannot be combined with --users-file: with a users file every caller must authenticate")
	}
	if o.TokenTTL < time.Second {
		return fmt.Errorf("--token-ttl must be >= 1s, got %s", o.TokenTTL)
	}
	if (o.TLSCert == "") != (o.TLSKey == "") {
		return fmt.Errorf("--tls-cert and --tls-key go together: give both or neither")
	}
	if o.TLSClientCA != "" && o.TLSCert == "" {
		return fmt.Errorf("--tls-client-ca needs --tls-cert and --tls-key")
	}
	if o.NATSCreds != "" && o.NATSURL == "" {
		return fmt.Errorf("--nats-creds is for an external NATS server: give --nats-url too")
	}
	if o.NATSURL == "" {
		host, _, err := natsListenHostPort(o.NATSListen)
		if err != nil {
			return err
		}
		if !isLoopbackHost(host) {
			return fmt.Errorf("--nats-listen %s: the embedded NATS server listens on loopback only (its credential is known only to the gateway); for a NATS server other processes share, run one and give --nats-url", o.NATSListen)
		}
	}
	if o.UsersFile == "" && !o.AllowAnonymous {
		for _, a := range []struct{ flag, addr string }{{"--flight-addr", o.FlightAddr}, {"--admin-addr", o.AdminAddr}} {
			host, _, err := net.SplitHostPort(a.addr)
			if err != nil {
				return fmt.Errorf("%s %q: %v", a.flag, a.addr, err)
			}
			if !isLoopbackHost(host) {
				return fmt.Errorf("%s %s listens beyond loopback without --users-file: give --users-file (users, passwords and grants), "+
					"or --allow-anonymous to let every caller do everything (trusted networks only)", a.flag, a.addr)
			}
		}
	}
	return nil
}

// isLoopbackHost reports whether a listen host is loopback only: "localhost" or a loopback IP.
// An empty host, 0.0.0.0 and :: are every interface.
func isLoopbackHost(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(strings.Trim(host, "[]"))
	return ip != nil && ip.IsLoopback()
}
