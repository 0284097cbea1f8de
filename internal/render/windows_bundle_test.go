package render

import (
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/hybridctl/hybridctl/internal/bundle"
	"github.com/hybridctl/hybridctl/internal/plan"
	"github.com/hybridctl/hybridctl/internal/pwshtest"
)

// labOfflinePlan is the guide's lab (Linux and Windows workers, the two
// add-ons) with a private registry and packages from a bundle.
func labOfflinePlan(t testing.TB) *plan.Plan {
	t.Helper()
	c := labCluster(t)
	c.Spec.Images.Registry = "registry.example.internal:5000"
	c.Spec.Packages.Source = "bundle"
	return planOf(t, c)
}

const winPrepare = "nodes/k8s-lab-win-1/prepare.ps1"

// psText is a rendered .ps1 without its BOM and CRLF line ends.
func psText(t *testing.T, files map[string]File, path string) string {
	t.Helper()
	f, ok := files[path]
	if !ok {
		t.Fatalf("no %s in the render", path)
	}
	return strings.ReplaceAll(strings.TrimPrefix(string(f.Data), "\uFEFF"), "\r\n", "\n")
}

// psDownload matches a PowerShell line that fetches something from the
// network: the cmdlets and .NET classes that download, curl and wget (also
// as PowerShell's aliases), BITS, and the upstream-mode helpers.
var psDownload = regexp.MustCompile(`(?i)\b(Invoke-WebRequest|Invoke-RestMethod|iwr|irm|curl(\.exe)?|wget(\.exe)?|Start-BitsTransfer|bitsadmin(\.exe)?|certutil(\.exe)?|WebClient|HttpClient|WebRequest|DownloadFile|DownloadString|DownloadData|Get-Script|Install-Module|Save-Module|Install-Package)\b`)

// psURL matches a URL a script could fetch.
var psURL = regexp.MustCompile(`(?i)\b(https?|ftp)://[^\s'"]+`)

// downloadLines returns the lines of a script that download or name a URL
// other than the private registry's (hosts.toml's server).
func downloadLines(text, registryURL string) []string {
	var out []string
	for i, line := range strings.Split(text, "\n") {
		rest := strings.ReplaceAll(line, registryURL, "")
		if psDownload.MatchString(rest) || psURL.MatchString(rest) {
			out = append(out, strings.TrimSpace(line)+" (line "+strconv.Itoa(i+1)+")")
		}
	}
	return out
}

// TestWindowsBundleNoDownload: in bundle mode prepare.ps1 downloads
// nothing and names no URL but the private registry's; the grep finds the
// downloads of upstream mode (so it can fail), and the near misses the
// script must never contain.
func TestWindowsBundleNoDownload(t *testing.T) {
	ps := psText(t, mustRender(t, labOfflinePlan(t), Options{}), winPrepare)
	if got := downloadLines(ps, "https://registry.example.internal:5000"); len(got) > 0 {
		t.Errorf("bundle-mode prepare.ps1 downloads or names URLs:\n%s", strings.Join(got, "\n"))
	}
	up := psText(t, mustRender(t, labPlan(t), Options{}), winPrepare)
	if got := downloadLines(up, "\x00"); len(got) < 4 {
		t.Errorf("upstream prepare.ps1: the grep finds %d download lines, want its curl.exe, Get-Script and URLs:\n%s", len(got), strings.Join(got, "\n"))
	}
	for _, bad := range []string{
		"Invoke-WebRequest -Uri $u -OutFile $f",
		"iwr https://example.com/x",
		"curl.exe -LO $url",
		"(New-Object Net.WebClient).DownloadFile($u, $f)",
		"Start-BitsTransfer -Source $u",
		"$x = 'http://10.0.0.1/kubelet.exe'",
		"Get-Script $u $h $p",
	} {
		if got := downloadLines(bad, "https://registry.example.internal:5000"); len(got) != 1 {
			t.Errorf("the grep misses %q", bad)
		}
	}
	for _, fine := range []string{
		"# nothing is downloaded",
		"server = 'https://registry.example.internal:5000/v2/mirror'",
		"runtime-endpoint: npipe://./pipe/containerd-containerd",
		"$Curly = 1",
	} {
		if got := downloadLines(fine, "https://registry.example.internal:5000"); len(got) != 0 {
			t.Errorf("the grep flags %q", fine)
		}
	}
}

// TestWindowsBundlePrepare: bundle-mode prepare.ps1 checks each of the
// node's bundle files against SHA256SUMS before anything else, then does
// the sig-windows-tools scripts' steps from those files; upstream mode keeps
// the pinned scripts.
func TestWindowsBundlePrepare(t *testing.T) {
	p := labOfflinePlan(t)
	ps := psText(t, mustRender(t, p, Options{}), winPrepare)
	b, err := WindowsBundleOf(p)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"$BundleDir = 'C:\\k\\bundle'",
		"$BundleSums = Join-Path $BundleDir 'SHA256SUMS'",
		"$ContainerdTgz = 'windows-amd64/containerd-2.2.2-windows-amd64.tar.gz'",
		"$CrictlTgz = 'windows-amd64/crictl-v1.37.0-windows-amd64.tar.gz'",
		"$KubeletFile = 'windows-amd64/kubelet.exe'",
		"$KubeadmFile = 'windows-amd64/kubeadm.exe'",
		"$KubectlFile = 'windows-amd64/kubectl.exe'",
		"$NssmZip = 'windows-amd64/nssm-2.24.zip'",
		"$NssmZipEntry = 'nssm-2.24/win64/nssm.exe'",
		// The check: every file listed, present, of its sha256.
		"foreach ($rel in @($ContainerdTgz, $CrictlTgz, $KubeletFile, $KubeadmFile, $KubectlFile, $NssmZip)) {",
		"if ($line -cmatch '^([0-9a-f]{64})  (.+)$')",
		"(Get-FileHash -LiteralPath $path -Algorithm SHA256).Hash.ToLowerInvariant()",
		"if ($got -cne $want[$rel])",
		// Install-Containerd.ps1's steps.
		"'/FeatureName:Microsoft-Hyper-V', '/All', '/NoRestart') -Ok 0, 3010",
		"'/Disable-Feature', '/FeatureName:Microsoft-Hyper-V-Online', '/NoRestart') -Ok 0, 3010",
		"Invoke-Native 'tar.exe' @('-x', '-f', (Get-BundlePath $ContainerdTgz), '--strip-components', '1', '-C', $ContainerdDir)",
		"Invoke-Native 'tar.exe' @('-x', '-f', (Get-BundlePath $CrictlTgz), '-C', $ContainerdDir)",
		"Add-MachinePath $ContainerdDir",
		"$config = Set-CniDirs @(Invoke-Native $ContainerdExe @('config', 'default'))",
		`if ($key -eq 'bin_dirs') { $value = "['c:/opt/cni/bin']" } elseif ($key -eq 'bin_dir') { $value = "'c:/opt/cni/bin'" }`,
		`$value = "'c:/etc/cni/net.d'"`,
		"Invoke-Native $ContainerdExe @('--register-service', '--log-file', $ContainerdLog)",
		"runtime-endpoint: npipe://./pipe/containerd-containerd`nimage-endpoint: npipe://./pipe/containerd-containerd`n",
		// PrepareNode.ps1's steps.
		// PrepareNode.ps1 requires containerd's pipe; it may take a moment
		// after the restarts above.
		"while (-not (Test-Path '//./pipe/containerd-containerd')) {",
		"Copy-Item -LiteralPath (Get-BundlePath $KubeletFile) -Destination $KubeletExe -Force",
		"Copy-Item -LiteralPath (Get-BundlePath $KubeadmFile) -Destination $KubeadmExe -Force",
		"Add-MachinePath 'C:\\k'",
		"'C:\\var\\log\\kubelet', 'C:\\var\\lib\\kubelet\\etc\\kubernetes', 'C:\\etc\\kubernetes\\pki', 'C:\\etc\\kubernetes\\manifests'",
		"New-Item -ItemType SymbolicLink -Path $PkiLink -Value 'C:\\etc\\kubernetes\\pki'",
		"Set-FileText $StartKubelet '# C:\\k\\StartKubelet.ps1",
		"Invoke-Native 'tar.exe' @('-x', '-f', (Get-BundlePath $NssmZip), '-C', $NssmDir, '--strip-components', '2', $NssmZipEntry)",
		"Add-MachinePath $NssmDir",
		"Invoke-Native $NssmExe @('install', 'kubelet', $powershell)",
		`Invoke-Native $NssmExe @('set', 'kubelet', 'AppParameters', "-ExecutionPolicy Bypass -NoProfile -File $StartKubelet")`,
		"Invoke-Native $NssmExe @('set', 'kubelet', 'AppStdout', 'C:\\var\\log\\kubelet\\kubelet.out.log')",
		"Invoke-Native $NssmExe @('set', 'kubelet', 'AppStderr', 'C:\\var\\log\\kubelet\\kubelet.err.log')",
		"Invoke-Native $NssmExe @('set', 'kubelet', 'AppRotateFiles', '1')",
		"Invoke-Native $NssmExe @('set', 'kubelet', 'AppRotateOnline', '1')",
		"Invoke-Native $NssmExe @('set', 'kubelet', 'AppRotateSeconds', '86400')",
		"Invoke-Native $NssmExe @('set', 'kubelet', 'AppRotateBytes', '10485760')",
		"Invoke-Native $NssmExe @('set', 'kubelet', 'DependOnService', 'containerd')",
		"if (-not (Test-Path -LiteralPath $NssmExe)) { return $false }",
		"Copy-Changed $KubectlFile $KubectlExe",
		// Shared with upstream mode.
		"Set-SandboxImage",
		"New-NetFirewallRule -Name 'kubelet'",
		"ready for kubeadm join",
	}
	for _, w := range want {
		if !strings.Contains(ps, w) {
			t.Errorf("bundle-mode prepare.ps1 lacks %q", w)
		}
	}
	for _, path := range b.Paths() {
		if !strings.Contains(ps, "'"+path+"'") {
			t.Errorf("prepare.ps1 does not install %s", path)
		}
	}
	// Every native program runs through Invoke-Native (its stderr would
	// be fatal under 'Stop'); the parser's native-under-stop rule does not
	// see calls in functions that follow Invoke-Native's own 'Continue'.
	if m := regexp.MustCompile(`(?mi)^[	 ]*(&[	 ]*)?(tar|dism|nssm|sc|containerd|crictl|kubeadm|kubelet|w32tm|netsh|reg|icacls)(\.exe)?[	 ]`).FindString(ps); m != "" {
		t.Errorf("bundle-mode prepare.ps1 calls %q by name, not through Invoke-Native", m)
	}
	// The bundle is checked before the first step that changes the node,
	// and the Hyper-V features before containerd is touched.
	order := []string{"\nTest-Bundle\n", "\nStep \"address", "\nStep 'Containers feature'", "if (-not (Test-ContainerdDone)) { Assert-NoRebootPending; Install-Runtime }", "if (-not (Test-KubeletDone)) { Install-Kubelet }", "Copy-Changed $KubectlFile"}
	last := -1
	for _, o := range order {
		i := strings.Index(ps, o)
		if i < 0 || i < last {
			t.Errorf("%q is missing or out of order", o)
		}
		last = i
	}
	install := ps[strings.Index(ps, "function Install-Runtime"):]
	if h, s := strings.Index(install, "Set-HyperVFeatures"), strings.Index(install, "Stop-Service containerd"); h < 0 || h > s {
		t.Error("Install-Runtime touches containerd before the Hyper-V features")
	}
	for _, bad := range []string{"-ContainerDVersion", "& $script", "$InstallContainerdUrl", "$PrepareNodeUrl", "function curl.exe", "raw.githubusercontent.com", "dl.k8s.io", "k8stestinfrabinaries"} {
		if strings.Contains(ps, bad) {
			t.Errorf("bundle-mode prepare.ps1 contains %q", bad)
		}
	}
	up := psText(t, mustRender(t, labPlan(t), Options{}), winPrepare)
	for _, w := range []string{"Get-Script $InstallContainerdUrl $InstallContainerdSha256 $script", "Get-Script $PrepareNodeUrl $PrepareNodeSha256 $script", DefaultInstallContainerdURL, DefaultPrepareNodeURL} {
		if !strings.Contains(up, w) {
			t.Errorf("upstream prepare.ps1 lacks %q", w)
		}
	}
	for _, bad := range []string{"$BundleDir", "Test-Bundle", "Set-HyperVFeatures", "$NssmExe"} {
		if strings.Contains(up, bad) {
			t.Errorf("upstream prepare.ps1 contains %q", bad)
		}
	}
}

// TestStartKubeletScript: the wrapper passes kubeadm-flags.env's flags and
// PrepareNode.ps1's permanent ones as arguments, never through
// Invoke-Expression, and exits with the kubelet's code.
func TestStartKubeletScript(t *testing.T) {
	s := StartKubeletScript("k8s-lab-win-1")
	for _, w := range []string{
		"$envFile = 'C:\\var\\lib\\kubelet\\kubeadm-flags.env'",
		"$_ -like 'KUBELET_KUBEADM_ARGS=*'",
		`"--cert-dir=$env:SystemDrive\var\lib\kubelet\pki",`,
		"'--config=/var/lib/kubelet/config.yaml',",
		"'--bootstrap-kubeconfig=/etc/kubernetes/bootstrap-kubelet.conf',",
		"'--kubeconfig=/etc/kubernetes/kubelet.conf',",
		"'--hostname-override=k8s-lab-win-1',",
		"'--enable-debugging-handlers',",
		"'--cgroups-per-qos=false',",
		"'--enforce-node-allocatable=',",
		"'--resolv-conf='\n)",
		"& 'C:\\k\\kubelet.exe' @flags\nexit $LASTEXITCODE\n",
	} {
		if !strings.Contains(s, w) {
			t.Errorf("StartKubelet.ps1 lacks %q", w)
		}
	}
	if strings.Contains(s, "Invoke-Expression\n") || regexp.MustCompile(`(?m)^[^#]*Invoke-Expression`).MatchString(s) {
		t.Error("StartKubelet.ps1 runs Invoke-Expression")
	}
	// A hostile name stays one quoted argument and one comment line.
	h := StartKubeletScript("x'; Remove-Item C:\\ -Recurse #\nevil")
	if !strings.Contains(h, "'--hostname-override=x''; Remove-Item C:\\ -Recurse #\nevil',") {
		t.Errorf("hostile node name not quoted:\n%s", h)
	}
	if strings.Contains(h, "\nevil (packages.source") {
		t.Error("a line break in the node name ends the comment")
	}
}

// TestWindowsBundleScriptsParse parses bundle-mode prepare.ps1 (with and
// without a private registry, every Windows build) and StartKubelet.ps1
// with the project's PowerShell parser: no syntax error, no rule finding.
func TestWindowsBundleScriptsParse(t *testing.T) {
	var scripts []pwshtest.Script
	for _, registry := range []string{"", "registry.example.internal:5000/mirror"} {
		c := labCluster(t)
		c.Spec.Images.Registry = registry
		c.Spec.Packages.Source = "bundle"
		for _, build := range []string{"10.0.17763", "10.0.20348", "10.0.26100"} {
			for i := range c.Spec.Nodes {
				if c.Spec.Nodes[i].OS == "windows" {
					c.Spec.Nodes[i].Windows.Build = build
				}
			}
			files := mustRender(t, planOf(t, c), Options{Token: guideToken, CACertHash: guideHash})
			var n int
			for path, f := range files {
				if strings.HasSuffix(path, ".ps1") {
					scripts = append(scripts, pwshtest.Script{Name: "bundle " + registry + "@" + build + ": " + path, Text: string(f.Data)})
					n++
				}
			}
			if n == 0 {
				t.Fatal("no .ps1 rendered")
			}
		}
	}
	scripts = append(scripts, pwshtest.Script{Name: "StartKubelet.ps1", Text: StartKubeletScript("k8s-lab-win-1")})
	sort.Slice(scripts, func(i, j int) bool { return scripts[i].Name < scripts[j].Name })
	pwshtest.Check(t, scripts...)
	// The parser finds what it should: a broken bundle-mode script fails.
	broken := strings.Replace(psText(t, mustRender(t, labOfflinePlan(t), Options{}), winPrepare), "function Test-Bundle {", "function Test-Bundle {{", 1)
	if f := pwshtest.Run(t, pwshtest.Script{Name: "broken", Text: broken}); len(f) == 0 {
		t.Error("the parser accepts a script with an unclosed brace")
	}
}

// TestBundleRunbookAddons: in bundle mode the runbook applies each add-on
// from the bundle's copy, at the path the bundle's artifact list gives it
// (where apply's addons phase reads it), also when --manifests-dir names
// Calico's manifests; upstream it applies the release URL.
func TestBundleRunbookAddons(t *testing.T) {
	p := labOfflinePlan(t)
	arts, err := bundle.Artifacts(p)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Addons) != 2 {
		t.Fatalf("the lab has %d add-ons, want metrics-server and cert-manager", len(p.Addons))
	}
	for name, o := range map[string]Options{"": {}, "--manifests-dir": {Manifests: &Manifests{CRDs: []byte("crds"), Operator: []byte("operator")}}} {
		rb := string(mustRender(t, p, o)["runbook.md"].Data)
		for _, a := range p.Addons {
			art, ok := bundle.Find(arts, bundle.OSWorkstation, bundle.NameAddonPrefix+a.Name)
			if !ok {
				t.Fatalf("no bundle artifact for add-on %s", a.Name)
			}
			if want := "kubectl apply -f " + BundleManifestsRef + "/" + strings.TrimPrefix(art.Path, bundle.ManifestsDir+"/") + "\n"; !strings.Contains(rb, want) {
				t.Errorf("%s: bundle-mode runbook lacks %q", name, want)
			}
			if strings.Contains(rb, a.ManifestURL) {
				t.Errorf("%s: bundle-mode runbook names %s", name, a.ManifestURL)
			}
		}
	}
	up := string(mustRender(t, labPlan(t), Options{})["runbook.md"].Data)
	for _, a := range labPlan(t).Addons {
		if !strings.Contains(up, "kubectl apply -f "+a.ManifestURL+"\n") {
			t.Errorf("upstream runbook does not apply %s", a.ManifestURL)
		}
	}
}

// TestWindowsBundleFilesMatchArtifacts: prepare.ps1 installs exactly the
// bundle's Windows files (bundle-upload sends each of them to a Windows
// node, none is unused), and its SHA256SUMS pattern reads the lines
// bundle.FormatSums writes for them (bundle-upload writes the node's file
// the same way).
func TestWindowsBundleFilesMatchArtifacts(t *testing.T) {
	p := labOfflinePlan(t)
	arts, err := bundle.Artifacts(p)
	if err != nil {
		t.Fatal(err)
	}
	b, err := WindowsBundleOf(p)
	if err != nil {
		t.Fatal(err)
	}
	var want, sums []string
	var lines []bundle.Sum
	for i, a := range bundle.ForOS(arts, bundle.OSWindows) {
		want = append(want, a.Path)
		lines = append(lines, bundle.Sum{SHA256: strings.Repeat(string("0123456789abcdef"[i]), 64), Path: a.Path})
	}
	got := append([]string(nil), b.Paths()...)
	sort.Strings(got)
	sort.Strings(want)
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("prepare.ps1 installs %v, the bundle's Windows files are %v", got, want)
	}
	ps := psText(t, mustRender(t, p, Options{}), winPrepare)
	m := regexp.MustCompile(`\$line -cmatch '([^']+)'`).FindStringSubmatch(ps)
	if m == nil {
		t.Fatal("no SHA256SUMS pattern in prepare.ps1")
	}
	re := regexp.MustCompile(m[1])
	for _, l := range strings.Split(strings.TrimSuffix(string(bundle.FormatSums(lines)), "\n"), "\n") {
		if sm := re.FindStringSubmatch(l); sm == nil || sm[1]+"  "+sm[2] != l {
			t.Errorf("prepare.ps1's pattern %s does not read %q", m[1], l)
		} else {
			sums = append(sums, sm[2])
		}
	}
	sort.Strings(sums)
	if strings.Join(sums, " ") != strings.Join(want, " ") {
		t.Errorf("read %v from SHA256SUMS, want %v", sums, want)
	}
	// Near misses it must not read as a line of the file: upper-case hex
	// (Get-FileHash's form), one space, a short sum.
	for _, bad := range []string{strings.Repeat("A", 64) + "  windows-amd64/kubelet.exe", strings.Repeat("a", 64) + " windows-amd64/kubelet.exe", strings.Repeat("a", 63) + "  windows-amd64/kubelet.exe"} {
		if re.MatchString(bad) {
			t.Errorf("the pattern reads %q", bad)
		}
	}
}
