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

// WindowsBundle names the files of a bundle that a Windows node installs
// from, by their paths relative to the bundle directory (slash-separated,
// as in SHA256SUMS).
type WindowsBundle struct {
	Containerd, Crictl        string
	Kubelet, Kubeadm, Kubectl string
	NSSM                      string
}

// WindowsBundleOf returns the bundle paths a Windows node of p installs.
func WindowsBundleOf(p *plan.Plan) (WindowsBundle, error) {
	arts, err := bundle.Artifacts(p)
	if err != nil {
		return WindowsBundle{}, err
	}
	var b WindowsBundle
	for _, f := range []struct {
		name string
		dst  *string
	}{
		{bundle.NameContainerd, &b.Containerd}, {bundle.NameCrictl, &b.Crictl},
		{bundle.NameKubeletExe, &b.Kubelet}, {bundle.NameKubeadmExe, &b.Kubeadm}, {bundle.NameKubectlExe, &b.Kubectl},
		{bundle.NameNSSM, &b.NSSM},
	} {
		a, ok := bundle.Find(arts, bundle.OSWindows, f.name)
		if !ok {
			return WindowsBundle{}, fmt.Errorf("the bundle's artifact list has no Windows %s", f.name)
		}
		*f.dst = a.Path
	}
	return b, nil
}

// Paths returns the files in install order.
func (b WindowsBundle) Paths() []string {
	return []string{b.Containerd, b.Crictl, b.Kubelet, b.Kubeadm, b.Kubectl, b.NSSM}
}

// bundlePs is what prepare.ps1.tmpl reads in bundle mode.
type bundlePs struct {
	Dir, Sums string
	Files     WindowsBundle
	// NSSMExe is nssm.exe's path inside the NSSM zip.
	NSSMExe string
	// StartKubelet is C:\k\StartKubelet.ps1, the script the kubelet
	// service runs (startKubeletScript).
	StartKubelet string
}
