package render

import (
	"bytes"
	"flag"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/hybridctl/hybridctl/examples"
	"github.com/hybridctl/hybridctl/internal/plan"
	"github.com/hybridctl/hybridctl/internal/spec"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/golden")

// The guide's join secrets (guide: "kubeadm join"), used where a test
// renders with --token and --ca-cert-hash.
const (
	guideToken = "6w1r8t.p3k9m2x7c5v0b4n1"
	guideHash  = "sha256:7b2e9d4a1c6f8b3e0d5a2c7f9e4b1d6a8c3f0e5b2d7a9c4e1f6b8d3a0c5e2f7b"
)

// labCluster parses examples/lab.yaml.
func labCluster(t testing.TB) *spec.Cluster {
	t.Helper()
	r := spec.Parse("lab.yaml", examples.Lab)
	if err := r.Err(); err != nil {
		t.Fatalf("lab.yaml: %v", err)
	}
	return r.Cluster
}

// planOf validates c as a user's spec would be (through the YAML loader)
// and derives its plan.
func planOf(t testing.TB, c *spec.Cluster) *plan.Plan {
	t.Helper()
	b, err := yaml.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	r := spec.Parse("cluster.yaml", b)
	if err := r.Err(); err != nil {
		t.Fatalf("spec:\n%s\n%v", b, err)
	}
	p, err := plan.Derive(r.Cluster, r.Diagnostics)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func labPlan(t testing.TB) *plan.Plan { return planOf(t, labCluster(t)) }

func mustRender(t testing.TB, p *plan.Plan, o Options) map[string]File {
	t.Helper()
	files, err := Render(p, o)
	if err != nil {
		t.Fatalf("Render: %v", err)
	}
	m := map[string]File{}
	for _, f := range files {
		m[f.Path] = f
	}
	return m
}

// labLinuxPlan is examples/lab-linux.yaml: a private registry, a bundle,
// cgroup v1.
func labLinuxPlan(t testing.TB) *plan.Plan {
	t.Helper()
	r := spec.Parse("lab-linux.yaml", examples.LabLinux)
	if err := r.Err(); err != nil {
		t.Fatalf("lab-linux.yaml: %v", err)
	}
	return planOf(t, r.Cluster)
}

func TestGoldenLab(t *testing.T) {
	for name, p := range map[string]*plan.Plan{"lab": labPlan(t), "lab-linux": labLinuxPlan(t), "lab-offline": labOfflinePlan(t)} {
		t.Run(name, func(t *testing.T) { golden(t, p, name) })
	}
}

func golden(t *testing.T, p *plan.Plan, name string) {
	files, err := Render(p, Options{})
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join("testdata", "golden", name)
	if *update {
		if err := os.RemoveAll(dir); err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			p := filepath.Join(dir, filepath.FromSlash(f.Path))
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, f.Data, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	want := map[string]bool{}
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		want[filepath.ToSlash(rel)] = true
		return nil
	})
	if err != nil {
		t.Fatalf("%v (run go test ./internal/render -update)", err)
	}
	for _, f := range files {
		if !want[f.Path] {
			t.Errorf("%s: rendered but has no golden file (run go test ./internal/render -update and review)", f.Path)
			continue
		}
		delete(want, f.Path)
		g, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(f.Path)))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(g, f.Data) {
			t.Errorf("%s differs from its golden file (run go test ./internal/render -update and review the diff)\n--- got ---\n%s", f.Path, f.Data)
		}
	}
	for p := range want {
		t.Errorf("%s: golden file but not rendered", p)
	}
}

// The lab renders the files the guide writes by hand, and hybridctl's own
// (prepare scripts, join files, check workloads, runbook).
func TestLabFileSet(t *testing.T) {
	got := mustRender(t, labPlan(t), Options{})
	for _, p := range []string{
		"cluster/kubeadm-config.yaml",
		"cluster/calico/kubernetes-services-endpoint.yaml",
		"cluster/calico/calico-installation.yaml",
		"cluster/calico/ipamconfiguration.yaml",
		"cluster/calico/README.md",
		"cluster/windows/runtimeclass-windows-2025.yaml",
		"cluster/windows/kube-proxy-windows.yaml",
		"nodes/k8s-lab-master-1/prepare.sh",
		"nodes/k8s-lab-node-1/prepare.sh",
		"nodes/k8s-lab-node-1/join.yaml",
		"nodes/k8s-lab-node-2/prepare.sh",
		"nodes/k8s-lab-node-2/join.yaml",
		"nodes/k8s-lab-win-1/prepare.ps1",
		"nodes/k8s-lab-win-1/join.yaml",
		"nodes/k8s-lab-win-1/patches/kubeletconfiguration.yaml",
		"workloads/demo-namespace.yaml",
		"workloads/hello.yaml",
		"workloads/aspnetapp.yaml",
		"dns-records.txt",
		"runbook.md",
	} {
		if _, ok := got[p]; !ok {
			t.Errorf("%s not rendered", p)
		}
		delete(got, p)
	}
	for p := range got {
		t.Errorf("unexpected file %s", p)
	}
}

func TestDeterministic(t *testing.T) {
	p := labPlan(t)
	a, err := Render(p, Options{Token: guideToken, CACertHash: guideHash})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 5; i++ {
		b, err := Render(labPlan(t), Options{Token: guideToken, CACertHash: guideHash})
		if err != nil {
			t.Fatal(err)
		}
		if len(a) != len(b) {
			t.Fatalf("run %d: %d files, first run %d", i, len(b), len(a))
		}
		for j := range a {
			if a[j].Path != b[j].Path || !bytes.Equal(a[j].Data, b[j].Data) || a[j].Mode != b[j].Mode {
				t.Fatalf("run %d: %s differs from the first run", i, b[j].Path)
			}
		}
	}
}

// Without --token nothing holds a secret and the join files hold the
// placeholders; with it, only the join files hold the token, with mode 0600.
func TestJoinSecrets(t *testing.T) {
	p := labPlan(t)
	plain := mustRender(t, p, Options{})
	for path, f := range plain {
		if strings.HasSuffix(path, "join.yaml") {
			if !bytes.Contains(f.Data, []byte("token: "+TokenPlaceholder)) || !bytes.Contains(f.Data, []byte("- "+CACertHashPlaceholder)) {
				t.Errorf("%s: no placeholders:\n%s", path, f.Data)
			}
			if f.Mode != 0o644 {
				t.Errorf("%s: mode %o without a token, want 644", path, f.Mode)
			}
		}
	}
	withToken := mustRender(t, p, Options{Token: guideToken, CACertHash: guideHash})
	joins := 0
	for path, f := range withToken {
		has := bytes.Contains(f.Data, []byte(guideToken))
		if strings.HasSuffix(path, "join.yaml") {
			joins++
			if !has || !bytes.Contains(f.Data, []byte(guideHash)) {
				t.Errorf("%s: the passed token or hash is missing", path)
			}
			if bytes.Contains(f.Data, []byte(TokenPlaceholder)) || bytes.Contains(f.Data, []byte(CACertHashPlaceholder)) {
				t.Errorf("%s: placeholder left although token and hash were passed", path)
			}
			if f.Mode != 0o600 {
				t.Errorf("%s: mode %o with a token, want 600", path, f.Mode)
			}
		} else if has {
			t.Errorf("%s holds the join token", path)
		}
	}
	if joins != 3 {
		t.Errorf("%d join files, want 3 (two Linux workers, one Windows)", joins)
	}
}

func TestOptionsValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		o    Options
		ok   bool
	}{
		{"empty", Options{}, true},
		{"guide", Options{Token: guideToken, CACertHash: guideHash}, true},
		{"token upper case", Options{Token: "6W1R8T.p3k9m2x7c5v0b4n1"}, false},
		{"token short", Options{Token: "abc.def"}, false},
		{"token with quote", Options{Token: "6w1r8t.p3k9m2x7c5v0b4'1"}, false},
		{"hash without prefix", Options{CACertHash: strings.TrimPrefix(guideHash, "sha256:")}, false},
		{"hash short", Options{CACertHash: "sha256:7b2e"}, false},
		{"certificate key", Options{CertificateKey: testCertificateKey}, true},
		{"certificate key short", Options{CertificateKey: "0f1e"}, false},
		{"mirror", Options{PrepareNodeURL: "https://mirror.example.com/PrepareNode.ps1", PrepareNodeSHA256: DefaultPrepareNodeSHA256}, true},
		{"mirror with quote", Options{PrepareNodeURL: "https://mirror.example.com/a'b.ps1"}, false},
		{"mirror with double quote", Options{InstallContainerdURL: "https://mirror.example.com/a\" -o C:/x"}, false},
		{"mirror with space", Options{InstallContainerdURL: "https://mirror.example.com/a b"}, false},
		{"mirror not http", Options{InstallContainerdURL: "file:///C:/x.ps1"}, false},
		{"mirror bad sha", Options{InstallContainerdURL: "https://m.example.com/x.ps1", InstallContainerdSHA256: "xyz"}, false},
		{"mirror with a dot segment", Options{InstallContainerdURL: "https://m.example.com/tools/../other/x.ps1"}, false},
		{"mirror with an encoded dot segment", Options{InstallContainerdURL: "https://m.example.com/tools/%2E%2e/x.ps1"}, false},
		{"mirror with dots in a name", Options{InstallContainerdURL: "https://m.example.com/tools/x..y/x.ps1"}, true},
	} {
		err := tc.o.Validate()
		if (err == nil) != tc.ok {
			t.Errorf("%s: Validate() = %v, want ok=%v", tc.name, err, tc.ok)
		}
		if _, err := Render(labPlan(t), tc.o); (err == nil) != tc.ok {
			t.Errorf("%s: Render error %v, want ok=%v", tc.name, err, tc.ok)
		}
	}
}

// The runbook uses every file render writes (and the files every step of
// the guide needs exist).
func TestRunbookUsesEveryFile(t *testing.T) {
	for name, o := range map[string]Options{
		"urls":  {},
		"local": {Manifests: &Manifests{CRDs: []byte("crds"), Operator: []byte("operator")}},
	} {
		files := mustRender(t, labPlan(t), o)
		rb := string(files["runbook.md"].Data)
		for p := range files {
			if p == "runbook.md" {
				continue
			}
			if !strings.Contains(rb, p) {
				t.Errorf("%s: runbook.md does not use %s", name, p)
			}
		}
	}
}

// With an image, render adds the in-cluster CSR approver and the runbook
// applies it; without, neither.
func TestCSRApprover(t *testing.T) {
	without := mustRender(t, labPlan(t), Options{})
	if _, ok := without["cluster/csr-approver.yaml"]; ok {
		t.Error("csr-approver.yaml rendered without --csr-approver-image")
	}
	with := mustRender(t, labPlan(t), Options{CSRApproverImage: "registry.example.com/hybridctl:v1"})
	f, ok := with["cluster/csr-approver.yaml"]
	if !ok {
		t.Fatal("no cluster/csr-approver.yaml with an image")
	}
	for _, want := range []string{"image: registry.example.com/hybridctl:v1", "kubernetes.io/kubelet-serving", "kind: ClusterRole", "- approve"} {
		if !strings.Contains(string(f.Data), want) {
			t.Errorf("csr-approver.yaml lacks %q", want)
		}
	}
	if rb := string(with["runbook.md"].Data); !strings.Contains(rb, "kubectl apply -f cluster/csr-approver.yaml") {
		t.Error("the runbook does not apply the approver")
	}
}

// TestScriptURLsWithABundle: with packages.source bundle a script URL
// would be ignored, so Render refuses it, naming the option; without one,
// or for a plan installing from the internet, it renders.
func TestScriptURLsWithABundle(t *testing.T) {
	const mirror = "https://mirror.example.com/x.ps1"
	up := labPlan(t)
	bundled := *up
	bundled.PackagesSource = spec.SourceBundle
	for _, c := range []struct {
		p    *plan.Plan
		o    Options
		want string
	}{
		{&bundled, Options{InstallContainerdURL: mirror}, "--install-containerd-url has no effect with packages.source: bundle"},
		{&bundled, Options{PrepareNodeURL: mirror}, "--prepare-node-url has no effect with packages.source: bundle"},
		{&bundled, Options{}, ""},
		{up, Options{InstallContainerdURL: mirror, PrepareNodeURL: mirror}, ""},
	} {
		err := c.o.ValidateFor(c.p)
		if (c.want == "") != (err == nil) || (err != nil && !strings.HasPrefix(err.Error(), c.want)) {
			t.Errorf("%s, %+v: %v, want %q", c.p.PackagesSource, c.o, err, c.want)
		}
		if c.want != "" {
			if _, err := Render(c.p, c.o); err == nil || !strings.HasPrefix(err.Error(), c.want) {
				t.Errorf("Render: %v, want %q", err, c.want)
			}
		}
	}
}
