package diagnose

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/hybridctl/hybridctl/internal/finding"
	"github.com/hybridctl/hybridctl/internal/hostfacts/hostfactstest"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/hybridctl/hybridctl/internal/testenv"
)

// The cluster side from the real kube-apiserver with Calico's CRDs and the
// guide's lab: BlockAffinities (projectcalico.org/v3, a deleted one among
// them) and the Nodes' annotations; then, with the affinities gone, the
// Nodes' spec.podCIDR; a Windows node's recorded HNS state is checked
// against the view read from the API.
func TestLoadClusterLive(t *testing.T) {
	env := testenv.StartT(t, testenv.Options{Lab: true})
	cfg := env.AdminConfig()
	kc, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	dc, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res := dc.Resource(blockAffinityResources[0])
	affs := append(labAffinities(), affinity{Name: "k8s-lab-node-1-172-21-9-0-26", Node: "k8s-lab-node-1", CIDR: "172.21.9.0/26", State: "confirmed", Deleted: true})
	for _, a := range affs {
		u := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "projectcalico.org/v3", "kind": "BlockAffinity",
			"metadata": map[string]any{"name": a.Name},
			"spec":     map[string]any{"node": a.Node, "cidr": a.CIDR, "state": a.State, "deleted": a.Deleted},
		}}
		if _, err := res.Create(ctx, u, metav1.CreateOptions{}); err != nil {
			t.Fatalf("create BlockAffinity %s: %v", a.Name, err)
		}
	}
	cl, err := LoadCluster(ctx, kc, dc)
	if err != nil {
		t.Fatal(err)
	}
	n1, ok := cl.Node("k8s-lab-node-1")
	if cl.Source != SourceCalico || !ok || len(n1.Blocks) != 1 || n1.Blocks[0].String() != "172.21.211.0/26" ||
		n1.MAC != "66:ee:f4:61:98:50" || n1.Address.String() != "192.168.10.24" || len(cl.Nodes) != 4 ||
		!strings.Contains(cl.Evidence, "4 blockaffinities.projectcalico.org") {
		t.Fatalf("calico view: %+v\n%+v", cl, n1)
	}
	w := parseWindowsT(t, "k8s-lab-win-1", edit(t, hostfactstest.Fixture(t, hostfactstest.NodeWindows),
		`"DistributedRouterMacAddress":"66-ee-f4-61-98-50"`, `"DistributedRouterMacAddress":"66-ee-f4-61-98-51"`))
	fs, _ := Evaluate(w, cl, nil, labExpect(), map[string]bool{"HC508": true})
	expectExactly(t, fs, want{"HC508", finding.Error, []string{"has MAC 66:ee:f4:61:98:51, but k8s-lab-node-1's VTEP MAC is 66:ee:f4:61:98:50"}})

	for _, a := range affs {
		if err := res.Delete(ctx, a.Name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	cl, err = LoadCluster(ctx, kc, dc)
	if err != nil {
		t.Fatal(err)
	}
	if n1, _ := cl.Node("k8s-lab-node-1"); cl.Source != SourceRoutes || len(n1.Blocks) != 1 || n1.Blocks[0].String() != "172.21.1.0/24" {
		t.Fatalf("routes view: %+v %+v", cl, n1)
	}
	// No Calico CRDs at all (a cluster on another CNI): not an error.
	if _, _, err := listBlockAffinities(ctx, nil); err != nil {
		t.Fatal(err)
	}
}
