package adopt

import (
	"bytes"
	"context"
	"errors"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/hybridctl/hybridctl/internal/plan"
	"github.com/hybridctl/hybridctl/internal/spec"
	"github.com/hybridctl/hybridctl/internal/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m, testenv.Options{Lab: true, Calico: true}) }

// loadSpec loads a written spec the way plan does.
func loadSpec(t *testing.T, data []byte) (*spec.Result, *plan.Plan) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "cluster.yaml")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	res, err := spec.LoadFile(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	if res.Err() != nil {
		t.Fatalf("plan refuses the adopted spec: %v\n%s", res.Err(), data)
	}
	p, err := plan.Derive(res.Cluster, res.Diagnostics)
	if err != nil {
		t.Fatal(err)
	}
	return res, p
}

// The guide's lab as a running cluster (the lab fixture in the real API
// server: kubeadm's ConfigMaps, the Nodes, Calico's Installation and
// pools) reads back as the guide's lab: the spec plan accepts names the
// same nodes, addresses, roles, OS and builds, version, endpoint,
// networks and Calico settings as examples/lab.yaml.
func TestReadLab(t *testing.T) {
	env := testenv.Get(t)
	a, err := Read(context.Background(), env.AdminConfig(), "lab")
	if err != nil {
		t.Fatal(err)
	}
	data := a.YAML("context lab")
	_, got := loadSpec(t, data)
	examples, err := os.ReadFile("../../examples/lab.yaml")
	if err != nil {
		t.Fatal(err)
	}
	_, want := loadSpec(t, examples)
	if got.Cluster != "lab" || got.KubernetesVersion != want.KubernetesVersion || got.ControlPlaneEndpoint != want.ControlPlaneEndpoint {
		t.Errorf("cluster %s %s %s", got.Cluster, got.KubernetesVersion, got.ControlPlaneEndpoint)
	}
	if got.PodNetwork.CIDR != want.PodNetwork.CIDR || got.PodNetwork.BlockSize != want.PodNetwork.BlockSize ||
		got.ServiceNetwork.CIDR != want.ServiceNetwork.CIDR || got.DNSDomain != want.DNSDomain || got.NodeNetwork.CIDR != want.NodeNetwork.CIDR {
		t.Errorf("networks: pods %s/%d services %s domain %s nodes %s", got.PodNetwork.CIDR, got.PodNetwork.BlockSize,
			got.ServiceNetwork.CIDR, got.DNSDomain, got.NodeNetwork.CIDR)
	}
	if got.Calico.Encapsulation != "VXLAN" || got.Calico.BGP != "Disabled" || got.KubeProxy.LinuxMode != want.KubeProxy.LinuxMode {
		t.Errorf("calico %+v kube-proxy %+v", got.Calico, got.KubeProxy)
	}
	describe := func(p *plan.Plan) []string {
		var out []string
		for _, n := range p.Nodes {
			out = append(out, n.Name+" "+n.Role+" "+n.OS+" "+n.Address+" "+n.WindowsBuild)
		}
		slices.Sort(out)
		return out
	}
	if g, w := describe(got), describe(want); !slices.Equal(g, w) {
		t.Errorf("nodes\n%q\nwant\n%q", g, w)
	}
	for _, wantText := range []string{"# ssh: {user: root, port: 22}   # FILL IN", "# gateway: ", "# dnsServers: ", `name: "lab"`} {
		if !bytes.Contains(data, []byte(wantText)) {
			t.Errorf("the spec lacks %q:\n%s", wantText, data)
		}
	}
	if len(a.WindowsMissing) != 0 {
		t.Errorf("the lab has every Windows prerequisite, yet: %v", a.WindowsMissing)
	}
}

// A cluster kubeadm did not build is refused, not guessed at.
func TestReadRefusesNonKubeadm(t *testing.T) {
	env := testenv.StartT(t, testenv.Options{})
	_, err := Read(context.Background(), env.AdminConfig(), "")
	if !errors.Is(err, ErrNotKubeadm) || !strings.Contains(err.Error(), "kube-system has no kubeadm-config ConfigMap") {
		t.Errorf("got %v", err)
	}
}

// A cluster without Calico, whose kubeadm configuration names no endpoint
// and whose values carry YAML and terminal control characters: the spec
// still parses to the same values (nothing from the cluster can add a
// field or a line), the endpoint comes from the control plane's address,
// the notes say what hybridctl cannot manage and what is missing for
// Windows.
func TestReadHandBuiltCluster(t *testing.T) {
	env := testenv.StartT(t, testenv.Options{})
	cs, err := kubernetes.NewForConfig(env.AdminConfig())
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	clusterCfg := "apiVersion: kubeadm.k8s.io/v1beta4\nkind: ClusterConfiguration\nkubernetesVersion: v1.37.2\n" +
		"clusterName: \"hand\\n  evil: yes\\u001b[2J\"\nnetworking:\n  podSubnet: 10.244.0.0/16\n  serviceSubnet: 10.96.0.0/12\n"
	for _, cm := range []*corev1.ConfigMap{
		{ObjectMeta: metav1.ObjectMeta{Name: "kubeadm-config", Namespace: "kube-system"}, Data: map[string]string{"ClusterConfiguration": clusterCfg}},
		{ObjectMeta: metav1.ObjectMeta{Name: "kube-proxy", Namespace: "kube-system"}, Data: map[string]string{"config.conf": "mode: ipvs\n"}},
		{ObjectMeta: metav1.ObjectMeta{Name: "kubelet-config", Namespace: "kube-system"}, Data: map[string]string{"kubelet": "failCgroupV1: false\ncgroupDriver: systemd\n"}},
	} {
		if _, err := cs.CoreV1().ConfigMaps("kube-system").Create(ctx, cm, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for _, n := range []struct{ name, ip string }{{"cp-1", "10.20.0.10"}, {"w-1", "10.20.0.11"}} {
		node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n.name, Labels: map[string]string{corev1.LabelOSStable: "linux"}}}
		if n.name == "cp-1" {
			node.Labels["node-role.kubernetes.io/control-plane"] = ""
		}
		created, err := cs.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		created.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: n.ip}}
		created.Status.NodeInfo.ContainerRuntimeVersion = "containerd://2.1.4"
		if _, err := cs.CoreV1().Nodes().UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	a, err := Read(ctx, env.AdminConfig(), "")
	if err != nil {
		t.Fatal(err)
	}
	data := a.YAML("context hand\n\x1b]52;c;AAAA\x07")
	if bytes.ContainsAny(data, "\x1b\x07") {
		t.Errorf("control characters reach the file:\n%q", data)
	}
	res, err := spec.LoadFile(ctx, writeTemp(t, data))
	if err != nil {
		t.Fatal(err)
	}
	c := res.Cluster
	if c.Metadata.Name != "hand\n  evil: yes\x1b[2J" {
		t.Errorf("the name did not round-trip: %q", c.Metadata.Name)
	}
	if res.Err() == nil {
		t.Error("plan accepts a name that is not a DNS label")
	}
	s := c.Spec
	if s.ControlPlaneEndpoint != "10.20.0.10:"+port(env.Host()) || s.KubeProxy.Mode != "ipvs" || !s.AllowCgroupV1 ||
		s.Containerd.Version != "2.1.4" || s.Network.NodeCIDR != "10.20.0.0/24" || s.Network.PodCIDR != "10.244.0.0/16" {
		t.Errorf("spec %+v", s)
	}
	notes := ""
	for _, n := range a.Notes {
		notes += string(n.Severity) + " " + n.Message + "\n"
	}
	for _, want := range []string{"warning kubeadm was given no controlPlaneEndpoint", "warning the cluster runs no Calico but a pod network hybridctl does not know",
		"info how hybridctl reaches each node over SSH"} {
		if !strings.Contains(notes, want) {
			t.Errorf("notes lack %q:\n%s", want, notes)
		}
	}
	if strings.ContainsAny(notes, "\x1b\n\x07") && strings.Count(notes, "\n") != len(a.Notes) {
		t.Errorf("a note spans lines or carries escapes:\n%q", notes)
	}
	for _, want := range []string{"the tigera-operator/kubernetes-services-endpoint ConfigMap", "Calico IPAM strictAffinity",
		"the kube-proxy-windows DaemonSet", "a RuntimeClass for each Windows build"} {
		if !slices.Contains(a.WindowsMissing, want) {
			t.Errorf("Windows prerequisites lack %q: %v", want, a.WindowsMissing)
		}
	}
	// With a name of the user's, plan accepts it.
	named, err := Read(ctx, env.AdminConfig(), "hand")
	if err != nil {
		t.Fatal(err)
	}
	loadSpec(t, named.YAML("context hand"))
}

func writeTemp(t *testing.T, data []byte) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "cluster.yaml")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// port is the port of an https://host:port URL.
func port(host string) string {
	return host[strings.LastIndexByte(host, ':')+1:]
}

// covering: the /24 of the nodes when they share one, else the longest
// prefix that holds them all.
func TestCovering(t *testing.T) {
	for _, tc := range []struct {
		addrs []string
		want  string
	}{
		{nil, ""},
		{[]string{"192.168.10.23"}, "192.168.10.0/24"},
		{[]string{"192.168.10.23", "192.168.10.254"}, "192.168.10.0/24"},
		{[]string{"192.168.10.23", "192.168.11.1"}, "192.168.10.0/23"},
		{[]string{"10.0.0.1", "10.255.0.1"}, "10.0.0.0/8"},
	} {
		var as []netipAddr
		for _, s := range tc.addrs {
			as = append(as, mustAddr(t, s))
		}
		if got := covering(as); got != tc.want {
			t.Errorf("covering(%v) = %q, want %q", tc.addrs, got, tc.want)
		}
	}
}

type netipAddr = netip.Addr

func mustAddr(t *testing.T, s string) netip.Addr {
	t.Helper()
	a, err := netip.ParseAddr(s)
	if err != nil {
		t.Fatal(err)
	}
	return a
}
