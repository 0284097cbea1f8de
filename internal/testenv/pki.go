package testenv

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"time"
)

// ca is the environment's own certificate authority. It signs the API
// server's serving certificate and every client certificate; the API server
// trusts it through --client-ca-file.
type ca struct {
	cert    *x509.Certificate
	certPEM []byte
	key     crypto.Signer
}

// certLifetime is long enough for any test run and short enough that a leaked
// key is worthless soon.
const certLifetime = 24 * time.Hour

func newCA() (*ca, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generate CA key: %w", err)
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{CommonName: "hybridctl-testenv-ca"},
		NotBefore:             now.Add(-time.Minute),
		NotAfter:              now.Add(certLifetime),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		return nil, fmt.Errorf("self-sign CA: %w", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("parse CA certificate: %w", err)
	}
	return &ca{cert: cert, certPEM: pemBlock("CERTIFICATE", der), key: key}, nil
}

// issue signs a leaf certificate. With ips or dnsNames it is a serving
// certificate, otherwise a client certificate whose CN is the user name and
// whose O entries are the groups, as kube-apiserver reads them.
func (c *ca) issue(cn string, orgs []string, ips []net.IP, dnsNames []string) (certPEM, keyPEM []byte, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, fmt.Errorf("generate key for %q: %w", cn, err)
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber: serial(),
		Subject:      pkix.Name{CommonName: cn, Organization: orgs},
		NotBefore:    now.Add(-time.Minute),
		NotAfter:     now.Add(certLifetime),
		KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		IPAddresses:  ips,
		DNSNames:     dnsNames,
	}
	if len(ips) > 0 || len(dnsNames) > 0 {
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
	} else {
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, c.cert, key.Public(), c.key)
	if err != nil {
		return nil, nil, fmt.Errorf("sign certificate for %q: %w", cn, err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, nil, fmt.Errorf("encode key for %q: %w", cn, err)
	}
	return pemBlock("CERTIFICATE", der), pemBlock("PRIVATE KEY", keyDER), nil
}

// newServiceAccountKey returns the PEM private and public halves of the
// service-account token signing key (RSA, as kubeadm generates sa.key).
func newServiceAccountKey() (privPEM, pubPEM []byte, err error) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return nil, nil, fmt.Errorf("generate service-account key: %w", err)
	}
	pubDER, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
	if err != nil {
		return nil, nil, fmt.Errorf("encode service-account public key: %w", err)
	}
	return pemBlock("RSA PRIVATE KEY", x509.MarshalPKCS1PrivateKey(key)), pemBlock("PUBLIC KEY", pubDER), nil
}

func pemBlock(typ string, der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der})
}

func serial() *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 126))
	if err != nil {
		// crypto/rand does not fail on supported platforms.
		panic(fmt.Sprintf("crypto/rand: %v", err))
	}
	return n
}

func (e *Env) writePKI() error {
	c, err := newCA()
	if err != nil {
		return err
	}
	e.ca = c
	servingCert, servingKey, err := c.issue("kube-apiserver", nil,
		[]net.IP{net.ParseIP("127.0.0.1"), net.ParseIP("10.96.0.1")},
		[]string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local"})
	if err != nil {
		return err
	}
	saKey, saPub, err := newServiceAccountKey()
	if err != nil {
		return err
	}
	files := map[string][]byte{
		"ca.crt":        c.certPEM,
		"apiserver.crt": servingCert,
		"apiserver.key": servingKey,
		"sa.key":        saKey,
		"sa.pub":        saPub,
	}
	if err := os.Mkdir(e.path("pki"), 0o700); err != nil {
		return fmt.Errorf("create pki directory: %w", err)
	}
	for name, b := range files {
		if err := os.WriteFile(e.path("pki", name), b, 0o600); err != nil {
			return fmt.Errorf("write %s: %w", name, err)
		}
	}
	return nil
}
