package render

import (
	"strings"

	"github.com/hybridctl/hybridctl/internal/plan"
)

// Where bundle-upload puts a bundle's files on the nodes (docs/bundle.md):
// the same relative paths as in the bundle directory, plus a SHA256SUMS
// holding only the node's own files.
const (
	LinuxBundleDir   = "/var/cache/hybridctl/bundle"
	WindowsBundleDir = `C:\k\bundle`
	BundleSumsFile   = "SHA256SUMS"
)

// LinuxBundle names the files of a bundle that a Linux node installs from,
// by their paths relative to the bundle directory (the upstream release
// file names under linux-amd64/, docs/bundle.md).
type LinuxBundle struct {
	Containerd, Runc, CNIPlugins, Crictl string
	Kubelet, Kubeadm, Kubectl            string
}

// LinuxBundleOf returns the bundle paths a Linux node of p needs.
func LinuxBundleOf(p *plan.Plan) LinuxBundle {
	const dir = "linux-amd64/"
	v := func(s string) string { return strings.TrimPrefix(s, "v") }
	return LinuxBundle{
		Containerd: dir + "containerd-" + v(p.Versions.Containerd) + "-linux-amd64.tar.gz",
		Runc:       dir + "runc.amd64",
		CNIPlugins: dir + "cni-plugins-linux-amd64-v" + v(p.Versions.CNIPlugins) + ".tgz",
		Crictl:     dir + "crictl-v" + v(p.Versions.Crictl) + "-linux-amd64.tar.gz",
		Kubelet:    dir + "kubelet",
		Kubeadm:    dir + "kubeadm",
		Kubectl:    dir + "kubectl",
	}
}

// Paths returns the files in install order.
func (b LinuxBundle) Paths() []string {
	return []string{b.Containerd, b.Runc, b.CNIPlugins, b.Crictl, b.Kubelet, b.Kubeadm, b.Kubectl}
}

// bundleSh is what prepare.sh.tmpl reads in bundle mode.
type bundleSh struct {
	Dir, Sums string
	Files     LinuxBundle
}
