package plan

import (
	"fmt"

	"github.com/hybridctl/hybridctl/internal/safeurl"
)

// The upstream sites the plan's URLs are built under. A version is one
// path segment below them (safeurl.Join), so that no version can lead a
// URL out of its release.
const (
	CalicoURLPrefix        = "https://raw.githubusercontent.com/projectcalico/calico/"
	MetricsServerURLPrefix = "https://github.com/kubernetes-sigs/metrics-server/releases/download/"
	CertManagerURLPrefix   = "https://github.com/cert-manager/cert-manager/releases/download/"
	KubernetesAptURLPrefix = "https://pkgs.k8s.io/core:/stable:/"
)

// Add-on names and their release manifests.
const (
	AddonMetricsServer = "metrics-server"
	AddonCertManager   = "cert-manager"
)

// CalicoManifestsPrefix is the URL of Calico version's manifests/
// directory, ending in "/": every Calico manifest URL stays under it.
func CalicoManifestsPrefix(version string) (string, error) {
	u, err := safeurl.Join(CalicoURLPrefix, version, "manifests")
	if err != nil {
		return "", fmt.Errorf("calico version %q: %w", version, err)
	}
	return u + "/", nil
}

// CalicoManifestURL is the URL of file in Calico version's manifests/.
func CalicoManifestURL(version, file string) (string, error) {
	prefix, err := CalicoManifestsPrefix(version)
	if err != nil {
		return "", err
	}
	return safeurl.Join(prefix, file)
}

// addonRelease is where an add-on publishes its release manifest.
func addonRelease(name string) (prefix, file string, err error) {
	switch name {
	case AddonMetricsServer:
		return MetricsServerURLPrefix, "components.yaml", nil
	case AddonCertManager:
		return CertManagerURLPrefix, "cert-manager.yaml", nil
	}
	return "", "", fmt.Errorf("unknown add-on %q", name)
}

// AddonURLPrefix is the URL of add-on name's release version, ending in
// "/": its manifest URL stays under it.
func AddonURLPrefix(name, version string) (string, error) {
	prefix, _, err := addonRelease(name)
	if err != nil {
		return "", err
	}
	u, err := safeurl.Join(prefix, version)
	if err != nil {
		return "", fmt.Errorf("add-on %s version %q: %w", name, version, err)
	}
	return u + "/", nil
}

// AddonManifestURL is the release manifest of add-on name at version.
func AddonManifestURL(name, version string) (string, error) {
	prefix, err := AddonURLPrefix(name, version)
	if err != nil {
		return "", err
	}
	_, file, _ := addonRelease(name)
	return safeurl.Join(prefix, file)
}

// KubernetesAptRepoURL is the pkgs.k8s.io Debian repository of a
// Kubernetes minor ("v1.37").
func KubernetesAptRepoURL(minor string) (string, error) {
	u, err := safeurl.Join(KubernetesAptURLPrefix, minor, "deb")
	if err != nil {
		return "", fmt.Errorf("kubernetes minor %q: %w", minor, err)
	}
	return u + "/", nil
}

// CheckURLs checks every URL of the plan against the prefix it was built
// for (safeurl.Under: also after dot-segment removal, no query, no
// percent-encoding): the Calico manifests under their release's
// manifests/, each add-on's manifest under its release, the Kubernetes
// package repository under its minor. Derive's plans pass; a plan built or
// changed by hand may not, and whoever downloads or prints its URLs checks
// it first.
func (p *Plan) CheckURLs() error {
	calico, err := CalicoManifestsPrefix(p.Calico.Version)
	if err != nil {
		return err
	}
	for _, u := range []struct{ what, url string }{
		{"the Calico CRD manifest", p.Calico.CRDManifestURL},
		{"the Tigera operator manifest", p.Calico.OperatorManifestURL},
	} {
		if err := safeurl.Under(calico, u.url); err != nil {
			return fmt.Errorf("%s: %w", u.what, err)
		}
	}
	for _, a := range p.Addons {
		prefix, err := AddonURLPrefix(a.Name, a.Version)
		if err != nil {
			return err
		}
		if err := safeurl.Under(prefix, a.ManifestURL); err != nil {
			return fmt.Errorf("add-on %s: %w", a.Name, err)
		}
	}
	apt, err := KubernetesAptRepoURL(p.KubernetesMinor)
	if err != nil {
		return err
	}
	if p.KubernetesAptRepo != apt {
		return fmt.Errorf("the Kubernetes package repository %q is not %s, the one of %s", p.KubernetesAptRepo, apt, p.KubernetesMinor)
	}
	return nil
}
