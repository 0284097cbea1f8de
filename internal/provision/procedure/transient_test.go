package procedure

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"

	"github.com/hybridctl/hybridctl/internal/testenv"
)

func TestTransientAPIError(t *testing.T) {
	refused := &url.Error{Op: "Get", URL: "https://api:6443/api/v1/nodes/n", Err: &net.OpError{Op: "dial", Net: "tcp", Err: &syscallErr{syscall.ECONNREFUSED}}}
	pods := schema.GroupResource{Resource: "pods"}
	for _, tc := range []struct {
		name string
		err  error
		want bool
	}{
		{"nil", nil, false},
		{"connection refused", refused, true},
		{"connection refused, wrapped", fmt.Errorf("reading node n: %w", refused), true},
		{"503", apierrors.NewServiceUnavailable("etcd is restarting"), true},
		{"500", apierrors.NewInternalError(errors.New("boom")), true},
		{"504", apierrors.NewTimeoutError("slow", 1), true},
		{"429", apierrors.NewTooManyRequests("slow down", 1), true},
		{"a dial timeout", &url.Error{Op: "Get", URL: "https://api:6443/", Err: timeoutErr{}}, true},
		{"404", apierrors.NewNotFound(pods, "p"), false},
		{"403", apierrors.NewForbidden(pods, "p", errors.New("no")), false},
		{"409", apierrors.NewConflict(pods, "p", errors.New("changed")), false},
		{"cancelled", context.Canceled, false},
		{"a certificate error", &url.Error{Op: "Get", URL: "https://api:6443/", Err: errors.New("x509: certificate signed by unknown authority")}, false},
	} {
		if got := transientAPIError(tc.err); got != tc.want {
			t.Errorf("%s: transient = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// syscallErr is an *os.SyscallError-like wrapper, so the chain is
// the dialer's: url.Error > net.OpError > syscall error > errno.
type syscallErr struct{ errno syscall.Errno }

func (e *syscallErr) Error() string { return "connect: " + e.errno.Error() }
func (e *syscallErr) Unwrap() error { return e.errno }

type timeoutErr struct{}

func (timeoutErr) Error() string   { return "i/o timeout" }
func (timeoutErr) Timeout() bool   { return true }
func (timeoutErr) Temporary() bool { return true }

// flakyTransport fails, with connection refused, the requests that match
// while its budget of failures lasts; the others reach the API server.
type flakyTransport struct {
	next  http.RoundTripper
	mu    sync.Mutex
	match func(*http.Request) bool
	left  int
	seen  int
}

func (f *flakyTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	f.mu.Lock()
	fail := f.match(r) && f.left > 0
	if fail {
		f.left--
		f.seen++
	}
	f.mu.Unlock()
	if fail {
		return nil, &net.OpError{Op: "dial", Net: "tcp", Err: &syscallErr{syscall.ECONNREFUSED}}
	}
	return f.next.RoundTrip(r)
}

func (f *flakyTransport) failures(n int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.left, f.seen = n, 0
}

// TestDrainRidesOutAnAPIServerRestart, against the real API server: an
// eviction, and the wait for the evicted pod to go, that meet an API
// server refusing connections (its restart during a control plane's
// upgrade) ask again until the drain's timeout; past it, the error says
// the API server's last answer. retryTransient asks again within its
// limit and not beyond; an answer about the object is not retried.
func TestDrainRidesOutAnAPIServerRestart(t *testing.T) {
	env := testenv.Get(t)
	admin := kubernetes.NewForConfigOrDie(env.AdminConfig())
	ctx := context.Background()
	ns := env.NewNamespace(t, "drain-flaky", nil)
	cfg := env.AdminConfig()
	flaky := &flakyTransport{}
	cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper { flaky.next = rt; return flaky }
	client := kubernetes.NewForConfigOrDie(cfg)
	zero := int64(0)
	create := func(name, node string) {
		t.Helper()
		p := pod(name, ns, node, &metav1.OwnerReference{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "web", UID: "uid-web", Controller: new(bool)})
		*p.OwnerReferences[0].Controller = true
		p.Spec.TerminationGracePeriodSeconds = &zero
		if _, err := admin.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	d := &drainer{client: client, gracePeriod: 0, timeout: 5 * time.Second, evictRetry: 50 * time.Millisecond, poll: 50 * time.Millisecond, chunk: 50}
	// evict runs under the drain's deadline, as drain calls it.
	evict := func(p corev1.Pod) error {
		ctx, cancel := context.WithTimeout(ctx, d.timeout)
		defer cancel()
		return d.evict(ctx, p)
	}

	registerNode(t, admin, "flaky-a", "192.0.2.81")
	create("evict-a", "flaky-a")
	evictions := func(r *http.Request) bool {
		return r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/eviction")
	}
	flaky.match = evictions
	flaky.failures(3)
	if err := evict(mustPod(t, admin, ns, "evict-a")); err != nil {
		t.Fatalf("an eviction refused 3 times by a restarting API server: %v", err)
	}
	if flaky.seen != 3 {
		t.Errorf("%d evictions failed, want 3", flaky.seen)
	}

	create("wait-a", "flaky-a")
	p := mustPod(t, admin, ns, "wait-a")
	flaky.match = func(r *http.Request) bool {
		return r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/pods/wait-a")
	}
	flaky.failures(4)
	if err := evict(p); err != nil {
		t.Fatalf("a wait that meets a restarting API server 4 times: %v", err)
	}

	// Failing past the timeout: the last answer is said.
	create("down-a", "flaky-a")
	p = mustPod(t, admin, ns, "down-a")
	flaky.match = evictions
	flaky.failures(1 << 20)
	d.timeout = 400 * time.Millisecond
	err := evict(p)
	if err == nil || !strings.Contains(err.Error(), "evicting pod "+ns+"/down-a: not done within 400ms") || !strings.Contains(err.Error(), "connection refused") {
		t.Errorf("an API server down past the timeout: %v", err)
	}
	flaky.failures(0)

	// retryTransient: within the limit, beyond it, and an answer.
	calls := 0
	err = retryTransient(ctx, time.Second, 10*time.Millisecond, func(ctx context.Context) error {
		calls++
		if calls < 3 {
			return apierrors.NewServiceUnavailable("restarting")
		}
		return nil
	})
	if err != nil || calls != 3 {
		t.Errorf("retryTransient within its limit: %v after %d calls", err, calls)
	}
	calls = 0
	start := time.Now()
	err = retryTransient(ctx, 200*time.Millisecond, 10*time.Millisecond, func(ctx context.Context) error {
		calls++
		return apierrors.NewServiceUnavailable("restarting")
	})
	if !apierrors.IsServiceUnavailable(err) || time.Since(start) < 200*time.Millisecond || time.Since(start) > 5*time.Second {
		t.Errorf("retryTransient past its limit: %v after %s", err, time.Since(start))
	}
	calls = 0
	err = retryTransient(ctx, time.Minute, 10*time.Millisecond, func(ctx context.Context) error {
		calls++
		return apierrors.NewNotFound(schema.GroupResource{Resource: "nodes"}, "n")
	})
	if !apierrors.IsNotFound(err) || calls != 1 {
		t.Errorf("retryTransient with an answer: %v after %d calls, want one call", err, calls)
	}
}

func mustPod(t *testing.T, c kubernetes.Interface, ns, name string) corev1.Pod {
	t.Helper()
	p, err := c.CoreV1().Pods(ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return *p
}
