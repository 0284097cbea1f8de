// Package kubeclient builds the Kubernetes API client configuration every
// hybridctl command uses: kubectl's connection flags (--kubeconfig,
// --context, -n, --request-timeout, ...), a deadline on every request, a
// clear error when there is no kubeconfig at all, and kubectl-like request
// tracing with -v.
package kubeclient

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/client-go/rest"

	"github.com/hybridctl/hybridctl/internal/suggest"
)

// DefaultRequestTimeout is how long one API request may take when
// --request-timeout is not given (kubectl's default, 0, waits for ever).
const DefaultRequestTimeout = 30 * time.Second

// TraceLevel is the -v level from which requests are traced (kubectl's).
const TraceLevel = 6

// Flags are the connection flags of a command that talks to the API.
type Flags struct {
	Config *ConfigFlags
	// Verbosity is -v: from TraceLevel on, each request is traced.
	Verbosity int
	// InCluster reads a pod's service-account configuration
	// (rest.InClusterConfig when nil; a test gives its own).
	InCluster func() (*rest.Config, error)
}

// NewFlags returns the flags with hybridctl's defaults.
func NewFlags() *Flags {
	cf := NewConfigFlags()
	t := DefaultRequestTimeout.String()
	cf.Timeout = &t
	return &Flags{Config: cf}
}

// ConnectionFlag is the annotation AddFlags puts on each flag it
// registers, so that help can show them apart from a command's own flags,
// as kubectl shows its global options apart.
const ConnectionFlag = "hybridctl.dev/connection-flag"

// IsConnectionFlag says whether fl is one of AddFlags' flags.
func IsConnectionFlag(fl *pflag.Flag) bool {
	_, ok := fl.Annotations[ConnectionFlag]
	return ok
}

// WithoutNamespace leaves -n/--namespace out of the flags, for a command
// that reads no namespaced objects of its own choosing.
func (f *Flags) WithoutNamespace() *Flags {
	f.Config.Namespace = nil
	return f
}

// AddFlags registers the flags on fs, each annotated ConnectionFlag.
func (f *Flags) AddFlags(fs *pflag.FlagSet) {
	own := pflag.NewFlagSet("connection", pflag.ContinueOnError)
	f.Config.AddFlags(own)
	if fl := own.Lookup("request-timeout"); fl != nil {
		fl.Usage = "how long one API request may take (e.g. 10s, 2m); 0 means the default, " + DefaultRequestTimeout.String() + ": no request waits for ever"
	}
	own.IntVarP(&f.Verbosity, "v", "v", 0, fmt.Sprintf("log level; %d or more traces each API request (method, URL, status, latency; never headers or bodies)", TraceLevel))
	own.VisitAll(func(fl *pflag.Flag) {
		_ = own.SetAnnotation(fl.Name, ConnectionFlag, []string{"true"})
	})
	fs.AddFlagSet(own)
}

// Namespace returns -n when it was given, else "".
func (f *Flags) Namespace(fs *pflag.FlagSet) string {
	if fs.Changed("namespace") && f.Config.Namespace != nil {
		return *f.Config.Namespace
	}
	return ""
}

// NoKubeconfigError says that no kubeconfig was found, and where hybridctl
// looked.
type NoKubeconfigError struct {
	Looked []string
	// Empty are the files among Looked that exist but hold no cluster.
	Empty []string
}

func (e *NoKubeconfigError) Error() string {
	if len(e.Empty) > 0 && len(e.Empty) == len(e.Looked) {
		return fmt.Sprintf("%s has no contexts (an empty kubeconfig); pass --kubeconfig FILE or import a cluster with 'hybridctl kubeconfig import'", strings.Join(e.Empty, ", "))
	}
	where := "nowhere"
	if len(e.Looked) > 0 {
		where = strings.Join(e.Looked, ", ")
	}
	env := "$KUBECONFIG is not set"
	if v := os.Getenv("KUBECONFIG"); v != "" {
		env = "$KUBECONFIG=" + v
	}
	return fmt.Sprintf("no kubeconfig found: looked in %s (%s); pass --kubeconfig FILE or import a cluster with 'hybridctl kubeconfig import'", where, env)
}

// UnknownContextError is a --context that the kubeconfig does not have
// (a usage error: the user typed a name).
type UnknownContextError struct {
	Context string
	// Contexts are the kubeconfig's contexts, sorted.
	Contexts []string
	// Files are the kubeconfig files that were read.
	Files []string
}

func (e *UnknownContextError) Error() string {
	where := "the kubeconfig"
	if len(e.Files) > 0 {
		where = strings.Join(e.Files, ", ")
	}
	msg := fmt.Sprintf("--context %q: %s has no such context", e.Context, where)
	if len(e.Contexts) == 0 {
		return msg + " (it has no contexts)"
	}
	if s, ok := suggest.Closest(e.Context, e.Contexts); ok {
		msg += fmt.Sprintf("; did you mean %q?", s)
	}
	return msg + "; its contexts: " + strings.Join(e.Contexts, ", ")
}

// TimeoutError is a request the API server did not answer in time.
type TimeoutError struct {
	Server string
	After  time.Duration
	Err    error
}

func (e *TimeoutError) Error() string {
	return fmt.Sprintf("the API server at %s did not answer within %s", e.Server, seconds(e.After))
}

func (e *TimeoutError) Unwrap() error { return e.Err }

// Timeout lets net.Error-style checks see it as a timeout.
func (e *TimeoutError) Timeout() bool { return true }

// seconds formats d as "30 s", "0.5 s".
func seconds(d time.Duration) string {
	return fmt.Sprintf("%g s", d.Seconds())
}

// RESTConfig builds the client configuration: every request has a
// deadline (--request-timeout; 0 means DefaultRequestTimeout), requests are
// traced to trace from -v TraceLevel on, and a missing kubeconfig is a
// NoKubeconfigError naming where it looked.
func (f *Flags) RESTConfig(trace io.Writer) (*rest.Config, error) {
	loader := f.Config.ToRawKubeConfigLoader()
	raw, err := loader.RawConfig()
	if err != nil {
		for _, path := range loader.ConfigAccess().GetLoadingPrecedence() {
			if isClusterSpec(path) {
				return nil, fmt.Errorf("%s is a hybridctl cluster spec, not a kubeconfig: pass it with -f, and the cluster's kubeconfig with --kubeconfig: %w", path, err)
			}
		}
		return nil, fmt.Errorf("loading the kubeconfig: %w", err)
	}
	if name := f.contextFlag(); name != "" {
		if _, ok := raw.Contexts[name]; !ok {
			names := make([]string, 0, len(raw.Contexts))
			for n := range raw.Contexts {
				names = append(names, n)
			}
			sort.Strings(names)
			var files []string
			for _, path := range loader.ConfigAccess().GetLoadingPrecedence() {
				if st, err := os.Stat(path); err == nil && st.Mode().IsRegular() {
					files = append(files, path)
				}
			}
			return nil, &UnknownContextError{Context: name, Contexts: names, Files: files}
		}
	}
	server := f.Config.APIServer != nil && *f.Config.APIServer != ""
	explicit := f.Config.KubeConfig != nil && *f.Config.KubeConfig != ""
	inCluster := os.Getenv("KUBERNETES_SERVICE_HOST") != ""
	var cfg *rest.Config
	switch {
	case len(raw.Clusters) == 0 && !server && !explicit && inCluster:
		// In a pod without a kubeconfig (the in-cluster CSR approver):
		// its service account. client-go's own fallback does not apply
		// here: it falls back only when the merged configuration equals
		// the defaults, and hybridctl's --request-timeout default makes it
		// differ, so requests went to http://localhost:8080 (found in the
		// lab).
		icc := f.InCluster
		if icc == nil {
			icc = rest.InClusterConfig
		}
		if cfg, err = icc(); err != nil {
			return nil, fmt.Errorf("loading the in-cluster configuration (service account): %w", err)
		}
		if f.Config.Timeout != nil && *f.Config.Timeout != "" && *f.Config.Timeout != "0" {
			if cfg.Timeout, err = time.ParseDuration(*f.Config.Timeout); err != nil {
				return nil, fmt.Errorf("--request-timeout %q: %w", *f.Config.Timeout, err)
			}
		}
	case len(raw.Clusters) == 0 && !server:
		var looked, empty []string
		if explicit {
			looked = []string{*f.Config.KubeConfig}
		} else {
			looked = loader.ConfigAccess().GetLoadingPrecedence()
		}
		for _, path := range looked {
			if st, err := os.Stat(path); err == nil && st.Mode().IsRegular() {
				empty = append(empty, path)
			}
		}
		return nil, &NoKubeconfigError{Looked: looked, Empty: empty}
	default:
		if cfg, err = f.Config.ToRESTConfig(); err != nil {
			return nil, fmt.Errorf("loading the kubeconfig: %w", err)
		}
	}
	timeout := cfg.Timeout
	if timeout <= 0 {
		timeout = DefaultRequestTimeout
	}
	Configure(cfg, timeout, f.Verbosity, trace)
	return cfg, nil
}

// contextFlag is --context, or "".
func (f *Flags) contextFlag() string {
	if f.Config.Context == nil {
		return ""
	}
	return *f.Config.Context
}

// isClusterSpec reports whether the file at path starts like a hybridctl
// cluster spec (its apiVersion within the first 4 KiB).
func isClusterSpec(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	buf := make([]byte, 4096)
	n, _ := io.ReadFull(f, buf)
	return bytes.Contains(buf[:n], []byte("hybridctl.dev/v1alpha1"))
}

// Configure gives cfg's requests the deadline timeout and, at verbosity
// TraceLevel or more, a trace on w. cfg.Timeout is cleared: the deadline
// covers a whole request, but only the answer of a watch, which then
// streams for as long as it is read.
func Configure(cfg *rest.Config, timeout time.Duration, verbosity int, w io.Writer) {
	cfg.Timeout = 0
	server := cfg.Host
	prev := cfg.WrapTransport
	var mu sync.Mutex
	cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper {
		if prev != nil {
			rt = prev(rt)
		}
		rt = &deadlineTransport{next: rt, after: timeout, server: server}
		if verbosity >= TraceLevel && w != nil {
			rt = &traceTransport{next: rt, w: w, mu: &mu}
		}
		return rt
	}
}

// deadlineTransport gives each request a deadline: the whole exchange for
// ordinary requests, the response headers for watches.
type deadlineTransport struct {
	next   http.RoundTripper
	after  time.Duration
	server string
}

func isWatch(req *http.Request) bool {
	q := req.URL.Query()
	return q.Get("watch") == "true" || q.Get("watch") == "1" || q.Get("follow") == "true"
}

func (t *deadlineTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx, cancel := context.WithCancel(req.Context())
	var fired atomic.Bool
	timer := time.AfterFunc(t.after, func() { fired.Store(true); cancel() })
	resp, err := t.next.RoundTrip(req.WithContext(ctx))
	if err != nil {
		timer.Stop()
		cancel()
		if fired.Load() {
			return nil, &TimeoutError{Server: t.server, After: t.after, Err: err}
		}
		return nil, err
	}
	if isWatch(req) {
		if !timer.Stop() && fired.Load() {
			_ = resp.Body.Close()
			cancel()
			return nil, &TimeoutError{Server: t.server, After: t.after, Err: context.DeadlineExceeded}
		}
		resp.Body = &deadlineBody{rc: resp.Body, cancel: cancel, t: t}
		return resp, nil
	}
	resp.Body = &deadlineBody{rc: resp.Body, timer: timer, cancel: cancel, fired: &fired, t: t}
	return resp, nil
}

type deadlineBody struct {
	rc     io.ReadCloser
	timer  *time.Timer // nil for a watch
	cancel context.CancelFunc
	fired  *atomic.Bool
	t      *deadlineTransport
}

func (b *deadlineBody) Read(p []byte) (int, error) {
	n, err := b.rc.Read(p)
	if err != nil && !errors.Is(err, io.EOF) && b.fired != nil && b.fired.Load() {
		err = &TimeoutError{Server: b.t.server, After: b.t.after, Err: err}
	}
	return n, err
}

func (b *deadlineBody) Close() error {
	if b.timer != nil {
		b.timer.Stop()
	}
	err := b.rc.Close()
	b.cancel()
	return err
}

// traceTransport writes one line per request: method, URL (without
// credentials), status and latency. Never headers, never bodies.
type traceTransport struct {
	next http.RoundTripper
	w    io.Writer
	mu   *sync.Mutex
}

func (t *traceTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	start := time.Now()
	resp, err := t.next.RoundTrip(req)
	ms := time.Since(start).Milliseconds()
	status := ""
	if err != nil {
		status = "error: " + traceError(err)
	} else {
		status = resp.Status
	}
	u := *req.URL
	u.User = nil
	t.mu.Lock()
	fmt.Fprintf(t.w, "%s %s %s in %d ms\n", req.Method, u.String(), status, ms)
	t.mu.Unlock()
	return resp, err
}

// traceError is a transport error's text: dial and TLS errors, never
// anything a server sent.
func traceError(err error) string {
	if errors.Is(err, context.Canceled) {
		return "cancelled"
	}
	return err.Error()
}
