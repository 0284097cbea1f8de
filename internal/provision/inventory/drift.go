package inventory

import (
	"fmt"
	"strings"

	"github.com/pelletier/go-toml/v2"
	kubeletv1beta1 "k8s.io/kubelet/config/v1beta1"
	"sigs.k8s.io/yaml"

	"github.com/hybridctl/hybridctl/internal/hostfacts"
	"github.com/hybridctl/hybridctl/internal/provision/engine"
)

// Expect is what the spec says a member's host should have: what apply's
// preparation and join would have put there.
type Expect struct {
	// KubernetesVersion is the kubelet's, kubeadm's and kubectl's
	// ("v1.37.2"); ContainerdVersion containerd's ("2.2.2"), checked on
	// Linux hosts (Windows installs containerd's own release).
	KubernetesVersion, ContainerdVersion string
	// SandboxImage is containerd's sandbox (pause) image.
	SandboxImage string
	// MaxPods is each Windows node's kubelet maxPods, by node.
	MaxPods map[string]int
	// CertsDir is containerd's registry host directory (config_path) when
	// images come from a private registry, "" otherwise.
	CertsDir map[engine.OS]string
}

// Difference is one way a member's host differs from the spec.
type Difference struct {
	// What names the setting ("kubelet version", "containerd
	// SystemdCgroup", "sysctl net.ipv4.ip_forward").
	What string `json:"what"`
	Have string `json:"have"`
	Want string `json:"want"`
}

func (d Difference) String() string {
	return fmt.Sprintf("%s is %s, the spec wants %s", d.What, orNone(d.Have), d.Want)
}

// Drift lists how a member's host differs from x: versions, containerd's
// cgroup driver, sandbox image and registry configuration, the kubelet's
// cgroup driver and (Windows) maxPods, the kernel settings and swap
// (Linux). A setting the host did not report is not compared.
func Drift(n *Node, x Expect) []Difference {
	f := n.Facts
	if f == nil {
		return nil
	}
	var out []Difference
	differ := func(what, have, want string) {
		if have != "" && want != "" && have != want {
			out = append(out, Difference{What: what, Have: have, Want: want})
		}
	}
	k := "v" + strings.TrimPrefix(x.KubernetesVersion, "v")
	differ("kubelet version", f.Kubelet, k)
	differ("kubeadm version", f.Kubeadm, k)
	differ("kubectl version", f.Kubectl, k)
	windows := n.Host.OS == engine.Windows
	if !windows && x.ContainerdVersion != "" {
		differ("containerd version", f.Containerd, "v"+strings.TrimPrefix(x.ContainerdVersion, "v"))
	}
	if c, err := containerdSettings(f.ContainerdConfig); err != nil {
		out = append(out, Difference{What: "containerd configuration", Have: "unreadable (" + err.Error() + ")", Want: "containerd's TOML"})
	} else if f.ContainerdConfig != "" {
		if !windows {
			differ("containerd SystemdCgroup", c["SystemdCgroup"], "true")
		}
		differ("containerd sandbox image", c["sandbox"], x.SandboxImage)
		if dir := x.CertsDir[n.Host.OS]; dir != "" {
			have := c["config_path"]
			if have == "" {
				have = "(none)"
			}
			differ("containerd registry config_path", have, dir)
		}
	}
	if f.KubeletConfig != "" {
		var kc kubeletv1beta1.KubeletConfiguration
		if err := yaml.Unmarshal([]byte(f.KubeletConfig), &kc); err != nil {
			out = append(out, Difference{What: "kubelet configuration", Have: "unreadable (" + err.Error() + ")", Want: "a KubeletConfiguration"})
		} else {
			if !windows {
				differ("kubelet cgroupDriver", kc.CgroupDriver, "systemd")
			}
			if want := x.MaxPods[n.Host.Name]; windows && want > 0 {
				differ("kubelet maxPods", fmt.Sprint(kc.MaxPods), fmt.Sprint(want))
			}
		}
	}
	if !windows {
		for _, key := range hostfacts.SysctlKeys() {
			if v, ok := f.Sysctl[key]; ok {
				differ("sysctl "+key, v, "1")
			}
		}
		if f.Swap {
			out = append(out, Difference{What: "swap", Have: "on", Want: "off"})
		}
	}
	return out
}

// containerdSettings reads the settings of containerd's config.toml that
// the preparation makes, at their places in containerd 2's configuration
// (version 3) and in 1.x's (version 2), as containerd reads them. A file
// that is not TOML is an error.
func containerdSettings(text string) (map[string]string, error) {
	var cfg map[string]any
	if err := toml.Unmarshal([]byte(text), &cfg); err != nil {
		return nil, err
	}
	get := func(path ...string) string {
		var cur any = cfg
		for _, k := range path {
			m, ok := cur.(map[string]any)
			if !ok {
				return ""
			}
			cur = m[k]
		}
		switch v := cur.(type) {
		case string:
			return v
		case bool:
			return fmt.Sprint(v)
		}
		return ""
	}
	first := func(paths ...[]string) string {
		for _, p := range paths {
			if v := get(p...); v != "" {
				return v
			}
		}
		return ""
	}
	const v2Runtime, v2Images, v1CRI = "io.containerd.cri.v1.runtime", "io.containerd.cri.v1.images", "io.containerd.grpc.v1.cri"
	return map[string]string{
		"SystemdCgroup": first(
			[]string{"plugins", v2Runtime, "containerd", "runtimes", "runc", "options", "SystemdCgroup"},
			[]string{"plugins", v1CRI, "containerd", "runtimes", "runc", "options", "SystemdCgroup"}),
		"sandbox": first(
			[]string{"plugins", v2Images, "pinned_images", "sandbox"},
			[]string{"plugins", v1CRI, "sandbox_image"}),
		"config_path": first(
			[]string{"plugins", v2Images, "registry", "config_path"},
			[]string{"plugins", v1CRI, "registry", "config_path"}),
	}, nil
}
