package diagnose

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// FuzzParseLinux feeds arbitrary script output to the Linux parser and the
// checks: no panic, no hang, whatever a node prints. The seeds are the
// recorded output and the kept corpus in testdata/fuzz/FuzzParseLinux.
func FuzzParseLinux(f *testing.F) {
	b, err := os.ReadFile(filepath.Join("testdata", "linux-node-1.out"))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(b)
	f.Add([]byte("@@" + testMarker + " begin links\n[{\"ifname\":\"vxlan.calico\",\"linkinfo\":{\"info_kind\":\"vxlan\"}}]\n@@" + testMarker + " end links 0\n"))
	cl := buildCluster(labNodes(f), labAffinities(), "x")
	x := labExpect()
	f.Fuzz(func(t *testing.T, out []byte) {
		facts, err := ParseLinux("k8s-lab-node-1", out, testMarker)
		if err != nil {
			return
		}
		bracket(facts, time.Unix(1796173200, 0), time.Second)
		Evaluate(facts, cl, nil, x, nil)
	})
}

// FuzzParseWindows does the same for the Windows script's JSON.
func FuzzParseWindows(f *testing.F) {
	b, err := os.ReadFile(filepath.Join("testdata", "windows-win-1.json"))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(b)
	f.Add([]byte(`{"hns":{"ok":true,"value":{"name":"Calico","subnets":null,"policies":{"Type":"RemoteSubnetRoute","DestinationPrefix":"300.1.1.1/99"}}}}`))
	cl := buildCluster(labNodes(f), labAffinities(), "x")
	x := labExpect()
	f.Fuzz(func(t *testing.T, out []byte) {
		facts, err := ParseWindows("k8s-lab-win-1", out)
		if err != nil {
			return
		}
		bracket(facts, time.Unix(1796173200, 0), time.Second)
		Evaluate(facts, cl, nil, x, nil)
	})
}
