package kubeclient

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/client-go/rest"
)

// slowBody answers at once with headers, then sends its body after delay.
func slowBody(delay time.Duration) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusOK)
		w.(http.Flusher).Flush()
		select {
		case <-time.After(delay):
			_, _ = io.WriteString(w, `{"secret-body":"hunter2"}`)
		case <-r.Context().Done():
		}
	})
}

func client(t *testing.T, url string, timeout time.Duration, verbosity int, trace io.Writer) *http.Client {
	t.Helper()
	cfg := &rest.Config{Host: url, BearerToken: "tok-3b8f1e"}
	Configure(cfg, timeout, verbosity, trace)
	c, err := rest.HTTPClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestDeadline: an ordinary request must be answered in full within the
// deadline; a watch only has to start answering (then it streams).
func TestDeadline(t *testing.T) {
	srv := httptest.NewServer(slowBody(time.Second))
	defer srv.Close()
	c := client(t, srv.URL, 200*time.Millisecond, 0, nil)

	resp, err := c.Get(srv.URL + "/api/v1/nodes")
	if err != nil {
		t.Fatal(err)
	}
	_, err = io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	var te *TimeoutError
	if !errors.As(err, &te) {
		t.Fatalf("slow body of a list: %v, want a TimeoutError", err)
	}
	if want := "the API server at " + srv.URL + " did not answer within 0.2 s"; te.Error() != want {
		t.Errorf("message %q, want %q", te.Error(), want)
	}

	resp, err = c.Get(srv.URL + "/api/v1/nodes?watch=true")
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if err != nil || !strings.Contains(string(b), "secret-body") {
		t.Errorf("a watch was cut by the request deadline: %q, %v", b, err)
	}

	// Within the deadline, nothing changes.
	fast := client(t, srv.URL, 5*time.Second, 0, nil)
	resp, err = fast.Get(srv.URL + "/api/v1/nodes")
	if err != nil {
		t.Fatal(err)
	}
	if b, err := io.ReadAll(resp.Body); err != nil || len(b) == 0 {
		t.Errorf("read %q, %v", b, err)
	}
	_ = resp.Body.Close()
}

// TestDeadlineNoHeaders: a server that never answers at all.
func TestDeadlineNoHeaders(t *testing.T) {
	done := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-done:
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	defer close(done)
	for _, path := range []string{"/version", "/api/v1/nodes?watch=true"} {
		start := time.Now()
		_, err := client(t, srv.URL, 300*time.Millisecond, 0, nil).Get(srv.URL + path)
		var te *TimeoutError
		if !errors.As(err, &te) {
			t.Errorf("%s: %v, want a TimeoutError", path, err)
		}
		if d := time.Since(start); d > 20*time.Second {
			t.Errorf("%s: gave up after %s", path, d)
		}
	}
	// Cancelling the caller's context is not reported as a timeout.
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+"/version", nil)
	time.AfterFunc(50*time.Millisecond, cancel)
	_, err := client(t, srv.URL, time.Minute, 0, nil).Do(req)
	var te *TimeoutError
	if err == nil || errors.As(err, &te) {
		t.Errorf("cancelled request: %v", err)
	}
}

type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuf) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestTrace: -v 6 shows method, URL, status and latency; never the token,
// the Authorization header, a password in the URL or a body.
func TestTrace(t *testing.T) {
	srv := httptest.NewServer(slowBody(0))
	defer srv.Close()
	u := strings.Replace(srv.URL, "http://", "http://admin:pa55word-9d@", 1)
	for _, v := range []int{5, 6, 9} {
		var out syncBuf
		c := client(t, u, 5*time.Second, v, &out)
		req, _ := http.NewRequest(http.MethodPost, u+"/api/v1/namespaces/default/secrets?limit=500", strings.NewReader(`{"data":{"token":"req-body-secret"}}`))
		req.Header.Set("X-Extra", "header-secret")
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		got := out.String()
		if v < TraceLevel {
			if got != "" {
				t.Errorf("-v %d traced %q", v, got)
			}
			continue
		}
		want := "POST " + srv.URL + "/api/v1/namespaces/default/secrets?limit=500 200 OK in "
		if !strings.HasPrefix(got, want) || !strings.HasSuffix(got, " ms\n") {
			t.Errorf("-v %d: %q, want %q...ms", v, got, want)
		}
		for _, secret := range []string{"tok-3b8f1e", "Bearer", "Authorization", "pa55word-9d", "admin", "req-body-secret", "hunter2", "secret-body", "header-secret"} {
			if strings.Contains(got, secret) {
				t.Errorf("-v %d: trace shows %q: %q", v, secret, got)
			}
		}
	}
}
