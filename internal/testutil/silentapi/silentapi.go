// Package silentapi is a test fixture: a TLS server on 127.0.0.1 that
// accepts connections and requests and never answers, as a hung API server
// does, and a kubeconfig that points at it.
package silentapi

import (
	"encoding/pem"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
)

// Server is a running silent API server.
type Server struct {
	URL        string
	Kubeconfig string // a kubeconfig file with context "silent"
	requests   atomic.Int64
}

// Requests is how many requests reached the server.
func (s *Server) Requests() int64 { return s.requests.Load() }

// Start starts the server; it stops when the test ends.
func Start(t testing.TB) *Server {
	t.Helper()
	done := make(chan struct{})
	s := &Server{}
	ts := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.requests.Add(1)
		select {
		case <-done:
		case <-r.Context().Done():
		}
	}))
	ts.StartTLS()
	t.Cleanup(func() {
		close(done)
		ts.CloseClientConnections()
		ts.Close()
	})
	s.URL = ts.URL
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ts.Certificate().Raw})
	dir := t.TempDir()
	caFile := filepath.Join(dir, "ca.crt")
	if err := os.WriteFile(caFile, ca, 0o600); err != nil {
		t.Fatal(err)
	}
	s.Kubeconfig = filepath.Join(dir, "kubeconfig")
	kc := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: silent
  cluster:
    server: %s
    certificate-authority: %s
users:
- name: silent
  user:
    token: silent-secret-token-4f2a9c
contexts:
- name: silent
  context: {cluster: silent, user: silent}
current-context: silent
`, ts.URL, caFile)
	if err := os.WriteFile(s.Kubeconfig, []byte(kc), 0o600); err != nil {
		t.Fatal(err)
	}
	return s
}
