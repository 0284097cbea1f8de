package artifacts

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// PlanImage is one entry of `hybridctl plan -o json` .images[].
type PlanImage struct {
	Name  string `json:"name"`
	Image string `json:"image"`
	OS    string `json:"os"`
}

// PlanImages runs the built hybridctl's `plan -o json -f SPEC` and returns
// its .kubernetesVersion and .images[].
func (b *Builder) PlanImages(ctx context.Context, spec string) (string, []PlanImage, error) {
	bin, err := b.Path(ctx, "hybridctl")
	if err != nil {
		return "", nil, err
	}
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, bin, "plan", "-o", "json", "-f", spec)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return "", nil, fmt.Errorf("hybridctl plan -o json -f %s: %w\n%s%s", spec, err, stdout.Bytes(), stderr.Bytes())
	}
	var p struct {
		KubernetesVersion string      `json:"kubernetesVersion"`
		Images            []PlanImage `json:"images"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &p); err != nil {
		return "", nil, fmt.Errorf("hybridctl plan -o json -f %s: %w", spec, err)
	}
	if len(p.Images) == 0 {
		return "", nil, fmt.Errorf("hybridctl plan -o json -f %s lists no images", spec)
	}
	return p.KubernetesVersion, p.Images, nil
}

// Unbuildable are images plan may list that cannot be built here (Calico's
// modules are not on the module proxy): the lab runs its own pod network in
// their place (docs/e2e.md).
func unbuildable(repo string) bool {
	return strings.Contains(repo, "calico") || strings.Contains(repo, "tigera")
}

// Pushed is one image written to the registry.
type Pushed struct {
	Ref    string // as plan lists it (or the extra image's reference)
	Digest string
}

// PushOptions say where images go.
type PushOptions struct {
	// Registry, when set, replaces the spec's images.registry host[:port]
	// (the first path element of every reference) to push somewhere else,
	// for example 127.0.0.1:PORT in tests.
	Registry string
	// CA is a PEM file whose certificates alone are trusted for the
	// registry's TLS certificate.
	CA string
}

// PushImages builds every Linux image plan lists for the spec, from the
// binaries of the spec's Kubernetes version, plus the extra images
// (hybridctl, podnet) under the same registry, and pushes them. Windows
// images and Calico's are skipped with a line on the log.
func (b *Builder) PushImages(ctx context.Context, spec string, opts PushOptions) ([]Pushed, error) {
	kubernetes, planned, err := b.PlanImages(ctx, spec)
	if err != nil {
		return nil, err
	}
	rel, err := LookupRelease(kubernetes)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", spec, err)
	}
	todo, err := selectImages(planned, rel, b.Log)
	if err != nil {
		return nil, err
	}
	tr, err := transport(opts.CA)
	if err != nil {
		return nil, err
	}
	built := map[string]v1.Image{}
	writes := map[name.Reference]remote.Taggable{}
	var out []Pushed
	for _, w := range todo {
		img, ok := built[w.def.Name]
		if !ok {
			if img, err = b.BuildImage(ctx, rel.Kubernetes, w.def); err != nil {
				return nil, err
			}
			built[w.def.Name] = img
		}
		target := w.ref
		if opts.Registry != "" {
			_, rest, _ := strings.Cut(w.ref, "/")
			target = opts.Registry + "/" + rest
		}
		ref, err := name.ParseReference(target, name.StrictValidation)
		if err != nil {
			return nil, fmt.Errorf("image reference %s: %w", target, err)
		}
		dg, err := img.Digest()
		if err != nil {
			return nil, fmt.Errorf("image %s: %w", w.ref, err)
		}
		writes[ref] = img
		out = append(out, Pushed{Ref: w.ref, Digest: dg.String()})
	}
	began := time.Now()
	if err := remote.MultiWrite(writes, remote.WithContext(ctx), remote.WithTransport(tr)); err != nil {
		return nil, fmt.Errorf("push %d images: %w", len(writes), err)
	}
	fmt.Fprintf(b.Log, "lab: pushed %d images in %s\n", len(writes), time.Since(began).Round(time.Second))
	slices.SortFunc(out, func(a, b Pushed) int { return strings.Compare(a.Ref, b.Ref) })
	return slices.CompactFunc(out, func(a, b Pushed) bool { return a.Ref == b.Ref }), nil
}

type want struct {
	ref string
	def ImageDef
}

// selectImages matches plan's images to the lab's definitions by their
// repository's last path element, skips Windows and Calico images (with a
// line on log), refuses any other image it cannot build and any image of
// Kubernetes whose tag is not the release's (the binaries in it would not
// be what the tag says), and adds the extra images under the registry of
// plan's first image.
func selectImages(planned []PlanImage, rel Release, log io.Writer) ([]want, error) {
	var todo []want
	registry := ""
	for _, pi := range planned {
		repo, _, _ := strings.Cut(pi.Image, "@")
		tag := ""
		if i := strings.LastIndex(repo, ":"); i > strings.LastIndex(repo, "/") {
			repo, tag = repo[:i], repo[i+1:]
		}
		if registry == "" {
			registry, _, _ = strings.Cut(repo, "/")
		}
		switch {
		case pi.OS == "windows":
			fmt.Fprintf(log, "lab: %s: a Windows image, not built\n", pi.Image)
			continue
		case unbuildable(repo):
			fmt.Fprintf(log, "lab: %s: Calico cannot be built here; the lab's pod network replaces it\n", pi.Image)
			continue
		}
		d, ok := LookupImage(path.Base(repo))
		if !ok {
			return nil, fmt.Errorf("plan lists %s (%s), which the lab cannot build", pi.Image, pi.Name)
		}
		if w := rel.tag(d.Name); w != "" && tag != w && !strings.HasPrefix(tag, w+"-") {
			return nil, fmt.Errorf("plan lists %s (%s); the lab builds %s:%s for Kubernetes %s", pi.Image, pi.Name, d.Name, w, rel.Kubernetes)
		}
		todo = append(todo, want{pi.Image, d})
	}
	if registry == "" {
		return nil, errors.New("plan lists no images")
	}
	for _, n := range ExtraImages {
		d, _ := LookupImage(n)
		todo = append(todo, want{registry + "/" + ExtraRepository + "/" + n + ":" + ExtraTag, d})
	}
	return todo, nil
}

// tag is the version the release's image of a name carries (etcd's before
// its image revision: 3.6.8 of 3.6.8-0), empty for an image that is not
// the release's own (pause, hello, ...).
func (r Release) tag(image string) string {
	switch image {
	case "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kube-proxy":
		return r.Kubernetes
	case "etcd":
		return r.Etcd
	case "coredns":
		return r.CoreDNS
	}
	return ""
}

// transport trusts only the CA file's certificates (none given: the
// system's), with a deadline on every stage of a request.
func transport(caFile string) (http.RoundTripper, error) {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if caFile != "" {
		pem, err := os.ReadFile(caFile)
		if err != nil {
			return nil, fmt.Errorf("registry CA: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("registry CA %s holds no PEM certificate", caFile)
		}
		cfg.RootCAs = pool
	}
	return &http.Transport{
		TLSClientConfig:       cfg,
		TLSHandshakeTimeout:   30 * time.Second,
		ResponseHeaderTimeout: 2 * time.Minute,
		IdleConnTimeout:       90 * time.Second,
		Proxy:                 nil, // the lab registry is on the bridge; never through a proxy
	}, nil
}
