package artifacts

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/hybridctl/hybridctl/internal/testenv"
)

// TestPodNetworkManifestOnAPIServer loads the pod network's manifest into a
// real API server: it is accepted as it is, and the agent's ServiceAccount
// may list and watch Nodes (the agent's informer) and nothing more.
func TestPodNetworkManifestOnAPIServer(t *testing.T) {
	if testing.Short() {
		t.Skip("needs the test control plane; not with -short")
	}
	m, err := PodNetworkManifest("192.168.10.1:5000/hybridctl-lab/podnet:lab", "k8s-lab-api.example.com:6443", 1450)
	if err != nil {
		t.Fatal(err)
	}
	objs, err := testenv.Parse("podnet.yaml", m)
	if err != nil {
		t.Fatal(err)
	}
	env := testenv.StartT(t, testenv.Options{})
	if err := env.Load(t.Context(), objs); err != nil {
		t.Fatalf("the API server refuses the manifest: %v", err)
	}
	cfg, err := env.UserConfig("system:serviceaccount:kube-system:hybridctl-lab-podnet", "system:serviceaccounts", "system:serviceaccounts:kube-system", "system:authenticated")
	if err != nil {
		t.Fatal(err)
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	if _, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{}); err != nil {
		t.Errorf("the agent cannot list Nodes: %v", err)
	}
	timeout := int64(1)
	w, err := cs.CoreV1().Nodes().Watch(ctx, metav1.ListOptions{TimeoutSeconds: &timeout})
	if err != nil {
		t.Errorf("the agent cannot watch Nodes: %v", err)
	} else {
		select {
		case <-w.ResultChan():
		case <-time.After(5 * time.Second):
		}
		w.Stop()
	}
	if err := cs.CoreV1().Nodes().Delete(ctx, "any", metav1.DeleteOptions{}); err == nil || !strings.Contains(err.Error(), "forbidden") {
		t.Errorf("the agent may delete Nodes: %v", err)
	}
	if _, err := cs.CoreV1().Pods("kube-system").List(ctx, metav1.ListOptions{}); err == nil {
		t.Error("the agent may list Pods")
	}
}

func TestPodNetworkManifestRefusesBadInput(t *testing.T) {
	for _, c := range []struct {
		image, api string
		mtu        int
	}{
		{"", "", 0},
		{"reg/podnet:lab\nkind: Secret", "", 0},
		{"reg/podnet:lab", "no-port", 0},
		{"reg/podnet:lab", "host:0", 0},
		{"reg/podnet:lab", "host:65536", 0},
		{"reg/podnet:lab", "\"host:6443", 0},
		{"reg/podnet:lab", "", 575},
		{"reg/podnet:lab", "", 65536},
	} {
		if _, err := PodNetworkManifest(c.image, c.api, c.mtu); err == nil {
			t.Errorf("PodNetworkManifest(%q, %q, %d) accepted", c.image, c.api, c.mtu)
		}
	}
	if _, err := PodNetworkManifest("reg/podnet:lab", "host:6443", 576); err != nil {
		t.Errorf("the smallest MTU: %v", err)
	}
}
