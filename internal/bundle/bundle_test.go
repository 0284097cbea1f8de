package bundle

import (
	"os"
	"strings"
	"testing"

	"github.com/hybridctl/hybridctl/examples"
	"github.com/hybridctl/hybridctl/internal/plan"
	"github.com/hybridctl/hybridctl/internal/spec"
)

func derive(t testing.TB, name string, src []byte) *plan.Plan {
	t.Helper()
	r := spec.Parse(name, src)
	if err := r.Err(); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	p, err := plan.Derive(r.Cluster, r.Diagnostics)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func labPlan(t testing.TB) *plan.Plan { return derive(t, "lab.yaml", examples.Lab) }

func linuxLabPlan(t testing.TB) *plan.Plan {
	t.Helper()
	src, err := os.ReadFile("../../examples/lab-linux.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return derive(t, "lab-linux.yaml", src)
}

// TestArtifactsOfTheLab: the guide's lab (a Windows node, two add-ons)
// gives exactly these files, in this order, at the contract's paths, from
// these upstream URLs.
func TestArtifactsOfTheLab(t *testing.T) {
	arts, err := Artifacts(labPlan(t))
	if err != nil {
		t.Fatal(err)
	}
	want := []struct{ os, name, path, url, sumURL string }{
		{"linux", "containerd", "linux-amd64/containerd-2.2.2-linux-amd64.tar.gz", "https://github.com/containerd/containerd/releases/download/v2.2.2/containerd-2.2.2-linux-amd64.tar.gz", "https://github.com/containerd/containerd/releases/download/v2.2.2/containerd-2.2.2-linux-amd64.tar.gz.sha256sum"},
		{"linux", "runc", "linux-amd64/runc.amd64", "https://github.com/opencontainers/runc/releases/download/v1.5.3/runc.amd64", "https://github.com/opencontainers/runc/releases/download/v1.5.3/runc.sha256sum"},
		{"linux", "cni-plugins", "linux-amd64/cni-plugins-linux-amd64-v1.10.0.tgz", "https://github.com/containernetworking/plugins/releases/download/v1.10.0/cni-plugins-linux-amd64-v1.10.0.tgz", "https://github.com/containernetworking/plugins/releases/download/v1.10.0/cni-plugins-linux-amd64-v1.10.0.tgz.sha256"},
		{"linux", "crictl", "linux-amd64/crictl-v1.37.0-linux-amd64.tar.gz", "https://github.com/kubernetes-sigs/cri-tools/releases/download/v1.37.0/crictl-v1.37.0-linux-amd64.tar.gz", "https://github.com/kubernetes-sigs/cri-tools/releases/download/v1.37.0/crictl-v1.37.0-linux-amd64.tar.gz.sha256"},
		{"linux", "kubelet", "linux-amd64/kubelet", "https://dl.k8s.io/release/v1.37.2/bin/linux/amd64/kubelet", "https://dl.k8s.io/release/v1.37.2/bin/linux/amd64/kubelet.sha256"},
		{"linux", "kubeadm", "linux-amd64/kubeadm", "https://dl.k8s.io/release/v1.37.2/bin/linux/amd64/kubeadm", "https://dl.k8s.io/release/v1.37.2/bin/linux/amd64/kubeadm.sha256"},
		{"linux", "kubectl", "linux-amd64/kubectl", "https://dl.k8s.io/release/v1.37.2/bin/linux/amd64/kubectl", "https://dl.k8s.io/release/v1.37.2/bin/linux/amd64/kubectl.sha256"},
		{"windows", "containerd", "windows-amd64/containerd-2.2.2-windows-amd64.tar.gz", "https://github.com/containerd/containerd/releases/download/v2.2.2/containerd-2.2.2-windows-amd64.tar.gz", "https://github.com/containerd/containerd/releases/download/v2.2.2/containerd-2.2.2-windows-amd64.tar.gz.sha256sum"},
		{"windows", "crictl", "windows-amd64/crictl-v1.37.0-windows-amd64.tar.gz", "https://github.com/kubernetes-sigs/cri-tools/releases/download/v1.37.0/crictl-v1.37.0-windows-amd64.tar.gz", "https://github.com/kubernetes-sigs/cri-tools/releases/download/v1.37.0/crictl-v1.37.0-windows-amd64.tar.gz.sha256"},
		{"windows", "kubelet.exe", "windows-amd64/kubelet.exe", "https://dl.k8s.io/release/v1.37.2/bin/windows/amd64/kubelet.exe", "https://dl.k8s.io/release/v1.37.2/bin/windows/amd64/kubelet.exe.sha256"},
		{"windows", "kubeadm.exe", "windows-amd64/kubeadm.exe", "https://dl.k8s.io/release/v1.37.2/bin/windows/amd64/kubeadm.exe", "https://dl.k8s.io/release/v1.37.2/bin/windows/amd64/kubeadm.exe.sha256"},
		{"windows", "kubectl.exe", "windows-amd64/kubectl.exe", "https://dl.k8s.io/release/v1.37.2/bin/windows/amd64/kubectl.exe", "https://dl.k8s.io/release/v1.37.2/bin/windows/amd64/kubectl.exe.sha256"},
		{"windows", "nssm", "windows-amd64/nssm-2.24.zip", "https://k8stestinfrabinaries.blob.core.windows.net/nssm-mirror/nssm-2.24.zip", ""},
		{"workstation", "calico-crds", "manifests/v3_projectcalico_org.yaml", "https://raw.githubusercontent.com/projectcalico/calico/v3.33.0/manifests/v3_projectcalico_org.yaml", ""},
		{"workstation", "tigera-operator", "manifests/tigera-operator.yaml", "https://raw.githubusercontent.com/projectcalico/calico/v3.33.0/manifests/tigera-operator.yaml", ""},
		{"workstation", "addon-metrics-server", "manifests/components.yaml", "https://github.com/kubernetes-sigs/metrics-server/releases/download/v0.9.0/components.yaml", ""},
		{"workstation", "addon-cert-manager", "manifests/cert-manager.yaml", "https://github.com/cert-manager/cert-manager/releases/download/v1.21.2/cert-manager.yaml", ""},
	}
	if len(arts) != len(want) {
		for _, a := range arts {
			t.Logf("%s %s %s", a.OS, a.Name, a.Path)
		}
		t.Fatalf("%d artifacts, want %d", len(arts), len(want))
	}
	for i, w := range want {
		a := arts[i]
		if a.OS != w.os || a.Name != w.name || a.Path != w.path || a.URL != w.url || a.ChecksumURL != w.sumURL {
			t.Errorf("artifact %d = %s %s %s %s %s\nwant        %s %s %s %s %s", i, a.OS, a.Name, a.Path, a.URL, a.ChecksumURL, w.os, w.name, w.path, w.url, w.sumURL)
		}
		wantFrom := ChecksumFile
		if w.sumURL == "" {
			wantFrom = ChecksumNone
		}
		if a.ChecksumFrom != wantFrom || a.SHA256 != "" || a.Purpose == "" || a.Version == "" {
			t.Errorf("%s: checksumFrom %q sha256 %q purpose %q version %q", a.Path, a.ChecksumFrom, a.SHA256, a.Purpose, a.Version)
		}
	}
	if a, ok := Find(arts, OSWindows, NameContainerd); !ok || !strings.HasPrefix(a.Path, WindowsDir+"/") {
		t.Errorf("Find windows containerd = %+v, %v", a, ok)
	}
	if got := len(ForOS(arts, OSLinux)); got != 7 {
		t.Errorf("ForOS(linux) = %d artifacts, want 7", got)
	}
}

// TestArtifactsLinuxOnly: no Windows node, no Windows files; the
// manifests follow the plan (no add-ons in lab-linux, native CRDs).
func TestArtifactsLinuxOnly(t *testing.T) {
	p := linuxLabPlan(t)
	arts, err := Artifacts(p)
	if err != nil {
		t.Fatal(err)
	}
	if w := ForOS(arts, OSWindows); len(w) != 0 {
		t.Errorf("a Linux-only plan gets Windows files: %+v", w)
	}
	if len(ForOS(arts, OSLinux)) != 7 {
		t.Errorf("linux artifacts: %+v", ForOS(arts, OSLinux))
	}
	m := ForOS(arts, OSWorkstation)
	if len(m) != 2+len(p.Addons) || m[0].Path != "manifests/"+p.Calico.CRDManifest {
		t.Errorf("manifests: %+v", m)
	}
	// An older Kubernetes gets the operator-crds.yaml CRDs, under that name.
	p.Calico.CRDManifest = "operator-crds.yaml"
	p.Calico.CRDManifestURL = "https://raw.githubusercontent.com/projectcalico/calico/v3.33.0/manifests/operator-crds.yaml"
	arts, err = Artifacts(p)
	if err != nil {
		t.Fatal(err)
	}
	if a, _ := Find(arts, OSWorkstation, NameCalicoCRDs); a.Path != "manifests/operator-crds.yaml" {
		t.Errorf("CRD path %q", a.Path)
	}
}

// TestArtifactsRefuseUnsafeVersions: a version that cannot name a release
// file (it would become part of a path) is refused, naming the field.
func TestArtifactsRefuseUnsafeVersions(t *testing.T) {
	for _, c := range []struct {
		set   func(*plan.Plan)
		field string
	}{
		{func(p *plan.Plan) { p.Versions.Containerd = "2.2.2/../../x" }, "spec.containerd.version"},
		{func(p *plan.Plan) { p.Versions.Runc = "1.5.3-../x" }, "spec.runc.version"},
		{func(p *plan.Plan) { p.Versions.Kubernetes = "v1.37.2+build" }, "spec.kubernetesVersion"},
		{func(p *plan.Plan) { p.Versions.CNIPlugins = "" }, "spec.cniPlugins.version"},
	} {
		p := labPlan(t)
		c.set(p)
		if _, err := Artifacts(p); err == nil || !strings.Contains(err.Error(), c.field) {
			t.Errorf("%s: err = %v", c.field, err)
		}
	}
}

func TestCheckVersion(t *testing.T) {
	for _, c := range []struct {
		v  string
		ok bool
	}{
		{"1.2.3", true}, {"v1.37.2", true}, {"0.0.0", true}, {"v1.38.0-rc.1", true}, {"2.3.0-beta.0", true}, {"1.2.3-a-b", true},
		{"", false}, {"1.2", false}, {"1.2.3.4", false}, {"01.2.3", false}, {"1.02.3", false}, {"1.2.3-", false},
		{"1.2.3-rc..1", false}, {"1.2.3-rc/1", false}, {"1.2.3+meta", false}, {"1.2.3-rc_1", false}, {"1.2.x", false},
		{"vv1.2.3", false}, {"1.2.3 ", false}, {"1.2.-3", false},
	} {
		err := CheckVersion(c.v)
		if (err == nil) != c.ok {
			t.Errorf("CheckVersion(%q) = %v, want ok=%v", c.v, err, c.ok)
		}
	}
}
