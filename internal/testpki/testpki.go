// Package testpki makes a throw-away public key infrastructure for tests of TLS (SPEC section
// 14): a self-signed CA, a server certificate for 127.0.0.1 and localhost, and a client
// certificate, all signed by it and written as PEM files into a test's temporary directory.
// Tests only: keys are ECDSA P-256, certificates valid from an hour ago for a day.
package testpki

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// PKI is one generated CA with a server and a client certificate.
type PKI struct {
	// Dir holds the PEM files.
	Dir string
	// CAFile is the CA certificate; CertFile and KeyFile the server's (for --tls-cert,
	// --tls-key); ClientCert and ClientKey the client's (for --tls-client-ca = CAFile).
	CAFile, CertFile, KeyFile string
	ClientCert, ClientKey     string
	// Pool holds the CA certificate; ClientPair is the loaded client certificate.
	Pool       *x509.CertPool
	ClientPair tls.Certificate
}

// New generates a PKI in a new temporary directory of t; errors fail t.
func New(t testing.TB) *PKI {
	t.Helper()
	dir := t.TempDir()
	p := &PKI{Dir: dir}
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	caTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "setats test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, _ := x509.ParseCertificate(caDER)
	p.Pool = x509.NewCertPool()
	p.Pool.AddCert(ca)
	p.CAFile = writePEM(t, dir, "ca.pem", "CERTIFICATE", caDER)
	issue := func(name string, serial int64, usage x509.ExtKeyUsage) (string, string) {
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		tmpl := &x509.Certificate{
			SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: name},
			NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
			KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{usage},
			IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, DNSNames: []string{"localhost"},
		}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
		if err != nil {
			t.Fatal(err)
		}
		kb, err := x509.MarshalECPrivateKey(key)
		if err != nil {
			t.Fatal(err)
		}
		return writePEM(t, dir, name+".pem", "CERTIFICATE", der), writePEM(t, dir, name+"-key.pem", "EC PRIVATE KEY", kb)
	}
	p.CertFile, p.KeyFile = issue("server", 2, x509.ExtKeyUsageServerAuth)
	p.ClientCert, p.ClientKey = issue("client", 3, x509.ExtKeyUsageClientAuth)
	if p.ClientPair, err = tls.LoadX509KeyPair(p.ClientCert, p.ClientKey); err != nil {
		t.Fatal(err)
	}
	return p
}

func writePEM(t testing.TB, dir, name, typ string, der []byte) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}
