package render

import (
	"bytes"
	"fmt"

	"github.com/hybridctl/hybridctl/internal/plan"
)

// shData is what prepare.sh.tmpl reads.
type shData struct {
	Plan *plan.Plan
	Node plan.Node
	// Hosts are containerd's certs.d directories (private registry only).
	Hosts    []hostsFile
	CertsDir string
}

// linuxPrepare renders nodes/<name>/prepare.sh.
func (r *renderer) linuxPrepare(n plan.Node) ([]byte, error) {
	var buf bytes.Buffer
	if err := r.tmpl.ExecuteTemplate(&buf, "prepare.sh.tmpl", shData{Plan: r.plan, Node: n, Hosts: containerdHosts(r.plan, LinuxCertsDir, "/"), CertsDir: LinuxCertsDir}); err != nil {
		return nil, fmt.Errorf("node %s: prepare.sh: %w", n.Name, err)
	}
	return buf.Bytes(), nil
}
