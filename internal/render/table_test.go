package render

import (
	"fmt"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/hybridctl/hybridctl/internal/plan"
	"github.com/hybridctl/hybridctl/internal/spec"
)

func docs(t *testing.T, f File) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, d := range strings.Split(string(f.Data), "\n---\n") {
		var m map[string]any
		if err := yaml.Unmarshal([]byte(d), &m); err != nil {
			t.Fatalf("%s: %v", f.Path, err)
		}
		out = append(out, m)
	}
	return out
}

// get walks a dotted path (a number indexes a list).
func get(m any, path string) any {
	for _, k := range strings.Split(path, ".") {
		switch v := m.(type) {
		case map[string]any:
			m = v[k]
		case []any:
			var i int
			if _, err := fmt.Sscanf(k, "%d", &i); err != nil || i >= len(v) {
				return nil
			}
			m = v[i]
		default:
			return nil
		}
	}
	return m
}

func TestSpecsRenderRuntimeClassesMaxPodsAddresses(t *testing.T) {
	type winNode struct{ name, build, addr string }
	for _, tc := range []struct {
		name                      string
		podCIDR, svcCIDR, nodeNet string
		blockSize                 int
		windows                   []winNode
		wantRCs                   map[string]string // name -> build
		wantMaxPods               int
		wantAPIServiceIP, wantDNS string
	}{
		{
			name: "lab", podCIDR: "172.21.0.0/16", svcCIDR: "10.96.0.0/12", nodeNet: "192.168.10.0/24", blockSize: 26,
			windows:     []winNode{{"k8s-lab-win-1", "10.0.26100", "192.168.10.25"}},
			wantRCs:     map[string]string{"windows-2025": "10.0.26100"},
			wantMaxPods: 60, wantAPIServiceIP: "10.96.0.1", wantDNS: "10.96.0.10",
		},
		{
			name: "two builds", podCIDR: "172.21.0.0/16", svcCIDR: "10.96.0.0/12", nodeNet: "192.168.10.0/24", blockSize: 26,
			windows: []winNode{
				{"win-2025", "10.0.26100", "192.168.10.25"}, {"win-2022", "10.0.20348", "192.168.10.27"}, {"win-2022-b", "10.0.20348", "192.168.10.28"},
			},
			wantRCs:     map[string]string{"windows-2025": "10.0.26100", "windows-2022": "10.0.20348"},
			wantMaxPods: 60, wantAPIServiceIP: "10.96.0.1", wantDNS: "10.96.0.10",
		},
		{
			name: "/27 blocks", podCIDR: "10.244.0.0/16", svcCIDR: "10.96.0.0/16", nodeNet: "192.168.10.0/24", blockSize: 27,
			windows:     []winNode{{"win-1", "10.0.26100", "192.168.10.25"}},
			wantRCs:     map[string]string{"windows-2025": "10.0.26100"},
			wantMaxPods: 28, wantAPIServiceIP: "10.96.0.1", wantDNS: "10.96.0.10",
		},
		{
			name: "/24 blocks, other networks", podCIDR: "100.64.0.0/12", svcCIDR: "172.30.0.0/16", nodeNet: "10.20.0.0/16", blockSize: 24,
			windows:     []winNode{{"win-1", "10.0.17763", "10.20.5.7"}},
			wantRCs:     map[string]string{"windows-2019": "10.0.17763"},
			wantMaxPods: 252, wantAPIServiceIP: "172.30.0.1", wantDNS: "172.30.0.10",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := labCluster(t)
			n := &c.Spec.Network
			n.PodCIDR, n.ServiceCIDR, n.NodeCIDR, n.BlockSize = tc.podCIDR, tc.svcCIDR, tc.nodeNet, tc.blockSize
			if tc.nodeNet != "192.168.10.0/24" {
				n.Gateway, n.DNSServers = "10.20.0.1", []string{"10.20.0.1"}
			}
			var nodes []spec.Node
			for i, nd := range c.Spec.Nodes {
				if nd.IsWindows() {
					continue
				}
				if tc.nodeNet != "192.168.10.0/24" {
					nd.Address = fmt.Sprintf("10.20.0.%d", 10+i)
				}
				nodes = append(nodes, nd)
			}
			for _, w := range tc.windows {
				nodes = append(nodes, spec.Node{Name: w.name, Role: spec.RoleWorker, OS: spec.OSWindows, Address: w.addr, Windows: &spec.Windows{Build: w.build}})
			}
			c.Spec.Nodes = nodes
			p := planOf(t, c)
			files := mustRender(t, p, Options{})

			// RuntimeClasses: one per distinct build.
			gotRCs := map[string]string{}
			for path, f := range files {
				if strings.HasPrefix(path, "cluster/windows/runtimeclass-") {
					d := docs(t, f)[0]
					name := get(d, "metadata.name").(string)
					gotRCs[name] = get(d, "scheduling.nodeSelector").(map[string]any)["node.kubernetes.io/windows-build"].(string)
					if path != "cluster/windows/runtimeclass-"+name+".yaml" {
						t.Errorf("%s holds RuntimeClass %s", path, name)
					}
				}
			}
			if fmt.Sprint(gotRCs) != fmt.Sprint(tc.wantRCs) {
				t.Errorf("RuntimeClasses %v, want %v", gotRCs, tc.wantRCs)
			}
			// One aspnetapp per RuntimeClass, each with its own class.
			apps := 0
			for path, f := range files {
				if strings.HasPrefix(path, "workloads/aspnetapp") {
					for _, d := range docs(t, f) {
						if d["kind"] == "Deployment" {
							apps++
							rc := get(d, "spec.template.spec.runtimeClassName").(string)
							if _, ok := tc.wantRCs[rc]; !ok {
								t.Errorf("%s: runtimeClassName %s", path, rc)
							}
						}
					}
				}
			}
			if apps != len(tc.wantRCs) {
				t.Errorf("%d aspnetapp Deployments, want %d", apps, len(tc.wantRCs))
			}
			// Every Windows node: maxPods, taint, address in the script.
			for _, w := range tc.windows {
				patch := docs(t, files["nodes/"+w.name+"/patches/kubeletconfiguration.yaml"])[0]
				if got := patch["maxPods"]; got != float64(tc.wantMaxPods) {
					t.Errorf("%s: maxPods %v, want %d", w.name, got, tc.wantMaxPods)
				}
				join := docs(t, files["nodes/"+w.name+"/join.yaml"])[0]
				if got := get(join, "nodeRegistration.taints.0.key"); got != "os" {
					t.Errorf("%s: join taint %v", w.name, get(join, "nodeRegistration.taints"))
				}
				if got := get(join, "nodeRegistration.name"); got != w.name {
					t.Errorf("%s: join name %v", w.name, got)
				}
				ps := string(files["nodes/"+w.name+"/prepare.ps1"].Data)
				if !strings.Contains(ps, "$Address = "+PsQuote(w.addr)) {
					t.Errorf("%s: prepare.ps1 lacks its address %s", w.name, w.addr)
				}
			}
			// Cluster networks in kubeadm and Calico.
			kc := docs(t, files["cluster/kubeadm-config.yaml"])
			if get(kc[1], "networking.podSubnet") != tc.podCIDR || get(kc[1], "networking.serviceSubnet") != tc.svcCIDR {
				t.Errorf("kubeadm networking %v", kc[1]["networking"])
			}
			inst := docs(t, files["cluster/calico/calico-installation.yaml"])[0]
			if get(inst, "spec.calicoNetwork.ipPools.0.cidr") != tc.podCIDR ||
				get(inst, "spec.calicoNetwork.ipPools.0.blockSize") != float64(tc.blockSize) ||
				get(inst, "spec.serviceCIDRs.0") != tc.svcCIDR {
				t.Errorf("Installation %v", inst["spec"])
			}
			if p.APIServer.ServiceIP != tc.wantAPIServiceIP || p.DNSServiceIP != tc.wantDNS {
				t.Errorf("plan API %s DNS %s", p.APIServer.ServiceIP, p.DNSServiceIP)
			}
			rb := string(files["runbook.md"].Data)
			if !strings.Contains(rb, "service IP "+tc.wantAPIServiceIP) || !strings.Contains(rb, "cluster DNS "+tc.wantDNS) {
				t.Error("runbook lacks the service and DNS addresses")
			}
		})
	}
}

// A Linux-only cluster renders no Windows files.
func TestLinuxOnly(t *testing.T) {
	c := labCluster(t)
	var nodes []spec.Node
	for _, n := range c.Spec.Nodes {
		if !n.IsWindows() {
			nodes = append(nodes, n)
		}
	}
	c.Spec.Nodes = nodes
	files := mustRender(t, planOf(t, c), Options{})
	for p := range files {
		if strings.Contains(p, "windows") || strings.Contains(p, "aspnetapp") || strings.HasSuffix(p, ".ps1") {
			t.Errorf("Linux-only cluster renders %s", p)
		}
	}
	if strings.Contains(string(files["cluster/calico/calico-installation.yaml"].Data), "windowsDataplane") {
		t.Error("Linux-only Installation has windowsDataplane")
	}
	if strings.Contains(string(files["runbook.md"].Data), "Windows nodes") {
		t.Error("Linux-only runbook has Windows steps")
	}
}

// haPlan is the lab with three control-plane nodes.
func haPlan(t testing.TB) *plan.Plan {
	c := labCluster(t)
	cp := c.Spec.Nodes[0]
	for i, addr := range []string{"192.168.10.21", "192.168.10.22"} {
		n := cp
		n.Name = fmt.Sprintf("k8s-lab-master-%d", i+2)
		n.Address = addr
		c.Spec.Nodes = append(c.Spec.Nodes, n)
	}
	return planOf(t, c)
}

// Further control-plane nodes join with controlPlane set; the first runs
// kubeadm init (--upload-certs) and has no join file.
func TestSeveralControlPlanes(t *testing.T) {
	p := haPlan(t)
	files := mustRender(t, p, Options{})
	if _, ok := files["nodes/k8s-lab-master-1/join.yaml"]; ok {
		t.Error("the first control-plane node has a join file")
	}
	for name, addr := range map[string]string{"k8s-lab-master-2": "192.168.10.21", "k8s-lab-master-3": "192.168.10.22"} {
		d := docs(t, files["nodes/"+name+"/join.yaml"])[0]
		if get(d, "controlPlane.localAPIEndpoint.advertiseAddress") != addr || get(d, "controlPlane.certificateKey") != CertificateKeyPlaceholder {
			t.Errorf("%s: controlPlane %v", name, d["controlPlane"])
		}
		if get(d, "nodeRegistration.taints") != nil {
			t.Errorf("%s: taints %v; kubeadm sets the control-plane taint itself", name, get(d, "nodeRegistration.taints"))
		}
	}
	worker := docs(t, files["nodes/k8s-lab-node-1/join.yaml"])[0]
	if worker["controlPlane"] != nil {
		t.Error("a worker's join file has controlPlane")
	}
	rb := string(files["runbook.md"].Data)
	if !strings.Contains(rb, "kubeadm init --config kubeadm-config.yaml --upload-certs") || !strings.Contains(rb, "--certificate-key") {
		t.Error("runbook: no --upload-certs / --certificate-key for further control planes")
	}
	sans := get(docs(t, files["cluster/kubeadm-config.yaml"])[1], "apiServer.certSANs")
	if fmt.Sprint(sans) != "[k8s-lab-api.example.com k8s-lab-master-1.example.com k8s-lab-master-2.example.com k8s-lab-master-3.example.com]" {
		t.Errorf("certSANs %v", sans)
	}
	withKey := mustRender(t, p, Options{CertificateKey: testCertificateKey})
	if m := withKey["nodes/k8s-lab-master-2/join.yaml"].Mode; m != 0o600 {
		t.Errorf("join file with a certificate key: mode %o", m)
	}
	if m := withKey["nodes/k8s-lab-node-1/join.yaml"].Mode; m != 0o644 {
		t.Errorf("worker join file without a token: mode %o", m)
	}
}
