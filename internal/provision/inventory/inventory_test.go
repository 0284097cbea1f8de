package inventory

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/hybridctl/hybridctl/internal/hostfacts"
	"github.com/hybridctl/hybridctl/internal/hostfacts/hostfactstest"
	"github.com/hybridctl/hybridctl/internal/provision/engine"
	"github.com/hybridctl/hybridctl/internal/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m, testenv.Options{Lab: true}) }

// labHosts are the guide's lab as the spec names it (the lab fixture's
// Nodes have these names and InternalIPs).
func labHosts() []engine.Host {
	return []engine.Host{
		{Name: "k8s-lab-master-1", Role: engine.RoleControlPlane, OS: engine.Linux, Address: "192.168.10.23"},
		{Name: "k8s-lab-node-1", Role: engine.RoleWorker, OS: engine.Linux, Address: "192.168.10.24"},
		{Name: "k8s-lab-node-2", Role: engine.RoleWorker, OS: engine.Linux, Address: "192.168.10.26"},
		{Name: "k8s-lab-win-1", Role: engine.RoleWorker, OS: engine.Windows, Address: "192.168.10.25"},
	}
}

func node(name, ip string) corev1.Node {
	n := corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if ip != "" {
		n.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeHostName, Address: name}, {Type: corev1.NodeInternalIP, Address: ip}}
	}
	return n
}

// classify: a Node of the name and address is a member; a name with
// another address, or the address under another name, is a conflict that
// names both; a host with kubelet.conf is a member even without a Node;
// the cluster's other Nodes are Extra, sorted.
func TestClassify(t *testing.T) {
	hosts := []engine.Host{
		{Name: "cp", Address: "10.0.0.1"},
		{Name: "moved", Address: "10.0.0.2"},
		{Name: "taken", Address: "10.0.0.3"},
		{Name: "joined-host", Address: "10.0.0.4"},
		{Name: "fresh", Address: "10.0.0.5"},
		{Name: "no-ip", Address: "10.0.0.6"},
	}
	inv := &Inventory{API: true}
	for _, h := range hosts {
		inv.Nodes = append(inv.Nodes, &Node{Host: h})
	}
	inv.Nodes[3].Facts = &hostfacts.Installed{KubeletConf: true}
	inv.Nodes[4].Facts = &hostfacts.Installed{} // read, not joined
	classify(inv, []corev1.Node{
		node("cp", "10.0.0.1"),
		node("moved", "10.0.0.99"),
		node("other", "10.0.0.3"),
		node("zeta", "10.0.0.50"),
		node("no-ip", ""),
	})
	want := []struct {
		status Status
		reason string
	}{
		{StatusMember, "Node cp with InternalIP 10.0.0.1"},
		{StatusConflict, "the cluster's Node moved has InternalIP 10.0.0.99, the spec says 10.0.0.2"},
		{StatusConflict, "its address 10.0.0.3 is the InternalIP of the cluster's Node other"},
		{StatusMember, "kubelet.conf but the cluster has no Node joined-host"},
		{StatusNew, "not in the cluster"},
		{StatusConflict, "has InternalIP (none), the spec says 10.0.0.6"},
	}
	for i, w := range want {
		n := inv.Nodes[i]
		if n.Status != w.status || !strings.Contains(n.Reason, w.reason) {
			t.Errorf("%s: %s %q, want %s containing %q", n.Host.Name, n.Status, n.Reason, w.status, w.reason)
		}
	}
	if got := fmt.Sprint(inv.Extra); got != "[{other 10.0.0.3} {zeta 10.0.0.50}]" {
		t.Errorf("extra %s", got)
	}
	err := inv.Conflicts()
	for _, name := range []string{"spec node moved", "spec node taken", "spec node no-ip"} {
		if err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("conflicts %v lack %q", err, name)
		}
	}
	if !inv.Member("cp") || inv.Member("fresh") || inv.Member("unknown") {
		t.Error("Member")
	}
	// Without the cluster, only the hosts tell.
	noAPI := &Inventory{Nodes: []*Node{{Host: hosts[0], Facts: &hostfacts.Installed{KubeletConf: true}}, {Host: hosts[4]}}}
	classify(noAPI, nil)
	if noAPI.Nodes[0].Status != StatusMember || noAPI.Nodes[1].Status != StatusNew || noAPI.Conflicts() != nil {
		t.Errorf("without the API: %s %s %v", noAPI.Nodes[0].Status, noAPI.Nodes[1].Status, noAPI.Conflicts())
	}
	var none *Inventory
	if none.Member("cp") || none.Node("cp") != nil || none.Conflicts() != nil {
		t.Error("a nil inventory has no members")
	}
}

// Discover against the real API server holding the guide's lab: every spec
// node is a member; the cluster's version is read; one unreachable host
// is recorded on its node while the others are read; a RESTConfig that
// says "no cluster yet" gives an inventory of new nodes, and another
// failure is an error.
func TestDiscoverLab(t *testing.T) {
	env := testenv.Get(t)
	ctx := context.Background()
	joined := func(time.Time) string {
		return "### kubelet-conf\npresent\n### kubelet-version\nKubernetes v1.37.2\n### end\n"
	}
	inv, err := Discover(ctx, Options{Hosts: labHosts(), Concurrency: 2,
		RESTConfig: func(context.Context) (*rest.Config, error) { return env.AdminConfig(), nil },
		Connect: func(_ context.Context, host string) (hostfacts.Runner, error) {
			if host == "k8s-lab-node-2" {
				return nil, errors.New("dial tcp 192.168.10.26:22: no route to host")
			}
			return hostfactstest.Runner{Out: joined}, nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	if !inv.API || inv.ServerVersion != "v1.37.2" {
		t.Errorf("API %v version %q", inv.API, inv.ServerVersion)
	}
	for _, n := range inv.Nodes {
		if n.Status != StatusMember || n.Object == nil {
			t.Errorf("%s: %s %s", n.Host.Name, n.Status, n.Reason)
		}
		switch {
		case n.Host.Name == "k8s-lab-node-2" && (n.HostErr == nil || n.Facts != nil):
			t.Errorf("the unreachable host: %v %v", n.HostErr, n.Facts)
		case n.Host.Name != "k8s-lab-node-2" && (n.Facts == nil || n.Facts.Kubelet != "v1.37.2"):
			t.Errorf("%s facts %+v %v", n.Host.Name, n.Facts, n.HostErr)
		}
	}
	if !inv.Node("k8s-lab-node-1").Ready() {
		t.Error("the lab's node-1 is Ready")
	}
	if len(inv.Extra) != 0 {
		t.Errorf("extra %v", inv.Extra)
	}

	fresh, err := Discover(ctx, Options{Hosts: labHosts(),
		RESTConfig: func(context.Context) (*rest.Config, error) {
			return nil, fmt.Errorf("kubeconfig has no context %q: %w", "lab", ErrNoCluster)
		}})
	if err != nil || fresh.API || fresh.Member("k8s-lab-master-1") {
		t.Errorf("no cluster yet: %v API %v", err, fresh.API)
	}
	if _, err := Discover(ctx, Options{Hosts: labHosts(),
		RESTConfig: func(context.Context) (*rest.Config, error) {
			return nil, errors.New("x509: certificate signed by unknown authority")
		}}); err == nil || !strings.Contains(err.Error(), "x509") {
		t.Errorf("an unreadable cluster: %v", err)
	}
}

// Discover lists the Nodes 500 at a time: a cluster of more Nodes than a
// page is read whole, and the ones the spec does not name are Extra.
func TestDiscoverPaginates(t *testing.T) {
	env := testenv.StartT(t, testenv.Options{})
	cs, err := kubernetes.NewForConfig(env.AdminConfig())
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	const total = 520
	for i := range total {
		n := node(fmt.Sprintf("n%03d", i), fmt.Sprintf("10.1.%d.%d", i/250, i%250+1))
		created, err := cs.CoreV1().Nodes().Create(ctx, &n, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		created.Status = n.Status
		if _, err := cs.CoreV1().Nodes().UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	hosts := []engine.Host{{Name: "n000", Address: "10.1.0.1"}, {Name: "n519", Address: "10.1.2.20"}}
	inv, err := Discover(ctx, Options{Hosts: hosts, RESTConfig: func(context.Context) (*rest.Config, error) { return env.AdminConfig(), nil }})
	if err != nil {
		t.Fatal(err)
	}
	if !inv.Member("n000") || !inv.Member("n519") || len(inv.Extra) != total-2 {
		t.Errorf("members %v %v, %d extra", inv.Member("n000"), inv.Member("n519"), len(inv.Extra))
	}
}
