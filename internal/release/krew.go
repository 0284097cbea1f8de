package release

import (
	"fmt"
	"net/url"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

// The krew plugin manifest (krew.googlecontainertools.github.com/v1alpha2
// Plugin), the fields krew reads. Krew's own module is not imported: it
// requires a client-go that predates Go modules.
type krewPlugin struct {
	metav1.TypeMeta `json:",inline"`
	Metadata        krewMeta `json:"metadata"`
	Spec            krewSpec `json:"spec"`
}

type krewMeta struct {
	Name string `json:"name"`
}

type krewSpec struct {
	Version          string         `json:"version"`
	Homepage         string         `json:"homepage"`
	ShortDescription string         `json:"shortDescription"`
	Description      string         `json:"description"`
	Platforms        []krewPlatform `json:"platforms"`
}

type krewPlatform struct {
	Selector *metav1.LabelSelector `json:"selector"`
	URI      string                `json:"uri"`
	Sha256   string                `json:"sha256"`
	Files    []krewFile            `json:"files"`
	Bin      string                `json:"bin"`
}

type krewFile struct {
	From string `json:"from"`
	To   string `json:"to"`
}

// KrewPluginName is the plugin's name: kubectl hybridctl ...
const KrewPluginName = "hybridctl"

// krewArchive is one archive the manifest points at.
type krewArchive struct {
	Platform Platform
	Name     string // file name, appended to the download URL
	SHA256   string // hex
}

// krewManifest is the plugin manifest for the archives, downloaded from
// downloadURL (a directory URL: each archive's name is appended).
func krewManifest(version, homepage, downloadURL string, archives []krewArchive) ([]byte, error) {
	base, err := url.Parse(downloadURL)
	if err != nil || (base.Scheme != "https" && base.Scheme != "http") || base.Host == "" {
		return nil, fmt.Errorf("download URL %q: want an absolute https:// URL of the directory the archives are published in", downloadURL)
	}
	if !strings.HasSuffix(base.Path, "/") {
		base.Path += "/"
	}
	p := krewPlugin{
		TypeMeta: metav1.TypeMeta{APIVersion: "krew.googlecontainertools.github.com/v1alpha2", Kind: "Plugin"},
		Metadata: krewMeta{Name: KrewPluginName},
		Spec: krewSpec{
			Version:          version,
			Homepage:         homepage,
			ShortDescription: "Build and audit hybrid Linux/Windows clusters (kubeadm, Calico VXLAN)",
			Description: `hybridctl builds and audits hybrid Kubernetes clusters: a kubeadm control
plane, Linux workers and Windows Server workers, networked by Calico in VXLAN
mode. From one declarative spec it validates the address plan, renders every
file, provisions the nodes over SSH, and audits any hybrid cluster (doctor,
lint, check connectivity, csr approve, node diagnose).
Run as kubectl hybridctl COMMAND; kubectl hybridctl --help lists the commands.`,
		},
	}
	for _, a := range archives {
		u := base.JoinPath(a.Name)
		p.Spec.Platforms = append(p.Spec.Platforms, krewPlatform{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"os": a.Platform.OS, "arch": a.Platform.Arch}},
			URI:      u.String(),
			Sha256:   a.SHA256,
			Files:    []krewFile{{From: a.Platform.Exe(), To: "."}, {From: "LICENSE", To: "."}},
			Bin:      a.Platform.Exe(),
		})
	}
	if len(p.Spec.Platforms) == 0 {
		return nil, fmt.Errorf("krew manifest: no archive to point at")
	}
	return yaml.Marshal(p)
}
