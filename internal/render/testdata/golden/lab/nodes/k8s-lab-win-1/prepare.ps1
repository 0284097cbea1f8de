#Requires -RunAsAdministrator
# Prepares k8s-lab-win-1 (Windows worker of cluster lab) for kubeadm join.
# Rendered by hybridctl; the guide's "Preparing Windows Server 2025 Core",
# "containerd" and "kubelet and kubeadm as Windows services" sections.
#
# Run it in an elevated PowerShell on the node:
#   powershell -ExecutionPolicy Bypass -File .\prepare.ps1
# (hybridctl apply runs it the same way over SSH). Every native program runs
# through Invoke-Native, also inside the upstream scripts, so stderr output
# (tar's file list) is shown, never fatal: the exit code decides.
# It is safe to run again: each step is done only when everything it
# produces is there, and what would block a re-run is cleaned up first.
# When a step needs a reboot it says so and stops: reboot and run it again
# until it prints "ready for kubeadm join".
[CmdletBinding()]
param(
    # The adapter that carries the node address (sconfig shows it).
    [string] $InterfaceAlias = 'Ethernet',
    # sig-windows-tools scripts, pinned to a commit; override for a mirror.
    [string] $InstallContainerdUrl = 'https://raw.githubusercontent.com/kubernetes-sigs/sig-windows-tools/401ee6fcd8369cd8c293bd361275fdbe6f24ed07/hostprocess/Install-Containerd.ps1',
    [string] $InstallContainerdSha256 = '34AB189F73283AC346C86D1C0C6E8D4C7ED567E5720CC1E20B497FB7033C50BD',
    [string] $PrepareNodeUrl = 'https://raw.githubusercontent.com/kubernetes-sigs/sig-windows-tools/401ee6fcd8369cd8c293bd361275fdbe6f24ed07/hostprocess/PrepareNode.ps1',
    [string] $PrepareNodeSha256 = '5FB75BB136B83BE01BAE3225E0DDF7120647626D3C794BC9BAF6D718DCC0C4D8'
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
$SandboxImage = 'registry.k8s.io/pause:3.10.2'
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
# The upstream scripts set 'Stop' themselves and call these programs by
# name: functions come before programs in PowerShell's command lookup, so
# these run them through Invoke-Native there too. DISM's 3010 is "reboot
# needed".
# curl.exe also checks every file the upstream scripts download against
# its sha256 (Confirm-Download) before they go on to extract or run it.
function curl.exe {
    Invoke-Native 'curl.exe' $args
    Confirm-Download @($args)
}
function tar.exe { Invoke-Native 'tar.exe' $args }
function tar { Invoke-Native 'tar.exe' $args }
function DISM { Invoke-Native 'dism.exe' $args -Ok 0, 3010 }
# containerd.exe also adds --log-file to Install-Containerd.ps1's
# --register-service (the service keeps the flags it was registered with).
function containerd.exe {
    $a = @($args)
    if ($a -contains '--register-service' -and $a -notcontains '--log-file') {
        New-Item -ItemType Directory -Force -Path (Split-Path -Parent $ContainerdLog) | Out-Null
        $a += @('--log-file', $ContainerdLog)
    }
    Invoke-Native 'containerd.exe' $a
}
function nssm { Invoke-Native 'nssm.exe' $args }

# Every file the upstream scripts download for this node's versions, and
# where its sha256 comes from: the checksum file its release publishes
# beside it (Sums), or pinned by hybridctl (Sha256; nssm publishes none).
# A download that is not listed is refused.
$Downloads = @{
    'https://github.com/containerd/containerd/releases/download/v2.2.2/containerd-2.2.2-windows-amd64.tar.gz' = @{ Sums = 'https://github.com/containerd/containerd/releases/download/v2.2.2/containerd-2.2.2-windows-amd64.tar.gz.sha256sum' }
    'https://github.com/kubernetes-sigs/cri-tools/releases/download/v1.37.0/crictl-v1.37.0-windows-amd64.tar.gz' = @{ Sums = 'https://github.com/kubernetes-sigs/cri-tools/releases/download/v1.37.0/crictl-v1.37.0-windows-amd64.tar.gz.sha256' }
    'https://dl.k8s.io/v1.37.2/bin/windows/amd64/kubelet.exe' = @{ Sums = 'https://dl.k8s.io/v1.37.2/bin/windows/amd64/kubelet.exe.sha256' }
    'https://dl.k8s.io/v1.37.2/bin/windows/amd64/kubeadm.exe' = @{ Sums = 'https://dl.k8s.io/v1.37.2/bin/windows/amd64/kubeadm.exe.sha256' }
    'https://k8stestinfrabinaries.blob.core.windows.net/nssm-mirror/nssm-2.24.zip' = @{ Sha256 = '727d1e42275c605e0f04aba98095c38a8e1e46def453cdffce42869428aa6743' }
}

# Confirm-Download checks the file a curl.exe call wrote (-o, -Lo or
# --output) against the sha256 $Downloads has for its URL; a file that does
# not match is removed, and the error names it, the URL, the expected and
# the actual sha256.
function Confirm-Download([object[]] $CurlArgs) {
    $url = $null
    $path = $null
    for ($i = 0; $i -lt $CurlArgs.Count; $i++) {
        $a = [string] $CurlArgs[$i]
        if ($a -match '^https?://') {
            $url = $a
        } elseif (@('-o', '-Lo', '--output') -contains $a -and $i + 1 -lt $CurlArgs.Count) {
            $i++
            $path = [string] $CurlArgs[$i]
        }
    }
    if ($null -eq $url -or $null -eq $path) {
        throw "curl.exe $($CurlArgs -join ' '): not a download prepare.ps1 can check (no URL or no output file)"
    }
    if (-not $Downloads.ContainsKey($url)) {
        Remove-Item -LiteralPath $path -Force -ErrorAction SilentlyContinue
        throw "$url is not a download hybridctl knows the sha256 of ($path removed): the upstream scripts are expected to download only what `$Downloads in prepare.ps1 lists"
    }
    $entry = $Downloads[$url]
    if ($entry.ContainsKey('Sums')) {
        $from = $entry['Sums']
        $text = (Invoke-Native 'curl.exe' @('--fail', '--silent', '--show-error', '--location', $from)) -join "`n"
        $want = ($text.Trim() -split '\s+')[0].ToLowerInvariant()
    } else {
        $from = 'pinned in prepare.ps1'
        $want = ([string] $entry['Sha256']).ToLowerInvariant()
    }
    $got = (Get-FileHash -LiteralPath $path -Algorithm SHA256).Hash.ToLowerInvariant()
    if ($want -notmatch '^[0-9a-f]{64}$' -or $got -ne $want) {
        Remove-Item -LiteralPath $path -Force
        throw "$path (from $url) has sha256 $got, expected $want ($from); the file was removed"
    }
    Write-Host "  $path matches its sha256 ($from)"
}

function Get-Script([string] $Url, [string] $Sha256, [string] $Path) {
    if (-not (Test-Path -LiteralPath $Path)) {
        Invoke-Native 'curl.exe' @('--fail', '--silent', '--show-error', '--location', '--output', $Path, $Url)
    }
    if ($Sha256 -ne '') {
        $got = (Get-FileHash -LiteralPath $Path -Algorithm SHA256).Hash
        if ($got -ne $Sha256) {
            Remove-Item -LiteralPath $Path -Force
            throw "$Url has SHA256 $got, expected $Sha256; read the new script and pass its hash"
        }
    }
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
    $script = Join-Path $WorkDir 'Install-Containerd.ps1'
    Get-Script $InstallContainerdUrl $InstallContainerdSha256 $script
    # Strict mode is this script's own: the upstream script runs without it.
    & { Set-StrictMode -Off; & $script -ContainerDVersion $ContainerdVersion -crictlVersion $CrictlVersion -skipHypervisorSupportCheck }
    if ($null -eq (Get-Service containerd -ErrorAction SilentlyContinue)) {
        Stop-ForReboot 'Install-Containerd.ps1 enabled the Hyper-V feature'
    }
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
        throw "this node has joined a cluster and its kubelet or kubeadm is not $KubernetesVersion; upgrade a node with kubeadm upgrade node, or take it out with hybridctl reset first"
    }
    # What a run that stopped half-way leaves and PrepareNode.ps1 cannot
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
    # service handler); PrepareNode.ps1 stops at once when the pipe is missing, and the kubelet
    # needs it: give it time.
    $deadline = (Get-Date).AddSeconds(60)
    while (-not (Test-Path '//./pipe/containerd-containerd')) {
        if ((Get-Date) -gt $deadline) {
            throw 'containerd is not serving (no \\.\pipe\containerd-containerd after 60 s): see the containerd step above and Get-Service containerd'
        }
        Start-Sleep -Seconds 2
    }
    $script = Join-Path $WorkDir 'PrepareNode.ps1'
    Get-Script $PrepareNodeUrl $PrepareNodeSha256 $script
    Push-Location $WorkDir
    try { & { Set-StrictMode -Off; & $script -KubernetesVersion $KubernetesVersion } } finally { Pop-Location }
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

Step "containerd $ContainerdVersion, crictl $CrictlVersion (Install-Containerd.ps1)"
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

Step "kubelet and kubeadm $KubernetesVersion as a service (PrepareNode.ps1)"
if (-not (Test-KubeletDone)) { Install-Kubelet }

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
