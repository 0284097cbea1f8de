package render

import (
	"fmt"
	"testing"

	"github.com/hybridctl/hybridctl/internal/plan"
)

// bigPlan is the lab plan with n nodes (a tenth of them Windows, on two
// builds), built by hand: the spec's own limits are not under test.
func bigPlan(b *testing.B, n int) *plan.Plan {
	p := labPlan(b)
	var linux, win plan.Node
	for _, nd := range p.Nodes {
		if nd.IsWindows() {
			win = nd
		} else if !nd.IsControlPlane() {
			linux = nd
		}
	}
	nodes := []plan.Node{p.Nodes[0]}
	for i := 1; i < n; i++ {
		nd := linux
		if i%10 == 0 {
			nd = win
		}
		nd.Name = fmt.Sprintf("node-%04d", i)
		nd.FQDN = nd.Name + ".example.com"
		nd.Address = fmt.Sprintf("10.%d.%d.%d", i/65536, (i/256)%256, i%256)
		nodes = append(nodes, nd)
	}
	p.Nodes = nodes
	return p
}

// BenchmarkRender1000Nodes: the issue asks for under 2 s.
func BenchmarkRender1000Nodes(b *testing.B) {
	p := bigPlan(b, 1000)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		files, err := Render(p, Options{})
		if err != nil {
			b.Fatal(err)
		}
		if len(files) < 2000 {
			b.Fatalf("%d files", len(files))
		}
	}
}
