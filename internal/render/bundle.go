package render

import (
	"fmt"

	"github.com/hybridctl/hybridctl/internal/bundle"
	"github.com/hybridctl/hybridctl/internal/plan"
)

// Where bundle-upload puts a bundle's files on the nodes (docs/bundle.md):
// the same relative paths as in the bundle directory, plus a SHA256SUMS
// holding only the node's own files.
const (
	LinuxBundleDir   = "/var/cache/hybridctl/bundle"
	WindowsBundleDir = `C:\k\bundle`
	BundleSumsFile   = bundle.SumsFile
)

// LinuxBundle names the files of a bundle that a Linux node installs from,
// by their paths relative to the bundle directory (internal/bundle's
// artifact list).
type LinuxBundle struct {
	Containerd, Runc, CNIPlugins, Crictl string
	Kubelet, Kubeadm, Kubectl            string
}

// LinuxBundleOf returns the bundle paths a Linux node of p installs.
func LinuxBundleOf(p *plan.Plan) (LinuxBundle, error) {
	arts, err := bundle.Artifacts(p)
	if err != nil {
		return LinuxBundle{}, err
	}
	var b LinuxBundle
	for _, f := range []struct {
		name string
		dst  *string
	}{
		{bundle.NameContainerd, &b.Containerd}, {bundle.NameRunc, &b.Runc}, {bundle.NameCNIPlugins, &b.CNIPlugins},
		{bundle.NameCrictl, &b.Crictl}, {bundle.NameKubelet, &b.Kubelet}, {bundle.NameKubeadm, &b.Kubeadm}, {bundle.NameKubectl, &b.Kubectl},
	} {
		a, ok := bundle.Find(arts, bundle.OSLinux, f.name)
		if !ok {
			return LinuxBundle{}, fmt.Errorf("the bundle's artifact list has no Linux %s", f.name)
		}
		*f.dst = a.Path
	}
	return b, nil
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
