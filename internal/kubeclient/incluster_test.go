package kubeclient

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/rest"
)

// In a pod without a kubeconfig (the in-cluster CSR approver), the service
// account's configuration is used, with hybridctl's request deadline. The
// lab found the approver sending its requests to http://localhost:8080:
// client-go's own fallback never fired because the --request-timeout
// default made the merged configuration differ from the defaults.
func TestInClusterWithoutKubeconfig(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("KUBECONFIG", "")
	t.Setenv("KUBERNETES_SERVICE_HOST", "10.96.0.1")
	t.Setenv("KUBERNETES_SERVICE_PORT", "443")
	srv := slowServer(t, 2*time.Second)
	calls := 0
	incluster := func() (*rest.Config, error) {
		calls++
		return &rest.Config{Host: srv, BearerToken: "sa-token-7c1e"}, nil
	}

	f := NewFlags()
	f.InCluster = incluster
	short := "200ms"
	f.Config.Timeout = &short
	cfg, err := f.RESTConfig(nil)
	if err != nil {
		t.Fatal(err)
	}
	if calls != 1 || cfg.Host != srv || cfg.BearerToken != "sa-token-7c1e" {
		t.Fatalf("not the in-cluster configuration: %d calls, host %q", calls, cfg.Host)
	}
	// --request-timeout applies to it: a slow answer is a TimeoutError.
	c, err := rest.HTTPClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := c.Get(srv + "/api")
	if err == nil {
		_, err = readAll(resp)
	}
	var te *TimeoutError
	if !errors.As(err, &te) || te.After != 200*time.Millisecond {
		t.Fatalf("no deadline on the in-cluster configuration: %v", err)
	}

	// The service account cannot be read: said so.
	f = NewFlags()
	f.InCluster = func() (*rest.Config, error) { return nil, rest.ErrNotInCluster }
	if _, err := f.RESTConfig(nil); err == nil || !strings.Contains(err.Error(), "in-cluster configuration (service account)") {
		t.Errorf("unreadable service account: %v", err)
	}

	// An explicit --kubeconfig that does not exist is an error, never a
	// silent switch to the service account.
	f = NewFlags()
	f.InCluster = incluster
	missing := filepath.Join(home, "missing.conf")
	f.Config.KubeConfig = &missing
	calls = 0
	if _, err := f.RESTConfig(nil); err == nil || calls != 0 {
		t.Errorf("explicit missing kubeconfig: %v (in-cluster used %d times)", err, calls)
	}

	// A kubeconfig with a cluster wins over the service account.
	kc := filepath.Join(home, "kubeconfig")
	if err := os.WriteFile(kc, []byte("apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster: {server: \"https://192.0.2.10:6443\"}\nusers:\n- name: u\n  user: {token: t}\ncontexts:\n- name: x\n  context: {cluster: c, user: u}\ncurrent-context: x\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("KUBECONFIG", kc)
	f = NewFlags()
	f.InCluster = incluster
	calls = 0
	cfg, err = f.RESTConfig(nil)
	if err != nil || calls != 0 || cfg.Host != "https://192.0.2.10:6443" {
		t.Errorf("kubeconfig present: host %v, err %v, in-cluster used %d times", cfg, err, calls)
	}

	// Outside a pod, no kubeconfig is the usual clear error.
	t.Setenv("KUBECONFIG", "")
	t.Setenv("KUBERNETES_SERVICE_HOST", "")
	f = NewFlags()
	f.InCluster = incluster
	var nk *NoKubeconfigError
	if _, err := f.RESTConfig(nil); !errors.As(err, &nk) {
		t.Errorf("no kubeconfig outside a pod: %v", err)
	}
}

// slowServer answers every request after delay; it is closed at the end of
// the test.
func slowServer(t *testing.T, delay time.Duration) string {
	t.Helper()
	srv := httptest.NewServer(slowBody(delay))
	t.Cleanup(srv.Close)
	return srv.URL
}

func readAll(resp *http.Response) ([]byte, error) {
	defer func() { _ = resp.Body.Close() }()
	return io.ReadAll(resp.Body)
}
