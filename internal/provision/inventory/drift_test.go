package inventory

import (
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/hybridctl/hybridctl/internal/hostfacts"
	"github.com/hybridctl/hybridctl/internal/provision/engine"
)

func readFile(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func lab() Expect {
	return Expect{KubernetesVersion: "v1.37.2", ContainerdVersion: "2.2.2", SandboxImage: "registry.k8s.io/pause:3.10.2",
		MaxPods: map[string]int{"w": 60}, CertsDir: map[engine.OS]string{engine.Linux: "/etc/containerd/certs.d"}}
}

func whats(ds []Difference) []string {
	var out []string
	for _, d := range ds {
		out = append(out, d.What+"="+d.Have)
	}
	return out
}

// Drift: a Linux member prepared as the spec says has none; each setting
// the preparation makes is compared where it lives in containerd 2's and
// 1.x's configuration; what the host did not report is not compared.
func TestDrift(t *testing.T) {
	linux := &Node{Host: engine.Host{Name: "l", OS: engine.Linux}}
	good := &hostfacts.Installed{Kubelet: "v1.37.2", Kubeadm: "v1.37.2", Kubectl: "v1.37.2", Containerd: "v2.2.2",
		ContainerdConfig: readFile(t, "testdata/containerd-v3.toml"),
		KubeletConfig:    "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\ncgroupDriver: systemd\n",
		Sysctl:           map[string]string{"net.ipv4.ip_forward": "1", "net.bridge.bridge-nf-call-iptables": "1"}}
	linux.Facts = good
	if d := Drift(linux, lab()); len(d) != 0 {
		t.Errorf("a prepared node drifts: %v", d)
	}
	old := *good
	old.Kubelet, old.Containerd = "v1.36.3", "v1.7.24"
	old.ContainerdConfig = readFile(t, "testdata/containerd-v2.toml")
	old.KubeletConfig = "kind: KubeletConfiguration\ncgroupDriver: cgroupfs\n"
	old.Sysctl = map[string]string{"net.ipv4.ip_forward": "0"}
	old.Swap = true
	linux.Facts = &old
	got := whats(Drift(linux, lab()))
	want := []string{"kubelet version=v1.36.3", "containerd version=v1.7.24", "containerd SystemdCgroup=false",
		"containerd sandbox image=registry.k8s.io/pause:3.8", "containerd registry config_path=(none)",
		"kubelet cgroupDriver=cgroupfs", "sysctl net.ipv4.ip_forward=0", "swap=on"}
	if !slices.Equal(got, want) {
		t.Errorf("drift\n%q\nwant\n%q", got, want)
	}
	if s := Drift(linux, lab())[0].String(); s != "kubelet version is v1.36.3, the spec wants v1.37.2" {
		t.Errorf("String: %q", s)
	}
	// A registry host directory is compared only when the spec has one.
	x := lab()
	x.CertsDir = nil
	if got := whats(Drift(linux, x)); slices.Contains(got, "containerd registry config_path=(none)") {
		t.Errorf("no registry: %q", got)
	}
	// Windows: maxPods, not cgroups, sysctls or containerd's version.
	win := &Node{Host: engine.Host{Name: "w", OS: engine.Windows}, Facts: &hostfacts.Installed{Kubelet: "v1.37.2", Containerd: "v1.7.0",
		KubeletConfig: "kind: KubeletConfiguration\nmaxPods: 110\ncgroupDriver: \"\"\n", Swap: true,
		ContainerdConfig: "version = 3\n[plugins.'io.containerd.cri.v1.images'.pinned_images]\nsandbox = 'registry.k8s.io/pause:3.10.2'\n"}}
	if got := whats(Drift(win, lab())); !slices.Equal(got, []string{"kubelet maxPods=110"}) {
		t.Errorf("Windows drift %q", got)
	}
	// Unreadable files are said, not guessed at.
	bad := *good
	bad.KubeletConfig = "kind: [unclosed"
	bad.ContainerdConfig = "not = toml = at all"
	linux.Facts = &bad
	if got := whats(Drift(linux, lab())); len(got) != 2 || !strings.HasPrefix(got[0], "containerd configuration=unreadable") ||
		!strings.HasPrefix(got[1], "kubelet configuration=unreadable") {
		t.Errorf("unreadable files: %q", got)
	}
	if Drift(&Node{Host: engine.Host{Name: "n"}}, lab()) != nil {
		t.Error("no facts, no drift")
	}
}
