package plan

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hybridctl/hybridctl/internal/spec"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/golden")

func derive(t testing.TB, name string, src []byte) *Plan {
	t.Helper()
	r := spec.Parse(name, src)
	if err := r.Err(); err != nil {
		t.Fatal(err)
	}
	p, err := Derive(r.Cluster, r.Diagnostics)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func deriveFile(t testing.TB, path string) *Plan {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return derive(t, filepath.Base(path), b)
}

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", "golden", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the golden file (run go test ./internal/plan -update and review the diff)\n--- got ---\n%s", name, got)
	}
}

func TestGolden(t *testing.T) {
	for _, c := range []struct{ name, spec string }{
		{"lab", "../../examples/lab.yaml"},
		{"two-builds", "../spec/testdata/valid/two-builds.yaml"},
		{"linux-only-bgp", "../spec/testdata/valid/linux-only-bgp.yaml"},
		{"wide", "testdata/wide.yaml"},
		{"lab-linux", "../../examples/lab-linux.yaml"},
		{"offline", "../spec/testdata/valid/offline.yaml"},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := deriveFile(t, c.spec)
			var text bytes.Buffer
			if err := p.WriteText(&text); err != nil {
				t.Fatal(err)
			}
			golden(t, c.name+".txt", text.Bytes())
			js, err := json.MarshalIndent(p, "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			golden(t, c.name+".json", append(js, '\n'))
		})
	}
}

// TestLabNumbers: the guide's numbers for its lab.
func TestLabNumbers(t *testing.T) {
	p := deriveFile(t, "../../examples/lab.yaml")
	var js map[string]any
	b, _ := json.Marshal(p)
	if err := json.Unmarshal(b, &js); err != nil {
		t.Fatal(err)
	}
	get := func(path string) any {
		var cur any = js
		for _, k := range strings.Split(path, ".") {
			m, ok := cur.(map[string]any)
			if !ok {
				return nil
			}
			cur = m[k]
		}
		return cur
	}
	for path, want := range map[string]any{
		"cluster":                      "lab",
		"apiServer.serviceIP":          "10.96.0.1",
		"dnsServiceIP":                 "10.96.0.10",
		"podNetwork.cidr":              "172.21.0.0/16",
		"podNetwork.blockSize":         float64(26),
		"podNetwork.addressesPerBlock": float64(64),
		"vxlan.vni":                    float64(4096),
		"vxlan.port":                   float64(4789),
		"vxlan.podMTU":                 float64(1450),
	} {
		if got := get(path); got != want {
			t.Errorf("%s = %v, want %v", path, got, want)
		}
	}
	nodes := js["nodes"].([]any)
	if len(nodes) != 4 {
		t.Fatalf("%d nodes, want 4", len(nodes))
	}
	win := nodes[3].(map[string]any)
	if win["name"] != "k8s-lab-win-1" || win["maxPods"] != float64(60) || win["runtimeClass"] != "windows-2025" || win["os"] != "windows" {
		t.Errorf("windows node = %v", win)
	}
	taints := win["taints"].([]any)
	if len(taints) != 1 || taints[0].(map[string]any)["key"] != "os" || taints[0].(map[string]any)["value"] != "windows" || taints[0].(map[string]any)["effect"] != "NoSchedule" {
		t.Errorf("windows taints = %v", taints)
	}
	for _, k := range []string{"warnings", "nodes"} {
		if _, ok := js[k].([]any); !ok {
			t.Errorf("%s is not a list in JSON (must be [] when empty)", k)
		}
	}
}

func TestDerivedNumbers(t *testing.T) {
	base, err := os.ReadFile("../spec/testdata/base.yaml")
	if err != nil {
		t.Fatal(err)
	}
	edit := func(pairs ...string) []byte {
		s := string(base)
		for i := 0; i < len(pairs); i += 2 {
			if !strings.Contains(s, pairs[i]) {
				t.Fatalf("base spec lacks %q", pairs[i])
			}
			s = strings.Replace(s, pairs[i], pairs[i+1], 1)
		}
		return []byte(s)
	}
	cases := []struct {
		name  string
		src   []byte
		check func(t *testing.T, p *Plan)
	}{
		{"block /27 gives 28 pods", edit("blockSize: 26", "blockSize: 27"), func(t *testing.T, p *Plan) {
			expectInt(t, "windows maxPods", p.Nodes[3].MaxPods, 28)
			expectInt(t, "addressesPerBlock", p.PodNetwork.AddressesPerBlock, 32)
			expectInt(t, "blocks", p.PodNetwork.Blocks, 2048)
			expectInt(t, "linux maxPods", p.Nodes[1].MaxPods, 110)
		}},
		{"block /24 gives 252 pods", edit("blockSize: 26", "blockSize: 24"), func(t *testing.T, p *Plan) {
			expectInt(t, "windows maxPods", p.Nodes[3].MaxPods, 252)
			expectInt(t, "blocks", p.PodNetwork.Blocks, 256)
		}},
		{"other service CIDR", edit("serviceCIDR: 10.96.0.0/12", "serviceCIDR: 10.100.0.0/16"), func(t *testing.T, p *Plan) {
			expectStr(t, "API service IP", p.APIServer.ServiceIP, "10.100.0.1")
			expectStr(t, "DNS service IP", p.DNSServiceIP, "10.100.0.10")
			expectInt(t, "service addresses", p.ServiceNetwork.Addresses, 65536)
		}},
		{"jumbo frames", edit("dnsDomain: cluster.local", "dnsDomain: cluster.local\n    mtu: 9000"), func(t *testing.T, p *Plan) {
			expectInt(t, "pod MTU", p.VXLAN.PodMTU, 8950)
		}},
		{"Windows Server 2022", edit(`build: "10.0.26100"`, `build: "10.0.20348"`), func(t *testing.T, p *Plan) {
			expectStr(t, "runtime class", p.Nodes[3].RuntimeClass, "windows-2022")
			if len(p.RuntimeClasses) != 1 || p.RuntimeClasses[0].ImageTag != "ltsc2022" || p.RuntimeClasses[0].Build != "10.0.20348" {
				t.Errorf("runtime classes = %+v", p.RuntimeClasses)
			}
		}},
		{"Windows Server 2019", edit(`build: "10.0.26100"`, `build: "10.0.17763"`), func(t *testing.T, p *Plan) {
			expectStr(t, "runtime class", p.Nodes[3].RuntimeClass, "windows-2019")
		}},
		{"older Calico keeps the v1 CRDs", edit("version: v3.33.0", "version: v3.32.4"), func(t *testing.T, p *Plan) {
			expectStr(t, "CRD manifest", p.Calico.CRDManifest, "operator-crds.yaml")
			expectStr(t, "CRD mode", p.Calico.CRDMode, "crd.projectcalico.org/v1")
		}},
		{"Kubernetes 1.35 keeps the v1 CRDs", edit("kubernetesVersion: v1.37.2", "kubernetesVersion: v1.35.4", "crictl: {version: 1.37.0}", "crictl: {version: 1.35.0}"), func(t *testing.T, p *Plan) {
			expectStr(t, "CRD manifest", p.Calico.CRDManifest, "operator-crds.yaml")
			expectStr(t, "kube-proxy image", p.KubeProxy.WindowsImage, "sigwindowstools/kube-proxy:v1.35.4-calico-hostprocess")
		}},
		// kubeadm 1.36.3's constants: DefaultEtcdVersion 3.6.8-0,
		// CoreDNSVersion v1.14.2, PauseVersion 3.10.2 (1.37.2's are 3.7.0-0,
		// v1.14.6, 3.10.2).
		{"Kubernetes 1.36 takes kubeadm 1.36's images", edit("kubernetesVersion: v1.37.2", "kubernetesVersion: v1.36.3", "crictl: {version: 1.37.0}", "crictl: {version: 1.36.0}"), func(t *testing.T, p *Plan) {
			expectImages(t, p, map[string]string{
				"kube-apiserver":     "registry.k8s.io/kube-apiserver:v1.36.3",
				"kube-proxy":         "registry.k8s.io/kube-proxy:v1.36.3",
				"etcd":               "registry.k8s.io/etcd:3.6.8-0",
				"coredns":            "registry.k8s.io/coredns/coredns:v1.14.2",
				"pause":              "registry.k8s.io/pause:3.10.2",
				"kube-proxy-windows": "sigwindowstools/kube-proxy:v1.36.3-calico-hostprocess",
			})
			expectStr(t, "sandbox image", p.SandboxImage, "registry.k8s.io/pause:3.10.2")
			expectNoWarning(t, p, "P001", "P002")
		}},
		{"Kubernetes 1.37 takes kubeadm 1.37's images", base, func(t *testing.T, p *Plan) {
			expectImages(t, p, map[string]string{
				"kube-apiserver": "registry.k8s.io/kube-apiserver:v1.37.2",
				"etcd":           "registry.k8s.io/etcd:3.7.0-0",
				"coredns":        "registry.k8s.io/coredns/coredns:v1.14.6",
				"pause":          "registry.k8s.io/pause:3.10.2",
			})
			expectNoWarning(t, p, "P001", "P002")
		}},
		// A minor hybridctl does not know: the newest known tags, and a
		// warning that says so.
		{"Kubernetes 1.38 is warned about", edit("kubernetesVersion: v1.37.2", "kubernetesVersion: v1.38.0", "crictl: {version: 1.37.0}", "crictl: {version: 1.38.0}"), func(t *testing.T, p *Plan) {
			expectImages(t, p, map[string]string{"etcd": "registry.k8s.io/etcd:3.7.0-0", "coredns": "registry.k8s.io/coredns/coredns:v1.14.6"})
			n := 0
			for _, w := range p.Warnings {
				if strings.HasPrefix(w.Check, "P001") || strings.HasPrefix(w.Check, "P002") {
					n++
				}
			}
			if n != 2 {
				t.Errorf("warnings %+v, want P001 and P002", p.Warnings)
			}
		}},
		{"Calico 3.33 on 1.37 uses native CRDs", base, func(t *testing.T, p *Plan) {
			expectStr(t, "CRD manifest URL", p.Calico.CRDManifestURL, "https://raw.githubusercontent.com/projectcalico/calico/v3.33.0/manifests/v3_projectcalico_org.yaml")
			expectStr(t, "operator URL", p.Calico.OperatorManifestURL, "https://raw.githubusercontent.com/projectcalico/calico/v3.33.0/manifests/tigera-operator.yaml")
			expectStr(t, "windows dataplane", p.Calico.WindowsDataplane, "HNS")
		}},
		// An API port equal to a fixed one (here Typha's) keeps both rows, in
		// the order they are listed: the sort is stable.
		// S503 refuses a TCP port the control-plane node uses; VXLAN's
		// port is UDP, so both rows stay, in the order they were added.
		{"API port number shared with VXLAN", edit("k8s-lab-api.example.com:6443", "k8s-lab-api.example.com:4789"), func(t *testing.T, p *Plan) {
			var got []string
			for _, port := range p.Ports {
				if port.Port == 4789 {
					got = append(got, port.Protocol+" "+port.Purpose)
				}
			}
			if len(got) != 2 || got[0] != "TCP kube-apiserver" || !strings.HasPrefix(got[1], "UDP Calico VXLAN") {
				t.Errorf("port 4789 rows = %q, want kube-apiserver then Calico VXLAN", got)
			}
		}},
		{"no DNS suffix", edit("    dnsSuffix: example.com\n", ""), func(t *testing.T, p *Plan) {
			expectStr(t, "fqdn", p.Nodes[0].FQDN, "k8s-lab-master-1")
			if len(p.APIServer.CertSANs) != 1 {
				t.Errorf("certSANs = %v, want only the API name", p.APIServer.CertSANs)
			}
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { c.check(t, derive(t, c.name, c.src)) })
	}
}

func TestTwoBuildsTwoRuntimeClasses(t *testing.T) {
	p := deriveFile(t, "../spec/testdata/valid/two-builds.yaml")
	if len(p.RuntimeClasses) != 2 {
		t.Fatalf("runtime classes = %+v, want 2", p.RuntimeClasses)
	}
	expectStr(t, "first", p.RuntimeClasses[0].Name, "windows-2022")
	expectStr(t, "second", p.RuntimeClasses[1].Name, "windows-2025")
	expectStr(t, "second's nodes", strings.Join(p.RuntimeClasses[1].Nodes, ","), "win2025-a,win2025-b")
	expectInt(t, "maxPods with /27", p.Nodes[2].MaxPods, 28)
	// Calico does not list 2025: one warning, on the first node of that
	// build; none for 2022.
	if len(p.Warnings) != 2 || p.Warnings[0].Check != "P004" || p.Warnings[0].Name != "calico-windows-version" || p.Warnings[0].Path != "spec.nodes[3].windows.build" ||
		!strings.Contains(p.Warnings[0].Message, "Windows Server 2025 (10.0.26100, node win2025-a)") || !strings.Contains(p.Warnings[0].Message, spec.CalicoWindowsRequirements) ||
		!strings.Contains(p.Warnings[1].Check, "S403") {
		t.Errorf("warnings = %+v, want Calico's 2025 warning and the one-Linux-worker warning", p.Warnings)
	}
}

// TestCalicoWindowsVersionChecked: a build named in
// calico.checkedWindowsBuilds is not warned about; naming another build
// (2022, which Calico lists) does not silence 2025.
func TestCalicoWindowsVersionChecked(t *testing.T) {
	for _, tc := range []struct {
		checked []string
		warn    bool
	}{
		{nil, true},
		{[]string{"10.0.20348"}, true},
		{[]string{"10.0.26100"}, false},
		{[]string{"10.0.20348", "10.0.26100"}, false},
	} {
		b, err := os.ReadFile("../spec/testdata/valid/two-builds.yaml")
		if err != nil {
			t.Fatal(err)
		}
		r := spec.Parse("two-builds.yaml", b)
		if err := r.Err(); err != nil {
			t.Fatal(err)
		}
		r.Cluster.Spec.Calico.CheckedWindowsBuilds = tc.checked
		p, err := Derive(r.Cluster, r.Diagnostics)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, w := range p.Warnings {
			if strings.HasPrefix(w.Check, "P004") {
				got = append(got, w.Path)
			}
		}
		if want := tc.warn; (len(got) == 1 && got[0] == "spec.nodes[3].windows.build") != want || len(got) > 1 {
			t.Errorf("checked %v: P004 warnings on %v, want a warning: %v", tc.checked, got, want)
		}
	}
}

func expectInt(t *testing.T, what string, got, want int) {
	t.Helper()
	if got != want {
		t.Errorf("%s = %d, want %d", what, got, want)
	}
}

func expectStr(t *testing.T, what, got, want string) {
	t.Helper()
	if got != want {
		t.Errorf("%s = %q, want %q", what, got, want)
	}
}

// TestDiagramControlPlaneOnly: a cluster of one control-plane node (a
// valid spec) draws its box with no connector to workers hanging below it.
func TestDiagramControlPlaneOnly(t *testing.T) {
	b, err := os.ReadFile("../../examples/lab-linux.yaml")
	if err != nil {
		t.Fatal(err)
	}
	src := string(b)
	i := strings.Index(src, "  - name: k8s-lab-node-1")
	j := strings.Index(src[i:], "address: 192.168.10.26\n")
	if i < 0 || j < 0 {
		t.Fatal("examples/lab-linux.yaml changed: no worker block to cut")
	}
	p := derive(t, "cp-only.yaml", []byte(src[:i]+src[i+j+len("address: 192.168.10.26\n"):]))
	d := p.Diagram()
	if !strings.Contains(d, "k8s-lab-master-1 192.168.10.23") || strings.Contains(d, "k8s-lab-node") {
		t.Fatalf("diagram:\n%s", d)
	}
	if strings.ContainsAny(d, "┬┴") {
		t.Errorf("a connector to workers that do not exist:\n%s", d)
	}
}

// TestNATOutgoing: natOutgoing false reaches the plan as false; left out,
// it is Calico's default, true.
func TestNATOutgoing(t *testing.T) {
	b, err := os.ReadFile("../../examples/lab-linux.yaml")
	if err != nil {
		t.Fatal(err)
	}
	src := string(b)
	if !strings.Contains(src, "    natOutgoing: true\n") {
		t.Fatal("examples/lab-linux.yaml changed: no natOutgoing: true line")
	}
	for _, c := range []struct {
		line string
		want bool
	}{{"    natOutgoing: false\n", false}, {"", true}, {"    natOutgoing: true\n", true}} {
		p := derive(t, "nat.yaml", []byte(strings.Replace(src, "    natOutgoing: true\n", c.line, 1)))
		if p.PodNetwork.NATOutgoing != c.want {
			t.Errorf("%q: NATOutgoing %v, want %v", c.line, p.PodNetwork.NATOutgoing, c.want)
		}
	}
}

// TestDiagramLoneBoxInLastRow: five workers make a row of four and a row of
// one; the lone box hangs off the bus with a straight │, not a corner.
func TestDiagramLoneBoxInLastRow(t *testing.T) {
	b, err := os.ReadFile("../../examples/lab-linux.yaml")
	if err != nil {
		t.Fatal(err)
	}
	src := string(b)
	var more strings.Builder
	for i := 3; i <= 5; i++ {
		fmt.Fprintf(&more, "  - name: k8s-lab-node-%d\n    role: worker\n    os: linux\n    address: 192.168.10.%d\n", i, 30+i)
	}
	anchor := "    address: 192.168.10.26\n"
	if !strings.Contains(src, anchor) {
		t.Fatal("examples/lab-linux.yaml changed: no node-2 address line")
	}
	d := derive(t, "five.yaml", []byte(strings.Replace(src, anchor, anchor+more.String(), 1))).Diagram()
	lines := strings.Split(d, "\n")
	last := -1
	for i, l := range lines {
		if strings.Contains(l, "k8s-lab-node-5") {
			last = i
		}
	}
	if last < 2 || strings.Contains(lines[last], "k8s-lab-node-4") {
		t.Fatalf("node-5 is not alone in a row:\n%s", d)
	}
	if bus := strings.TrimSpace(lines[last-2]); bus != "│" {
		t.Errorf("the lone box's bus is %q, want │:\n%s", bus, d)
	}
}

// expectImages: the plan's Linux image of each name (the Windows one for
// kube-proxy-windows) is the reference given.
func expectImages(t *testing.T, p *Plan, want map[string]string) {
	t.Helper()
	for name, ref := range want {
		found := false
		for _, im := range p.Images {
			if im.Name == name && (im.OS == spec.OSLinux || name == "kube-proxy-windows") {
				found = true
				if im.Image != ref {
					t.Errorf("image %s = %s, want %s", name, im.Image, ref)
				}
			}
		}
		if !found {
			t.Errorf("the plan lists no %s image", name)
		}
	}
}

// expectNoWarning: no plan warning of the given checks.
func expectNoWarning(t *testing.T, p *Plan, checks ...string) {
	t.Helper()
	for _, w := range p.Warnings {
		for _, c := range checks {
			if w.Check == c {
				t.Errorf("warning %s: %s", w.Check, w.Message)
			}
		}
	}
}

// TestContainerdRequired: containerd 2.0 from Kubernetes 1.36 on, both
// sides of the limit; nothing for a version that cannot be read.
func TestContainerdRequired(t *testing.T) {
	for v, want := range map[string]string{"v1.37.2": "2.0", "v1.36.0": "2.0", "1.36.3": "2.0", "v1.35.9": "", "v1.9.0": "", "v2.0.0": "", "": "", "latest": ""} {
		if got := ContainerdRequired(v); got != want {
			t.Errorf("ContainerdRequired(%q) = %q, want %q", v, got, want)
		}
	}
}
