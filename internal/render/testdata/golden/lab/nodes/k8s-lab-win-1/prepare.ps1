#Requires -RunAsAdministrator
# Prepares k8s-lab-win-1 (Windows worker of cluster lab) for kubeadm join.
# Rendered by hybridctl; the guide's "Preparing Windows Server 2025 Core",
# "containerd" and "kubelet and kubeadm as Windows services" sections.
#
# Run it in an elevated PowerShell on the node, in its own window (not with
# *>&1: Install-Containerd.ps1's tar output would turn into errors):
#   powershell -ExecutionPolicy Bypass -File .\prepare.ps1
# It is safe to run again. When a step needs a reboot it says so and stops:
# reboot and run it again until it prints "ready for kubeadm join".
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
$ApiHost = 'k8s-lab-api.example.com'
$WorkDir = 'C:\k\hybridctl'

function Step([string] $Message) { Write-Host "==> $Message" }
function Stop-ForReboot([string] $Why) {
    Write-Host "$Why - reboot (Restart-Computer) and run prepare.ps1 again."
    exit 0
}
function Get-Script([string] $Url, [string] $Sha256, [string] $Path) {
    if (-not (Test-Path -LiteralPath $Path)) {
        curl.exe --fail --silent --show-error --location --output $Path $Url
        if ($LASTEXITCODE -ne 0) { throw "download of $Url failed" }
    }
    if ($Sha256 -ne '') {
        $got = (Get-FileHash -LiteralPath $Path -Algorithm SHA256).Hash
        if ($got -ne $Sha256) {
            Remove-Item -LiteralPath $Path -Force
            throw "$Url has SHA256 $got, expected $Sha256; read the new script and pass its hash"
        }
    }
}

New-Item -ItemType Directory -Force -Path $WorkDir, 'C:\k\patches' | Out-Null

Step "address $Address/$PrefixLength on $InterfaceAlias"
# After Calico created its network the address lives on 'vEthernet (...)':
# look for it on any adapter.
if (-not (Get-NetIPAddress -AddressFamily IPv4 -IPAddress $Address -ErrorAction SilentlyContinue)) {
    $route = Get-NetRoute -DestinationPrefix '0.0.0.0/0' -ErrorAction SilentlyContinue
    if ($route) {
        New-NetIPAddress -InterfaceAlias $InterfaceAlias -IPAddress $Address -PrefixLength $PrefixLength | Out-Null
    } else {
        New-NetIPAddress -InterfaceAlias $InterfaceAlias -IPAddress $Address -PrefixLength $PrefixLength -DefaultGateway $Gateway | Out-Null
    }
}
$ifIndex = (Get-NetIPAddress -AddressFamily IPv4 -IPAddress $Address).InterfaceIndex

Step "DNS servers $($DnsServers -join ', '), primary DNS suffix $DnsSuffix"
Set-DnsClientServerAddress -InterfaceIndex $ifIndex -ServerAddresses $DnsServers
Set-ItemProperty -LiteralPath 'HKLM:\SYSTEM\CurrentControlSet\Services\Tcpip\Parameters' -Name 'NV Domain' -Value $DnsSuffix

Step "time from $NtpPeers"
w32tm /config "/manualpeerlist:$NtpPeers" /syncfromflags:manual /update | Out-Null
if ($LASTEXITCODE -ne 0) { throw 'w32tm /config failed' }
Restart-Service w32time
w32tm /resync | Out-Null

Step 'firewall: kube-proxy health 10256/TCP from the node network'
if (-not (Get-NetFirewallRule -Name 'kube-proxy-health' -ErrorAction SilentlyContinue)) {
    New-NetFirewallRule -Name 'kube-proxy-health' -DisplayName 'kube-proxy health' -Direction Inbound `
        -Protocol TCP -LocalPort 10256 -RemoteAddress $NodeCIDR -Action Allow | Out-Null
}

Step "computer name $NodeName"
if ($env:COMPUTERNAME -ne $NodeName) {
    Rename-Computer -NewName $NodeName -Force
    Stop-ForReboot "renamed the computer to $NodeName"
}

Step 'Containers feature'
if (-not (Get-WindowsFeature -Name Containers).Installed) {
    $r = Install-WindowsFeature -Name Containers
    if ($r.RestartNeeded -ne 'No') { Stop-ForReboot 'installed the Containers feature' }
}

Step "containerd $ContainerdVersion, crictl $CrictlVersion (Install-Containerd.ps1)"
$containerdExe = 'C:\Program Files\containerd\containerd.exe'
$haveContainerd = (Get-Service containerd -ErrorAction SilentlyContinue) -and (Test-Path -LiteralPath $containerdExe) -and
    ((& $containerdExe --version) -match [regex]::Escape("v$ContainerdVersion"))
if (-not $haveContainerd) {
    $script = Join-Path $WorkDir 'Install-Containerd.ps1'
    Get-Script $InstallContainerdUrl $InstallContainerdSha256 $script
    & $script -ContainerDVersion $ContainerdVersion -crictlVersion $CrictlVersion -skipHypervisorSupportCheck
    if (-not (Get-Service containerd -ErrorAction SilentlyContinue)) {
        Stop-ForReboot 'Install-Containerd.ps1 enabled the Hyper-V feature'
    }
}

Step "kubelet and kubeadm $KubernetesVersion as a service (PrepareNode.ps1)"
$kubeletService = Get-Service kubelet -ErrorAction SilentlyContinue
if ($kubeletService) {
    $have = & 'C:\k\kubeadm.exe' version -o short
    if ($have -ne $KubernetesVersion) {
        throw "kubeadm $have is installed, not ${KubernetesVersion}; upgrade a node with kubeadm upgrade node, not with prepare.ps1"
    }
} else {
    $script = Join-Path $WorkDir 'PrepareNode.ps1'
    Get-Script $PrepareNodeUrl $PrepareNodeSha256 $script
    & $script -KubernetesVersion $KubernetesVersion
}

Step "firewall: kubelet 10250/TCP only from $NodeCIDR"
Set-NetFirewallRule -Name 'kubelet' -RemoteAddress $NodeCIDR

Step 'checks'
$fqdn = [System.Net.Dns]::GetHostEntry('').HostName
Write-Host "  host name:        $fqdn"
Write-Host "  API name:         $ApiHost -> $((Resolve-DnsName $ApiHost -Type A -ErrorAction SilentlyContinue).IPAddress -join ', ')"
Write-Host "  time source:      $((w32tm /query /source) -join ' ')"
Write-Host "  containerd:       $((Get-Service containerd).Status)"
Write-Host "  kubelet service:  $((Get-Service kubelet).Status) (stays Stopped until kubeadm join)"
Write-Host "ready for kubeadm join: copy join.yaml to C:\k\join.yaml and patches\ to C:\k\patches\"
