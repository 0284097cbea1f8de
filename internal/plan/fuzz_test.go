package plan

import (
	"fmt"
	"io"
	"net/netip"
	"os"
	"path/filepath"
	"testing"

	"github.com/hybridctl/hybridctl/internal/spec"
)

// FuzzDerive: every spec the loader accepts must derive a plan whose
// numbers hold together, and print without error.
func FuzzDerive(f *testing.F) {
	for _, pattern := range []string{"../spec/testdata/*.yaml", "../spec/testdata/valid/*.yaml", "../spec/testdata/invalid/*.yaml", "testdata/*.yaml", "../../examples/*.yaml"} {
		files, _ := filepath.Glob(pattern)
		for _, file := range files {
			if b, err := os.ReadFile(file); err == nil {
				f.Add(b)
			}
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		r := spec.Parse("fuzz.yaml", data)
		if r.Err() != nil {
			return
		}
		p, err := Derive(r.Cluster, r.Diagnostics)
		if err != nil {
			t.Fatalf("valid spec, but Derive failed: %v", err)
		}
		svc := netip.MustParsePrefix(p.ServiceNetwork.CIDR)
		for _, ip := range []string{p.APIServer.ServiceIP, p.DNSServiceIP} {
			if !svc.Contains(netip.MustParseAddr(ip)) {
				t.Fatalf("%s outside service network %s", ip, svc)
			}
		}
		for _, n := range p.Nodes {
			if n.IsWindows() {
				if n.MaxPods < 1 || n.MaxPods != p.PodNetwork.AddressesPerBlock-4 {
					t.Fatalf("windows node %s maxPods %d with %d addresses per block", n.Name, n.MaxPods, p.PodNetwork.AddressesPerBlock)
				}
				if n.RuntimeClass == "" {
					t.Fatalf("windows node %s has no RuntimeClass", n.Name)
				}
			}
		}
		if p.PodNetwork.Blocks < len(p.Nodes) {
			t.Fatalf("%d blocks for %d nodes accepted", p.PodNetwork.Blocks, len(p.Nodes))
		}
		if p.VXLAN.Enabled && p.VXLAN.PodMTU != p.VXLAN.NodeMTU-VXLANOverhead {
			t.Fatalf("pod MTU %d for node MTU %d", p.VXLAN.PodMTU, p.VXLAN.NodeMTU)
		}
		if err := p.WriteText(io.Discard); err != nil {
			t.Fatal(err)
		}
	})
}

// BenchmarkParseAndDerive: a 1,000-node spec, loaded and planned.
func BenchmarkParseAndDerive(b *testing.B) {
	src := []byte(`apiVersion: hybridctl.dev/v1alpha1
kind: Cluster
metadata: {name: big}
spec:
  controlPlaneEndpoint: api.big.test:6443
  network: {nodeCIDR: 10.0.0.0/16, gateway: 10.0.0.1, dnsServers: [10.0.0.1], podCIDR: 10.128.0.0/12}
  nodes:
`)
	for i := 0; i < 1000; i++ {
		role, os := "worker", "linux"
		if i == 0 {
			role = "control-plane"
		}
		if i%10 == 9 {
			os = "windows"
		}
		src = fmt.Appendf(src, "  - {name: n-%d, role: %s, os: %s, address: 10.0.%d.%d}\n", i, role, os, 1+i/200, 10+i%200)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		r := spec.Parse("big.yaml", src)
		if err := r.Err(); err != nil {
			b.Fatal(err)
		}
		if _, err := Derive(r.Cluster, r.Diagnostics); err != nil {
			b.Fatal(err)
		}
	}
}
