package diagnose

import (
	"testing"
	"time"

	"github.com/hybridctl/hybridctl/internal/hostfacts"
	"github.com/hybridctl/hybridctl/internal/hostfacts/hostfactstest"
)

// FuzzEvaluateLinux feeds arbitrary node script output to the Linux
// parser and the checks: no panic, no hang, whatever a node prints. The
// seeds are the recorded output and a near miss (hostfacts's
// FuzzParseNodeLinux keeps the parser's corpus).
func FuzzEvaluateLinux(f *testing.F) {
	f.Add([]byte(hostfactstest.Fixture(f, hostfactstest.NodeLinux)))
	f.Add([]byte("@@" + hostfactstest.Marker + " begin links\n[{\"ifname\":\"vxlan.calico\",\"linkinfo\":{\"info_kind\":\"vxlan\"}}]\n@@" + hostfactstest.Marker + " end links 0\n"))
	cl := buildCluster(labNodes(f), labAffinities(), "x")
	x := labExpect()
	f.Fuzz(func(t *testing.T, out []byte) {
		facts, err := hostfacts.ParseNodeLinux("k8s-lab-node-1", out, hostfactstest.Marker)
		if err != nil {
			return
		}
		bracket(facts, time.Unix(1796173200, 0), time.Second)
		Evaluate(facts, cl, nil, x, nil)
	})
}

// FuzzEvaluateWindows does the same for the Windows node script's JSON.
func FuzzEvaluateWindows(f *testing.F) {
	f.Add([]byte(hostfactstest.Fixture(f, hostfactstest.NodeWindows)))
	f.Add([]byte(`{"hns":{"ok":true,"value":{"name":"Calico","subnets":null,"policies":{"Type":"RemoteSubnetRoute","DestinationPrefix":"300.1.1.1/99"}}}}`))
	cl := buildCluster(labNodes(f), labAffinities(), "x")
	x := labExpect()
	f.Fuzz(func(t *testing.T, out []byte) {
		facts, err := hostfacts.ParseNodeWindows("k8s-lab-win-1", out)
		if err != nil {
			return
		}
		bracket(facts, time.Unix(1796173200, 0), time.Second)
		Evaluate(facts, cl, nil, x, nil)
	})
}
