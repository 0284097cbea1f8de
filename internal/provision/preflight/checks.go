package preflight

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/hybridctl/hybridctl/internal/provision"
)

// Severity of a finding.
type Severity string

// Severities.
const (
	SeverityError   Severity = "error"
	SeverityWarning Severity = "warning"
)

// Check names (stable; --ignore-preflight-errors takes them, like kubeadm's).
const (
	CheckOSVersion     = "os-version"
	CheckWindowsBuild  = "windows-build"
	CheckProductUUID   = "product-uuid-unique"
	CheckMachineID     = "machine-id-unique"
	CheckSwap          = "swap"
	CheckTimeSync      = "time-sync"
	CheckClockSkew     = "clock-skew"
	CheckAPIName       = "api-name-resolves"
	CheckPortFree      = "port-free"
	CheckFactsReadable = "facts-readable"
)

// Finding is one problem found on a host.
type Finding struct {
	Check    string   `json:"check"`
	Host     string   `json:"host"`
	Severity Severity `json:"severity"`
	Message  string   `json:"message"`
}

func (f Finding) String() string {
	return fmt.Sprintf("[%s] %s: %s", f.Check, f.Host, f.Message)
}

// Port is a TCP port a node role needs free before kubeadm runs.
type Port struct {
	Number  int
	Purpose string
}

// RequiredPorts are the ports kubeadm's preflight (and the guide's port
// table) need free on h before init or join.
func RequiredPorts(h provision.Host) []Port {
	ports := []Port{{10250, "kubelet API"}, {10256, "kube-proxy health"}}
	if h.IsControlPlane() {
		ports = append([]Port{{6443, "kube-apiserver"}, {2379, "etcd client"}, {2380, "etcd peer"},
			{10257, "kube-controller-manager"}, {10259, "kube-scheduler"}}, ports...)
	}
	return ports
}

// Expect is what the spec says the hosts should be.
type Expect struct {
	// LinuxID and LinuxVersionID are the expected os-release ID and
	// VERSION_ID ("ubuntu", "26.04"); empty accepts any.
	LinuxID, LinuxVersionID string
	// WindowsBuilds maps a Windows host to its expected build from the spec
	// ("10.0.26100").
	WindowsBuilds map[string]string
	// APIName is the controlPlaneEndpoint host name; APIAddresses the
	// addresses it must resolve to (the control-plane nodes').
	APIName      string
	APIAddresses []string
	// MaxClockSkew above which a host's clock is an error (default 30s;
	// half of it is a warning).
	MaxClockSkew time.Duration
	// AlreadyInstalled skips the port check: the ports are expected to be
	// in use by the cluster's own components on a re-run.
	AlreadyInstalled bool
}

// CheckHost evaluates one host's facts.
func CheckHost(f *Facts, h provision.Host, x Expect) []Finding {
	var out []Finding
	add := func(check string, sev Severity, format string, a ...any) {
		out = append(out, Finding{Check: check, Host: h.Name, Severity: sev, Message: fmt.Sprintf(format, a...)})
	}
	if h.OS == provision.Windows {
		want := x.WindowsBuilds[h.Name]
		switch {
		case f.WindowsBuild == "":
			add(CheckWindowsBuild, SeverityError, "could not read the Windows build (HKLM:\\SOFTWARE\\Microsoft\\Windows NT\\CurrentVersion)")
		case want != "" && lastDotPart(want) != f.WindowsBuild:
			add(CheckWindowsBuild, SeverityError, "build %s (%s), the spec says %s: process-isolated containers need images of the host's build", f.WindowsBuild, f.WindowsProductName, want)
		}
		if f.WindowsInstallationType != "" && f.WindowsInstallationType != "Server Core" && f.WindowsInstallationType != "Server" {
			add(CheckOSVersion, SeverityWarning, "installation type %q; the guide uses Windows Server (Core)", f.WindowsInstallationType)
		}
	} else {
		switch {
		case f.OSID == "":
			add(CheckOSVersion, SeverityWarning, "could not read /etc/os-release")
		case x.LinuxID != "" && f.OSID != x.LinuxID, x.LinuxVersionID != "" && f.OSVersionID != x.LinuxVersionID:
			add(CheckOSVersion, SeverityWarning, "%s (%s %s), the procedure is written for %s %s", f.OSPrettyName, f.OSID, f.OSVersionID, x.LinuxID, x.LinuxVersionID)
		}
		switch {
		case !f.SwapKnown:
			add(CheckSwap, SeverityWarning, "could not read /proc/swaps")
		case len(f.SwapDevices) > 0:
			add(CheckSwap, SeverityError, "swap is on (%s): the kubelet requires it off; swapoff -a and remove it from /etc/fstab", strings.Join(f.SwapDevices, ", "))
		}
	}
	if f.ProductUUID == "" {
		add(CheckFactsReadable, SeverityWarning, "could not read the product_uuid (on Linux it needs root: sudo), so its uniqueness is not checked")
	}
	if f.MachineID == "" {
		add(CheckFactsReadable, SeverityWarning, "could not read the machine id, so its uniqueness is not checked")
	}
	switch f.TimeSynced {
	case "yes":
	case "":
		add(CheckTimeSync, SeverityWarning, "could not tell whether the clock is synchronized")
	default:
		src := ""
		if f.TimeSource != "" {
			src = " (source: " + f.TimeSource + ")"
		}
		add(CheckTimeSync, SeverityError, "the clock is not synchronized%s: kubelet certificates become \"not yet valid\" or \"expired\"; configure chrony (Linux) or w32tm (Windows) with the spec's NTP servers", src)
	}
	maxSkew := x.MaxClockSkew
	if maxSkew <= 0 {
		maxSkew = 30 * time.Second
	}
	if f.ClockSkewKnown {
		skew := f.ClockSkew
		if skew < 0 {
			skew = -skew
		}
		// Whole seconds and the round trip make ±1s noise.
		switch {
		case skew > maxSkew:
			add(CheckClockSkew, SeverityError, "the clock is %s off this machine's", f.ClockSkew)
		case skew > maxSkew/2 && skew > 2*time.Second:
			add(CheckClockSkew, SeverityWarning, "the clock is %s off this machine's", f.ClockSkew)
		}
	}
	if x.APIName != "" {
		switch {
		case len(f.Resolved) == 0:
			add(CheckAPIName, SeverityError, "%s does not resolve on the host; every node must resolve the API name (DNS record or hosts file)", x.APIName)
		case len(x.APIAddresses) > 0 && !slices.ContainsFunc(f.Resolved, func(a string) bool { return slices.Contains(x.APIAddresses, a) }):
			add(CheckAPIName, SeverityError, "%s resolves to %s, want %s", x.APIName, strings.Join(f.Resolved, ", "), strings.Join(x.APIAddresses, ", "))
		}
	}
	// A node that already belongs to the cluster (a re-run) has its
	// kubelet, and on the control plane the API server and etcd, listening.
	if !x.AlreadyInstalled && !f.KubeletConfigured {
		for _, p := range RequiredPorts(h) {
			if f.Listening[p.Number] {
				add(CheckPortFree, SeverityError, "port %d/tcp (%s) is in use", p.Number, p.Purpose)
			}
		}
	}
	return out
}

func lastDotPart(s string) string {
	if i := strings.LastIndexByte(s, '.'); i >= 0 {
		return s[i+1:]
	}
	return s
}

// CheckCluster evaluates facts across hosts: product_uuid and machine id
// must be unique (machines cloned from one template share them, and then
// kubelets and Calico confuse the nodes).
func CheckCluster(facts []*Facts) []Finding {
	var out []Finding
	for _, c := range []struct {
		check, what string
		get         func(*Facts) string
		fix         string
	}{
		{CheckProductUUID, "product_uuid", func(f *Facts) string { return f.ProductUUID }, "give each VM its own SMBIOS UUID"},
		{CheckMachineID, "machine id", func(f *Facts) string { return f.MachineID }, "regenerate it: rm /etc/machine-id && systemd-machine-id-setup (Linux); sysprep the image (Windows)"},
	} {
		by := map[string][]string{}
		for _, f := range facts {
			if v := c.get(f); v != "" {
				by[v] = append(by[v], f.Host)
			}
		}
		var dups []string
		for v, hosts := range by {
			if len(hosts) > 1 {
				dups = append(dups, v)
			}
		}
		sort.Strings(dups)
		for _, v := range dups {
			hosts := by[v]
			for _, h := range hosts {
				out = append(out, Finding{Check: c.check, Host: h, Severity: SeverityError,
					Message: fmt.Sprintf("the %s %s is shared by %s: %s", c.what, v, strings.Join(hosts, ", "), c.fix)})
			}
		}
	}
	return out
}

// Apply turns findings into the phase outcome: errors not ignored (by
// check name) fail it; the rest are warnings.
func Apply(findings []Finding, ignore []string) (errs, warnings []Finding) {
	for _, f := range findings {
		if f.Severity == SeverityError && !slices.Contains(ignore, f.Check) && !slices.Contains(ignore, "all") {
			errs = append(errs, f)
		} else {
			warnings = append(warnings, f)
		}
	}
	return errs, warnings
}
