package hostfacts

import (
	"context"
	"fmt"
	"net/netip"
	"strconv"
	"strings"

	"github.com/hybridctl/hybridctl/internal/provision/engine"
	"github.com/hybridctl/hybridctl/internal/provision/transport"
)

// Host is what a host reports before anything is installed on it: what
// preflight's checks read. Empty strings mean "could not be determined";
// the checks report that rather than guess.
type Host struct {
	// Host is the host's name in the spec, OS its operating system.
	Host string
	OS   engine.OS
	// Hostname as the host reports it.
	Hostname string
	// Linux: fields of /etc/os-release.
	OSID, OSVersionID, OSPrettyName string
	// Windows: registry CurrentVersion values.
	WindowsProductName, WindowsInstallationType, WindowsBuild, WindowsUBR string
	// ProductUUID is the SMBIOS system UUID; MachineID is /etc/machine-id
	// on Linux and the MachineGuid on Windows.
	ProductUUID, MachineID string
	// SwapKnown is false when swap could not be read; SwapDevices lists
	// active swap (Linux).
	SwapKnown   bool
	SwapDevices []string
	// TimeSynced is "yes", "no" or "" (unknown); TimeSource names the
	// source where the OS reports one (w32tm).
	TimeSynced string
	TimeSource string
	// Clock is the sample of the host's clock against this machine's,
	// taken by a command of its own (SampleClock).
	Clock Clock
	// Resolved are the IPv4 addresses the API name resolves to on the host.
	Resolved []string
	// Listening are the TCP ports something listens on.
	Listening map[int]bool
	// KubeletConfigured is set when the node already belongs to a cluster
	// (kubelet.conf exists): its ports are expected to be in use.
	KubeletConfigured bool
	// Container is the container manager the Linux host runs in
	// (systemd-detect-virt -c: systemd-nspawn, lxc, docker, ...), "none"
	// on a machine or VM, "" when unknown.
	Container string
	// CgroupVersion is "v1" or "v2" ("" unknown), from the file system
	// type of /sys/fs/cgroup.
	CgroupVersion string
	// CapsKnown is set when CapBnd could be read; then CapSysResource and
	// CapSysTime say whether the host may hold those capabilities.
	CapsKnown                  bool
	CapSysResource, CapSysTime bool
	// Windows: AutoUpdate is "off" when the Windows Update policy
	// (HKLM:\SOFTWARE\Policies\Microsoft\Windows\WindowsUpdate\AU) has
	// NoAutoUpdate = 1, "on" otherwise, "" when it could not be read;
	// AUOptions is that key's AUOptions value ("" when unset).
	AutoUpdate, AUOptions string
	// RebootPending names what asks Windows for a reboot before it
	// changes features: "Component Based Servicing", "Windows Update".
	RebootPending []string
	// ContainerdCandidate is the version of the distribution's containerd
	// package that apt-get install would install ("2.0.2-0ubuntu1";
	// "(none)" when there is no such package; "" unknown).
	ContainerdCandidate string
	// LanguageMode is PowerShell's language mode in an SSH session
	// ("FullLanguage"; "ConstrainedLanguage" under AppLocker or WDAC).
	LanguageMode string
}

// GatherHost samples the host's clock, then runs the host script on it
// with a marker of this run. apiName is the name the cluster's API will
// be reached at (what it resolves to on the host is one of the facts).
func GatherHost(ctx context.Context, r Runner, h engine.Host, apiName string) (*Host, error) {
	marker := NewMarker()
	script := HostLinuxScript(marker, apiName)
	if h.OS == engine.Windows {
		script = HostWindowsScript(marker, apiName)
	}
	clock := SampleClock(ctx, r, h.OS)
	res, err := r.Run(ctx, script)
	if err != nil {
		return nil, fmt.Errorf("gathering facts: %w", err)
	}
	// The transport keeps the start and the end of a long output: a host
	// that printed more than that is not believed in part.
	if res.Truncated() {
		return nil, fmt.Errorf("gathering facts: %s sent %s (%d bytes) on standard output, more than the %s hybridctl reads whole; nothing of it was used",
			h.Name, transport.MiB(res.StdoutBytes), res.StdoutBytes, transport.MiB(2*transport.DefaultKeep))
	}
	f, err := ParseHost(h, string(res.Stdout), marker)
	if err != nil {
		return nil, fmt.Errorf("gathering facts: %w", err)
	}
	f.Clock = clock
	return f, nil
}

// HostLinuxScript gathers a Linux host's facts. Every source is optional:
// a missing file or tool leaves its section empty. It needs no root except
// for product_uuid (run it with sudo). marker is the run's (NewMarker).
func HostLinuxScript(marker, apiName string) string {
	return "set +e\n" + ShellFunc(marker) + `s hostname; hostname 2>/dev/null
s os-release; cat /etc/os-release 2>/dev/null
s product_uuid; cat /sys/class/dmi/id/product_uuid 2>/dev/null
s machine-id; cat /etc/machine-id 2>/dev/null
s swaps; cat /proc/swaps 2>/dev/null
s ntp; timedatectl show -p NTPSynchronized --value 2>/dev/null
s resolve; getent ahostsv4 -- ` + transport.ShellQuote(apiName) + ` 2>/dev/null | awk '{print $1}' | sort -u
s tcp; cat /proc/net/tcp /proc/net/tcp6 2>/dev/null
s kubelet-conf; test -e /etc/kubernetes/kubelet.conf && echo present
s container; systemd-detect-virt -c 2>/dev/null || cat /run/systemd/container 2>/dev/null
s cgroupfs; stat -f -c %T /sys/fs/cgroup 2>/dev/null
s capbnd; awk '/^CapBnd:/ {print $2}' /proc/self/status 2>/dev/null
s containerd-candidate; LC_ALL=C apt-cache policy containerd 2>/dev/null | awk '$1 == "Candidate:" {print $2}'
s
`
}

// HostWindowsScript gathers a Windows host's facts with PowerShell (run it
// through transport, which encodes it). marker is the run's (NewMarker).
func HostWindowsScript(marker, apiName string) string {
	return PowerShellFunc(marker) + `$ErrorActionPreference = 'SilentlyContinue'
s hostname; [System.Net.Dns]::GetHostEntry('').HostName
s windows
$cv = Get-ItemProperty 'HKLM:\SOFTWARE\Microsoft\Windows NT\CurrentVersion'
"ProductName=$($cv.ProductName)"; "InstallationType=$($cv.InstallationType)"
"CurrentBuild=$($cv.CurrentBuild)"; "UBR=$($cv.UBR)"
s product_uuid; (Get-CimInstance -ClassName Win32_ComputerSystemProduct).UUID
s machine-id; (Get-ItemProperty 'HKLM:\SOFTWARE\Microsoft\Cryptography').MachineGuid
s w32tm; w32tm /query /status
s resolve; ` + windowsResolve(apiName) + `
s listen; Get-NetTCPConnection -State Listen | ForEach-Object { $_.LocalPort } | Sort-Object -Unique
s kubelet-conf; if (Test-Path C:\etc\kubernetes\kubelet.conf) { 'present' }
s wu-policy; $au = Get-ItemProperty 'HKLM:\SOFTWARE\Policies\Microsoft\Windows\WindowsUpdate\AU'; "NoAutoUpdate=$($au.NoAutoUpdate)"; "AUOptions=$($au.AUOptions)"
s reboot-pending; $k = 'HKLM:\SOFTWARE\Microsoft\Windows\CurrentVersion\'
if (Test-Path ($k + 'Component Based Servicing\RebootPending')) { 'Component Based Servicing' }
if (Test-Path ($k + 'WindowsUpdate\Auto Update\RebootRequired')) { 'Windows Update' }
s language-mode; $ExecutionContext.SessionState.LanguageMode
s
$global:LASTEXITCODE = 0
`
}

// windowsResolve is the PowerShell that prints the IPv4 addresses the API
// name resolves to. An address literal is printed as it is, as Linux's
// getent does: Resolve-DnsName would ask the DNS servers for an A record
// of the literal and report nothing.
func windowsResolve(apiName string) string {
	if ip, err := netip.ParseAddr(apiName); err == nil && ip.Is4() {
		return transport.PSQuote(ip.String())
	}
	return "(Resolve-DnsName -Name " + transport.PSQuote(apiName) + " -Type A -DnsOnly).IPAddress"
}

// ParseOSRelease parses os-release(5): KEY=value lines, values optionally
// quoted with shell-style escapes; comments and blank lines ignored.
func ParseOSRelease(s string) map[string]string {
	out := map[string]string{}
	for _, line := range strings.Split(s, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok || k == "" {
			continue
		}
		if len(v) >= 2 && (v[0] == '"' || v[0] == '\'') && v[len(v)-1] == v[0] {
			q := v[0]
			v = v[1 : len(v)-1]
			if q == '"' {
				var b strings.Builder
				for i := 0; i < len(v); i++ {
					if v[i] == '\\' && i+1 < len(v) && strings.IndexByte("\"\\$`", v[i+1]) >= 0 {
						i++
					}
					b.WriteByte(v[i])
				}
				v = b.String()
			}
		}
		out[k] = v
	}
	return out
}

// ParseProcNetTCP returns the ports in LISTEN state (st 0A) of
// /proc/net/tcp and tcp6 content.
func ParseProcNetTCP(s string) map[int]bool {
	ports := map[int]bool{}
	for _, line := range strings.Split(s, "\n") {
		f := strings.Fields(line)
		if len(f) < 4 || f[3] != "0A" {
			continue
		}
		i := strings.LastIndexByte(f[1], ':')
		if i < 0 {
			continue
		}
		p, err := strconv.ParseUint(f[1][i+1:], 16, 16)
		if err == nil {
			ports[int(p)] = true
		}
	}
	return ports
}

// ParseHost builds Host from the host script's output of the run with
// marker. An output without a section of the run, or a section twice, is
// an error: the host is not believed; a missing section leaves its facts
// unknown.
func ParseHost(h engine.Host, out, marker string) (*Host, error) {
	split, err := Split([]byte(out), marker)
	if err != nil {
		return nil, fmt.Errorf("%s: reading the facts script's output: %w", h.Name, err)
	}
	secs := textOf(split)
	f := &Host{Host: h.Name, OS: h.OS, Listening: map[int]bool{}}
	f.Hostname = secs.first("hostname")
	f.ProductUUID = strings.ToLower(secs.first("product_uuid"))
	f.MachineID = strings.ToLower(secs.first("machine-id"))
	f.Resolved = secs.lines("resolve")
	f.KubeletConfigured = secs.first("kubelet-conf") == "present"
	if h.OS == engine.Windows {
		parseWindowsHost(f, secs)
	} else {
		parseLinuxHost(f, secs)
	}
	return f, nil
}

// sectionText is each section's output by name.
type sectionText map[string]string

// textOf is the output of each of secs by name.
func textOf(secs []Section) sectionText {
	t := sectionText{}
	for _, s := range secs {
		t[s.Name] = s.Out
	}
	return t
}

// first is the section's first line, trimmed.
func (s sectionText) first(name string) string {
	line, _, _ := strings.Cut(strings.TrimSpace(s[name]), "\n")
	return strings.TrimSpace(line)
}

// lines are the section's non-empty lines, trimmed.
func (s sectionText) lines(name string) []string {
	var out []string
	for _, l := range strings.Split(s[name], "\n") {
		if l = strings.TrimSpace(l); l != "" {
			out = append(out, l)
		}
	}
	return out
}

// parseWindowsHost reads the Windows host script's own sections.
func parseWindowsHost(f *Host, secs sectionText) {
	kv := ParseOSRelease(secs["windows"])
	f.WindowsProductName, f.WindowsInstallationType = kv["ProductName"], kv["InstallationType"]
	f.WindowsBuild, f.WindowsUBR = kv["CurrentBuild"], kv["UBR"]
	for _, l := range secs.lines("w32tm") {
		if k, v, ok := strings.Cut(l, ":"); ok && strings.TrimSpace(k) == "Source" {
			f.TimeSource = strings.TrimSpace(v)
		}
	}
	switch {
	case f.TimeSource == "":
	case strings.Contains(f.TimeSource, "Local CMOS Clock"), strings.Contains(f.TimeSource, "Free-running"):
		f.TimeSynced = "no"
	default:
		f.TimeSynced = "yes"
	}
	for _, l := range secs.lines("listen") {
		if p, err := strconv.Atoi(l); err == nil {
			f.Listening[p] = true
		}
	}
	f.SwapKnown = true // Windows has no swap to turn off for the kubelet
	if wu, ok := secs["wu-policy"]; ok {
		kv := ParseOSRelease(wu)
		f.AutoUpdate, f.AUOptions = "on", kv["AUOptions"]
		if kv["NoAutoUpdate"] == "1" {
			f.AutoUpdate = "off"
		}
	}
	for _, l := range secs.lines("reboot-pending") {
		if l == "Component Based Servicing" || l == "Windows Update" {
			f.RebootPending = append(f.RebootPending, l)
		}
	}
	f.LanguageMode = secs.first("language-mode")
}

// parseLinuxHost reads the Linux host script's own sections.
func parseLinuxHost(f *Host, secs sectionText) {
	osr := ParseOSRelease(secs["os-release"])
	f.OSID, f.OSVersionID, f.OSPrettyName = osr["ID"], osr["VERSION_ID"], osr["PRETTY_NAME"]
	if sw, ok := secs["swaps"]; ok && strings.HasPrefix(sw, "Filename") {
		f.SwapKnown = true
		for _, l := range secs.lines("swaps")[1:] {
			f.SwapDevices = append(f.SwapDevices, strings.Fields(l)[0])
		}
	}
	f.TimeSynced = secs.first("ntp")
	f.Listening = ParseProcNetTCP(secs["tcp"])
	if c := secs.first("container"); c != "" && !strings.ContainsAny(c, " \t") {
		f.Container = c
	}
	switch secs.first("cgroupfs") {
	case "cgroup2fs":
		f.CgroupVersion = "v2"
	case "tmpfs":
		f.CgroupVersion = "v1"
	}
	if c := secs.first("containerd-candidate"); c != "" && !strings.ContainsAny(c, " \t") {
		f.ContainerdCandidate = c
	}
	if v, err := strconv.ParseUint(secs.first("capbnd"), 16, 64); err == nil {
		f.CapsKnown = true
		f.CapSysResource = v&(1<<CapSysResourceBit) != 0
		f.CapSysTime = v&(1<<CapSysTimeBit) != 0
	}
}

// Capability bits of CapBnd (linux/capability.h).
const (
	CapSysResourceBit = 24
	CapSysTimeBit     = 25
)
