package csr

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"encoding/pem"
	"net"
	"net/url"
	"sync"
	"testing"

	certv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Test keys are generated once per test binary (RSA generation is slow on
// two shared cores); they never leave the process.
var testKeys = sync.OnceValue(func() map[string]crypto.Signer {
	mustRSA := func(bits int) crypto.Signer {
		k, err := rsa.GenerateKey(rand.Reader, bits)
		if err != nil {
			panic(err)
		}
		return k
	}
	mustEC := func(c elliptic.Curve) crypto.Signer {
		k, err := ecdsa.GenerateKey(c, rand.Reader)
		if err != nil {
			panic(err)
		}
		return k
	}
	return map[string]crypto.Signer{
		"rsa":     mustRSA(2048),
		"rsa1024": mustRSA(1024),
		"ecdsa":   mustEC(elliptic.P256()),
		"p224":    mustEC(elliptic.P224()),
	}
})

// req describes a PKCS#10 request to build.
type req struct {
	key    string // key in testKeys; "" means "ecdsa"
	cn     string
	org    []string
	dns    []string
	ips    []string
	emails []string
	uris   []string
	// rawIPs are IP SANs written byte for byte (e.g. 16-byte IPv4-mapped
	// forms that crypto/x509 would shorten); they replace dns/ips.
	rawIPs [][]byte
	// badSig flips a bit of the signature.
	badSig bool
}

func (r req) build(t testing.TB) []byte {
	t.Helper()
	key := r.key
	if key == "" {
		key = "ecdsa"
	}
	tmpl := &x509.CertificateRequest{
		Subject:        pkix.Name{CommonName: r.cn, Organization: r.org},
		DNSNames:       r.dns,
		EmailAddresses: r.emails,
	}
	for _, s := range r.ips {
		ip := net.ParseIP(s)
		if ip == nil {
			t.Fatalf("bad test IP %q", s)
		}
		tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
	}
	for _, s := range r.uris {
		u, err := url.Parse(s)
		if err != nil {
			t.Fatal(err)
		}
		tmpl.URIs = append(tmpl.URIs, u)
	}
	if len(r.rawIPs) > 0 {
		var names []asn1.RawValue
		for _, d := range r.dns {
			names = append(names, asn1.RawValue{Class: asn1.ClassContextSpecific, Tag: 2, Bytes: []byte(d)})
		}
		for _, ip := range r.rawIPs {
			names = append(names, asn1.RawValue{Class: asn1.ClassContextSpecific, Tag: 7, Bytes: ip})
		}
		val, err := asn1.Marshal(names)
		if err != nil {
			t.Fatal(err)
		}
		tmpl.DNSNames = nil
		tmpl.ExtraExtensions = []pkix.Extension{{Id: asn1.ObjectIdentifier{2, 5, 29, 17}, Value: val}}
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, tmpl, testKeys()[key])
	if err != nil {
		t.Fatalf("creating test CSR: %v", err)
	}
	if r.badSig {
		der[len(der)-1] ^= 0x01
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der})
}

// nodeReq is what a well-behaved kubelet for node NAME asks for.
func nodeReq(name string, ips ...string) req {
	return req{cn: NodeUserPrefix + name, org: []string{NodesGroup}, dns: []string{name}, ips: ips}
}

// csrObj wraps a request in a CSR as the API server would store it when
// node NAME (or user) created it.
type csrObj struct {
	name       string
	user       string
	groups     []string
	signer     string
	usages     []certv1.KeyUsage
	request    []byte
	expiration *int32
}

func (c csrObj) object() *certv1.CertificateSigningRequest {
	signer := c.signer
	if signer == "" {
		signer = SignerName
	}
	usages := c.usages
	if usages == nil {
		usages = []certv1.KeyUsage{certv1.UsageDigitalSignature, certv1.UsageServerAuth}
	}
	name := c.name
	if name == "" {
		name = "csr-test"
	}
	return &certv1.CertificateSigningRequest{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: certv1.CertificateSigningRequestSpec{
			Request:           c.request,
			SignerName:        signer,
			Usages:            usages,
			Username:          c.user,
			Groups:            c.groups,
			ExpirationSeconds: c.expiration,
		},
	}
}

func fromNode(name string, r []byte) csrObj {
	return csrObj{user: NodeUserPrefix + name, groups: []string{NodesGroup, "system:authenticated"}, request: r}
}

func nodeObj(name string, addrs ...corev1.NodeAddress) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Status: corev1.NodeStatus{Addresses: addrs}}
}

func internalIP(s string) corev1.NodeAddress {
	return corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: s}
}

func hostname(s string) corev1.NodeAddress {
	return corev1.NodeAddress{Type: corev1.NodeHostName, Address: s}
}

func int32p(v int32) *int32 { return &v }
