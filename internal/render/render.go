// Package render writes every artifact of the hybrid cluster guide from a
// plan: kubeadm configuration, Calico resources, Windows RuntimeClasses and
// kube-proxy, per-node preparation scripts and join files, check workloads,
// DNS records and a runbook. It reads only the plan (design §2).
//
// Render is pure: it returns the files; WriteDir puts them on disk
// atomically.
package render

import (
	"embed"
	"fmt"
	"io/fs"
	"net/url"
	"path"
	"regexp"
	"runtime"
	"sort"
	"strings"
	"sync"
	"text/template"

	bootstraputil "k8s.io/cluster-bootstrap/token/util"

	"github.com/hybridctl/hybridctl/internal/csr"
	"github.com/hybridctl/hybridctl/internal/plan"
	"github.com/hybridctl/hybridctl/internal/spec"
)

//go:embed templates/*.tmpl
var templateFS embed.FS

// File is one rendered file, its path relative to the output directory
// (slash-separated).
type File struct {
	Path string
	Data []byte
	Mode fs.FileMode
}

// Options change what Render writes beyond the plan.
type Options struct {
	// Token and CACertHash go into the join files. Empty: placeholders
	// (TokenPlaceholder, CACertHashPlaceholder) that apply fills. Files that
	// hold a token get mode 0600.
	Token      string
	CACertHash string
	// CertificateKey goes into the join files of further control-plane
	// nodes (kubeadm init --upload-certs prints it); empty: a placeholder.
	CertificateKey string
	// Manifests, when set, are the Calico CRD and operator manifests of an
	// air-gapped site (ReadManifests); they are copied into
	// cluster/calico/manifests/ and the runbook uses them instead of URLs.
	Manifests *Manifests
	// Script URLs and SHA256 sums for prepare.ps1; empty means the
	// defaults pinned to SigWindowsToolsCommit. An overridden URL with an
	// empty SHA256 is downloaded without a hash check.
	InstallContainerdURL    string
	InstallContainerdSHA256 string
	PrepareNodeURL          string
	PrepareNodeSHA256       string
	// CSRApproverImage, when set, adds cluster/csr-approver.yaml: the
	// verified kubelet-serving CSR approver (hybridctl csr approve --watch)
	// as a Deployment with least-privilege RBAC, running this image.
	CSRApproverImage string
	// CSRApproverSpec is the cluster spec the in-cluster approver checks
	// addresses against (shipped in a ConfigMap); empty: none.
	CSRApproverSpec []byte
	// OutputDir is the directory the files are written to, as the user
	// named it (render --output-dir): the runbook's commands that render
	// again name it. Empty: OUT.
	OutputDir string
}

var caCertHashRE = regexp.MustCompile(`^sha256:[0-9a-f]{64}$`)

// Validate checks the options' formats.
func (o Options) Validate() error {
	// One without the other would write join files with a real secret
	// beside a placeholder: neither kubeadm nor apply could use them.
	if (o.Token == "") != (o.CACertHash == "") {
		return fmt.Errorf("the token and --ca-cert-hash go together: give both (kubeadm token create --print-join-command prints both), or neither for placeholders")
	}
	if o.Token != "" && !bootstraputil.IsValidBootstrapToken(o.Token) {
		return fmt.Errorf("--token: not a bootstrap token (want [a-z0-9]{6}.[a-z0-9]{16}, as kubeadm token create prints)")
	}
	if o.CACertHash != "" && !caCertHashRE.MatchString(o.CACertHash) {
		return fmt.Errorf("--ca-cert-hash: want sha256: and 64 lower-case hex digits, as kubeadm init prints")
	}
	if o.CSRApproverImage != "" {
		if err := csr.CheckImage(o.CSRApproverImage); err != nil {
			return fmt.Errorf("--csr-approver-image: %w", err)
		}
	}
	if o.CertificateKey != "" && !certificateKeyRE.MatchString(o.CertificateKey) {
		return fmt.Errorf("--certificate-key: want 64 hex digits, as kubeadm init --upload-certs prints")
	}
	for _, u := range []struct{ flag, url, sha string }{
		{"--install-containerd-url", o.InstallContainerdURL, o.InstallContainerdSHA256},
		{"--prepare-node-url", o.PrepareNodeURL, o.PrepareNodeSHA256},
	} {
		if u.url != "" {
			if err := checkScriptURL(u.url); err != nil {
				return fmt.Errorf("%s: %w", u.flag, err)
			}
		}
		if u.sha != "" && !sha256RE.MatchString(u.sha) {
			return fmt.Errorf("%s-sha256: want 64 hex digits (Get-FileHash prints them)", strings.TrimSuffix(u.flag, "-url"))
		}
	}
	return nil
}

// ValidateFor checks the options against the plan: with packages.source
// bundle prepare.ps1 installs from the bundle and downloads no script, so
// a script URL would be silently ignored.
func (o Options) ValidateFor(p *plan.Plan) error {
	if p.PackagesSource != spec.SourceBundle {
		return nil
	}
	for _, u := range []struct{ flag, url string }{
		{"--install-containerd-url", o.InstallContainerdURL},
		{"--prepare-node-url", o.PrepareNodeURL},
	} {
		if u.url != "" {
			return fmt.Errorf("%s has no effect with packages.source: bundle: prepare.ps1 installs from the bundle and downloads no script", u.flag)
		}
	}
	return nil
}

var (
	sha256RE         = regexp.MustCompile(`^[0-9a-fA-F]{64}$`)
	certificateKeyRE = regexp.MustCompile(`^[0-9a-f]{64}$`)
)

// checkScriptURL accepts an http(s) URL without characters that Windows
// PowerShell 5.1 would pass to curl.exe as more than one argument.
func checkScriptURL(s string) error {
	u, err := url.Parse(s)
	if err != nil {
		return err
	}
	if (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return fmt.Errorf("%q: want an https:// URL", s)
	}
	if i := strings.IndexFunc(s, func(r rune) bool { return r <= ' ' || r == 0x7f || strings.ContainsRune("\"'`"+psSingleQuotes, r) }); i >= 0 {
		return fmt.Errorf("%q: character %q not allowed in a script URL", s, s[i:i+1])
	}
	// What is downloaded is what the URL says: no "." or ".." segment
	// (RFC 3986 5.2.4 would remove it), also not percent-encoded.
	if u.ResolveReference(u).EscapedPath() != u.EscapedPath() || strings.Contains(strings.ToLower(u.EscapedPath()), "%2e") {
		return fmt.Errorf("%q: a dot segment (. or ..) in a script URL", s)
	}
	return nil
}

func (o Options) withDefaults() Options {
	if o.InstallContainerdURL == "" {
		o.InstallContainerdURL = DefaultInstallContainerdURL
		o.InstallContainerdSHA256 = DefaultInstallContainerdSHA256
	}
	if o.PrepareNodeURL == "" {
		o.PrepareNodeURL = DefaultPrepareNodeURL
		o.PrepareNodeSHA256 = DefaultPrepareNodeSHA256
	}
	return o
}

type renderer struct {
	plan *plan.Plan
	opts Options
	tmpl *template.Template
	// emit receives each file; seen holds the paths emitted.
	emit func(File) error
	seen map[string]bool
}

func newTemplates() (*template.Template, error) {
	return template.New("render").Option("missingkey=error").Funcs(template.FuncMap{
		"sh":      ShQuote,
		"ps":      PsQuote,
		"shword":  shWord,
		"psword":  psWord,
		"line":    oneLine,
		"scphost": scpHost,
		"ssh":     sshCmd,
		"scp":     scpCmd,
	}).ParseFS(templateFS, "templates/*.tmpl")
}

// Render renders every file for the plan. The result is sorted by path and
// is the same, byte for byte, for the same plan and options. It holds
// every file in memory: to write them, Each with WriteEach holds a few.
func Render(p *plan.Plan, o Options) ([]File, error) {
	if err := Check(p, o); err != nil {
		return nil, err
	}
	return renderChecked(p, o)
}

// Check checks the options (Validate), the options against the plan
// (ValidateFor) and the plan's values where render writes them
// (checkPlan), as Render and Each do before rendering anything.
func Check(p *plan.Plan, o Options) error {
	if err := o.Validate(); err != nil {
		return err
	}
	if err := o.ValidateFor(p); err != nil {
		return err
	}
	return checkPlan(p)
}

// Each renders every file for the plan and passes each to emit as soon as
// it is rendered, so that memory holds a few nodes' files, never all of
// them: the cluster's files, then the nodes' (rendered on every core, at
// most a few nodes ahead of emit, emitted in plan order), then the
// workloads, the DNS records and the runbook. The order and the bytes are
// the same for the same plan and options; paths are unique. It checks
// first (Check), so a refused plan emits nothing, and stops at the first
// error of a generator or of emit.
func Each(p *plan.Plan, o Options, emit func(File) error) error {
	if err := Check(p, o); err != nil {
		return err
	}
	return each(p, o, emit)
}

// renderChecked is Render after Check.
func renderChecked(p *plan.Plan, o Options) ([]File, error) {
	var files []File
	if err := each(p, o, func(f File) error { files = append(files, f); return nil }); err != nil {
		return nil, err
	}
	sort.Slice(files, func(i, j int) bool { return files[i].Path < files[j].Path })
	return files, nil
}

// each is Each after Check.
func each(p *plan.Plan, o Options, emit func(File) error) error {
	t, err := newTemplates()
	if err != nil {
		return fmt.Errorf("templates: %w", err)
	}
	r := &renderer{plan: p, opts: o.withDefaults(), tmpl: t, emit: emit, seen: map[string]bool{}}
	steps := []func() error{r.cluster, r.calico, r.windows, r.csrApprover, r.nodes, r.workloads, r.dnsRecords, r.runbook}
	for _, step := range steps {
		if err := step(); err != nil {
			return err
		}
	}
	return nil
}

// add passes one file to emit; a path rendered twice is an error.
func (r *renderer) add(p string, data []byte, mode fs.FileMode) error {
	if r.seen[p] {
		return fmt.Errorf("two files render to %s", p)
	}
	r.seen[p] = true
	return r.emit(File{Path: p, Data: data, Mode: mode})
}

// addGen adds the output of gen, naming the file in an error.
func (r *renderer) addGen(p string, mode fs.FileMode, gen func() ([]byte, error)) error {
	b, err := gen()
	if err != nil {
		return fmt.Errorf("render %s: %w", p, err)
	}
	return r.add(p, b, mode)
}

func (r *renderer) cluster() error {
	return r.addGen("cluster/kubeadm-config.yaml", 0o644, func() ([]byte, error) { return kubeadmConfig(r.plan) })
}

func (r *renderer) calico() error {
	if err := r.addGen("cluster/calico/kubernetes-services-endpoint.yaml", 0o644, func() ([]byte, error) { return kubernetesServicesEndpoint(r.plan) }); err != nil {
		return err
	}
	if err := r.addGen("cluster/calico/calico-installation.yaml", 0o644, func() ([]byte, error) { return calicoInstallation(r.plan) }); err != nil {
		return err
	}
	if err := r.addGen("cluster/calico/ipamconfiguration.yaml", 0o644, func() ([]byte, error) { return ipamConfig(r.plan) }); err != nil {
		return err
	}
	if m := r.opts.Manifests; m != nil {
		if err := r.add(path.Join(calicoManifestsDir, r.plan.Calico.CRDManifest), m.CRDs, 0o644); err != nil {
			return err
		}
		if err := r.add(path.Join(calicoManifestsDir, OperatorManifest), m.Operator, 0o644); err != nil {
			return err
		}
	}
	return r.addGen("cluster/calico/README.md", 0o644, r.calicoReadme)
}

func (r *renderer) windows() error {
	if len(r.plan.RuntimeClasses) == 0 && r.plan.KubeProxy.WindowsImage == "" {
		return nil
	}
	for _, rc := range r.plan.RuntimeClasses {
		if err := r.addGen("cluster/windows/runtimeclass-"+rc.Name+".yaml", 0o644, func() ([]byte, error) { return runtimeClass(rc) }); err != nil {
			return err
		}
	}
	return r.addGen("cluster/windows/kube-proxy-windows.yaml", 0o644, func() ([]byte, error) { return kubeProxyWindows(r.plan) })
}

// secretMode is the mode of a node's join file: 0600 when it holds a
// token or a certificate key.
// csrApprover adds the in-cluster kubelet-serving CSR approver when an
// image is given.
func (r *renderer) csrApprover() error {
	if r.opts.CSRApproverImage == "" {
		return nil
	}
	return r.addGen("cluster/csr-approver.yaml", 0o644, func() ([]byte, error) {
		objs, err := csr.InClusterApprover(csr.DeployOptions{Image: r.opts.CSRApproverImage, ClusterSpec: r.opts.CSRApproverSpec})
		if err != nil {
			return nil, err
		}
		body, err := objs.YAML()
		if err != nil {
			return nil, err
		}
		head := "# The verified kubelet-serving CSR approver (hybridctl csr approve --watch), rendered by hybridctl.\n" +
			"# It approves a serving certificate only when the requester, names and addresses belong to the node.\n" +
			"# Least privilege: approve only on signers/kubernetes.io/kubelet-serving. See docs/csr.md.\n" +
			"# kubectl apply -f csr-approver.yaml\n"
		return append([]byte(head), body...), nil
	})
}

func (r *renderer) secretMode(n plan.Node) fs.FileMode {
	if r.opts.Token != "" || (n.IsControlPlane() && r.opts.CertificateKey != "") {
		return 0o600
	}
	return 0o644
}

// nodesAhead bounds how many nodes are rendered but not yet emitted, per
// worker: enough to keep every core busy while emit writes.
const nodesAhead = 2

// nodes renders each node's files; nodes are independent (the generators
// only read the plan, the options and the parsed templates), so they are
// rendered on every core and emitted in plan order, at most
// nodesAhead*workers nodes ahead of emit.
func (r *renderer) nodes() error {
	n := len(r.plan.Nodes)
	if n == 0 {
		return nil
	}
	type result struct {
		files []File
		err   error
	}
	workers := min(runtime.GOMAXPROCS(0), n)
	results := make([]chan result, n)
	for i := range results {
		results[i] = make(chan result, 1)
	}
	slots := make(chan struct{}, nodesAhead*workers)
	next := make(chan int)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				files, err := r.nodeFiles(r.plan.Nodes[i])
				results[i] <- result{files, err}
			}
		}()
	}
	go func() {
		defer close(next)
		for i := range n {
			select {
			case slots <- struct{}{}:
			case <-stop:
				return
			}
			select {
			case next <- i:
			case <-stop:
				return
			}
		}
	}()
	var err error
	for i := 0; i < n && err == nil; i++ {
		res := <-results[i]
		results[i] = nil
		err = res.err
		for _, f := range res.files {
			if err == nil {
				err = r.add(f.Path, f.Data, f.Mode)
			}
		}
		<-slots
	}
	close(stop)
	wg.Wait()
	return err
}

// nodeFiles renders one node's files.
func (r *renderer) nodeFiles(n plan.Node) ([]File, error) {
	first, _ := firstControlPlane(r.plan)
	type gen struct {
		path string
		mode fs.FileMode
		gen  func() ([]byte, error)
	}
	dir := "nodes/" + n.Name + "/"
	var gens []gen
	if n.IsWindows() {
		gens = append(gens,
			gen{dir + "prepare.ps1", 0o644, func() ([]byte, error) { return r.windowsPrepare(n) }},
			gen{dir + "patches/kubeletconfiguration.yaml", 0o644, func() ([]byte, error) { return kubeletPatch(r.plan, n) }})
	} else {
		gens = append(gens, gen{dir + "prepare.sh", 0o755, func() ([]byte, error) { return r.linuxPrepare(n) }})
	}
	if n.Name != first.Name {
		gens = append(gens, gen{dir + "join.yaml", r.secretMode(n), func() ([]byte, error) { return joinConfig(r.plan, n, r.opts) }})
	}
	files := make([]File, 0, len(gens))
	for _, g := range gens {
		b, err := g.gen()
		if err != nil {
			return nil, fmt.Errorf("render %s: %w", g.path, err)
		}
		files = append(files, File{Path: g.path, Data: b, Mode: g.mode})
	}
	return files, nil
}

func (r *renderer) workloads() error {
	if err := r.addGen("workloads/demo-namespace.yaml", 0o644, demoNamespaceYAML); err != nil {
		return err
	}
	if err := r.addGen("workloads/hello.yaml", 0o644, func() ([]byte, error) { return helloYAML(r.plan) }); err != nil {
		return err
	}
	for i, rc := range r.plan.RuntimeClasses {
		name, file := aspnetappNames(i, rc)
		if err := r.addGen("workloads/"+file, 0o644, func() ([]byte, error) { return aspnetappYAML(r.plan, rc, name, i == 0) }); err != nil {
			return err
		}
	}
	return nil
}

// aspnetappNames: the first RuntimeClass's workload is the guide's
// aspnetapp (aspnetapp.yaml); the others are aspnetapp-<runtimeclass>.
func aspnetappNames(i int, rc plan.RuntimeClass) (name, file string) {
	if i == 0 {
		return "aspnetapp", "aspnetapp.yaml"
	}
	return "aspnetapp-" + rc.Name, "aspnetapp-" + rc.Name + ".yaml"
}
