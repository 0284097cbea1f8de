package render

import (
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/hybridctl/hybridctl/internal/plan"
)

// The rules the rendered Windows procedure keeps on a node's first run,
// pinned on the rendered text. The PowerShell parser test
// (internal/pwshtest) checks the same scripts for syntax and for the rules
// a query can express.

func labText(t *testing.T, path string) string {
	t.Helper()
	f, ok := mustRender(t, labPlan(t), Options{})[path]
	if !ok {
		t.Fatalf("no %s in the render", path)
	}
	return strings.ReplaceAll(string(f.Data), "\r\n", "\n")
}

// index fails the test when want is missing, and returns its offset.
func index(t *testing.T, name, text, want string) int {
	t.Helper()
	i := strings.Index(text, want)
	if i < 0 {
		t.Fatalf("%s lacks %q", name, want)
	}
	return i
}

// Every program the upstream scripts call by name is shadowed by
// a function that runs it with 'Continue' and decides by its exit code.
func TestPrepareNativeStderrHarmless(t *testing.T) {
	ps := labText(t, "nodes/k8s-lab-win-1/prepare.ps1")
	fn := index(t, "prepare.ps1", ps, "function Invoke-Native {")
	body := ps[fn : fn+index(t, "Invoke-Native", ps[fn:], "\n}\n")]
	for _, want := range []string{"$ErrorActionPreference = 'Continue'", "2>&1", "$LASTEXITCODE", "throw"} {
		index(t, "Invoke-Native", body, want)
	}
	upstream := index(t, "prepare.ps1", ps, "& $script -ContainerDVersion")
	for _, prog := range []string{"tar.exe", "tar", "DISM", "nssm"} {
		if d := index(t, "prepare.ps1", ps, "function "+prog+" { Invoke-Native "); d > upstream {
			t.Errorf("%s is shadowed only after the upstream scripts run", prog)
		}
	}
	// curl.exe's shadow also checks what it downloaded (TestUpstreamDownloadsVerified).
	if d := index(t, "prepare.ps1", ps, "function curl.exe {\n    Invoke-Native 'curl.exe' $args\n"); d > upstream {
		t.Error("curl.exe is shadowed only after the upstream scripts run")
	}
	// containerd.exe's shadow adds the log file to the service registration.
	shadow := ps[index(t, "prepare.ps1", ps, "function containerd.exe {"):]
	shadow = shadow[:index(t, "containerd.exe", shadow, "\n}\n")]
	if index(t, "prepare.ps1", ps, "function containerd.exe {") > upstream {
		t.Error("containerd.exe is shadowed only after the upstream scripts run")
	}
	for _, want := range []string{"$a -contains '--register-service' -and $a -notcontains '--log-file'", "$a += @('--log-file', $ContainerdLog)", "Invoke-Native 'containerd.exe' $a"} {
		index(t, "containerd.exe", shadow, want)
	}
	// Outside Invoke-Native nothing calls a program bare.
	bare := regexp.MustCompile(`(?m)^\s*(& )?(w32tm|curl\.exe|icacls(\.exe)?|sc\.exe|nssm|tar(\.exe)?)\b`)
	if m := bare.FindString(ps); m != "" {
		t.Errorf("a native program called outside Invoke-Native: %q", m)
	}
}

// Each step is judged done by everything it produces, and what
// blocks a re-run is cleaned up before the upstream script runs again.
func TestPrepareStepsRerunnable(t *testing.T) {
	ps := labText(t, "nodes/k8s-lab-win-1/prepare.ps1")
	done := ps[index(t, "prepare.ps1", ps, "function Test-ContainerdDone"):index(t, "prepare.ps1", ps, "function Install-Runtime")]
	for _, want := range []string{"$ContainerdExe", "$CrictlExe", "$CrictlVersion", "$ContainerdConfig", "$CrictlConfig", `C:\opt\cni\bin`, `C:\etc\cni\net.d`} {
		index(t, "Test-ContainerdDone", done, want)
	}
	install := ps[index(t, "prepare.ps1", ps, "function Install-Runtime"):]
	if index(t, "Install-Runtime", install, "--unregister-service") > index(t, "Install-Runtime", install, "& $script") {
		t.Error("the containerd service must be unregistered before Install-Containerd.ps1 registers it again")
	}
	kdone := ps[index(t, "prepare.ps1", ps, "function Test-KubeletDone"):index(t, "prepare.ps1", ps, "function Install-Kubelet")]
	for _, want := range []string{"$KubeadmExe", "$KubeletExe", "StartKubelet.ps1", "$PkiLink", "SymbolicLink", "AppRotateBytes", "DependOnService", "containerd"} {
		index(t, "Test-KubeletDone", kdone, want)
	}
	kinst := ps[index(t, "prepare.ps1", ps, "function Install-Kubelet"):]
	run := index(t, "Install-Kubelet", kinst, "& $script")
	for _, want := range []string{`C:\etc\kubernetes\kubelet.conf`, "Remove-Link $PkiLink", "'delete', 'kubelet'", "Remove-NetFirewallRule"} {
		if index(t, "Install-Kubelet", kinst, want) > run {
			t.Errorf("%q must come before PrepareNode.ps1 runs", want)
		}
	}
	// The link is removed without following it into C:\etc\kubernetes\pki.
	index(t, "prepare.ps1", ps, "[System.IO.Directory]::Delete($Path, $false)")
	// The firewall rule is its own step, created when missing, every run.
	fw := ps[index(t, "prepare.ps1", ps, "Step \"firewall: kubelet"):]
	if index(t, "firewall step", fw, "New-NetFirewallRule -Name 'kubelet'") > index(t, "firewall step", fw, "Set-NetFirewallRule -Name 'kubelet'") {
		t.Error("the kubelet rule must be created before it is narrowed")
	}
}

// No property is read from a lookup that may find nothing.
func TestPrepareStrictModeSafe(t *testing.T) {
	ps := labText(t, "nodes/k8s-lab-win-1/prepare.ps1")
	index(t, "prepare.ps1", ps, "Set-StrictMode -Version 3.0")
	unsafe := regexp.MustCompile(`\((Resolve-DnsName|Get-Service|Get-NetIPAddress|Get-NetRoute|Get-NetFirewallRule|Get-ItemProperty)[^)]*-ErrorAction SilentlyContinue[^)]*\)\.`)
	if m := unsafe.FindString(ps); m != "" {
		t.Errorf("property read on a lookup that may return nothing: %s", m)
	}
	index(t, "prepare.ps1", ps, "'does not resolve yet'")
}

// The w32time service starts automatically before it is configured; the
// sandbox image is the Linux nodes'.
func TestPrepareTimeAndSandbox(t *testing.T) {
	p := labPlan(t)
	ps := labText(t, "nodes/k8s-lab-win-1/prepare.ps1")
	if index(t, "prepare.ps1", ps, "Set-Service -Name w32time -StartupType Automatic") > index(t, "prepare.ps1", ps, "'/config'") {
		t.Error("w32time must be set to start automatically before w32tm /config")
	}
	index(t, "prepare.ps1", ps, "$SandboxImage = '"+p.SandboxImage+"'")
	if index(t, "prepare.ps1", ps, "Set-SandboxImage\n") < index(t, "prepare.ps1", ps, "if (-not (Test-ContainerdDone)) { Assert-NoRebootPending; Install-Runtime }") {
		t.Error("the sandbox image is set after containerd is installed")
	}
	sh := labText(t, "nodes/k8s-lab-node-1/prepare.sh")
	index(t, "prepare.sh", sh, "SANDBOX_IMAGE="+ShQuote(p.SandboxImage))
	if update, install := index(t, "prepare.sh", sh, "apt-get update"), index(t, "prepare.sh", sh, "apt-get install"); update > install {
		t.Error("prepare.sh runs apt-get install before apt-get update")
	}
}

// The runbook's Windows commands call programs by full path
// and create join.yaml with a restricted ACL before copying the token in.
func TestRunbookWindowsCommands(t *testing.T) {
	rb := labText(t, "runbook.md")
	for _, l := range strings.Split(rb, "\n") {
		if strings.HasPrefix(l, "PS> kubeadm") || strings.HasPrefix(l, "PS> crictl") || strings.Contains(l, "`crictl ") {
			t.Errorf("bare program name (the window's PATH does not have it): %s", l)
		}
	}
	index(t, "runbook", rb, `PS> & C:\k\kubeadm.exe join --config C:\k\join.yaml`)
	index(t, "runbook", rb, `& "$env:ProgramFiles\containerd\crictl.exe" version`)
	acl := index(t, "runbook", rb, `icacls.exe C:\k\join.yaml /inheritance:r /grant:r '*S-1-5-32-544:F' '*S-1-5-18:F'`)
	if copyJoin := index(t, "runbook", rb, "nodes/k8s-lab-win-1/join.yaml"); acl > copyJoin {
		t.Error("join.yaml must be created with its ACL before the token is copied in")
	}
}

// Windows Update is set to Manual as the guide does, before any step that
// can reboot; a pending reboot stops the script (with the reboot marker
// apply acts on) before each feature change, and nowhere else; w32tm's
// resync does not wait and its answer is not fatal.
func TestPrepareWindowsUpdateAndPendingReboot(t *testing.T) {
	for name, p := range map[string]*plan.Plan{"upstream": labPlan(t), "bundle": labOfflinePlan(t)} {
		ps := strings.ReplaceAll(psText(t, mustRender(t, p, Options{}), "nodes/k8s-lab-win-1/prepare.ps1"), "\r\n", "\n")
		policy := index(t, name, ps, `$AuKey = 'HKLM:\SOFTWARE\Policies\Microsoft\Windows\WindowsUpdate\AU'`)
		set := index(t, name, ps, "Set-ItemProperty -LiteralPath $AuKey -Name 'NoAutoUpdate' -Value 1 -Type DWord")
		if policy > set || set > index(t, name, ps, "Rename-Computer") {
			t.Errorf("%s: the update policy is set before the first step that reboots", name)
		}
		fn := ps[index(t, name, ps, "function Assert-NoRebootPending {"):]
		fn = fn[:index(t, name, fn, "\n}\n")]
		for _, want := range []string{
			`'HKLM:\SOFTWARE\Microsoft\Windows\CurrentVersion\Component Based Servicing\RebootPending'`,
			`'HKLM:\SOFTWARE\Microsoft\Windows\CurrentVersion\WindowsUpdate\Auto Update\RebootRequired'`,
			"Test-Path -LiteralPath", "Stop-ForReboot",
		} {
			index(t, name+" Assert-NoRebootPending", fn, want)
		}
		// Called right before each feature change, only when one is due.
		calls := regexp.MustCompile(`(?m)^.*\bAssert-NoRebootPending\b.*$`).FindAllString(ps, -1)
		calls = slices.DeleteFunc(calls, func(l string) bool { return strings.HasPrefix(l, "#") })
		want := []string{
			"function Assert-NoRebootPending {",
			"    Assert-NoRebootPending",
			"if (-not (Test-ContainerdDone)) { Assert-NoRebootPending; Install-Runtime }",
		}
		if !slices.Equal(calls, want) {
			t.Errorf("%s: Assert-NoRebootPending lines %q, want %q", name, calls, want)
		}
		feature := ps[index(t, name, ps, "Step 'Containers feature'"):]
		if index(t, name, feature, "Assert-NoRebootPending") > index(t, name, feature, "Install-WindowsFeature") {
			t.Errorf("%s: the pending reboot is checked after Install-WindowsFeature", name)
		}
		index(t, name, ps, `try { Invoke-Native 'w32tm.exe' @('/resync', '/nowait') | Out-Null } catch {`)
		if strings.Contains(ps, "@('/resync')") {
			t.Errorf("%s: a resync that waits", name)
		}
	}
}

// The root-level directories lose what they inherit from C: (Authenticated
// Users: Modify) before the script puts anything in them, in both modes;
// only the pods' volumes stay open to Users (containers running as
// ContainerUser).
func TestPrepareDirectoryACLs(t *testing.T) {
	for name, p := range map[string]*plan.Plan{"upstream": labPlan(t), "bundle": labOfflinePlan(t)} {
		ps := strings.ReplaceAll(psText(t, mustRender(t, p, Options{}), "nodes/k8s-lab-win-1/prepare.ps1"), "\r\n", "\n")
		loop := index(t, name, ps, `foreach ($dir in @('C:\k', 'C:\etc', 'C:\opt', 'C:\var')) {`)
		acl := index(t, name, ps, `Invoke-Native 'icacls.exe' @($dir, '/inheritance:r', '/grant:r', '*S-1-5-32-544:(OI)(CI)F', '*S-1-5-18:(OI)(CI)F')`)
		pods := index(t, name, ps, `Invoke-Native 'icacls.exe' @('C:\var\lib\kubelet\pods', '/grant:r', '*S-1-5-32-545:(OI)(CI)M')`)
		if !(loop < acl && acl < pods) {
			t.Errorf("%s: the directories are restricted, then the pods' directory opened", name)
		}
		// Before the first thing the script writes or reads there.
		for _, later := range []string{"New-Item -ItemType Directory -Force -Path $WorkDir", "Step \"address", "\nStep 'Containers feature'", "\nTest-Bundle\n"} {
			if i := strings.Index(ps, later); i >= 0 && i < pods {
				t.Errorf("%s: %q comes before the directories are restricted", name, later)
			}
		}
		// Users get nothing anywhere else; nothing is granted to Everyone
		// or Authenticated Users.
		if n := strings.Count(ps, "S-1-5-32-545"); n != 1 {
			t.Errorf("%s: BUILTIN\\Users named %d times", name, n)
		}
		for _, bad := range []string{"S-1-1-0", "S-1-5-11", "Everyone", "Authenticated Users"} {
			if strings.Contains(ps, "'*"+bad) || strings.Contains(ps, "'"+bad+":") {
				t.Errorf("%s: grants %s", name, bad)
			}
		}
	}
}

// containerd logs to a file (registered with --log-file, and a service
// registered without it is installed again); Defender's exclusions cover
// containerd's data, programs and processes, and a failure to set them is
// reported, not fatal.
func TestPrepareContainerdLogAndDefender(t *testing.T) {
	for name, p := range map[string]*plan.Plan{"upstream": labPlan(t), "bundle": labOfflinePlan(t)} {
		ps := strings.ReplaceAll(psText(t, mustRender(t, p, Options{}), "nodes/k8s-lab-win-1/prepare.ps1"), "\r\n", "\n")
		index(t, name, ps, `$ContainerdLog = 'C:\var\log\containerd\containerd.log'`)
		done := ps[index(t, name, ps, "function Test-ContainerdDone"):index(t, name, ps, "function Install-Runtime")]
		index(t, name+" Test-ContainerdDone", done, `.Contains('--log-file')`)
		step := ps[index(t, name, ps, "Step 'Microsoft Defender"):]
		step = step[:index(t, name, step, "\nStep ")]
		for _, want := range []string{
			"Get-Command -Name Add-MpPreference -ErrorAction SilentlyContinue",
			`-ExclusionPath @('C:\ProgramData\containerd', $ContainerdDir)`,
			`-ExclusionProcess @($ContainerdExe, (Join-Path $ContainerdDir 'containerd-shim-runhcs-v1.exe'))`,
			"} catch {",
		} {
			index(t, name+" Defender step", step, want)
		}
		if index(t, name, ps, "Step 'Microsoft Defender") < index(t, name, ps, "if (-not (Test-ContainerdDone))") {
			t.Errorf("%s: the exclusions name containerd's directory before it is installed", name)
		}
	}
	bundle := strings.ReplaceAll(psText(t, mustRender(t, labOfflinePlan(t), Options{}), "nodes/k8s-lab-win-1/prepare.ps1"), "\r\n", "\n")
	index(t, "bundle", bundle, "Invoke-Native $ContainerdExe @('--register-service', '--log-file', $ContainerdLog)")
}

// A second run stops at once while one runs; a deleted service is waited
// for before it is registered again; the containerd pipe is waited for
// before the kubelet step in both modes; the upstream scripts run without
// this script's strict mode.
func TestPrepareConcurrencyAndUpstreamIsolation(t *testing.T) {
	for name, p := range map[string]*plan.Plan{"upstream": labPlan(t), "bundle": labOfflinePlan(t)} {
		ps := strings.ReplaceAll(psText(t, mustRender(t, p, Options{}), "nodes/k8s-lab-win-1/prepare.ps1"), "\r\n", "\n")
		lock := index(t, name, ps, `$RunLock = New-Object System.Threading.Mutex($false, 'Global\hybridctl-prepare')`)
		index(t, name, ps, "try { $locked = $RunLock.WaitOne(0) } catch { $locked = $true }")
		index(t, name, ps, "if (-not $locked) {")
		if lock > index(t, name, ps, "\nStep ") {
			t.Errorf("%s: a step runs before the run lock is taken", name)
		}
		for _, svc := range []string{"kubelet", "containerd"} {
			if !strings.Contains(ps, "Wait-ServiceGone '"+svc+"'") {
				t.Errorf("%s: the %s service is registered again without waiting for its deletion", name, svc)
			}
		}
		kinst := ps[index(t, name, ps, "function Install-Kubelet"):]
		pipe := index(t, name+" Install-Kubelet", kinst, "while (-not (Test-Path '//./pipe/containerd-containerd'))")
		for _, after := range []string{"& $script", "Invoke-Native $NssmExe @('install'"} {
			if i := strings.Index(kinst, after); i >= 0 && i < pipe {
				t.Errorf("%s: %q before the containerd pipe is there", name, after)
			}
		}
		if strings.Count(ps, "//./pipe/containerd-containerd'))") != 1 {
			t.Errorf("%s: the pipe wait is not in one place", name)
		}
	}
	up := strings.ReplaceAll(psText(t, mustRender(t, labPlan(t), Options{}), "nodes/k8s-lab-win-1/prepare.ps1"), "\r\n", "\n")
	calls := regexp.MustCompile(`(?m)^.*& \$script\b.*$`).FindAllString(up, -1)
	if len(calls) != 2 {
		t.Fatalf("upstream script calls: %q", calls)
	}
	for _, c := range calls {
		if !strings.Contains(c, "& { Set-StrictMode -Off; & $script ") {
			t.Errorf("an upstream script runs under this script's strict mode: %s", c)
		}
	}
}

// TestUpstreamDownloadsVerified: in upstream mode every file the pinned
// sig-windows-tools scripts download is checked before they use it. The
// URLs below are spelt as Install-Containerd.ps1 and PrepareNode.ps1 at
// SigWindowsToolsCommit spell them (their DownloadFile calls), for the lab's
// versions; each must be in prepare.ps1's $Downloads with the checksum
// file its release publishes (or nssm's pinned sha256), the curl.exe
// shadow must check right after the download (before the scripts' tar),
// and a mismatch must remove the file and name it, the URL, the expected
// and the actual sum. (The bundle-mode script downloads nothing:
// TestWindowsBundleNoDownload.)
func TestUpstreamDownloadsVerified(t *testing.T) {
	ps := labText(t, "nodes/k8s-lab-win-1/prepare.ps1")
	p := labPlan(t)
	v := p.Versions
	want := map[string]string{
		"https://github.com/containerd/containerd/releases/download/v" + v.Containerd + "/containerd-" + v.Containerd + "-windows-amd64.tar.gz": "Sums = 'https://github.com/containerd/containerd/releases/download/v" + v.Containerd + "/containerd-" + v.Containerd + "-windows-amd64.tar.gz.sha256sum'",
		"https://github.com/kubernetes-sigs/cri-tools/releases/download/v" + v.Crictl + "/crictl-v" + v.Crictl + "-windows-amd64.tar.gz":        "Sums = 'https://github.com/kubernetes-sigs/cri-tools/releases/download/v" + v.Crictl + "/crictl-v" + v.Crictl + "-windows-amd64.tar.gz.sha256'",
		"https://dl.k8s.io/" + v.Kubernetes + "/bin/windows/amd64/kubelet.exe":                                                                  "Sums = 'https://dl.k8s.io/" + v.Kubernetes + "/bin/windows/amd64/kubelet.exe.sha256'",
		"https://dl.k8s.io/" + v.Kubernetes + "/bin/windows/amd64/kubeadm.exe":                                                                  "Sums = 'https://dl.k8s.io/" + v.Kubernetes + "/bin/windows/amd64/kubeadm.exe.sha256'",
		"https://k8stestinfrabinaries.blob.core.windows.net/nssm-mirror/nssm-2.24.zip":                                                          "Sha256 = '727d1e42275c605e0f04aba98095c38a8e1e46def453cdffce42869428aa6743'",
	}
	if !strings.HasPrefix(v.Kubernetes, "v") {
		t.Fatalf("the lab's Kubernetes version %q: PrepareNode.ps1 adds a v", v.Kubernetes)
	}
	table := ps[index(t, "prepare.ps1", ps, "$Downloads = @{\n"):]
	table = table[:index(t, "$Downloads", table, "\n}\n")]
	if n := strings.Count(table, "\n    '"); n != len(want) {
		t.Errorf("$Downloads has %d entries, want %d:\n%s", n, len(want), table)
	}
	for url, sum := range want {
		index(t, "$Downloads", table, "'"+url+"' = @{ "+sum+" }")
	}

	shadow := ps[index(t, "prepare.ps1", ps, "function curl.exe {"):]
	shadow = shadow[:index(t, "curl.exe", shadow, "\n}\n")]
	if index(t, "curl.exe", shadow, "Invoke-Native 'curl.exe' $args") > index(t, "curl.exe", shadow, "Confirm-Download @($args)") {
		t.Error("curl.exe checks before it downloads")
	}
	confirm := ps[index(t, "prepare.ps1", ps, "function Confirm-Download"):]
	confirm = confirm[:index(t, "Confirm-Download", confirm, "\n}\n")]
	for _, want := range []string{
		"@('-o', '-Lo', '--output') -contains $a", // PrepareNode.ps1's and Install-Containerd.ps1's -Lo
		"if (-not $Downloads.ContainsKey($url))",  // an unknown download is refused
		"Invoke-Native 'curl.exe' @('--fail', '--silent', '--show-error', '--location', $from)",
		"(Get-FileHash -LiteralPath $path -Algorithm SHA256).Hash.ToLowerInvariant()",
		"if ($want -notmatch '^[0-9a-f]{64}$' -or $got -ne $want) {\n        Remove-Item -LiteralPath $path -Force\n        throw \"$path (from $url) has sha256 $got, expected $want ($from)",
	} {
		index(t, "Confirm-Download", confirm, want)
	}
	// Confirm-Download is defined before the upstream scripts run.
	if index(t, "prepare.ps1", ps, "function Confirm-Download") > index(t, "prepare.ps1", ps, "& $script -ContainerDVersion") {
		t.Error("Confirm-Download is defined after the upstream scripts run")
	}

}
