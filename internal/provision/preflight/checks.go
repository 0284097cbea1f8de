// Package preflight checks hybridctl's hosts before anything is changed,
// as the guide's preparation sections do: OS and version, unique
// product_uuid and machine-id, swap, time sync, the API name resolving to
// the control plane, required ports free.
//
// It is a catalogue over internal/hostfacts: the facts come from
// hostfacts.GatherHost (one clock sample and one script per host), and the
// checks are pure functions of them, so they are tested with table tests
// and the gathering is tested with hostfacts against a real SSH server.
package preflight

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/hybridctl/hybridctl/internal/finding"
	"github.com/hybridctl/hybridctl/internal/hostfacts"
	"github.com/hybridctl/hybridctl/internal/provision/engine"
	"github.com/hybridctl/hybridctl/internal/suggest"
)

// Check names (stable; --ignore-preflight-errors takes them, like kubeadm's).
const (
	CheckOSVersion     = "os-version"
	CheckWindowsBuild  = "windows-build"
	CheckSwap          = "swap"
	CheckFactsReadable = "facts-readable"
	CheckTimeSync      = "time-sync"
	CheckClockSkew     = "clock-skew"
	CheckAPIName       = "api-name-resolves"
	CheckPortFree      = "port-free"
	CheckProductUUID   = "product-uuid-unique"
	CheckMachineID     = "machine-id-unique"
	CheckCgroupVersion = "cgroup-version"
	CheckContainerHost = "container-host"
	CheckLanguageMode  = "language-mode"
	CheckRebootPending = "reboot-pending"
	CheckContainerd    = "containerd-version"
	CheckWindowsUpdate = "windows-update"
)

// IgnoreAll is the --ignore-preflight-errors value that ignores every check.
const IgnoreAll = "all"

// Finding is one problem found on a host.
type Finding struct {
	Check    string           `json:"check"`
	Host     string           `json:"host"`
	Severity finding.Severity `json:"severity"`
	Message  string           `json:"message"`
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
func RequiredPorts(h engine.Host) []Port {
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
	// ContainerdMin is the least containerd ("2.0") the kubelet requires
	// when the Linux nodes install the distribution's package
	// (packages.source upstream); empty: not checked. ContainerdFor names
	// the requirement ("Kubernetes v1.37") and ContainerdSpec is
	// spec.containerd.version, for the message.
	ContainerdMin, ContainerdFor, ContainerdSpec string
	// AllowCgroupV1 accepts cgroup v1 hosts (spec.allowCgroupV1).
	AllowCgroupV1 bool
	// AlreadyInstalled skips the port check: the ports are expected to be
	// in use by the cluster's own components on a re-run.
	AlreadyInstalled bool
	// PostPrepareWait bounds the post-prepare phase's retries while the
	// clock synchronises (default DefaultPostPrepareWait), polling every
	// PostPreparePoll (default DefaultPostPreparePoll).
	PostPrepareWait, PostPreparePoll time.Duration
}

// Input is what a check reads: one host's facts, and for the checks across
// nodes the facts of every node (All).
type Input struct {
	Host   engine.Host
	Facts  *hostfacts.Host
	Expect Expect
	All    []*hostfacts.Host
}

// Checker is one named preflight check, in the shape of kubeadm's
// (cmd/kubeadm/app/preflight): a stable name that --ignore-preflight-errors
// takes, and Check returning warnings and errors for one host.
type Checker interface {
	Name() string
	Check(in Input) (warnings, errorList []error)
}

// Scope says which phase runs a check.
type Scope string

// Scopes.
const (
	// ScopeNode checks run in "preflight" on each node.
	ScopeNode Scope = "node"
	// ScopePrepared checks run in "preflight" as warnings only (the
	// preparation is what fixes them) and again in "post-prepare", after
	// prepare.sh/prepare.ps1, as errors.
	ScopePrepared Scope = "node, again after prepare"
	// ScopeCluster checks run in "preflight-cluster" across all nodes.
	ScopeCluster Scope = "across nodes"
)

// Check is one entry of Checks: a Checker with what the docs say of it.
type Check struct {
	name  string
	scope Scope
	// os limits the check to one OS; empty: every node.
	os engine.OS
	// Doc is one line: what is checked and where.
	Doc string
	// Severity is what a failure is ("error", "warning" or both).
	Severity string
	check    func(in Input) (warnings, errorList []error)
}

// Name is the check's stable name.
func (c Check) Name() string { return c.name }

// Scope says where the check runs.
func (c Check) Scope() Scope { return c.scope }

// OS is the only OS the check applies to, or "" for every node.
func (c Check) OS() engine.OS { return c.os }

// appliesTo reports whether the check runs on h.
func (c Check) appliesTo(h engine.Host) bool { return c.os == "" || c.os == h.OS }

// Check runs the check on one host.
func (c Check) Check(in Input) (warnings, errorList []error) { return c.check(in) }

var _ Checker = Check{}

// Checks is every preflight check, in the order they run and are reported.
// --ignore-preflight-errors names are validated against it, and the table
// in docs/apply.md is generated from it.
func Checks() []Check {
	return []Check{
		{name: CheckOSVersion, scope: ScopeNode, Severity: "warning", check: checkOSVersion,
			Doc: "Linux: `/etc/os-release` is the spec's distribution and version; Windows: a Server installation"},
		{name: CheckWindowsBuild, scope: ScopeNode, os: engine.Windows, Severity: "error", check: checkWindowsBuild,
			Doc: "the build is the spec's `windows.build` (process isolation needs images of the host's build)"},
		{name: CheckLanguageMode, scope: ScopeNode, os: engine.Windows, Severity: "error", check: checkLanguageMode,
			Doc: "PowerShell in an SSH session runs in FullLanguage mode (`$ExecutionContext.SessionState.LanguageMode`): AppLocker or WDAC's ConstrainedLanguage blocks the .NET calls of prepare.ps1 and of the uploads"},
		{name: CheckRebootPending, scope: ScopeNode, os: engine.Windows, Severity: "warning", check: checkRebootPending,
			Doc: "no reboot pending (`Component Based Servicing\\RebootPending`, `WindowsUpdate\\Auto Update\\RebootRequired`): prepare.ps1 stops before DISM and Install-WindowsFeature until the node is rebooted, and apply reboots it"},
		{name: CheckWindowsUpdate, scope: ScopePrepared, os: engine.Windows, Severity: "error", check: checkWindowsUpdate,
			Doc: "Windows Update is Manual, as the guide sets it in sconfig (policy `NoAutoUpdate` = 1; prepare.ps1 sets it): a node reboots only through drain and uncordon"},
		{name: CheckSwap, scope: ScopeNode, os: engine.Linux, Severity: "error", check: checkSwap,
			Doc: "no active swap (`/proc/swaps`)"},
		{name: CheckCgroupVersion, scope: ScopeNode, os: engine.Linux, Severity: "error", check: checkCgroupVersion,
			Doc: "the cgroup version (`/sys/fs/cgroup`): v1 is refused unless `spec.allowCgroupV1` (then the kubelet gets failCgroupV1: false)"},
		{name: CheckContainerHost, scope: ScopeNode, os: engine.Linux, Severity: "warning", check: checkContainerHost,
			Doc: "reports a container host (systemd-nspawn, lxc, docker: `systemd-detect-virt -c`) and missing bounding capabilities (CapBnd): without CAP_SYS_RESOURCE containerd restricts OOM scores and the kubelet keeps 0; without CAP_SYS_TIME the clock is checked, not configured"},
		{name: CheckContainerd, scope: ScopeNode, os: engine.Linux, Severity: "error", check: checkContainerd,
			Doc: "with `packages.source: upstream`, the containerd the distribution installs (`apt-cache policy containerd`: the candidate) is at least what the kubelet requires (containerd 2.0 for Kubernetes 1.36 and later); `packages.source: bundle` installs `spec.containerd.version` from its release tarball instead"},
		{name: CheckFactsReadable, scope: ScopeNode, Severity: "warning", check: checkFactsReadable,
			Doc: "product_uuid and machine id could be read (product_uuid needs root on Linux)"},
		{name: CheckTimeSync, scope: ScopePrepared, Severity: "error", check: checkTimeSync,
			Doc: "the clock is synchronised (timedatectl; w32tm's source is not the local CMOS clock)"},
		{name: CheckClockSkew, scope: ScopePrepared, Severity: "warning/error", check: checkClockSkew,
			Doc: "the host's clock against this machine's, sampled by a command of its own (over 15 s a warning, over 30 s an error, unmeasurable a warning)"},
		{name: CheckAPIName, scope: ScopePrepared, Severity: "error", check: checkAPIName,
			Doc: "the API name resolves on the node to a control-plane address"},
		{name: CheckPortFree, scope: ScopeNode, Severity: "error", check: checkPortFree,
			Doc: "ports free: control plane 6443, 2379, 2380, 10257, 10259; every node 10250, 10256 (not on a node that already joined)"},
		{name: CheckProductUUID, scope: ScopeCluster, Severity: "error", check: unique("product_uuid", func(f *hostfacts.Host) string { return f.ProductUUID }, "give each VM its own SMBIOS UUID"),
			Doc: "no two nodes share a product_uuid (VMs cloned from one template)"},
		{name: CheckMachineID, scope: ScopeCluster, Severity: "error", check: unique("machine id", func(f *hostfacts.Host) string { return f.MachineID },
			"regenerate it: rm /etc/machine-id && systemd-machine-id-setup (Linux); sysprep the image (Windows)"),
			Doc: "no two nodes share a machine id (`/etc/machine-id`, Windows MachineGuid)"},
	}
}

// Names returns the check names in list order.
func Names() []string {
	var out []string
	for _, c := range Checks() {
		out = append(out, c.name)
	}
	return out
}

// ValidateIgnore checks --ignore-preflight-errors values against Checks:
// names are case-insensitive as in kubeadm, "all" must stand alone, and an
// unknown name is an error with the closest known one. It returns the
// names lower-cased.
func ValidateIgnore(names []string) ([]string, error) {
	known := append(Names(), IgnoreAll)
	var out []string
	var errs []error
	for _, n := range names {
		n = strings.ToLower(strings.TrimSpace(n))
		if n == "" {
			errs = append(errs, errors.New("--ignore-preflight-errors: empty check name"))
			continue
		}
		if !slices.Contains(known, n) {
			hint := ""
			if s, ok := suggest.Closest(n, known); ok {
				hint = fmt.Sprintf("; did you mean %q?", s)
			}
			errs = append(errs, fmt.Errorf("--ignore-preflight-errors: unknown preflight check %q%s (known: %s, or %s)", n, hint, strings.Join(Names(), ", "), IgnoreAll))
			continue
		}
		if !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	if slices.Contains(out, IgnoreAll) && len(out) > 1 {
		errs = append(errs, errors.New("--ignore-preflight-errors: \"all\" ignores every check; do not name others with it"))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return out, nil
}

// run evaluates the checks of the given scopes on one host, in list order.
func run(in Input, scopes ...Scope) []Finding {
	var out []Finding
	for _, c := range Checks() {
		if !slices.Contains(scopes, c.scope) || !c.appliesTo(in.Host) {
			continue
		}
		warnings, errs := c.Check(in)
		for _, w := range warnings {
			out = append(out, Finding{Check: c.name, Host: in.Host.Name, Severity: finding.Warning, Message: w.Error()})
		}
		for _, e := range errs {
			out = append(out, Finding{Check: c.name, Host: in.Host.Name, Severity: finding.Error, Message: e.Error()})
		}
	}
	return out
}

// preparedNote is added to a ScopePrepared error reported before the
// preparation, which turns it into a warning.
const preparedNote = " (a warning before preparation, which sets this up; post-prepare checks it again)"

// CheckHost runs the node checks on one host's facts, as the "preflight"
// phase does: errors of the checks the preparation fixes (time-sync,
// clock-skew, api-name-resolves) are warnings here.
func CheckHost(f *hostfacts.Host, h engine.Host, x Expect) []Finding {
	out := run(Input{Host: h, Facts: f, Expect: x}, ScopeNode, ScopePrepared)
	prepared := map[string]bool{}
	for _, c := range Checks() {
		prepared[c.name] = c.scope == ScopePrepared
	}
	for i, fd := range out {
		if prepared[fd.Check] && fd.Severity == finding.Error {
			out[i].Severity = finding.Warning
			out[i].Message += preparedNote
		}
	}
	return out
}

// NodeChecks are the names of the checks "preflight" runs on h, in order.
func NodeChecks(h engine.Host, scopes ...Scope) []string {
	var out []string
	for _, c := range Checks() {
		if slices.Contains(scopes, c.scope) && c.appliesTo(h) {
			out = append(out, c.name)
		}
	}
	return out
}

// CheckPrepared runs the checks that the preparation should have fixed,
// as the "post-prepare" phase does: their errors are errors.
func CheckPrepared(f *hostfacts.Host, h engine.Host, x Expect) []Finding {
	return run(Input{Host: h, Facts: f, Expect: x}, ScopePrepared)
}

// CheckCluster runs the checks across nodes, as "preflight-cluster" does.
func CheckCluster(facts []*hostfacts.Host) []Finding {
	var out []Finding
	for _, f := range facts {
		out = append(out, run(Input{Host: engine.Host{Name: f.Host, OS: f.OS}, Facts: f, All: facts}, ScopeCluster)...)
	}
	// By check, then host: the list order of checks, as for a node.
	order := map[string]int{}
	for i, n := range Names() {
		order[n] = i
	}
	sort.SliceStable(out, func(i, j int) bool { return order[out[i].Check] < order[out[j].Check] })
	return out
}

func checkOSVersion(in Input) (warnings, errs []error) {
	f, x := in.Facts, in.Expect
	if in.Host.OS == engine.Windows {
		if f.WindowsInstallationType != "" && f.WindowsInstallationType != "Server Core" && f.WindowsInstallationType != "Server" {
			warnings = append(warnings, fmt.Errorf("installation type %q; the guide uses Windows Server (Core)", f.WindowsInstallationType))
		}
		return warnings, nil
	}
	switch {
	case f.OSID == "":
		warnings = append(warnings, errors.New("could not read /etc/os-release"))
	case f.OSID == "debian" && (f.OSVersionID == "12" || f.OSVersionID == "13"):
		// Debian 12 and 13 are supported beside the guide's Ubuntu.
	case x.LinuxID != "" && f.OSID != x.LinuxID, x.LinuxVersionID != "" && f.OSVersionID != x.LinuxVersionID:
		warnings = append(warnings, fmt.Errorf("%s (%s %s), the procedure is written for %s %s", f.OSPrettyName, f.OSID, f.OSVersionID, x.LinuxID, x.LinuxVersionID))
	}
	return warnings, nil
}

func checkCgroupVersion(in Input) (warnings, errs []error) {
	// An unknown version is not guessed at: kubeadm's own preflight
	// (SystemVerification) checks it again.
	switch in.Facts.CgroupVersion {
	case "v1":
		if !in.Expect.AllowCgroupV1 {
			errs = append(errs, errors.New("cgroup v1: kubelet 1.37 refuses it by default; set spec.allowCgroupV1: true to run with failCgroupV1: false and kubeadm's SystemVerification ignored, or boot the host with cgroup v2"))
		}
	}
	return warnings, errs
}

// checkContainerHost says what a container host, or a host without the
// capabilities the kubelet and chrony use, means for the installation.
func checkContainerHost(in Input) (warnings, errs []error) {
	f := in.Facts
	if f.Container != "" && f.Container != "none" {
		warnings = append(warnings, fmt.Errorf("the host is a %s container (cgroup %s): kernel modules and most sysctls belong to the machine that runs it", f.Container, orUnknown(f.CgroupVersion)))
	}
	if f.CapsKnown && !f.CapSysResource {
		warnings = append(warnings, errors.New("no CAP_SYS_RESOURCE: OOM scores cannot be lowered; prepare.sh sets containerd's restrict_oom_score_adj = true, and the kubelet needs oomScoreAdj: 0 (rendered with spec.allowCgroupV1)"))
	}
	if f.CapsKnown && !f.CapSysTime {
		warnings = append(warnings, errors.New("no CAP_SYS_TIME: chrony cannot set the clock; prepare.sh checks time sync instead of configuring it (the host that runs this one must keep it in sync)"))
	}
	return warnings, nil
}

func orUnknown(s string) string {
	if s == "" {
		return "version unknown"
	}
	return s
}

func checkWindowsBuild(in Input) (warnings, errs []error) {
	f := in.Facts
	want := in.Expect.WindowsBuilds[in.Host.Name]
	switch {
	case f.WindowsBuild == "":
		errs = append(errs, errors.New(`could not read the Windows build (HKLM:\SOFTWARE\Microsoft\Windows NT\CurrentVersion)`))
	case want != "" && lastDotPart(want) != f.WindowsBuild:
		errs = append(errs, fmt.Errorf("build %s (%s), the spec says %s: process-isolated containers need images of the host's build", f.WindowsBuild, f.WindowsProductName, want))
	}
	return nil, errs
}

// checkLanguageMode: Constrained Language Mode, which AppLocker and WDAC
// application control enforce, blocks .NET types other than a short list
// (about_Language_Modes): [IO.File], [Console]::In, [Environment] and
// [IO.Directory], which prepare.ps1 and every upload use.
// -ExecutionPolicy Bypass does not lift it.
func checkLanguageMode(in Input) (warnings, errs []error) {
	switch m := in.Facts.LanguageMode; m {
	case "FullLanguage":
	case "":
		warnings = append(warnings, errors.New("could not read PowerShell's language mode ($ExecutionContext.SessionState.LanguageMode)"))
	default:
		errs = append(errs, fmt.Errorf("PowerShell runs in %s mode for this account (AppLocker or WDAC application control): prepare.ps1 and hybridctl's uploads need FullLanguage ([IO.File], [Console]::In); allow the deployment account full language, or prepare the node by hand", m))
	}
	return warnings, errs
}

// checkRebootPending: with a reboot pending, DISM and
// Install-WindowsFeature refuse to change features (CBS_E_PENDING).
func checkRebootPending(in Input) (warnings, errs []error) {
	f := in.Facts
	if len(f.RebootPending) == 0 {
		return nil, nil
	}
	what := strings.Join(f.RebootPending, ", ")
	if f.KubeletConfigured {
		warnings = append(warnings, fmt.Errorf("a reboot is pending (%s): drain the node, reboot it, uncordon it", what))
	} else {
		warnings = append(warnings, fmt.Errorf("a reboot is pending (%s): prepare.ps1 stops before changing Windows features until it is done, and apply reboots the node", what))
	}
	return warnings, nil
}

// checkWindowsUpdate: the guide sets Windows Update to Manual in sconfig
// so that a node reboots only through drain and uncordon; prepare.ps1
// sets the same policy value (NoAutoUpdate = 1, "Configure Automatic
// Updates: Disabled").
func checkWindowsUpdate(in Input) (warnings, errs []error) {
	f := in.Facts
	switch f.AutoUpdate {
	case "off":
	case "":
		warnings = append(warnings, errors.New(`could not read the Windows Update policy (HKLM:\SOFTWARE\Policies\Microsoft\Windows\WindowsUpdate\AU)`))
	default:
		how := "policy not set: the server default downloads updates and schedules their restarts"
		if f.AUOptions != "" {
			how = "policy AUOptions " + f.AUOptions + ", NoAutoUpdate not 1"
		}
		errs = append(errs, fmt.Errorf("automatic updates are on (%s): a node must reboot only through drain and uncordon; prepare.ps1 sets NoAutoUpdate = 1 (sconfig's Manual); a domain policy that sets it back wins over it", how))
	}
	return warnings, errs
}

func checkSwap(in Input) (warnings, errs []error) {
	f := in.Facts
	switch {
	case !f.SwapKnown:
		warnings = append(warnings, errors.New("could not read /proc/swaps"))
	case len(f.SwapDevices) > 0:
		errs = append(errs, fmt.Errorf("swap is on (%s): the kubelet requires it off; swapoff -a and remove it from /etc/fstab", strings.Join(f.SwapDevices, ", ")))
	}
	return warnings, errs
}

func checkFactsReadable(in Input) (warnings, errs []error) {
	if in.Facts.ProductUUID == "" {
		warnings = append(warnings, errors.New("could not read the product_uuid (on Linux it needs root: sudo), so its uniqueness is not checked"))
	}
	if in.Facts.MachineID == "" {
		warnings = append(warnings, errors.New("could not read the machine id, so its uniqueness is not checked"))
	}
	return warnings, nil
}

func checkTimeSync(in Input) (warnings, errs []error) {
	f := in.Facts
	switch f.TimeSynced {
	case "yes":
	case "":
		warnings = append(warnings, errors.New("could not tell whether the clock is synchronized"))
	default:
		src := ""
		if f.TimeSource != "" {
			src = " (source: " + f.TimeSource + ")"
		}
		errs = append(errs, fmt.Errorf("the clock is not synchronized%s: kubelet certificates become \"not yet valid\" or \"expired\"; prepare.sh (chrony) and prepare.ps1 (w32tm) point it at the spec's NTP servers", src))
	}
	return warnings, errs
}

// checkClockSkew applies the one clock limit, hostfacts.MaxClockSkew:
// beyond it an error, beyond half of it a warning; a skew that could not be
// measured, or only within an uncertainty larger than the limit, is a
// warning that says so, never a pass.
func checkClockSkew(in Input) (warnings, errs []error) {
	c := in.Facts.Clock
	limit := hostfacts.MaxClockSkew
	v, certain := c.Judge(limit)
	skew, unc := c.Skew()
	off := fmt.Sprintf("the clock is %s off this machine's", skew.Round(time.Millisecond))
	if unc >= time.Millisecond {
		off += fmt.Sprintf(" (±%s)", unc.Round(time.Millisecond))
	}
	switch {
	case v == hostfacts.ClockUnknown && !c.Sampled:
		warnings = append(warnings, fmt.Errorf("could not measure the clock against this machine's: %s", c.Detail))
	case v == hostfacts.ClockUnknown:
		warnings = append(warnings, fmt.Errorf("could not measure the clock against this machine's: the sample's uncertainty (±%s) is larger than the %s limit", unc.Round(time.Millisecond), limit))
	case v == hostfacts.ClockBeyond:
		errs = append(errs, fmt.Errorf("%s, beyond the %s limit", off, limit))
	case certain > limit/2:
		warnings = append(warnings, fmt.Errorf("%s, more than half the %s limit", off, limit))
	}
	return warnings, errs
}

func checkAPIName(in Input) (warnings, errs []error) {
	f, x := in.Facts, in.Expect
	if x.APIName == "" {
		return nil, nil
	}
	switch {
	case len(f.Resolved) == 0:
		errs = append(errs, fmt.Errorf("%s does not resolve on the host; every node must resolve the API name (DNS record or hosts file; the prepare scripts set the spec's DNS servers)", x.APIName))
	case len(x.APIAddresses) > 0 && !slices.ContainsFunc(f.Resolved, func(a string) bool { return slices.Contains(x.APIAddresses, a) }):
		errs = append(errs, fmt.Errorf("%s resolves to %s, want %s", x.APIName, strings.Join(f.Resolved, ", "), strings.Join(x.APIAddresses, ", ")))
	}
	return nil, errs
}

// checkPortFree: a node that already belongs to the cluster (a re-run)
// has its kubelet, and on the control plane the API server and etcd,
// listening.
func checkPortFree(in Input) (warnings, errs []error) {
	if in.Expect.AlreadyInstalled || in.Facts.KubeletConfigured {
		return nil, nil
	}
	for _, p := range RequiredPorts(in.Host) {
		if in.Facts.Listening[p.Number] {
			errs = append(errs, fmt.Errorf("port %d/tcp (%s) is in use", p.Number, p.Purpose))
		}
	}
	return nil, errs
}

// unique is a check across nodes: no other node shares this one's value
// (machines cloned from one template share them, and then kubelets and
// Calico confuse the nodes). Unknown values are not compared.
func unique(what string, get func(*hostfacts.Host) string, fix string) func(Input) ([]error, []error) {
	return func(in Input) (warnings, errs []error) {
		v := get(in.Facts)
		if v == "" {
			return nil, nil
		}
		var hosts []string
		for _, f := range in.All {
			if get(f) == v {
				hosts = append(hosts, f.Host)
			}
		}
		if len(hosts) > 1 {
			errs = append(errs, fmt.Errorf("the %s %s is shared by %s: %s", what, v, strings.Join(hosts, ", "), fix))
		}
		return nil, errs
	}
}

func lastDotPart(s string) string {
	if i := strings.LastIndexByte(s, '.'); i >= 0 {
		return s[i+1:]
	}
	return s
}

// Apply turns findings into the phase outcome: errors not ignored (by
// check name) fail it; the rest are warnings.
func Apply(findings []Finding, ignore []string) (errs, warnings []Finding) {
	for _, f := range findings {
		if f.Severity == finding.Error && !slices.Contains(ignore, f.Check) && !slices.Contains(ignore, IgnoreAll) {
			errs = append(errs, f)
		} else {
			warnings = append(warnings, f)
		}
	}
	return errs, warnings
}

// DocTable is the Markdown table of Checks in docs/apply.md (a test keeps
// the two equal).
func DocTable() string {
	var b strings.Builder
	b.WriteString("| name | runs on | when | what | severity |\n|------|---------|------|------|----------|\n")
	for _, c := range Checks() {
		on := "every node"
		switch {
		case c.scope == ScopeCluster:
			on = "all nodes together"
		case c.os == engine.Linux:
			on = "Linux nodes"
		case c.os == engine.Windows:
			on = "Windows nodes"
		}
		when := "`preflight`"
		switch c.scope {
		case ScopeCluster:
			when = "`preflight-cluster`"
		case ScopePrepared:
			when = "`preflight` (warning only), `post-prepare`"
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s | %s |\n", c.name, on, when, c.Doc, c.Severity)
	}
	return b.String()
}

// checkContainerd compares the containerd the distribution would install
// with the least the kubelet requires.
func checkContainerd(in Input) (warnings, errs []error) {
	x, f := in.Expect, in.Facts
	if x.ContainerdMin == "" {
		return nil, nil
	}
	fix := "set spec.packages.source: bundle (apply --bundle) to install containerd " + orUnknown(x.ContainerdSpec) +
		" from its release tarball, or use a distribution release whose containerd is " + x.ContainerdMin + " or later"
	switch f.ContainerdCandidate {
	case "":
		return []error{fmt.Errorf("the distribution's containerd version could not be read (apt-cache policy containerd); %s requires containerd %s or later",
			x.ContainerdFor, x.ContainerdMin)}, nil
	case "(none)":
		return nil, []error{fmt.Errorf("the distribution has no containerd package (apt-cache policy containerd: no candidate): prepare.sh cannot install it; %s", fix)}
	}
	have := DebianUpstreamVersion(f.ContainerdCandidate)
	if VersionAtLeast(have, x.ContainerdMin) {
		return nil, nil
	}
	return nil, []error{fmt.Errorf("the distribution's containerd is %s (apt-cache policy containerd: %s), and %s requires containerd %s or later: %s",
		have, f.ContainerdCandidate, x.ContainerdFor, x.ContainerdMin, fix)}
}

// DebianUpstreamVersion returns the upstream part of a Debian package
// version: "1:2.0.2~ds1-1ubuntu1" gives "2.0.2".
func DebianUpstreamVersion(v string) string {
	if _, after, ok := strings.Cut(v, ":"); ok {
		v = after
	}
	if i := strings.IndexAny(v, "-~+"); i >= 0 {
		v = v[:i]
	}
	return v
}

// VersionAtLeast reports whether dotted version v is at least min,
// comparing numeric parts in order ("2.0.2" >= "2.0", "1.7.24" < "2.0");
// a part that is not a number makes v fail.
func VersionAtLeast(v, min string) bool {
	vs, ms := strings.Split(v, "."), strings.Split(min, ".")
	for i, m := range ms {
		want, err := strconv.Atoi(m)
		if err != nil {
			return false
		}
		if i >= len(vs) {
			return want == 0
		}
		got, err := strconv.Atoi(vs[i])
		if err != nil {
			return false
		}
		if got != want {
			return got > want
		}
	}
	return true
}
