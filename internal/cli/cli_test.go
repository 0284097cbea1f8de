package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"testing"

	sigsyaml "sigs.k8s.io/yaml"

	"github.com/hybridctl/hybridctl/examples"
	"github.com/hybridctl/hybridctl/internal/spec"
)

type result struct {
	code           int
	stdout, stderr string
}

func run(t *testing.T, stdin string, args ...string) result {
	t.Helper()
	var out, errOut bytes.Buffer
	code := Main(context.Background(), args, strings.NewReader(stdin), &out, &errOut)
	return result{code, out.String(), errOut.String()}
}

const lab = "../../examples/lab.yaml"

func TestExitCodes(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(bad, []byte(strings.Replace(string(examples.Lab), "name: k8s-lab-win-1", "name: k8s-lab-windows-01", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		args []string
		code int
		in   string // substring of stdout+stderr
	}{
		{"plan lab", []string{"plan", "-f", lab}, 0, "TOPOLOGY"},
		{"plan invalid spec", []string{"plan", "-f", bad}, 1, `bad.yaml:109: spec.nodes[3].name: "k8s-lab-windows-01" is 18 characters; a Windows computer name is at most 15`},
		{"plan missing file", []string{"plan", "-f", filepath.Join(dir, "nope.yaml")}, 3, "no such file"},
		{"plan without -f nor ./cluster.yaml", []string{"plan"}, 2, "no -f given and there is no ./cluster.yaml: write one with 'hybridctl init'"},
		{"plan bad output", []string{"plan", "-f", lab, "-o", "xml"}, 2, `-o/--output "xml" is not an output format: want table, json, yaml`},
		{"unknown flag", []string{"plan", "--frobnicate"}, 2, "unknown flag"},
		{"unknown command", []string{"frobnicate"}, 2, `unknown command "frobnicate"`},
		{"extra argument", []string{"plan", "-f", lab, "extra"}, 2, "takes no arguments"},
		{"version", []string{"version"}, 0, "VERSION "},
		{"completion", []string{"completion", "bash"}, 0, "bash completion"},
		{"completion without shell", []string{"completion"}, 2, "exactly one shell"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := run(t, "", c.args...)
			if r.code != c.code {
				t.Errorf("exit %d, want %d\nstdout: %s\nstderr: %s", r.code, c.code, r.stdout, r.stderr)
			}
			if !strings.Contains(r.stdout+r.stderr, c.in) {
				t.Errorf("output lacks %q\nstdout: %s\nstderr: %s", c.in, r.stdout, r.stderr)
			}
		})
	}
}

func TestPlanJSONContract(t *testing.T) {
	r := run(t, "", "plan", "-f", lab, "-o", "json")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	var p struct {
		Cluster   string `json:"cluster"`
		APIServer struct {
			ServiceIP string `json:"serviceIP"`
		} `json:"apiServer"`
		DNSServiceIP string `json:"dnsServiceIP"`
		PodNetwork   struct {
			CIDR              string `json:"cidr"`
			BlockSize         int    `json:"blockSize"`
			AddressesPerBlock int    `json:"addressesPerBlock"`
		} `json:"podNetwork"`
		VXLAN struct {
			VNI    int `json:"vni"`
			Port   int `json:"port"`
			PodMTU int `json:"podMTU"`
		} `json:"vxlan"`
		Nodes []struct {
			Name, OS, Role, Address, RuntimeClass string
			MaxPods                               int
			Taints                                []map[string]string
		} `json:"nodes"`
		Warnings []struct{ Check, Path, Message string } `json:"warnings"`
	}
	dec := json.NewDecoder(strings.NewReader(r.stdout))
	if err := dec.Decode(&p); err != nil {
		t.Fatal(err)
	}
	if p.Cluster != "lab" || p.APIServer.ServiceIP != "10.96.0.1" || p.DNSServiceIP != "10.96.0.10" ||
		p.PodNetwork.AddressesPerBlock != 64 || p.VXLAN.VNI != 4096 || p.VXLAN.Port != 4789 || p.VXLAN.PodMTU != 1450 {
		t.Errorf("plan JSON = %+v", p)
	}
	w := p.Nodes[3]
	if w.Name != "k8s-lab-win-1" || w.MaxPods != 60 || w.RuntimeClass != "windows-2025" || w.OS != "windows" || w.Role != "worker" || w.Address != "192.168.10.25" {
		t.Errorf("windows node = %+v", w)
	}
}

func TestPlanStdinAndYAML(t *testing.T) {
	r := run(t, string(examples.Lab), "spec", "effective", "-f", "-")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	for _, want := range []string{"blockSize: 26", "natOutgoing: true", "port: 22", "user: Administrator", "build: 10.0.26100"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("effective spec lacks %q:\n%s", want, r.stdout)
		}
	}
	// The effective spec is itself a valid spec that plans the same (its
	// warnings at other lines of another file).
	again := run(t, r.stdout, "plan", "-f", "-", "-o", "json")
	first := run(t, "", "plan", "-f", lab, "-o", "json")
	unlocated := func(out string) map[string]any {
		var m map[string]any
		if err := json.Unmarshal([]byte(out), &m); err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		for _, w := range m["warnings"].([]any) {
			delete(w.(map[string]any), "file")
			delete(w.(map[string]any), "line")
		}
		return m
	}
	if again.code != 0 || !reflect.DeepEqual(unlocated(again.stdout), unlocated(first.stdout)) {
		t.Errorf("the effective spec does not plan like the original (exit %d): %s\n%s", again.code, again.stderr, again.stdout)
	}
	if r := run(t, "", "spec", "effective", "-f", filepath.Join(t.TempDir(), "none.yaml")); r.code != ExitIncomplete {
		t.Errorf("a missing file: exit %d", r.code)
	}

	// plan -o yaml is plan -o json's object in YAML: the same fields and
	// values, for a valid spec and for an invalid one.
	for _, stdin := range []string{string(examples.Lab), strings.Replace(string(examples.Lab), "name: k8s-lab-win-1", "name: K8S_Win_1", 1)} {
		j := run(t, stdin, "plan", "-f", "-", "-o", "json")
		y := run(t, stdin, "plan", "-f", "-", "-o", "yaml")
		if j.code != y.code || y.stderr != "" {
			t.Fatalf("json exit %d, yaml exit %d: %s", j.code, y.code, y.stderr)
		}
		var fromJSON, fromYAML any
		if err := json.Unmarshal([]byte(j.stdout), &fromJSON); err != nil {
			t.Fatal(err)
		}
		if err := sigsyaml.Unmarshal([]byte(y.stdout), &fromYAML); err != nil {
			t.Fatalf("%v\n%s", err, y.stdout)
		}
		if !reflect.DeepEqual(fromJSON, fromYAML) {
			t.Errorf("plan -o yaml is not plan -o json's object (exit %d):\n%s", y.code, y.stdout)
		}
		if strings.Contains(y.stdout, "apiVersion: hybridctl.dev/v1alpha1") {
			t.Errorf("plan -o yaml printed the spec:\n%s", y.stdout)
		}
	}
}

func TestInit(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "cluster.yaml")
	if r := run(t, "", "init", "-o", out); r.code != 0 {
		t.Fatalf("init: exit %d: %s", r.code, r.stderr)
	}
	b, err := os.ReadFile(out)
	if err != nil || !bytes.Equal(b, examples.Lab) {
		t.Fatalf("init wrote %d bytes (err %v), want examples/lab.yaml", len(b), err)
	}
	if err := os.WriteFile(out, []byte("mine"), 0o644); err != nil {
		t.Fatal(err)
	}
	r := run(t, "", "init", "-o", out)
	// A usage error (2), as render onto a non-empty directory is.
	if r.code != 2 || !strings.Contains(r.stderr, "already exists; use --force") || !strings.Contains(r.stderr, "See 'hybridctl init --help'.") {
		t.Errorf("init over an existing file: exit %d, stderr %q", r.code, r.stderr)
	}
	if b, _ := os.ReadFile(out); string(b) != "mine" {
		t.Errorf("init overwrote the file without --force")
	}
	if r := run(t, "", "init", "-o", out, "--force"); r.code != 0 {
		t.Errorf("init --force: exit %d", r.code)
	}
	if b, _ := os.ReadFile(out); !bytes.Equal(b, examples.Lab) {
		t.Errorf("init --force did not overwrite")
	}
	if r := run(t, "", "init", "-o", "-"); r.stdout != string(examples.Lab) {
		t.Errorf("init -o - printed something else")
	}
	// A success message goes to standard output, in init as in render.
	second := filepath.Join(dir, "second.yaml")
	if r := run(t, "", "init", "--output-file", second); r.code != 0 || r.stdout != "wrote "+second+"; next: hybridctl plan -f "+second+"\n" || r.stderr != "" {
		t.Errorf("init's success message: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	if r := run(t, "", "render", "-f", lab, "--output-dir", filepath.Join(dir, "out")); r.code != 0 || !strings.HasPrefix(r.stdout, "wrote ") || strings.Contains(r.stderr, "wrote ") {
		t.Errorf("render's success message: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	// What init writes plans cleanly.
	if r := run(t, "", "plan", "-f", out); r.code != 0 {
		t.Errorf("plan of the init spec: exit %d: %s", r.code, r.stderr)
	}
}

// TestExampleIsTheEmbeddedSpec keeps examples/lab.yaml and what init writes
// the same file.
func TestExampleIsTheEmbeddedSpec(t *testing.T) {
	b, err := os.ReadFile(lab)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(b, examples.Lab) {
		t.Fatal("examples/lab.yaml differs from the embedded copy")
	}
}

func TestVersionOutputs(t *testing.T) {
	var c spec.Cluster
	spec.SetDefaults(&c)

	r := run(t, "", "version", "-o", "json")
	if r.code != 0 {
		t.Fatalf("version -o json: exit %d: %s", r.code, r.stderr)
	}
	var fields map[string]any
	if err := json.Unmarshal([]byte(r.stdout), &fields); err != nil {
		t.Fatalf("version -o json: %v\n%s", err, r.stdout)
	}
	for _, k := range []string{"version", "commit", "buildDate", "modified", "goVersion", "platform", "targets"} {
		if _, ok := fields[k]; !ok {
			t.Errorf("version -o json lacks %q:\n%s", k, r.stdout)
		}
	}
	var v VersionInfo
	if err := json.Unmarshal([]byte(r.stdout), &v); err != nil {
		t.Fatal(err)
	}
	want := VersionTargets{Kubernetes: c.Spec.KubernetesVersion, Calico: c.Spec.Calico.Version, Containerd: c.Spec.Containerd.Version}
	if v.Targets != want || want.Kubernetes == "" || want.Calico == "" || want.Containerd == "" {
		t.Errorf("targets %+v, want the spec's defaults %+v", v.Targets, want)
	}
	if v.Version == "" || v.GoVersion != runtime.Version() || v.Platform != runtime.GOOS+"/"+runtime.GOARCH {
		t.Errorf("version %q, goVersion %q, platform %q", v.Version, v.GoVersion, v.Platform)
	}

	r = run(t, "", "version")
	if r.code != 0 {
		t.Fatalf("version: exit %d: %s", r.code, r.stderr)
	}
	for _, line := range []string{
		"VERSION     " + v.Version,
		"KUBERNETES  " + want.Kubernetes + " (default target)",
		"CALICO      " + want.Calico + " (default target)",
		"CONTAINERD  " + want.Containerd + " (default target)",
	} {
		if !strings.Contains(r.stdout, line+"\n") {
			t.Errorf("version lacks the line %q:\n%s", line, r.stdout)
		}
	}

	r = run(t, "", "--version")
	if r.code != 0 || strings.Count(r.stdout, "\n") != 1 || !strings.HasPrefix(r.stdout, "hybridctl "+v.Version+" (commit ") {
		t.Errorf("--version: exit %d, want one line starting %q:\n%s%s", r.code, "hybridctl "+v.Version, r.stdout, r.stderr)
	}
	if r := run(t, "", "-v"); r.code != 2 {
		t.Errorf("-v at the top: exit %d, want 2 (it is not --version: -v is the log level)", r.code)
	}
	if r := run(t, "", "version", "-o", "yaml"); r.code != 2 || !strings.Contains(r.stderr, `-o/--output "yaml" is not an output format: want table, json`) {
		t.Errorf("version -o yaml: exit %d: %s", r.code, r.stderr)
	}
}

func TestVersionLine(t *testing.T) {
	v := VersionInfo{Version: "v1.5.0", Commit: "fedcba9876543210fedcba9876543210fedcba98", BuildDate: "2026-12-01T00:00:00Z", GoVersion: "go1.26.8", Platform: "windows/amd64"}
	if got, want := versionLine(v), "hybridctl v1.5.0 (commit fedcba987654, built 2026-12-01T00:00:00Z, go1.26.8 windows/amd64)\n"; got != want {
		t.Errorf("got %q\nwant %q", got, want)
	}
	v = VersionInfo{Version: "(devel)", Commit: "abc", Modified: true, GoVersion: "go1.26.8", Platform: "linux/amd64"}
	if got, want := versionLine(v), "hybridctl (devel) (commit abc+modified, built unknown, go1.26.8 linux/amd64)\n"; got != want {
		t.Errorf("got %q\nwant %q", got, want)
	}
	var b strings.Builder
	if err := writeVersionTable(&b, VersionInfo{Version: "v1.5.0", Targets: VersionTargets{"v1.37.2", "v3.33.0", "2.2.2"}}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "COMMIT      unknown\n") || !strings.Contains(b.String(), "BUILD DATE  unknown\n") {
		t.Errorf("unknown commit and date not said:\n%s", b.String())
	}
}
