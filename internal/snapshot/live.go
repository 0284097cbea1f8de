package snapshot

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"sort"
	"strings"
	"sync"

	"github.com/go-json-experiment/json/jsontext"
	jsonv1 "github.com/go-json-experiment/json/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/version"
	"k8s.io/client-go/rest"

	"github.com/hybridctl/hybridctl/internal/kubeclient"
)

// LiveOptions tune the live loader.
type LiveOptions struct {
	// Kinds to list; the checks say which they need.
	Kinds []Kind
	// Namespace restricts namespaced kinds to one namespace ("" = all).
	Namespace string
	// PageSize is the LIST limit (default 500).
	PageSize int
	// Concurrency caps the kinds listed at once (default 6).
	Concurrency int
	// Read is how each kind is read (ReadCached by default).
	Read ReadMode
	// AllPods keeps every pod a controller owns; by default only those a
	// check can read are kept (Snapshot.SlimPods).
	AllPods bool
}

// ReadMode is how LoadLive reads a kind.
type ReadMode int

const (
	// ReadCached, the default: one LIST from the API server's watch cache
	// (resourceVersion=0), decoded item by item as the response streams
	// in, pods in protobuf (cachedList).
	ReadCached ReadMode = iota
	// ReadWatchList: a watch-list stream (a watch with
	// sendInitialEvents=true, ended by the initial-events-end bookmark),
	// every kind at one consistent resourceVersion, at several times the
	// API server's CPU and about a second more per kind (the bookmark
	// waits for the watch cache's next one-second tick); paginated LISTs
	// when the server or the user's RBAC (no watch verb) does not allow
	// it. doctor --consistent-read.
	ReadWatchList
	// ReadPaginated: LISTs of PageSize objects, following continue tokens.
	ReadPaginated
)

// resource is where a kind is listed; alternatives are tried in order
// while the previous one is not served (Calico's projectcalico.org/v3
// native CRDs, then the older crd.projectcalico.org/v1).
type resource struct {
	groupVersion string
	plural       string
	namespaced   bool
}

func (r resource) path(ns string) string {
	base := "/apis/" + r.groupVersion
	if r.groupVersion == "v1" {
		base = "/api/v1"
	}
	if r.namespaced && ns != "" {
		return base + "/namespaces/" + url.PathEscape(ns) + "/" + r.plural
	}
	return base + "/" + r.plural
}

// LoadLive lists the kinds in opts from the API server behind cfg. It
// never writes. Kinds are listed concurrently, each with paginated LISTs
// (limit and continue); every page is decoded straight into the small
// structs of this package and then dropped, so memory holds only what the
// checks read. A kind that is forbidden or not served (CRD absent) is
// recorded in Unavailable with the reason. An unreachable API server, or
// a LIST that fails otherwise, is an error.
func LoadLive(ctx context.Context, cfg *rest.Config, opts LiveOptions) (*Snapshot, error) {
	if opts.PageSize <= 0 {
		opts.PageSize = 500
	}
	if opts.Concurrency <= 0 {
		opts.Concurrency = 6
	}
	cfg = rest.CopyConfig(cfg)
	if cfg.QPS == 0 {
		cfg.QPS, cfg.Burst = 50, 100
	}
	cs, err := kubeclient.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("API client for %s: %w", cfg.Host, err)
	}
	v, err := ServerVersion(ctx, cs.Discovery().RESTClient())
	if err != nil {
		return nil, fmt.Errorf("reach API server %s: %w", cfg.Host, err)
	}
	s := New()
	s.Live = true
	if !opts.AllPods {
		s.SlimPods()
	}
	s.ServerVersion = v.GitVersion
	rc := cs.CoreV1().RESTClient()

	kinds := append([]Kind(nil), opts.Kinds...)
	sort.Slice(kinds, func(i, j int) bool {
		if bi, bj := bigFirst(kinds[i]), bigFirst(kinds[j]); bi != bj {
			return bi < bj
		}
		return kinds[i] < kinds[j]
	})
	listCM := false
	for _, k := range kinds {
		listCM = listCM || k == KindConfigMap
	}
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
	)
	fail := func(err error) {
		mu.Lock()
		errs = append(errs, err)
		mu.Unlock()
	}
	// Workers take the kinds in that order (one worker: exactly that
	// order): the biggest first, so that the longest read starts at once.
	type job struct {
		k  Kind
		rs []resource
	}
	jobs := make(chan job)
	for range opts.Concurrency {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range jobs {
				if err := s.listKind(ctx, rc, j.k, j.rs, opts); err != nil {
					fail(err)
				}
			}
		}()
	}
	for _, k := range kinds {
		if k == KindClusterConfiguration {
			if listCM {
				// The ConfigMap list carries kubeadm-config.
				s.locked(func() { s.Listed[k] = true })
				continue
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				if err := s.getKubeadmConfig(ctx, rc); err != nil {
					fail(err)
				}
			}()
			continue
		}
		if rs := resourcesFor(k); rs != nil {
			jobs <- job{k, rs}
		}
	}
	close(jobs)
	wg.Wait()
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	s.DropUnreadPods()
	s.Sort()
	return s, nil
}

// bigFirst ranks the kinds a cluster usually has most of (pods, their
// ReplicaSets, nodes) before the others (ranked equal, then by name).
func bigFirst(k Kind) int {
	switch k {
	case KindPod:
		return 0
	case KindReplicaSet:
		return 1
	case KindNode:
		return 2
	}
	return 3
}

// page is one LIST response, items kept raw until decoded one by one.
type page struct {
	Metadata struct {
		Continue string `json:"continue"`
	} `json:"metadata"`
	Items []json.RawMessage `json:"items"`
}

func (s *Snapshot) listKind(ctx context.Context, rc rest.Interface, k Kind, rs []resource, opts LiveOptions) error {
	var reasons []string
	for _, r := range rs {
		err := s.listResource(ctx, rc, k, r, opts)
		switch {
		case err == nil:
			// A namespaced kind listed in one namespace is not complete:
			// "X does not exist" cannot be concluded from it.
			if !r.namespaced || opts.Namespace == "" {
				s.locked(func() { s.Listed[k] = true })
			}
			return nil
		case apierrors.IsForbidden(err):
			s.locked(func() {
				s.Unavailable[k] = fmt.Sprintf("cannot list %s: forbidden (%s)", r.resourceName(), apierrors.ReasonForError(err))
				if st, ok := err.(apierrors.APIStatus); ok && st.Status().Message != "" {
					s.Unavailable[k] = "cannot list " + r.resourceName() + ": " + st.Status().Message
				}
			})
			return nil
		case apierrors.IsNotFound(err):
			reasons = append(reasons, r.resourceName())
			continue
		default:
			return fmt.Errorf("list %s: %w", r.resourceName(), err)
		}
	}
	s.locked(func() {
		s.Unavailable[k] = fmt.Sprintf("%s not served by the API server (CRD not installed)", strings.Join(reasons, " or "))
	})
	return nil
}

func (r resource) resourceName() string {
	g := r.groupVersion
	if i := strings.Index(g, "/"); i >= 0 {
		return r.plural + "." + g[:i]
	}
	return r.plural
}

func (s *Snapshot) listResource(ctx context.Context, rc rest.Interface, k Kind, r resource, opts LiveOptions) error {
	if opts.Read == ReadCached {
		// Any refusal is the server's answer for the kind (listKind
		// reports a forbidden or not served one); a LIST of pages would
		// be refused the same way.
		_, err := s.cachedList(ctx, rc, k, r, opts)
		return err
	}
	if opts.Read == ReadWatchList && !s.noWatchList.Load() {
		n, err := s.watchList(ctx, rc, k, r, opts)
		if err == nil {
			return nil
		}
		var status apierrors.APIStatus
		if n > 0 || apierrors.IsNotFound(err) || (!errors.As(err, &status) && !errors.Is(err, errNoInitialEventsEnd)) {
			// Part of the objects were added already, the resource is
			// not served (listKind tries the next one; a LIST would be
			// refused the same way), or the failure is not an answer
			// from the API server (the connection): do not retry. Any refusal (watch forbidden, watch-list not
			// supported, e.g. "the required storage feature
			// RequestWatchProgress is disabled" with etcd 3.4) falls back
			// to paginated LISTs, which report real errors themselves.
			return err
		}
		if !apierrors.IsForbidden(err) {
			// The server does not do watch-list: do not ask for the
			// other kinds.
			s.noWatchList.Store(true)
		}
	}
	// Pages are fetched and decoded in a pipeline: while one page's items
	// are decoded into the small structs, the next page is on its way.
	items := make(chan []json.RawMessage, 1)
	decoded := make(chan error, 1)
	go func() {
		var derr error
		for batch := range items {
			if derr != nil {
				continue
			}
			for _, it := range batch {
				if derr = s.addListed(k, r, it); derr != nil {
					break
				}
			}
		}
		decoded <- derr
	}()
	ferr := s.fetchPages(ctx, rc, r, opts, items)
	close(items)
	if derr := <-decoded; derr != nil {
		return derr
	}
	return ferr
}

// fetchPages sends each page's items to out, following continue tokens.
func (s *Snapshot) fetchPages(ctx context.Context, rc rest.Interface, r resource, opts LiveOptions, out chan<- []json.RawMessage) error {
	cont := ""
	for {
		params := []string{"limit", fmt.Sprint(opts.PageSize)}
		if cont != "" {
			params = append(params, "continue", cont)
		}
		body, err := get(ctx, rc, r, opts, "application/json", params...)
		if err != nil {
			return err
		}
		var p page
		err = json.NewDecoder(body).Decode(&p)
		body.Close()
		if err != nil {
			return fmt.Errorf("decode page of %s: %w", r.resourceName(), err)
		}
		out <- p.Items
		if p.Metadata.Continue == "" {
			return nil
		}
		cont = p.Metadata.Continue
	}
}

// cachedList reads a kind with one LIST from the watch cache
// (resourceVersion=0) and adds each item as it is decoded from the
// response stream, so that the client never holds the list: pods in
// protobuf (protolist.go), the others, and pods when the server does not
// answer in protobuf, in JSON. It returns how many objects it added.
func (s *Snapshot) cachedList(ctx context.Context, rc rest.Interface, k Kind, r resource, opts LiveOptions) (int, error) {
	if k == KindPod {
		n, err := s.listPodsProtobuf(ctx, rc, r, opts)
		if n > 0 || !errors.Is(err, errNotProtobuf) {
			return n, err
		}
	}
	body, err := get(ctx, rc, r, opts, "application/json", "resourceVersion", "0")
	if err != nil {
		return 0, err
	}
	defer body.Close()
	n := 0
	err = readJSONListItems(newJSONDecoder(body), func(item []byte) error {
		if err := s.addListed(k, r, item); err != nil {
			return err
		}
		n++
		return nil
	})
	return n, err
}

// get opens a GET of r's collection (in opts.Namespace) accepting accept,
// with params as name, value pairs.
func get(ctx context.Context, rc rest.Interface, r resource, opts LiveOptions, accept string, params ...string) (io.ReadCloser, error) {
	req := rc.Get().AbsPath(r.path(opts.Namespace)).SetHeader("Accept", accept)
	for i := 0; i+1 < len(params); i += 2 {
		req = req.Param(params[i], params[i+1])
	}
	return req.Stream(ctx)
}

// newJSONDecoder reads JSON with encoding/json's leniency (invalid UTF-8
// and duplicate names accepted), as decodeJSON does.
func newJSONDecoder(r io.Reader) *jsontext.Decoder {
	return jsontext.NewDecoder(r, jsonv1.DefaultOptionsV1())
}

// addListed adds one object of kind k read from r; an error names it.
func (s *Snapshot) addListed(k Kind, r resource, item []byte) error {
	if err := s.AddKind(k, r.groupVersion, string(k), item, Source{}); err != nil {
		return fmt.Errorf("%s %s: %w", k, nameOf(item), err)
	}
	return nil
}

// readJSONListItems reads a JSON List object from dec and calls item with
// each element of its items array, in dec's buffer (valid only during the
// call); the other fields are skipped.
func readJSONListItems(dec *jsontext.Decoder, item func([]byte) error) error {
	tok, err := dec.ReadToken()
	if err != nil {
		return unexpected(err)
	}
	if tok.Kind() != '{' {
		return fmt.Errorf("the LIST response is %s, not an object", tok.Kind())
	}
	for dec.PeekKind() == '"' {
		name, err := dec.ReadToken()
		if err != nil {
			return unexpected(err)
		}
		if name.String() != "items" || dec.PeekKind() != '[' {
			if err := dec.SkipValue(); err != nil {
				return unexpected(err)
			}
			continue
		}
		if _, err := dec.ReadToken(); err != nil {
			return unexpected(err)
		}
		for dec.PeekKind() != ']' {
			v, err := dec.ReadValue()
			if err != nil {
				return unexpected(err)
			}
			if err := item(v); err != nil {
				return err
			}
		}
		if _, err := dec.ReadToken(); err != nil {
			return unexpected(err)
		}
	}
	if _, err := dec.ReadToken(); err != nil {
		return unexpected(err)
	}
	return nil
}

// errNoInitialEventsEnd: the watch ended before the bookmark that closes
// the initial events (an API server without watch-list support).
var errNoInitialEventsEnd = errors.New("watch ended before the initial-events-end bookmark")

// watchList streams a kind's objects from the watch cache: a watch with
// sendInitialEvents=true sends every object as an ADDED event and then a
// BOOKMARK annotated k8s.io/initial-events-end. Objects are decoded one by
// one as they arrive, so neither the server nor this client builds the
// whole list in memory. It returns how many objects it added.
func (s *Snapshot) watchList(ctx context.Context, rc rest.Interface, k Kind, r resource, opts LiveOptions) (int, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	body, err := get(ctx, rc, r, opts, "application/json", "watch", "true", "sendInitialEvents", "true",
		"resourceVersionMatch", "NotOlderThan", "allowWatchBookmarks", "true", "timeoutSeconds", "600")
	if err != nil {
		return 0, err
	}
	defer body.Close()
	n := 0
	err = readWatchEvents(newJSONDecoder(body), func(typ string, obj []byte) (bool, error) {
		switch typ {
		case "ADDED":
			if err := s.addListed(k, r, obj); err != nil {
				return false, err
			}
			n++
			return false, nil
		case "BOOKMARK":
			var b struct {
				Metadata struct {
					Annotations map[string]string `json:"annotations"`
				} `json:"metadata"`
			}
			return json.Unmarshal(obj, &b) == nil && b.Metadata.Annotations["k8s.io/initial-events-end"] == "true", nil
		case "ERROR":
			var st metav1.Status
			if json.Unmarshal(obj, &st) == nil {
				return false, &apierrors.StatusError{ErrStatus: st}
			}
			return false, fmt.Errorf("watch %s: error event", r.resourceName())
		default:
			// MODIFIED/DELETED cannot come before the initial events end.
			return false, fmt.Errorf("watch %s: unexpected %s event before the initial events ended", r.resourceName(), typ)
		}
	})
	switch {
	case err == nil:
		return n, nil
	case errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF):
		return n, errNoInitialEventsEnd
	case errors.As(err, new(*jsontext.SyntacticError)):
		return n, fmt.Errorf("watch %s: %w", r.resourceName(), err)
	}
	return n, err
}

// readWatchEvents reads watch events ({"type": T, "object": O}, one after
// another) from dec and calls handle with each event's type and object
// until handle says stop, handle fails, or the stream ends (io.EOF). The
// object is the raw JSON in dec's buffer, valid only during the call: the
// stream is scanned once, and each object is decoded straight from it
// (encoding/json's Decoder scanned every event twice before its object was
// decoded a third time: 45% of doctor's CPU at 150,000 pods). An object
// that comes before its type is copied first.
func readWatchEvents(dec *jsontext.Decoder, handle func(typ string, obj []byte) (stop bool, err error)) error {
	for {
		tok, err := dec.ReadToken()
		if err != nil {
			return err
		}
		if tok.Kind() != '{' {
			return fmt.Errorf("watch event at byte %d is %s, not an object", dec.InputOffset(), tok.Kind())
		}
		var (
			typ     string
			held    []byte
			handled bool
		)
		for dec.PeekKind() == '"' {
			name, err := dec.ReadToken()
			if err != nil {
				return err
			}
			switch name.String() {
			case "type":
				t, err := dec.ReadToken()
				if err != nil {
					return err
				}
				if t.Kind() != '"' {
					return fmt.Errorf("watch event at byte %d: type is %s, not a string", dec.InputOffset(), t.Kind())
				}
				typ = t.String()
			case "object":
				v, err := dec.ReadValue()
				if err != nil {
					return err
				}
				if typ == "" {
					held = bytes.Clone(v)
					continue
				}
				handled = true
				if stop, err := handle(typ, v); err != nil || stop {
					return err
				}
			default:
				if err := dec.SkipValue(); err != nil {
					return err
				}
			}
		}
		if tok, err = dec.ReadToken(); err != nil {
			return err
		}
		if tok.Kind() != '}' {
			return fmt.Errorf("watch event at byte %d: %s where a field name belongs", dec.InputOffset(), tok.Kind())
		}
		if !handled {
			if stop, err := handle(typ, held); err != nil || stop {
				return err
			}
		}
	}
}

// getKubeadmConfig reads kube-system/kubeadm-config alone, when ConfigMaps
// are not listed.
func (s *Snapshot) getKubeadmConfig(ctx context.Context, rc rest.Interface) error {
	body, err := rc.Get().AbsPath("/api/v1/namespaces/"+KubeadmConfigNamespace+"/configmaps/"+KubeadmConfigName).
		SetHeader("Accept", "application/json").DoRaw(ctx)
	switch {
	case err == nil:
	case apierrors.IsNotFound(err):
		s.locked(func() { s.Listed[KindClusterConfiguration] = true })
		return nil
	case apierrors.IsForbidden(err):
		s.locked(func() {
			s.Unavailable[KindClusterConfiguration] = "cannot get configmap kube-system/kubeadm-config: forbidden"
		})
		return nil
	default:
		return fmt.Errorf("get configmap %s/%s: %w", KubeadmConfigNamespace, KubeadmConfigName, err)
	}
	if err := s.AddKind(KindConfigMap, "v1", "ConfigMap", body, Source{}); err != nil {
		return fmt.Errorf("configmap %s/%s: %w", KubeadmConfigNamespace, KubeadmConfigName, err)
	}
	s.locked(func() { s.Listed[KindClusterConfiguration] = true })
	return nil
}

// ServerVersion is discovery's ServerVersion (GET /version), but honouring
// ctx: client-go's own call cannot be cancelled.
func ServerVersion(ctx context.Context, rc rest.Interface) (*version.Info, error) {
	raw, err := rc.Get().AbsPath("/version").Do(ctx).Raw()
	if err != nil {
		return nil, err
	}
	var v version.Info
	if err := json.Unmarshal(raw, &v); err != nil {
		return nil, fmt.Errorf("decode /version: %w", err)
	}
	return &v, nil
}
