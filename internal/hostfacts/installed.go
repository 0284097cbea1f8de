package hostfacts

import (
	"context"
	"fmt"
	"regexp"
	"strings"

	"github.com/hybridctl/hybridctl/internal/provision/engine"
)

// Installed is what a host reports about its Kubernetes installation (what
// adoption and diff compare with the spec). Empty strings mean "not there
// or not readable".
type Installed struct {
	// KubeletConf: the host has joined a cluster (kubelet.conf);
	// AdminConf: it is an initialised control plane (admin.conf).
	KubeletConf, AdminConf bool
	// Versions of the installed programs, as "v1.37.2" and "2.2.2".
	Kubelet, Kubeadm, Kubectl, Containerd string
	// ContainerdConfig, KubeletConfig and KubeadmFlags are the files'
	// contents (containerd's config.toml, /var/lib/kubelet/config.yaml,
	// kubeadm-flags.env), each cut at 256 KiB.
	ContainerdConfig, KubeletConfig, KubeadmFlags string
	// Sysctl are the Linux kernel settings the preparation makes, by key.
	Sysctl map[string]string
	// Swap is set when a Linux host has active swap.
	Swap bool
}

// installedFileLimit bounds each file a host sends.
const installedFileLimit = 256 << 10

// InstalledLinuxScript reads what a Linux host has installed; it changes
// nothing. It runs as root (kubelet's directory is root's). marker is the
// run's (NewMarker).
func InstalledLinuxScript(marker string) string {
	return "set +e\n" + ShellFunc(marker) + fmt.Sprintf(`s kubelet-conf; test -e /etc/kubernetes/kubelet.conf && echo present
s admin-conf; test -e /etc/kubernetes/admin.conf && echo present
s kubelet-version; kubelet --version 2>/dev/null
s kubeadm-version; kubeadm version -o short 2>/dev/null
s kubectl-version; kubectl version --client 2>/dev/null | head -n 1
s containerd-version; containerd --version 2>/dev/null
s containerd-config; head -c %[1]d /etc/containerd/config.toml 2>/dev/null
s kubelet-config; head -c %[1]d /var/lib/kubelet/config.yaml 2>/dev/null
s kubeadm-flags; head -c %[1]d /var/lib/kubelet/kubeadm-flags.env 2>/dev/null
s sysctl; for k in %[2]s; do printf '%%s=%%s\n' "$k" "$(sysctl -n "$k" 2>/dev/null)"; done
s swaps; tail -n +2 /proc/swaps 2>/dev/null
s end
s
`, installedFileLimit, strings.Join(SysctlKeys(), " "))
}

// InstalledWindowsScript reads what a Windows host has installed
// (PowerShell; transport encodes it); it changes nothing. marker is the
// run's (NewMarker).
func InstalledWindowsScript(marker string) string {
	return PowerShellFunc(marker) + fmt.Sprintf(`$ErrorActionPreference = 'SilentlyContinue'
function Read-Head($p) { if (Test-Path -LiteralPath $p) { $t = [IO.File]::ReadAllText($p); if ($t.Length -gt %[1]d) { $t.Substring(0, %[1]d) } else { $t } } }
s kubelet-conf; if (Test-Path C:\etc\kubernetes\kubelet.conf) { 'present' }
s kubelet-version; if (Test-Path C:\k\kubelet.exe) { & C:\k\kubelet.exe --version }
s kubeadm-version; if (Test-Path C:\k\kubeadm.exe) { & C:\k\kubeadm.exe version -o short }
s kubectl-version; if (Test-Path C:\k\kubectl.exe) { & C:\k\kubectl.exe version --client | Select-Object -First 1 }
s containerd-version; $c = Join-Path $env:ProgramFiles 'containerd\containerd.exe'; if (Test-Path $c) { & $c --version }
s containerd-config; Read-Head (Join-Path $env:ProgramFiles 'containerd\config.toml')
s kubelet-config; Read-Head 'C:\var\lib\kubelet\config.yaml'
s kubeadm-flags; Read-Head 'C:\var\lib\kubelet\kubeadm-flags.env'
s end
s
$global:LASTEXITCODE = 0
`, installedFileLimit)
}

// SysctlKeys are the kernel settings the Linux preparation makes (the
// guide's "Kernel modules and sysctl").
func SysctlKeys() []string {
	return []string{"net.bridge.bridge-nf-call-iptables", "net.bridge.bridge-nf-call-ip6tables", "net.ipv4.ip_forward"}
}

// GatherInstalled reads what a host has installed.
func GatherInstalled(ctx context.Context, r Runner, h engine.Host) (*Installed, error) {
	marker := NewMarker()
	script := InstalledLinuxScript(marker)
	if h.OS == engine.Windows {
		script = InstalledWindowsScript(marker)
	}
	res, err := r.Run(ctx, script)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", h.Name, err)
	}
	f, err := ParseInstalled(string(res.Stdout), marker)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", h.Name, err)
	}
	return f, nil
}

var (
	// semverRE finds the first version in a program's output:
	// "Kubernetes v1.37.2", "containerd github.com/containerd/containerd/v2 v2.2.2 abc",
	// "Client Version: v1.37.2".
	semverRE = regexp.MustCompile(`\bv?(\d+\.\d+\.\d+(?:-[0-9A-Za-z.-]+)?)\b`)
)

// firstVersion returns "v"+the first semantic version in s, or "".
func firstVersion(s string) string {
	// containerd prints its module path (…/containerd/v2) first: a
	// version needs dots.
	m := semverRE.FindStringSubmatch(s)
	if m == nil {
		return ""
	}
	return "v" + m[1]
}

// ParseInstalled reads the output of the installation script run with
// marker. An output
// without the closed end section (the script ended early), or with a
// section twice, is an error.
func ParseInstalled(out, marker string) (*Installed, error) {
	split, err := Split([]byte(out), marker)
	if err != nil {
		return nil, fmt.Errorf("the facts script's output: %w", err)
	}
	if end, ok := ByName(split)["end"]; !ok || !end.Closed {
		return nil, fmt.Errorf("the facts script ended early (no end section)")
	}
	secs := textOf(split)
	first := secs.first
	f := &Installed{
		KubeletConf:      first("kubelet-conf") == "present",
		AdminConf:        first("admin-conf") == "present",
		Kubelet:          firstVersion(first("kubelet-version")),
		Kubeadm:          firstVersion(first("kubeadm-version")),
		Kubectl:          firstVersion(first("kubectl-version")),
		Containerd:       firstVersion(first("containerd-version")),
		ContainerdConfig: secs["containerd-config"],
		KubeletConfig:    secs["kubelet-config"],
		KubeadmFlags:     secs["kubeadm-flags"],
		Sysctl:           map[string]string{},
	}
	for _, l := range strings.Split(secs["sysctl"], "\n") {
		if k, v, ok := strings.Cut(strings.TrimSpace(l), "="); ok && k != "" {
			f.Sysctl[k] = v
		}
	}
	f.Swap = strings.TrimSpace(secs["swaps"]) != ""
	return f, nil
}
