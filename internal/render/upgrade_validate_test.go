package render

import (
	"strings"
	"testing"

	"github.com/hybridctl/hybridctl/internal/plan"
	"github.com/hybridctl/hybridctl/internal/spec"
)

// TestUpgradeConfigurationValidates: the rendered UpgradeConfiguration is
// accepted by the real kubeadm of the version it upgrades to and of the
// version it upgrades from (the first control plane's new kubeadm reads
// it; kubeadm upgrade node on the others too), and it ignores kubeadm's
// health-check Job on every cluster.
func TestUpgradeConfigurationValidates(t *testing.T) {
	linux := labCluster(t)
	var nodes []spec.Node
	for _, n := range linux.Spec.Nodes {
		if n.OS != spec.OSWindows {
			nodes = append(nodes, n)
		}
	}
	linux.Spec.Nodes = nodes
	for _, tc := range []struct {
		spec        string
		p           *plan.Plan
		wantJobSkip bool
	}{{"the lab", labPlan(t), true}, {"the lab without Windows", planOf(t, linux), true}} {
		p := tc.p
		data, err := UpgradeConfiguration(p)
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Contains(string(data), "CreateJob"); got != tc.wantJobSkip {
			t.Errorf("%s: CreateJob ignored %v, want %v:\n%s", tc.spec, got, tc.wantJobSkip, data)
		}
		if !strings.Contains(string(data), "kubernetesVersion: "+p.KubernetesVersion) {
			t.Errorf("%s: no target version:\n%s", tc.spec, data)
		}
		kubeadmValidate(t, kubeadmBinary(t), "upgrade.yaml", data)
	}
}
