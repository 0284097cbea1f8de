package plan

import (
	"fmt"
	"strings"

	"github.com/hybridctl/hybridctl/internal/spec"
)

// Image is one image the cluster pulls, with its final reference after
// images.registry is applied (plan -o json .images[], design §5).
type Image struct {
	Name  string `json:"name"`
	Image string `json:"image"`
	OS    string `json:"os"`
}

// Registry is the private registry every image comes from.
type Registry struct {
	// Prefix replaces an image's registry host: host[:port][/path].
	Prefix string `json:"prefix"`
	// HostPort is the registry's host[:port] (containerd's certs.d name).
	HostPort string `json:"hostPort"`
	// Path is the repository prefix inside the registry, may be empty.
	Path string `json:"path,omitempty"`
	// CA is the PEM of images.registryCA, empty when the node's system
	// trust store is used.
	CA string `json:"-"`
	// HasCA says whether CA is set (for plan -o json).
	HasCA bool `json:"hasCA"`
}

// MirroredRegistries are the public registries containerd is told to pull
// through the private registry (hosts.toml under certs.d).
func MirroredRegistries() []string {
	return []string{"registry.k8s.io", "docker.io", "quay.io", "ghcr.io", "mcr.microsoft.com"}
}

// SplitImage splits an image reference into its registry host and the
// repository path with tag or digest, as Docker normalises it: a first
// component without a dot or a colon (and not localhost) is a Docker Hub
// path, and a single-component Docker Hub name is under library/.
func SplitImage(ref string) (host, rest string) {
	first, after, ok := strings.Cut(ref, "/")
	if ok && (strings.ContainsAny(first, ".:") || first == "localhost") {
		return first, after
	}
	if !ok {
		return "docker.io", "library/" + ref
	}
	return "docker.io", ref
}

// Image returns the reference a node pulls for the upstream reference ref:
// ref itself without a private registry, else the registry's prefix
// followed by ref's repository path and tag (registry.k8s.io/pause:3.10.2
// becomes REGISTRY/pause:3.10.2, calico/node:v3.33.0 REGISTRY/calico/node:v3.33.0).
// It is also where containerd's mirror looks for ref.
func (p *Plan) Image(ref string) string {
	if p.Registry == nil {
		return ref
	}
	_, rest := SplitImage(ref)
	return p.Registry.Prefix + "/" + rest
}

// kubeadmImageVersions are the etcd and CoreDNS tags kubeadm of a minor
// names, oldest first: DefaultEtcdVersion and CoreDNSVersion in
// cmd/kubeadm/app/constants/constants.go of k8s.io/kubernetes@v1.36.3
// ("3.6.8-0", "v1.14.2") and @v1.37.2 ("3.7.0-0", "v1.14.6"). The cluster
// is made by the kubeadm of its own minor, whose SupportedEtcdVersion gives
// that minor its DefaultEtcdVersion (kubeadm 1.37's maps 1.36 to 3.7.0-0
// too: `kubeadm upgrade` to 1.37 moves etcd on). Checked against the real
// kubeadm's `config images list` of each minor in the tests.
func kubeadmImageVersions() []struct{ minor, etcd, coredns string } {
	return []struct{ minor, etcd, coredns string }{
		{"v1.36", "3.6.8-0", "v1.14.2"},
		{"v1.37", "3.7.0-0", "v1.14.6"},
	}
}

func kubeadmVersions(minor string) (etcd, coredns string, known bool) {
	vs := kubeadmImageVersions()
	for _, v := range vs {
		if v.minor == minor {
			return v.etcd, v.coredns, true
		}
	}
	last := vs[len(vs)-1]
	return last.etcd, last.coredns, false
}

// Upstream image names the plan uses beside kubeadm's.
const (
	KubeProxyWindowsImageFmt = "sigwindowstools/kube-proxy:%s-calico-hostprocess"
)

// calicoImages are the images the Tigera operator deploys for an
// Installation (tagged with the Calico version), Linux then Windows.
func calicoImages() (linux, windows []string) {
	return []string{"calico/node", "calico/cni", "calico/kube-controllers", "calico/typha", "calico/apiserver",
			"calico/csi", "calico/node-driver-registrar", "calico/pod2daemon-flexvol"},
		[]string{"calico/node-windows", "calico/cni-windows"}
}

// imagesOf lists every image the cluster pulls, in a stable order: kubeadm's,
// Calico's, kube-proxy for Windows, the add-ons, the check workloads.
func imagesOf(p *Plan, hasWindows bool) []Image {
	var out []Image
	add := func(name, ref, os string) { out = append(out, Image{Name: name, Image: p.Image(ref), OS: os}) }
	etcd, coredns, _ := kubeadmVersions(p.KubernetesMinor)
	for _, c := range []string{"kube-apiserver", "kube-controller-manager", "kube-scheduler", "kube-proxy"} {
		add(c, "registry.k8s.io/"+c+":"+p.KubernetesVersion, spec.OSLinux)
	}
	add("coredns", "registry.k8s.io/coredns/coredns:"+coredns, spec.OSLinux)
	pause, _ := PauseVersion(p.KubernetesMinor)
	add("pause", "registry.k8s.io/pause:"+pause, spec.OSLinux)
	add("etcd", "registry.k8s.io/etcd:"+etcd, spec.OSLinux)
	if hasWindows {
		add("pause", "registry.k8s.io/pause:"+pause, spec.OSWindows)
	}
	lin, win := calicoImages()
	for _, c := range lin {
		add(c, "docker.io/"+c+":"+p.Calico.Version, spec.OSLinux)
	}
	if hasWindows {
		for _, c := range win {
			add(c, "docker.io/"+c+":"+p.Calico.Version, spec.OSWindows)
		}
		add("kube-proxy-windows", fmt.Sprintf(KubeProxyWindowsImageFmt, p.KubernetesVersion), spec.OSWindows)
	}
	for _, a := range p.Addons {
		switch a.Name {
		case "metrics-server":
			add("metrics-server", "registry.k8s.io/metrics-server/metrics-server:"+a.Version, spec.OSLinux)
		case "cert-manager":
			for _, c := range []string{"controller", "cainjector", "webhook"} {
				add("cert-manager-"+c, "quay.io/jetstack/cert-manager-"+c+":"+a.Version, spec.OSLinux)
			}
		}
	}
	// The check workloads' image is already under the registry.
	out = append(out, Image{Name: "check-workload", Image: p.CheckWorkloads.Image, OS: spec.OSLinux})
	if hasWindows {
		out = append(out, Image{Name: "check-workload", Image: p.CheckWorkloads.Image, OS: spec.OSWindows})
	}
	return out
}
