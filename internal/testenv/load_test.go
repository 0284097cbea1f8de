package testenv

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		name    string
		in      string
		want    []string // "Kind namespace/name (file:line)"
		wantErr string
	}{
		{
			name: "multi-document with comments and empty documents",
			in: `# leading comment
apiVersion: v1
kind: Namespace
metadata:
  name: a
---
---
# a comment before the second object

apiVersion: v1
kind: ConfigMap
metadata:
  name: b
  namespace: a
`,
			want: []string{"Namespace a (f.yaml:2)", "ConfigMap a/b (f.yaml:10)"},
		},
		{
			name: "list is flattened",
			in: `apiVersion: v1
kind: List
items:
- apiVersion: v1
  kind: Namespace
  metadata: {name: xa}
- apiVersion: v1
  kind: Namespace
  metadata: {name: ya}
`,
			want: []string{"Namespace xa (f.yaml:1 items[0])", "Namespace ya (f.yaml:1 items[1])"},
		},
		{
			name:    "missing kind names the line",
			in:      "apiVersion: v1\nkind: Namespace\nmetadata: {name: a}\n---\napiVersion: v1\nmetadata: {name: b}\n",
			wantErr: "f.yaml:5: kind is missing",
		},
		{
			name:    "missing name",
			in:      "apiVersion: v1\nkind: Namespace\n",
			wantErr: "f.yaml:1: Namespace has no metadata.name",
		},
		{
			name:    "bad YAML",
			in:      "apiVersion: v1\nkind: [\n",
			wantErr: "f.yaml:1:",
		},
		{
			name:    "duplicate key (a missing ---)",
			in:      "apiVersion: v1\nkind: Namespace\nmetadata: {name: a}\napiVersion: v1\nkind: ConfigMap\n",
			wantErr: `f.yaml:1: yaml: unmarshal errors:`,
		},
		{
			name:    "not an object",
			in:      "- a\n- b\n",
			wantErr: "f.yaml:1:",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			objs, err := Parse("f.yaml", []byte(tc.in))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, o := range objs {
				got = append(got, o.Ref())
			}
			if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
		})
	}
}

func TestParseKeepsWholeNumbersAsInt64(t *testing.T) {
	objs, err := Parse("f.yaml", []byte("apiVersion: v1\nkind: X\nmetadata: {name: a}\nspec: {num: 4096, frac: 1.5}\n"))
	if err != nil {
		t.Fatal(err)
	}
	spec := objs[0].Object["spec"].(map[string]any)
	if _, ok := spec["num"].(int64); !ok {
		t.Errorf("spec.num is %T, want int64", spec["num"])
	}
	if _, ok := spec["frac"].(float64); !ok {
		t.Errorf("spec.frac is %T, want float64", spec["frac"])
	}
	// DeepCopy panics on types unstructured does not allow.
	_ = objs[0].DeepCopy()
}

func FuzzParse(f *testing.F) {
	f.Add([]byte("apiVersion: v1\nkind: Namespace\nmetadata: {name: a}\n---\napiVersion: v1\nkind: List\nitems: []\n"))
	f.Add([]byte("---\n---\n# c\n"))
	f.Add([]byte("apiVersion: v1\nkind: X\nmetadata: {name: a}\nspec: {n: 1e400}\n"))
	f.Add([]byte("{\"apiVersion\":\"v1\",\"kind\":\"X\",\"metadata\":{\"name\":\"a\"}}"))
	f.Fuzz(func(t *testing.T, data []byte) {
		objs, err := Parse("fuzz.yaml", data)
		if err != nil {
			return
		}
		for _, o := range objs {
			if o.GetAPIVersion() == "" || o.GetKind() == "" || o.GetName() == "" && o.GetGenerateName() == "" {
				t.Fatalf("accepted an object without identity: %v", o.Object)
			}
			_ = o.DeepCopy()
			_ = stepOf(o)
		}
	})
}

func TestStepOrder(t *testing.T) {
	objs, err := Parse("f.yaml", []byte(`apiVersion: operator.tigera.io/v1
kind: Installation
metadata: {name: default}
---
apiVersion: v1
kind: Pod
metadata: {name: pod}
---
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: ds}
---
apiVersion: v1
kind: Node
metadata: {name: node}
---
apiVersion: node.k8s.io/v1
kind: RuntimeClass
metadata: {name: rc}
---
apiVersion: v1
kind: Namespace
metadata: {name: ns}
---
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: crd}
---
apiVersion: v1
kind: ServiceAccount
metadata: {name: sa}
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: vap}
`))
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]int{}
	for _, o := range objs {
		got[o.GetKind()] = stepOf(o)
	}
	order := []string{"CustomResourceDefinition", "Namespace", "RuntimeClass", "Node", "DaemonSet", "Pod", "Installation"}
	for i := 1; i < len(order); i++ {
		if got[order[i-1]] >= got[order[i]] {
			t.Errorf("%s (step %d) is not loaded before %s (step %d)", order[i-1], got[order[i-1]], order[i], got[order[i]])
		}
	}
	if got["ServiceAccount"] != got["RuntimeClass"] || got["ValidatingAdmissionPolicy"] != got["RuntimeClass"] {
		t.Errorf("ServiceAccount, ValidatingAdmissionPolicy and RuntimeClass should share the policy step: %v", got)
	}
}

func TestSubset(t *testing.T) {
	got := map[string]any{
		"metadata": map[string]any{"name": "a", "uid": "u", "labels": map[string]any{"x": "1", "y": "2"}},
		"spec":     map[string]any{"n": int64(4096), "list": []any{map[string]any{"k": "v", "extra": true}}},
	}
	if d := Subset(map[string]any{
		"metadata": map[string]any{"name": "a", "labels": map[string]any{"x": "1"}},
		"spec":     map[string]any{"n": float64(4096), "list": []any{map[string]any{"k": "v"}}},
	}, got); d != nil {
		t.Errorf("contained object reported different: %v", d)
	}
	d := Subset(map[string]any{
		"metadata": map[string]any{"labels": map[string]any{"x": "2", "z": "3"}},
		"spec":     map[string]any{"list": []any{map[string]any{"k": "v"}, "second"}},
	}, got)
	want := []string{
		`.metadata.labels.x: got "1", want "2"`,
		`.metadata.labels.z: missing, want "3"`,
		`.spec.list: got 1 items, want at least 2`,
	}
	if strings.Join(d, "\n") != strings.Join(want, "\n") {
		t.Errorf("diffs:\n%s\nwant:\n%s", strings.Join(d, "\n"), strings.Join(want, "\n"))
	}
}

func TestBinaryMissingSaysHowToBuild(t *testing.T) {
	dir := t.TempDir()
	t.Setenv(EnvBinDir, dir)
	_, err := Binary("kube-apiserver")
	if err == nil || !strings.Contains(err.Error(), "hack/testenv/testenv build") {
		t.Fatalf("err = %v, want a hint to run hack/testenv/testenv build", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "kube-apiserver"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Binary("kube-apiserver"); err == nil || !strings.Contains(err.Error(), "not an executable") {
		t.Fatalf("non-executable file: err = %v", err)
	}
	_, err = Start(t.Context(), Options{})
	if err == nil || !strings.Contains(err.Error(), "hack/testenv/testenv build") {
		t.Fatalf("Start with no binaries: err = %v", err)
	}
}

// TestReleaseBinary: another release's binaries are in the cache under
// its version, never taken from $HYBRIDCTL_TESTENV_BIN (the control
// plane's); the control plane's own version is Binary.
func TestReleaseBinary(t *testing.T) {
	cache, override := t.TempDir(), t.TempDir()
	t.Setenv(EnvCacheDir, cache)
	t.Setenv(EnvBinDir, override)
	for _, d := range []string{override, filepath.Join(cache, "v1.36.3"), filepath.Join(cache, KubernetesVersion)} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, "kubeadm"), []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if p, err := ReleaseBinary("v1.36.3", "kubeadm"); err != nil || p != filepath.Join(cache, "v1.36.3", "kubeadm") {
		t.Errorf("ReleaseBinary(v1.36.3) = %s, %v", p, err)
	}
	if p, err := ReleaseBinary(KubernetesVersion, "kubeadm"); err != nil || p != filepath.Join(override, "kubeadm") {
		t.Errorf("ReleaseBinary(%s) = %s, %v; want $%s's", KubernetesVersion, p, err, EnvBinDir)
	}
	_, err := ReleaseBinary("v1.36.3", "kubelet")
	if err == nil || !strings.Contains(err.Error(), "hack/testenv/testenv build --version v1.36.3 kubelet") {
		t.Errorf("a missing v1.36.3 kubelet: %v, want the command that builds it", err)
	}
	if _, err := ReleaseBinary("v1.35.0", "kubeadm"); err == nil {
		t.Error("a release that is not built was found")
	}
}

func TestLocatesRepositoryAndVendoredData(t *testing.T) {
	root, err := RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "internal", "testenv", "doc.go")); err != nil {
		t.Errorf("RepoRoot %s: %v", root, err)
	}
	crds, err := CalicoCRDs(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(crds); err != nil {
		t.Errorf("CalicoCRDs: %v", err)
	}
	// The version the harness expects is the one hack/testenv builds.
	gomod, err := os.ReadFile(filepath.Join(root, "hack", "testenv", "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	re := regexp.MustCompile(`(?m)^\s*(require\s+)?k8s\.io/kubernetes ` + regexp.QuoteMeta(KubernetesVersion) + `\b`)
	if !re.Match(gomod) {
		t.Errorf("hack/testenv/go.mod does not require k8s.io/kubernetes %s", KubernetesVersion)
	}
}

func TestRemoveStaleDirs(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	mk := func(name, owner string) string {
		d := filepath.Join(tmp, dirPrefix+name)
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
		if owner != "" {
			if err := os.WriteFile(filepath.Join(d, ownerFile), []byte(owner), 0o600); err != nil {
				t.Fatal(err)
			}
		}
		return d
	}
	stale := mk("stale", strconv.Itoa(dead.Process.Pid))
	live := mk("live", strconv.Itoa(os.Getpid()))
	kept := mk("kept", "")
	removeStaleDirs()
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Errorf("directory of a dead owner not removed: %v", err)
	}
	for _, d := range []string{live, kept} {
		if _, err := os.Stat(d); err != nil {
			t.Errorf("%s removed: %v", d, err)
		}
	}
}
