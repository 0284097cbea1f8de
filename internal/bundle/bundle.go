// Package bundle describes the offline install bundle: a directory on the
// workstation holding every binary, package and manifest an offline install
// of a cluster needs, with a SHA256SUMS file. The layout is docs/bundle.md:
//
//	DIR/SHA256SUMS
//	DIR/linux-amd64/<upstream file name>      what Linux nodes install
//	DIR/windows-amd64/<upstream file name>    what Windows nodes install
//	DIR/manifests/<upstream file name>        what apply applies through the API
//
// Artifacts computes the one ordered list of a plan's artifacts; ParseSums,
// FormatSums, ReadSums and WriteSums handle SHA256SUMS; Verify checks a
// directory against a plan; Download fills one from the upstream sites (or
// a mirror of them).
package bundle

import (
	"fmt"
	"net/url"
	"path"
	"strings"

	"github.com/hybridctl/hybridctl/internal/plan"
	"github.com/hybridctl/hybridctl/internal/safeurl"
	"github.com/hybridctl/hybridctl/internal/spec"
)

// Where an artifact is used: its OS field.
const (
	// OSLinux: installed on every Linux node.
	OSLinux = "linux"
	// OSWindows: installed on every Windows node.
	OSWindows = "windows"
	// OSWorkstation: a manifest apply sends to the API server from the
	// workstation; never uploaded to a node.
	OSWorkstation = "workstation"
)

// Directories of the bundle (relative, slash-separated).
const (
	LinuxDir     = "linux-amd64"
	WindowsDir   = "windows-amd64"
	ManifestsDir = "manifests"
	// SumsFile is the checksum file at the top of the bundle.
	SumsFile = "SHA256SUMS"
)

// Artifact names. With OS they identify an artifact (Linux and Windows both
// have a containerd and a crictl).
const (
	NameContainerd       = "containerd"
	NameRunc             = "runc"
	NameCNIPlugins       = "cni-plugins"
	NameCrictl           = "crictl"
	NameKubelet          = "kubelet"
	NameKubeadm          = "kubeadm"
	NameKubectl          = "kubectl"
	NameKubeletExe       = "kubelet.exe"
	NameKubeadmExe       = "kubeadm.exe"
	NameKubectlExe       = "kubectl.exe"
	NameNSSM             = "nssm"
	NameCalicoCRDs       = "calico-crds"
	NameTigeraOperator   = "tigera-operator"
	NameAddonPrefix      = "addon-" // + the plan's add-on name: addon-metrics-server
	NSSMVersion          = "2.24"
	nssmURL              = "https://k8stestinfrabinaries.blob.core.windows.net/nssm-mirror/nssm-" + NSSMVersion + ".zip"
	githubReleases       = "https://github.com/"
	kubernetesReleaseURL = "https://dl.k8s.io/release/"
)

// NSSMExeInZip is the 64-bit nssm.exe inside the nssm zip: the one
// PrepareNode.ps1 installs on a 64-bit Windows, and the bundle-mode
// prepare.ps1 too.
const NSSMExeInZip = "nssm-" + NSSMVersion + "/win64/nssm.exe"

// Where an artifact's checksum comes from: its ChecksumFrom field.
const (
	// ChecksumPinned: SHA256 is in the list, fixed in hybridctl's source.
	ChecksumPinned = "pinned"
	// ChecksumFile: the upstream publishes a checksum file beside the
	// artifact (ChecksumURL); download fetches it and checks the file
	// against it.
	ChecksumFile = "upstream-file"
	// ChecksumNone: the upstream publishes no checksum. download records
	// the sha256 of what it received (trust on first download) and says
	// so; compare it with a second source before carrying the bundle.
	ChecksumNone = "first-download"
)

// Artifact is one file of the bundle.
type Artifact struct {
	// Name identifies the artifact together with OS (NameKubelet, ...).
	Name string `json:"name"`
	// OS is where it is used: OSLinux, OSWindows or OSWorkstation.
	OS string `json:"os"`
	// Version is the upstream release it comes from.
	Version string `json:"version"`
	// Path is relative to the bundle directory, slash-separated; the file
	// name is the upstream release's file name.
	Path string `json:"path"`
	// URL is where the upstream publishes it.
	URL string `json:"url"`
	// SHA256 is the expected checksum when hybridctl pins it, else empty:
	// then ChecksumFrom says where download gets it.
	SHA256 string `json:"sha256"`
	// ChecksumFrom is ChecksumPinned, ChecksumFile or ChecksumNone.
	ChecksumFrom string `json:"checksumFrom"`
	// ChecksumURL is the upstream checksum file (ChecksumFile only).
	ChecksumURL string `json:"checksumURL,omitempty"`
	// Purpose says in a few words what the artifact is for.
	Purpose string `json:"purpose"`
}

// File is the artifact's file name (the last element of Path).
func (a Artifact) File() string { return path.Base(a.Path) }

// Artifacts returns every file the plan's cluster needs from a bundle, in
// a fixed order: the Linux node files, the Windows node files (only when a
// node runs Windows), then the manifests apply applies. The versions are
// the plan's; an artifact list is computed the same whatever
// packages.source says. It returns an error when a version cannot name an
// upstream file (spec rules S601 and S604 report the same thing with a line).
func Artifacts(p *plan.Plan) ([]Artifact, error) {
	v := p.Versions
	for _, f := range []struct{ field, val string }{
		{"kubernetesVersion", v.Kubernetes}, {"containerd.version", v.Containerd},
		{"crictl.version", v.Crictl}, {"runc.version", v.Runc},
		{"cniPlugins.version", v.CNIPlugins}, {"calico.version", v.Calico},
	} {
		if err := CheckVersion(f.val); err != nil {
			return nil, fmt.Errorf("spec.%s: %w", f.field, err)
		}
	}
	if err := p.CheckURLs(); err != nil {
		return nil, err
	}
	k8s := "v" + strings.TrimPrefix(v.Kubernetes, "v")
	// Every URL is built with safeurl.Join: a version is one path
	// segment of its release, never a way out of it.
	var urlErr error
	join := func(prefix string, elems ...string) string {
		u, err := safeurl.Join(prefix, elems...)
		if err != nil && urlErr == nil {
			urlErr = err
		}
		return u
	}
	gh := func(repo, tag, file string) string {
		owner, name, _ := strings.Cut(repo, "/")
		return join(githubReleases, owner, name, "releases", "download", tag, file)
	}
	withFile := func(a Artifact, sumURL string) Artifact {
		a.ChecksumFrom, a.ChecksumURL = ChecksumFile, sumURL
		return a
	}
	var out []Artifact
	add := func(a Artifact) { out = append(out, a) }

	// Linux: the contract's order.
	ctrd := "containerd-" + v.Containerd + "-linux-amd64.tar.gz"
	ctrdURL := gh("containerd/containerd", "v"+v.Containerd, ctrd)
	add(withFile(Artifact{Name: NameContainerd, OS: OSLinux, Version: v.Containerd, Path: LinuxDir + "/" + ctrd, URL: ctrdURL,
		Purpose: "container runtime: bin/containerd, containerd-shim-runc-v2, ctr"}, ctrdURL+".sha256sum"))
	add(withFile(Artifact{Name: NameRunc, OS: OSLinux, Version: v.Runc, Path: LinuxDir + "/runc.amd64", URL: gh("opencontainers/runc", "v"+v.Runc, "runc.amd64"),
		Purpose: "OCI runtime containerd starts containers with"}, gh("opencontainers/runc", "v"+v.Runc, "runc.sha256sum")))
	cni := "cni-plugins-linux-amd64-v" + v.CNIPlugins + ".tgz"
	cniURL := gh("containernetworking/plugins", "v"+v.CNIPlugins, cni)
	add(withFile(Artifact{Name: NameCNIPlugins, OS: OSLinux, Version: v.CNIPlugins, Path: LinuxDir + "/" + cni, URL: cniURL,
		Purpose: "CNI reference plugins (loopback, bridge, host-local, ...) for /opt/cni/bin"}, cniURL+".sha256"))
	crictl := "crictl-v" + v.Crictl + "-linux-amd64.tar.gz"
	crictlURL := gh("kubernetes-sigs/cri-tools", "v"+v.Crictl, crictl)
	add(withFile(Artifact{Name: NameCrictl, OS: OSLinux, Version: v.Crictl, Path: LinuxDir + "/" + crictl, URL: crictlURL,
		Purpose: "CRI client kubeadm's preflight and troubleshooting use"}, crictlURL+".sha256"))
	for _, b := range []struct{ name, purpose string }{
		{NameKubelet, "node agent"}, {NameKubeadm, "cluster bootstrap (init, join, reset)"}, {NameKubectl, "API client"},
	} {
		u := join(kubernetesReleaseURL, k8s, "bin", "linux", "amd64", b.name)
		add(withFile(Artifact{Name: b.name, OS: OSLinux, Version: k8s, Path: LinuxDir + "/" + b.name, URL: u, Purpose: b.purpose}, u+".sha256"))
	}

	if hasWindows(p) {
		wctrd := "containerd-" + v.Containerd + "-windows-amd64.tar.gz"
		wctrdURL := gh("containerd/containerd", "v"+v.Containerd, wctrd)
		add(withFile(Artifact{Name: NameContainerd, OS: OSWindows, Version: v.Containerd, Path: WindowsDir + "/" + wctrd, URL: wctrdURL,
			Purpose: "container runtime: bin/containerd.exe, containerd-shim-runhcs-v1.exe, ctr.exe"}, wctrdURL+".sha256sum"))
		wcrictl := "crictl-v" + v.Crictl + "-windows-amd64.tar.gz"
		wcrictlURL := gh("kubernetes-sigs/cri-tools", "v"+v.Crictl, wcrictl)
		add(withFile(Artifact{Name: NameCrictl, OS: OSWindows, Version: v.Crictl, Path: WindowsDir + "/" + wcrictl, URL: wcrictlURL,
			Purpose: "CRI client: crictl.exe"}, wcrictlURL+".sha256"))
		for _, b := range []struct{ name, purpose string }{
			{NameKubeletExe, "node agent, run as a service by nssm"}, {NameKubeadmExe, "kubeadm join and reset"}, {NameKubectlExe, "API client"},
		} {
			u := join(kubernetesReleaseURL, k8s, "bin", "windows", "amd64", b.name)
			add(withFile(Artifact{Name: b.name, OS: OSWindows, Version: k8s, Path: WindowsDir + "/" + b.name, URL: u, Purpose: b.purpose}, u+".sha256"))
		}
		add(Artifact{Name: NameNSSM, OS: OSWindows, Version: NSSMVersion, Path: WindowsDir + "/" + path.Base(nssmURL), URL: nssmURL, ChecksumFrom: ChecksumNone,
			Purpose: "service manager that runs the kubelet (win64/nssm.exe); the Kubernetes project's mirror PrepareNode.ps1 uses"})
	}

	// Manifests: what the calico phase applies, then the add-ons.
	add(Artifact{Name: NameCalicoCRDs, OS: OSWorkstation, Version: v.Calico, Path: ManifestsDir + "/" + p.Calico.CRDManifest, URL: p.Calico.CRDManifestURL, ChecksumFrom: ChecksumNone,
		Purpose: "Calico's CRDs (" + p.Calico.CRDMode + ")"})
	add(Artifact{Name: NameTigeraOperator, OS: OSWorkstation, Version: v.Calico, Path: ManifestsDir + "/" + path.Base(p.Calico.OperatorManifestURL), URL: p.Calico.OperatorManifestURL, ChecksumFrom: ChecksumNone,
		Purpose: "the Tigera operator that installs Calico"})
	for _, a := range p.Addons {
		if err := CheckVersion(a.Version); err != nil {
			return nil, fmt.Errorf("add-on %s: %w", a.Name, err)
		}
		add(Artifact{Name: NameAddonPrefix + a.Name, OS: OSWorkstation, Version: a.Version, Path: ManifestsDir + "/" + path.Base(a.ManifestURL), URL: a.ManifestURL, ChecksumFrom: ChecksumNone,
			Purpose: "add-on " + a.Name})
	}

	if urlErr != nil {
		return nil, urlErr
	}
	seen := map[string]bool{}
	for _, a := range out {
		if err := CheckURL(a.URL); err != nil {
			return nil, fmt.Errorf("artifact %s (%s): %w", a.Name, a.OS, err)
		}
		if err := CheckPath(a.Path); err != nil {
			return nil, fmt.Errorf("artifact %s (%s): %w", a.Name, a.OS, err)
		}
		if seen[a.Path] {
			return nil, fmt.Errorf("artifact %s (%s): %s is also the path of another artifact", a.Name, a.OS, a.Path)
		}
		seen[a.Path] = true
	}
	return out, nil
}

// upstreamPrefixes are the sites a bundle's files come from.
func upstreamPrefixes() []string {
	return []string{githubReleases, kubernetesReleaseURL, nssmURL[:strings.LastIndexByte(nssmURL, '/')+1],
		plan.CalicoURLPrefix, plan.MetricsServerURLPrefix, plan.CertManagerURLPrefix}
}

// CheckURL refuses an artifact or checksum URL that is not under one of
// the upstream sites a bundle comes from (safeurl.Under: also after
// dot-segment removal, without percent-encoding, query or fragment).
func CheckURL(u string) error {
	prefixes := upstreamPrefixes()
	for _, prefix := range prefixes {
		err := safeurl.Under(prefix, u)
		if err == nil {
			return nil
		}
		// The site's own error says what is wrong with the path.
		if pu, perr := url.Parse(prefix); perr == nil && strings.HasPrefix(u, pu.Scheme+"://"+pu.Host+"/") {
			return err
		}
	}
	return fmt.Errorf("URL %q is under none of the upstream sites of a bundle (%s)", u, strings.Join(prefixes, ", "))
}

// ForOS returns the artifacts used on os, in list order.
func ForOS(arts []Artifact, os string) []Artifact {
	var out []Artifact
	for _, a := range arts {
		if a.OS == os {
			out = append(out, a)
		}
	}
	return out
}

// Find returns the artifact named name for os.
func Find(arts []Artifact, os, name string) (Artifact, bool) {
	for _, a := range arts {
		if a.OS == os && a.Name == name {
			return a, true
		}
	}
	return Artifact{}, false
}

func hasWindows(p *plan.Plan) bool {
	for _, n := range p.Nodes {
		if n.IsWindows() {
			return true
		}
	}
	return false
}

// CheckVersion reports whether a version can name an upstream release file:
// a strict release version (spec.ParseVersion: MAJOR.MINOR.PATCH with an
// optional leading v and an optional pre-release of dot-separated
// [0-9A-Za-z-] identifiers, v1.38.0-rc.1). Build metadata (+...) and
// anything else is refused: it is not part of a release's file names, and
// a version becomes part of a URL and a path in the bundle.
func CheckVersion(v string) error {
	if _, err := spec.ParseVersion(v); err != nil {
		return fmt.Errorf("cannot name a release file: %w", err)
	}
	return nil
}
