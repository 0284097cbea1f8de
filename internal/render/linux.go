package render

import (
	"bytes"
	"fmt"

	"github.com/hybridctl/hybridctl/internal/plan"
	"github.com/hybridctl/hybridctl/internal/spec"
)

// shData is what prepare.sh.tmpl reads.
type shData struct {
	Plan *plan.Plan
	Node plan.Node
	// Hosts are containerd's certs.d directories (private registry only).
	Hosts    []hostsFile
	CertsDir string
	// Bundle is set with packages.source bundle: the node installs from
	// the files bundle-upload put in LinuxBundleDir.
	Bundle *bundleSh
}

// linuxPrepare renders nodes/<name>/prepare.sh.
func (r *renderer) linuxPrepare(n plan.Node) ([]byte, error) {
	var buf bytes.Buffer
	buf.Grow(16 << 10) // the script is ~8-12 KB: grown once, not ten times
	d := shData{Plan: r.plan, Node: n, Hosts: containerdHosts(r.plan, LinuxCertsDir, "/"), CertsDir: LinuxCertsDir}
	if r.plan.PackagesSource == spec.SourceBundle {
		files, err := LinuxBundleOf(r.plan)
		if err != nil {
			return nil, fmt.Errorf("node %s: prepare.sh: %w", n.Name, err)
		}
		d.Bundle = &bundleSh{Dir: LinuxBundleDir, Sums: BundleSumsFile, Files: files}
	}
	if err := r.tmpl.ExecuteTemplate(&buf, "prepare.sh.tmpl", d); err != nil {
		return nil, fmt.Errorf("node %s: prepare.sh: %w", n.Name, err)
	}
	return buf.Bytes(), nil
}
