package procedure

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"net"
	"net/netip"
	"strings"
	"testing"
	"time"

	certv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/hybridctl/hybridctl/internal/csr"
	"github.com/hybridctl/hybridctl/internal/provision/engine"
	"github.com/hybridctl/hybridctl/internal/testenv"
)

// registerNode creates a Node as the kubelet would, with its addresses.
func registerNode(t *testing.T, admin kubernetes.Interface, name, ip string) {
	t.Helper()
	ctx := context.Background()
	n, err := admin.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	n.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: ip}, {Type: corev1.NodeHostName, Address: name}}
	if _, err := admin.CoreV1().Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = admin.CoreV1().Nodes().Delete(context.Background(), name, metav1.DeleteOptions{}) })
}

// requestServingCert creates a kubelet-serving CSR as the node itself (its
// own client certificate), so the API server sets the requester.
func requestServingCert(t *testing.T, env *testenv.Env, node string, ips ...string) string {
	t.Helper()
	cfg, err := env.UserConfig("system:node:"+node, "system:nodes")
	if err != nil {
		t.Fatal(err)
	}
	client := kubernetes.NewForConfigOrDie(cfg)
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.CertificateRequest{Subject: pkix.Name{CommonName: "system:node:" + node, Organization: []string{"system:nodes"}}, DNSNames: []string{node}}
	for _, ip := range ips {
		tmpl.IPAddresses = append(tmpl.IPAddresses, net.ParseIP(ip))
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, tmpl, key)
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.CertificatesV1().CertificateSigningRequests().Create(context.Background(), &certv1.CertificateSigningRequest{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "csr-" + node + "-"},
		Spec: certv1.CertificateSigningRequestSpec{
			Request:    pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der}),
			SignerName: certv1.KubeletServingSignerName,
			Usages:     []certv1.KeyUsage{certv1.UsageDigitalSignature, certv1.UsageServerAuth},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return c.Name
}

func conditionOf(t *testing.T, admin kubernetes.Interface, name string) certv1.RequestConditionType {
	t.Helper()
	c, err := admin.CertificatesV1().CertificateSigningRequests().Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, cond := range c.Status.Conditions {
		if cond.Status == corev1.ConditionTrue && (cond.Type == certv1.CertificateApproved || cond.Type == certv1.CertificateDenied) {
			return cond.Type
		}
	}
	return ""
}

func csrPhase(env *testenv.Env, inv csr.Inventory, timeout time.Duration, hosts ...engine.Host) *approveCSRsPhase {
	return &approveCSRsPhase{title: "approve-linux-csrs", hosts: hosts, nodes: engine.LinuxNodes, inventory: inv,
		restConfig: func(context.Context) (*rest.Config, error) { return env.AdminConfig(), nil },
		timeout:    timeout, poll: 200 * time.Millisecond}
}

// The approval phases, against the real API server: valid requests of the
// phase's nodes are approved; a request for a foreign address is denied and
// fails the phase; a node without a request makes the phase time out
// naming it; other nodes' requests are left alone.
func TestApproveCSRsPhase(t *testing.T) {
	env := testenv.Get(t)
	admin := kubernetes.NewForConfigOrDie(env.AdminConfig())
	inv := csr.StaticInventory{Addresses: map[string]netip.Addr{
		"csr-a": netip.MustParseAddr("192.0.2.11"), "csr-b": netip.MustParseAddr("192.0.2.12"),
		"csr-c": netip.MustParseAddr("192.0.2.13"), "csr-d": netip.MustParseAddr("192.0.2.14"),
		"csr-other": netip.MustParseAddr("192.0.2.15"),
	}}
	for name, a := range inv.Addresses {
		registerNode(t, admin, name, a.String())
	}
	host := func(name string) engine.Host {
		return engine.Host{Name: name, Role: engine.RoleWorker, OS: engine.Linux, Address: inv.Addresses[name].String()}
	}
	ctx := context.Background()

	t.Run("valid requests are approved", func(t *testing.T) {
		a := requestServingCert(t, env, "csr-a", "192.0.2.11")
		b := requestServingCert(t, env, "csr-b", "192.0.2.12")
		other := requestServingCert(t, env, "csr-other", "192.0.2.15")
		// The round that approves them ends the phase: with a poll longer
		// than the timeout, waiting for another round would time out.
		ph := csrPhase(env, inv, time.Minute, host("csr-a"), host("csr-b"))
		ph.poll = time.Hour
		if err := ph.Run(ctx, engine.ClusterHost()); err != nil {
			t.Fatal(err)
		}
		for _, name := range []string{a, b} {
			if got := conditionOf(t, admin, name); got != certv1.CertificateApproved {
				t.Errorf("%s: condition %q, want Approved", name, got)
			}
		}
		if got := conditionOf(t, admin, other); got != "" {
			t.Errorf("another node's request was decided: %q", got)
		}
		// Idempotent: a second run finds the approved requests.
		if err := csrPhase(env, inv, 5*time.Second, host("csr-a"), host("csr-b")).Run(ctx, engine.ClusterHost()); err != nil {
			t.Errorf("second run: %v", err)
		}
	})

	t.Run("a foreign address is denied and fails the phase", func(t *testing.T) {
		c := requestServingCert(t, env, "csr-c", "192.0.2.11") // csr-a's address
		err := csrPhase(env, inv, time.Minute, host("csr-c")).Run(ctx, engine.ClusterHost())
		if err == nil || !strings.Contains(err.Error(), "denied") || !strings.Contains(err.Error(), "192.0.2.11") {
			t.Fatalf("err = %v, want a denial naming the foreign address", err)
		}
		if got := conditionOf(t, admin, c); got != certv1.CertificateDenied {
			t.Errorf("condition %q, want Denied", got)
		}
	})

	t.Run("a request left pending times out, with the reason", func(t *testing.T) {
		// csr-e has an address in the inventory but no Node yet.
		inv.Addresses["csr-e"] = netip.MustParseAddr("192.0.2.16")
		requestServingCert(t, env, "csr-e", "192.0.2.16")
		err := csrPhase(env, inv, 2*time.Second, host("csr-e")).Run(ctx, engine.ClusterHost())
		if err == nil || !strings.Contains(err.Error(), "for csr-e (node-exists: Node csr-e is not registered yet)") {
			t.Fatalf("err = %v, want a timeout naming csr-e and why its request is pending", err)
		}
	})

	t.Run("a node without a request times out, named", func(t *testing.T) {
		err := csrPhase(env, inv, 2*time.Second, host("csr-d")).Run(ctx, engine.ClusterHost())
		if err == nil || !strings.Contains(err.Error(), "csr-d") {
			t.Fatalf("err = %v, want a timeout naming csr-d", err)
		}
	})
}
