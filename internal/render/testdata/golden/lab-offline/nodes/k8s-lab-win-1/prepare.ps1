#Requires -RunAsAdministrator
# Prepares k8s-lab-win-1 (Windows worker of cluster lab) for kubeadm join.
# Rendered by hybridctl; the guide's "Preparing Windows Server 2025 Core",
# "containerd" and "kubelet and kubeadm as Windows services" sections.
#
# Run it in an elevated PowerShell on the node:
#   powershell -ExecutionPolicy Bypass -File .\prepare.ps1
# (hybridctl apply runs it the same way over SSH). Every native program runs
# through Invoke-Native, so stderr output (tar's messages) is shown, never
# fatal: the exit code decides.
#
# packages.source is bundle: containerd, crictl, kubelet, kubeadm, kubectl
# and nssm come from the files hybridctl apply's bundle-upload phase put in
# C:\k\bundle, each checked against its sha256 in SHA256SUMS there.
# Nothing is downloaded: this script does what sig-windows-tools'
# Install-Containerd.ps1 and PrepareNode.ps1 do, from those files.
# It is safe to run again: each step is done only when everything it
# produces is there, and what would block a re-run is cleaned up first.
# When a step needs a reboot it says so and stops: reboot and run it again
# until it prints "ready for kubeadm join".
[CmdletBinding()]
param(
    # The adapter that carries the node address (sconfig shows it).
    [string] $InterfaceAlias = 'Ethernet'
)
$ErrorActionPreference = 'Stop'
Set-StrictMode -Version 3.0

$NodeName = 'k8s-lab-win-1'
$Address = '192.168.10.25'
$PrefixLength = 24
$Gateway = '192.168.10.1'
$DnsServers = @('192.168.10.1')
$DnsSuffix = 'example.com'
$NtpPeers = 'router.example.com,0x8'
$NodeCIDR = '192.168.10.0/24'
$KubernetesVersion = 'v1.37.2'
$ContainerdVersion = '2.2.2'
$CrictlVersion = '1.37.0'
$SandboxImage = 'registry.example.internal:5000/pause:3.10.2'
$ApiHost = 'k8s-lab-api.example.com'
$WorkDir = 'C:\k\hybridctl'
$ContainerdDir = Join-Path $env:ProgramFiles 'containerd'
$ContainerdExe = Join-Path $ContainerdDir 'containerd.exe'
$CrictlExe = Join-Path $ContainerdDir 'crictl.exe'
$ContainerdConfig = Join-Path $ContainerdDir 'config.toml'
# containerd's own log: a service registered without --log-file writes it
# to NUL (containerd's service_windows.go).
$ContainerdLog = 'C:\var\log\containerd\containerd.log'
$CrictlConfig = Join-Path $HOME '.crictl\crictl.yaml'
$KubeadmExe = 'C:\k\kubeadm.exe'
$KubeletExe = 'C:\k\kubelet.exe'
$PkiLink = 'C:\var\lib\kubelet\etc\kubernetes\pki'
$KubectlExe = 'C:\k\kubectl.exe'
$StartKubelet = 'C:\k\StartKubelet.ps1'
$NssmDir = Join-Path $env:ProgramFiles 'nssm'
$NssmExe = Join-Path $NssmDir 'nssm.exe'
# The bundle's files for this node, relative to $BundleDir as in its
# SHA256SUMS.
$BundleDir = 'C:\k\bundle'
$BundleSums = Join-Path $BundleDir 'SHA256SUMS'
$ContainerdTgz = 'windows-amd64/containerd-2.2.2-windows-amd64.tar.gz'
$CrictlTgz = 'windows-amd64/crictl-v1.37.0-windows-amd64.tar.gz'
$KubeletFile = 'windows-amd64/kubelet.exe'
$KubeadmFile = 'windows-amd64/kubeadm.exe'
$KubectlFile = 'windows-amd64/kubectl.exe'
$NssmZip = 'windows-amd64/nssm-2.24.zip'
$NssmZipEntry = 'nssm-2.24/win64/nssm.exe'

function Step([string] $Message) { Write-Host "==> $Message" }
function Stop-ForReboot([string] $Why) {
    Write-Host "$Why - reboot (Restart-Computer) and run prepare.ps1 again."
    exit 0
}

# Invoke-Native runs a program with 'Continue' in its own scope: Windows
# PowerShell 5.1 turns every stderr line of a native program into an error
# record when the output is redirected (as under hybridctl apply's SSH
# pipes), and 'Stop' would make the first one fatal. stdout goes on down
# the pipeline, stderr is shown, and the exit code alone decides.
function Invoke-Native {
    param([string] $Program, [object[]] $Arguments = @(), [int[]] $Ok = @(0))
    $app = Get-Command -Name $Program -CommandType Application -ErrorAction Stop | Select-Object -First 1
    $ErrorActionPreference = 'Continue'
    & $app.Source @Arguments 2>&1 | ForEach-Object {
        if ($_ -is [System.Management.Automation.ErrorRecord]) { Write-Host "$_" } else { $_ }
    }
    $code = $LASTEXITCODE
    if ($Ok -notcontains $code) { throw "$Program $($Arguments -join ' ') exited with $code" }
}
# Set-FileText writes Text to Path (UTF-8, no BOM) when it differs and
# returns whether it changed the file.
function Set-FileText([string] $Path, [string] $Text) {
    New-Item -ItemType Directory -Force -Path (Split-Path -Parent $Path) | Out-Null
    if ((Test-Path -LiteralPath $Path) -and ([IO.File]::ReadAllText($Path) -ceq $Text)) { return $false }
    [IO.File]::WriteAllText($Path, $Text)
    return $true
}

# Version of a program by its --version output, or '' when it is missing
# or fails.
function Get-Version([string] $Exe, [string[]] $Arguments) {
    if (-not (Test-Path -LiteralPath $Exe)) { return '' }
    try { return ((Invoke-Native $Exe $Arguments) -join ' ') } catch { return '' }
}

# Assert-NoRebootPending stops for a reboot when Windows has one pending
# from servicing or Windows Update: DISM and Install-WindowsFeature refuse
# to change features until it is done (CBS_E_PENDING, 0x800F082F).
function Assert-NoRebootPending {
    $keys = [ordered]@{
        'Component Based Servicing' = 'HKLM:\SOFTWARE\Microsoft\Windows\CurrentVersion\Component Based Servicing\RebootPending'
        'Windows Update'            = 'HKLM:\SOFTWARE\Microsoft\Windows\CurrentVersion\WindowsUpdate\Auto Update\RebootRequired'
    }
    $pending = @($keys.Keys | Where-Object { Test-Path -LiteralPath $keys[$_] })
    if ($pending.Count -gt 0) {
        Stop-ForReboot "Windows has a reboot pending ($($pending -join ', ')): features cannot be installed before it"
    }
}

# Wait-ServiceGone waits until a deleted service is gone: the service
# manager only marks it for deletion while a handle to it is open, and
# registering it again before then fails (ERROR_SERVICE_MARKED_FOR_DELETE).
function Wait-ServiceGone([string] $Name) {
    $deadline = (Get-Date).AddSeconds(60)
    while ($null -ne (Get-Service -Name $Name -ErrorAction SilentlyContinue)) {
        if ((Get-Date) -gt $deadline) {
            throw "the $Name service is still marked for deletion after 60 s (a program holds it open: close services.msc or Event Viewer, or reboot), then run this again"
        }
        Start-Sleep -Seconds 1
    }
}

# Removes a directory symbolic link without following it.
function Remove-Link([string] $Path) {
    $item = Get-Item -LiteralPath $Path -Force -ErrorAction SilentlyContinue
    if ($null -ne $item) { [System.IO.Directory]::Delete($Path, $false) }
}

# Get-BundlePath is where a bundle file (a path as in SHA256SUMS) is on
# this node.
function Get-BundlePath([string] $Rel) { return Join-Path $BundleDir ($Rel -replace '/', '\') }

# Test-Bundle checks every file this script installs against the node's
# SHA256SUMS (bundle-upload writes it with the node's files): each must be
# listed, present and of that sha256. Every problem is named at once.
function Test-Bundle {
    if (-not (Test-Path -LiteralPath $BundleSums -PathType Leaf)) {
        throw "no bundle in ${BundleDir}: packages.source is bundle, run hybridctl apply --bundle DIR (its bundle-upload phase puts the files there)"
    }
    $want = New-Object 'System.Collections.Generic.Dictionary[string,string]'
    foreach ($line in [IO.File]::ReadAllLines($BundleSums)) {
        if ($line -cmatch '^([0-9a-f]{64})  (.+)$') { $want[$Matches[2]] = $Matches[1] }
    }
    $problems = @()
    foreach ($rel in @($ContainerdTgz, $CrictlTgz, $KubeletFile, $KubeadmFile, $KubectlFile, $NssmZip)) {
        $path = Get-BundlePath $rel
        if (-not $want.ContainsKey($rel)) {
            $problems += "$rel is not in $BundleSums (the bundle lacks a file this node needs: hybridctl bundle verify)"
        } elseif (-not (Test-Path -LiteralPath $path -PathType Leaf)) {
            $problems += "$path is missing"
        } else {
            $got = (Get-FileHash -LiteralPath $path -Algorithm SHA256).Hash.ToLowerInvariant()
            if ($got -cne $want[$rel]) { $problems += "$path has sha256 $got, $BundleSums says $($want[$rel])" }
        }
    }
    if ($problems.Count -gt 0) {
        throw "the bundle in $BundleDir is not complete and intact: $($problems -join '; '); run hybridctl apply again (bundle-upload sends what is missing or different)"
    }
}

# Add-MachinePath appends Dir to the machine PATH and this process's
# unless it is there (the upstream scripts append it on every run).
function Add-MachinePath([string] $Dir) {
    $machine = [Environment]::GetEnvironmentVariable('Path', [EnvironmentVariableTarget]::Machine)
    if (@($machine -split ';') -notcontains $Dir) {
        [Environment]::SetEnvironmentVariable('Path', $machine.TrimEnd(';') + ';' + $Dir, [EnvironmentVariableTarget]::Machine)
    }
    if (@($env:Path -split ';') -notcontains $Dir) { $env:Path = $env:Path.TrimEnd(';') + ';' + $Dir }
}

# Copy-Changed copies a bundle file to Path unless Path has its content.
function Copy-Changed([string] $Rel, [string] $Path) {
    $src = Get-BundlePath $Rel
    if (Test-Path -LiteralPath $Path -PathType Leaf) {
        if ((Get-FileHash -LiteralPath $Path -Algorithm SHA256).Hash -eq (Get-FileHash -LiteralPath $src -Algorithm SHA256).Hash) { return }
    }
    Copy-Item -LiteralPath $src -Destination $Path -Force
}

# The Hyper-V features as Install-Containerd.ps1 -skipHypervisorSupportCheck
# sets them (the guide runs it so): Microsoft-Hyper-V enabled through DISM,
# without the CPU check, and Microsoft-Hyper-V-Online disabled. Returns
# whether DISM changed anything: a reboot is needed then.
function Set-HyperVFeatures {
    $changed = $false
    $hyperV = Get-WindowsOptionalFeature -Online -FeatureName 'Microsoft-Hyper-V'
    if ($null -eq $hyperV -or "$($hyperV.State)" -ne 'Enabled') {
        Invoke-Native 'dism.exe' @('/Online', '/Enable-Feature', '/FeatureName:Microsoft-Hyper-V', '/All', '/NoRestart') -Ok 0, 3010 | Out-Host
        $changed = $true
    }
    $online = Get-WindowsOptionalFeature -Online -FeatureName 'Microsoft-Hyper-V-Online'
    if ($null -ne $online -and "$($online.State)" -ne 'Disabled') {
        Invoke-Native 'dism.exe' @('/Online', '/Disable-Feature', '/FeatureName:Microsoft-Hyper-V-Online', '/NoRestart') -Ok 0, 3010 | Out-Host
        $changed = $true
    }
    return $changed
}

# Set-CniDirs points the CNI section of containerd's default configuration
# at c:/opt/cni/bin and c:/etc/cni/net.d, where Calico's install-cni puts
# its plugins and configuration (Install-Containerd.ps1's defaults):
# bin_dirs (containerd 2.x) or bin_dir (1.x), and conf_dir.
function Set-CniDirs([string[]] $Lines) {
    $in = $false
    $set = @{}
    $out = foreach ($line in $Lines) {
        $t = $line.Trim()
        if ($t.StartsWith('[')) {
            $in = $t -match '^\[plugins\.[''"]io\.containerd\.(grpc\.v1\.cri|cri\.v1\.runtime)[''"]\.cni\]$'
        } elseif ($in -and $t -match '^(bin_dirs|bin_dir|conf_dir)\s*=') {
            $key = $Matches[1]
            $value = "'c:/etc/cni/net.d'"
            if ($key -eq 'bin_dirs') { $value = "['c:/opt/cni/bin']" } elseif ($key -eq 'bin_dir') { $value = "'c:/opt/cni/bin'" }
            $set[$key] = $true
            $line.Substring(0, $line.Length - $line.TrimStart().Length) + "$key = $value"
            continue
        }
        $line
    }
    if (-not $set.ContainsKey('conf_dir') -or -not ($set.ContainsKey('bin_dirs') -or $set.ContainsKey('bin_dir'))) {
        throw "the CNI section of $ContainerdExe config default has no bin_dirs or conf_dir: not a containerd this script knows"
    }
    return $out
}

function Test-ContainerdDone {
    if ($null -eq (Get-Service containerd -ErrorAction SilentlyContinue)) { return $false }
    $svc = Get-ItemProperty -LiteralPath 'HKLM:\SYSTEM\CurrentControlSet\Services\containerd' -ErrorAction SilentlyContinue
    if ($null -eq $svc -or $null -eq $svc.PSObject.Properties['ImagePath'] -or -not "$($svc.ImagePath)".Contains('--log-file')) { return $false }
    if ((Get-Version $ContainerdExe @('--version')) -notmatch [regex]::Escape("v$ContainerdVersion")) { return $false }
    if ((Get-Version $CrictlExe @('--version')) -notmatch [regex]::Escape("v$CrictlVersion")) { return $false }
    foreach ($p in @($ContainerdConfig, $CrictlConfig, 'C:\opt\cni\bin', 'C:\etc\cni\net.d')) {
        if (-not (Test-Path -LiteralPath $p)) { return $false }
    }
    return $true
}

function Install-Runtime {
    if (Set-HyperVFeatures) { Stop-ForReboot 'enabled the Hyper-V feature' }
    $svc = Get-Service containerd -ErrorAction SilentlyContinue
    if ($null -ne $svc) {
        # A version change or a run that stopped half-way: the script's
        # --register-service fails while the service exists.
        Stop-Service containerd -Force
        if (Test-Path -LiteralPath $ContainerdExe) {
            Invoke-Native $ContainerdExe @('--unregister-service')
        } else {
            Invoke-Native 'sc.exe' @('delete', 'containerd')
        }
        Wait-ServiceGone 'containerd'

    }
    # What Install-Containerd.ps1 does, from the bundle: the release's bin\
    # (containerd.exe, containerd-shim-runhcs-v1.exe, ctr.exe) and crictl.exe
    # into $ContainerdDir, on the machine PATH; the default configuration with
    # the CNI directories; the service; crictl's configuration.
    New-Item -ItemType Directory -Force -Path $ContainerdDir, 'C:\opt\cni\bin', 'C:\etc\cni\net.d' | Out-Null
    Invoke-Native 'tar.exe' @('-x', '-f', (Get-BundlePath $ContainerdTgz), '--strip-components', '1', '-C', $ContainerdDir)
    Invoke-Native 'tar.exe' @('-x', '-f', (Get-BundlePath $CrictlTgz), '-C', $ContainerdDir)
    Add-MachinePath $ContainerdDir
    $config = Set-CniDirs @(Invoke-Native $ContainerdExe @('config', 'default'))
    Set-Content -LiteralPath $ContainerdConfig -Value $config -Encoding Ascii
    New-Item -ItemType Directory -Force -Path (Split-Path -Parent $ContainerdLog) | Out-Null
    Invoke-Native $ContainerdExe @('--register-service', '--log-file', $ContainerdLog)
    Start-Service containerd
    Set-FileText $CrictlConfig "runtime-endpoint: npipe://./pipe/containerd-containerd`nimage-endpoint: npipe://./pipe/containerd-containerd`n" | Out-Null
}

# The pause image kubeadm v1.37.2 expects, as on the Linux nodes (containerd's
# own default is another version).
function Set-SandboxImage {
    $config = Get-Content -LiteralPath $ContainerdConfig
    $want = "sandbox = '$SandboxImage'"
    if (@($config | Where-Object { $_.Trim() -eq $want }).Count -gt 0) { return }
    $new = @($config | ForEach-Object { $_ -replace '^(\s*)sandbox = .*$', "`$1$want" })
    if (@($new | Where-Object { $_.Trim() -eq $want }).Count -eq 0) {
        throw "no sandbox setting in $ContainerdConfig (containerd 2.x config expected)"
    }
    Set-Content -LiteralPath $ContainerdConfig -Value $new -Encoding Ascii
    Restart-Service containerd
}

function Test-KubeletDone {
    if ((Get-Version $KubeadmExe @('version', '-o', 'short')) -ne $KubernetesVersion) { return $false }
    if (-not (Test-Path -LiteralPath $KubeletExe)) { return $false }
    if (-not (Test-Path -LiteralPath 'C:\k\StartKubelet.ps1')) { return $false }
    if (-not (Test-Path -LiteralPath $NssmExe)) { return $false }
    $link = Get-Item -LiteralPath $PkiLink -Force -ErrorAction SilentlyContinue
    if ($null -eq $link -or $link.LinkType -ne 'SymbolicLink') { return $false }
    if ($null -eq (Get-Service kubelet -ErrorAction SilentlyContinue)) { return $false }
    $params = Get-ItemProperty -LiteralPath 'HKLM:\SYSTEM\CurrentControlSet\Services\kubelet\Parameters' -ErrorAction SilentlyContinue
    if ($null -eq $params -or $null -eq $params.PSObject.Properties['AppRotateBytes']) { return $false }
    $svc = Get-ItemProperty -LiteralPath 'HKLM:\SYSTEM\CurrentControlSet\Services\kubelet' -ErrorAction SilentlyContinue
    if ($null -eq $svc -or $null -eq $svc.PSObject.Properties['DependOnService'] -or @($svc.DependOnService) -notcontains 'containerd') { return $false }
    return $true
}

function Install-Kubelet {
    if (Test-Path -LiteralPath 'C:\etc\kubernetes\kubelet.conf') {
        throw "this node has joined a cluster and its kubelet or kubeadm is not $KubernetesVersion (or nssm is missing); upgrade a node with kubeadm upgrade node, or take it out with hybridctl reset first"
    }
    # What a run that stopped half-way leaves and the steps below cannot
    # create twice: the pki link, the kubelet service, the firewall rule.
    Remove-Link $PkiLink
    if ($null -ne (Get-Service kubelet -ErrorAction SilentlyContinue)) {
        Stop-Service kubelet -Force
        Invoke-Native 'sc.exe' @('delete', 'kubelet')
        Wait-ServiceGone 'kubelet'
    }
    Get-NetFirewallRule -Name 'kubelet' -ErrorAction SilentlyContinue | Remove-NetFirewallRule
    # containerd may have just been (re)started, and it reports Running to
    # the service manager before it opens its pipe (containerd's Windows
    # service handler); the kubelet's service
    # needs it: give it time.
    $deadline = (Get-Date).AddSeconds(60)
    while (-not (Test-Path '//./pipe/containerd-containerd')) {
        if ((Get-Date) -gt $deadline) {
            throw 'containerd is not serving (no \\.\pipe\containerd-containerd after 60 s): see the containerd step above and Get-Service containerd'
        }
        Start-Sleep -Seconds 2
    }
    # What PrepareNode.ps1 does, from the bundle: kubelet.exe and kubeadm.exe
    # in C:\k (on the machine PATH); the directories the kubelet's Linux-style
    # paths mean on Windows and the pki link; StartKubelet.ps1; nssm, and
    # the kubelet service through it, depending on containerd, its output
    # in C:\var\log\kubelet rotated daily or at 10 MB. The service stays
    # stopped until kubeadm join starts it.
    New-Item -ItemType Directory -Force -Path 'C:\k', 'C:\var\log\kubelet', 'C:\var\lib\kubelet\etc\kubernetes', 'C:\etc\kubernetes\pki', 'C:\etc\kubernetes\manifests', $NssmDir | Out-Null
    Copy-Item -LiteralPath (Get-BundlePath $KubeletFile) -Destination $KubeletExe -Force
    Copy-Item -LiteralPath (Get-BundlePath $KubeadmFile) -Destination $KubeadmExe -Force
    Add-MachinePath 'C:\k'
    New-Item -ItemType SymbolicLink -Path $PkiLink -Value 'C:\etc\kubernetes\pki' | Out-Null
    Set-FileText $StartKubelet '# C:\k\StartKubelet.ps1: the kubelet service (nssm) runs this at every start.
# Rendered by hybridctl for k8s-lab-win-1 (packages.source bundle): the wrapper
# sig-windows-tools'' PrepareNode.ps1 writes, without Invoke-Expression. The
# kubelet gets the flags kubeadm join wrote to kubeadm-flags.env, then the
# permanent ones of a Windows node (no cgroups, DNS through HNS).
$envFile = ''C:\var\lib\kubelet\kubeadm-flags.env''
$line = Get-Content -LiteralPath $envFile -ErrorAction Stop | Where-Object { $_ -like ''KUBELET_KUBEADM_ARGS=*'' } | Select-Object -First 1
if ($null -eq $line) {
    Write-Error "$envFile has no KUBELET_KUBEADM_ARGS line (kubeadm join writes it)"
    exit 1
}
$kubeadmFlags = @($line.Substring(''KUBELET_KUBEADM_ARGS=''.Length).Trim().Trim(''"'') -split ''\s+'' | Where-Object { $_ -ne '''' })
$flags = $kubeadmFlags + @(
    "--cert-dir=$env:SystemDrive\var\lib\kubelet\pki",
    ''--config=/var/lib/kubelet/config.yaml'',
    ''--bootstrap-kubeconfig=/etc/kubernetes/bootstrap-kubelet.conf'',
    ''--kubeconfig=/etc/kubernetes/kubelet.conf'',
    ''--hostname-override=k8s-lab-win-1'',
    ''--enable-debugging-handlers'',
    ''--cgroups-per-qos=false'',
    ''--enforce-node-allocatable='',
    ''--resolv-conf=''
)
& ''C:\k\kubelet.exe'' @flags
exit $LASTEXITCODE
' | Out-Null
    Invoke-Native 'tar.exe' @('-x', '-f', (Get-BundlePath $NssmZip), '-C', $NssmDir, '--strip-components', '2', $NssmZipEntry)
    Add-MachinePath $NssmDir
    $powershell = (Get-Command -Name 'powershell.exe' -CommandType Application -ErrorAction Stop | Select-Object -First 1).Source
    Invoke-Native $NssmExe @('install', 'kubelet', $powershell)
    Invoke-Native $NssmExe @('set', 'kubelet', 'AppParameters', "-ExecutionPolicy Bypass -NoProfile -File $StartKubelet")
    Invoke-Native $NssmExe @('set', 'kubelet', 'AppStdout', 'C:\var\log\kubelet\kubelet.out.log')
    Invoke-Native $NssmExe @('set', 'kubelet', 'AppStderr', 'C:\var\log\kubelet\kubelet.err.log')
    Invoke-Native $NssmExe @('set', 'kubelet', 'AppRotateFiles', '1')
    Invoke-Native $NssmExe @('set', 'kubelet', 'AppRotateOnline', '1')
    Invoke-Native $NssmExe @('set', 'kubelet', 'AppRotateSeconds', '86400')
    Invoke-Native $NssmExe @('set', 'kubelet', 'AppRotateBytes', '10485760')
    Invoke-Native $NssmExe @('set', 'kubelet', 'DependOnService', 'containerd')
}

# One run at a time: sshd does not end a command when its session closes,
# so an interrupted run may still be at work when apply starts another.
# The mutex is the process's: it goes when the process ends, however it
# ends (an abandoned one is taken over).
$RunLock = New-Object System.Threading.Mutex($false, 'Global\hybridctl-prepare')
try { $locked = $RunLock.WaitOne(0) } catch { $locked = $true }
if (-not $locked) {
    throw 'another prepare.ps1 is running on this node (an earlier run that was interrupted): wait until it ends (Get-CimInstance Win32_Process -Filter "Name = ''powershell.exe''" shows its command line), then run this again'
}

Step 'permissions: C:\k, C:\etc, C:\opt and C:\var for Administrators and SYSTEM only'
# Directories made at the root of C: inherit "Authenticated Users: Modify"
# from it: any local user could replace kubelet.exe and StartKubelet.ps1
# (run as SYSTEM by the kubelet service), the CNI plugins in C:\opt\cni\bin
# (run as SYSTEM by containerd) or kubeadm-flags.env (the kubelet's flags),
# and read the kubelet's keys. Inheritance from C: is removed; what is
# below inherits Administrators and SYSTEM, Full control.
foreach ($dir in @('C:\k', 'C:\etc', 'C:\opt', 'C:\var')) {
    New-Item -ItemType Directory -Force -Path $dir | Out-Null
    Invoke-Native 'icacls.exe' @($dir, '/inheritance:r', '/grant:r', '*S-1-5-32-544:(OI)(CI)F', '*S-1-5-18:(OI)(CI)F') | Out-Null
}
# The pods' volumes (emptyDir, Secrets, service account tokens) are reached
# through the host's ACL by containers that run as ContainerUser, which the
# host counts among its Users: they keep Modify there, and only there.
New-Item -ItemType Directory -Force -Path 'C:\var\lib\kubelet\pods' | Out-Null
Invoke-Native 'icacls.exe' @('C:\var\lib\kubelet\pods', '/grant:r', '*S-1-5-32-545:(OI)(CI)M') | Out-Null
New-Item -ItemType Directory -Force -Path $WorkDir, 'C:\k\patches' | Out-Null

Step "bundle in $BundleDir (sha256 of each file against $BundleSums)"
Test-Bundle

Step "address $Address/$PrefixLength on $InterfaceAlias"
# After Calico created its network the address lives on 'vEthernet (...)':
# look for it on any adapter.
$ip = Get-NetIPAddress -AddressFamily IPv4 -IPAddress $Address -ErrorAction SilentlyContinue | Select-Object -First 1
if ($null -eq $ip) {
    $route = Get-NetRoute -DestinationPrefix '0.0.0.0/0' -ErrorAction SilentlyContinue | Select-Object -First 1
    if ($null -ne $route) {
        New-NetIPAddress -InterfaceAlias $InterfaceAlias -IPAddress $Address -PrefixLength $PrefixLength | Out-Null
    } elseif ($Gateway -eq '') {
        throw "this node has neither its address $Address nor a default route, and spec.network.gateway is empty: give the node its address, or set the gateway in the spec"
    } else {
        New-NetIPAddress -InterfaceAlias $InterfaceAlias -IPAddress $Address -PrefixLength $PrefixLength -DefaultGateway $Gateway | Out-Null
    }
    $ip = Get-NetIPAddress -AddressFamily IPv4 -IPAddress $Address | Select-Object -First 1
}
$ifIndex = $ip.InterfaceIndex

if ($DnsServers.Count -gt 0) {
    Step "DNS servers $($DnsServers -join ', '), primary DNS suffix $DnsSuffix"
    Set-DnsClientServerAddress -InterfaceIndex $ifIndex -ServerAddresses $DnsServers
} else {
    Step "DNS servers kept (spec.network.dnsServers is empty), primary DNS suffix $DnsSuffix"
}
Set-ItemProperty -LiteralPath 'HKLM:\SYSTEM\CurrentControlSet\Services\Tcpip\Parameters' -Name 'NV Domain' -Value $DnsSuffix

Step "time from $NtpPeers"
# On a workgroup server w32time may be trigger-started (and stopped):
# start it automatically before configuring it.
Set-Service -Name w32time -StartupType Automatic
Start-Service w32time
Invoke-Native 'w32tm.exe' @('/config', "/manualpeerlist:$NtpPeers", '/syncfromflags:manual', '/update') | Out-Null
Restart-Service w32time
# A resync that waits may fail while the peer is being contacted, and
# w32tm reports that as an HRESULT, not a documented exit code: ask for one
# without waiting and ignore its answer. hybridctl's post-prepare check
# waits for the clock.
try { Invoke-Native 'w32tm.exe' @('/resync', '/nowait') | Out-Null } catch { Write-Host "  $_ (the clock is checked again after this script)" }

Step 'Windows Update: Manual (updates and their reboots only when you run them)'
# The guide sets sconfig's update mode to Manual: a cluster node reboots
# only through drain and uncordon. The same policy value: Configure
# Automatic Updates disabled, NoAutoUpdate = 1 (Microsoft, "Configure
# Automatic Updates by using the registry"). A domain policy that sets it
# back wins over this; hybridctl's preflight reports it.
$AuKey = 'HKLM:\SOFTWARE\Policies\Microsoft\Windows\WindowsUpdate\AU'
New-Item -Path $AuKey -Force -ErrorAction SilentlyContinue | Out-Null
Set-ItemProperty -LiteralPath $AuKey -Name 'NoAutoUpdate' -Value 1 -Type DWord

Step 'firewall: kube-proxy health 10256/TCP from the node network'
if ($null -eq (Get-NetFirewallRule -Name 'kube-proxy-health' -ErrorAction SilentlyContinue)) {
    New-NetFirewallRule -Name 'kube-proxy-health' -DisplayName 'kube-proxy health' -Direction Inbound `
        -Protocol TCP -LocalPort 10256 -RemoteAddress $NodeCIDR -Action Allow | Out-Null
}

Step "computer name $NodeName"
if ($env:COMPUTERNAME -ne $NodeName) {
    Rename-Computer -NewName $NodeName -Force
    Stop-ForReboot "renamed the computer to $NodeName"
}

Step 'Containers feature'
$feature = Get-WindowsFeature -Name Containers
if (-not $feature.Installed) {
    Assert-NoRebootPending
    $r = Install-WindowsFeature -Name Containers
    if ($r.RestartNeeded -ne 'No') { Stop-ForReboot 'installed the Containers feature' }
}

Step "containerd $ContainerdVersion, crictl $CrictlVersion (from the bundle)"
if (-not (Test-ContainerdDone)) { Assert-NoRebootPending; Install-Runtime }
Set-SandboxImage

Step 'Microsoft Defender: containerd excluded from real-time scanning'
# As AKS does on its Windows nodes: scanning every layer file containerd
# unpacks and every file a container opens slows container starts and I/O.
# Excluded: containerd's data (C:\ProgramData\containerd), its programs
# and their processes. Nothing else is excluded.
if ($null -ne (Get-Command -Name Add-MpPreference -ErrorAction SilentlyContinue)) {
    try {
        Add-MpPreference -ExclusionPath @('C:\ProgramData\containerd', $ContainerdDir) `
            -ExclusionProcess @($ContainerdExe, (Join-Path $ContainerdDir 'containerd-shim-runhcs-v1.exe'))
    } catch {
        Write-Host "  Defender did not take the exclusions ($_); containerd runs with real-time scanning"
    }
} else {
    Write-Host '  Microsoft Defender is not installed'
}
Step 'containerd: every image through the private registry registry.example.internal:5000'
$CertsDir = 'C:\Program Files\containerd\certs.d'
$changed = $false
if (Set-FileText ($CertsDir + '\' + 'registry.k8s.io' + '\hosts.toml') '# containerd registry host configuration, rendered by hybridctl: every
# image of this directory''s registry is pulled from the private registry,
# under the same repository path. The private registry is the server,
# with no host table before it: containerd never falls back to the
# upstream registry.
server = ''https://registry.example.internal:5000''
capabilities = [''pull'', ''resolve'']
') { $changed = $true }
if (Set-FileText ($CertsDir + '\' + 'docker.io' + '\hosts.toml') '# containerd registry host configuration, rendered by hybridctl: every
# image of this directory''s registry is pulled from the private registry,
# under the same repository path. The private registry is the server,
# with no host table before it: containerd never falls back to the
# upstream registry.
server = ''https://registry.example.internal:5000''
capabilities = [''pull'', ''resolve'']
') { $changed = $true }
if (Set-FileText ($CertsDir + '\' + 'quay.io' + '\hosts.toml') '# containerd registry host configuration, rendered by hybridctl: every
# image of this directory''s registry is pulled from the private registry,
# under the same repository path. The private registry is the server,
# with no host table before it: containerd never falls back to the
# upstream registry.
server = ''https://registry.example.internal:5000''
capabilities = [''pull'', ''resolve'']
') { $changed = $true }
if (Set-FileText ($CertsDir + '\' + 'ghcr.io' + '\hosts.toml') '# containerd registry host configuration, rendered by hybridctl: every
# image of this directory''s registry is pulled from the private registry,
# under the same repository path. The private registry is the server,
# with no host table before it: containerd never falls back to the
# upstream registry.
server = ''https://registry.example.internal:5000''
capabilities = [''pull'', ''resolve'']
') { $changed = $true }
if (Set-FileText ($CertsDir + '\' + 'mcr.microsoft.com' + '\hosts.toml') '# containerd registry host configuration, rendered by hybridctl: every
# image of this directory''s registry is pulled from the private registry,
# under the same repository path. The private registry is the server,
# with no host table before it: containerd never falls back to the
# upstream registry.
server = ''https://registry.example.internal:5000''
capabilities = [''pull'', ''resolve'']
') { $changed = $true }
if (Set-FileText ($CertsDir + '\' + 'registry.example.internal_5000_' + '\hosts.toml') '# containerd registry host configuration for the private registry, rendered by hybridctl.
server = ''https://registry.example.internal:5000''
') { $changed = $true }
$config = [IO.File]::ReadAllText($ContainerdConfig)
$newConfig = $config -replace '(?m)^(\s*)config_path = .*$', ('$1config_path = ''' + $CertsDir + '''')
if (-not $newConfig.Contains("config_path = '$CertsDir'")) {
    throw "config_path is not in ${ContainerdConfig}: the registry mirrors would be ignored"
}
if (Set-FileText $ContainerdConfig $newConfig) { $changed = $true }
if ($changed) { Restart-Service containerd }

Step "kubelet and kubeadm $KubernetesVersion as a service (nssm, from the bundle)"
if (-not (Test-KubeletDone)) { Install-Kubelet }

Step "kubectl $KubernetesVersion in C:\k"
Copy-Changed $KubectlFile $KubectlExe

Step "firewall: kubelet 10250/TCP only from $NodeCIDR"
if ($null -eq (Get-NetFirewallRule -Name 'kubelet' -ErrorAction SilentlyContinue)) {
    New-NetFirewallRule -Name 'kubelet' -DisplayName 'kubelet' -Enabled True -Direction Inbound -Protocol TCP -Action Allow -LocalPort 10250 | Out-Null
}
Set-NetFirewallRule -Name 'kubelet' -RemoteAddress $NodeCIDR

Step 'checks'
$fqdn = [System.Net.Dns]::GetHostEntry('').HostName
$literal = $null
if ([System.Net.IPAddress]::TryParse($ApiHost, [ref] $literal)) {
    # An address as the API endpoint: nothing to resolve.
    $apiAddresses = @($ApiHost)
} else {
    $apiAddresses = @(Resolve-DnsName $ApiHost -Type A -ErrorAction SilentlyContinue | Where-Object { $_.PSObject.Properties['IPAddress'] } | ForEach-Object { $_.IPAddress })
}
$source = (Invoke-Native 'w32tm.exe' @('/query', '/source') -Ok 0, 1) -join ' '
$containerd = Get-Service containerd -ErrorAction SilentlyContinue
$kubelet = Get-Service kubelet -ErrorAction SilentlyContinue
Write-Host "  host name:        $fqdn"
Write-Host "  API name:         $ApiHost -> $(if ($apiAddresses.Count -gt 0) { $apiAddresses -join ', ' } else { 'does not resolve yet' })"
Write-Host "  time source:      $source"
Write-Host "  containerd:       $(if ($null -ne $containerd) { $containerd.Status } else { 'missing' })"
Write-Host "  kubelet service:  $(if ($null -ne $kubelet) { $kubelet.Status } else { 'missing' }) (stays Stopped until kubeadm join)"
Write-Host "ready for kubeadm join: copy join.yaml to C:\k\join.yaml and patches\ to C:\k\patches\"
