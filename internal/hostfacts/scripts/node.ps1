# hybridctl node diagnose: the Windows node's side, read-only.
# Input: one JSON line on standard input, {"apiHost": "...", "apiPort": N}:
# data, never part of the script's text. Output: one JSON object. Every
# value is read from an object (ConvertTo-Json), never from localised text;
# enums are written by name.
$inputLine = [Console]::In.ReadLine()
$params = $inputLine | ConvertFrom-Json
$apiHost = [string]$params.apiHost
$apiPort = [int]$params.apiPort
$result = [ordered]@{}

function Get-Probe {
    param([scriptblock] $Block)
    try {
        $value = & $Block
        [ordered]@{ ok = $true; value = $value }
    } catch {
        [ordered]@{ ok = $false; error = $_.Exception.Message }
    }
}

$result.clock = Get-Probe { [DateTimeOffset]::UtcNow.ToUnixTimeMilliseconds() }
# klog writes local time: its offset turns the log's times into UTC.
$result.utcOffsetMinutes = Get-Probe { [int][TimeZoneInfo]::Local.GetUtcOffset([DateTime]::Now).TotalMinutes }

$result.services = Get-Probe {
    $names = @('kubelet', 'containerd', 'hns', 'vmcompute', 'w32time')
    $found = @(Get-Service -Name $names -ErrorAction SilentlyContinue)
    @($found | ForEach-Object {
        [ordered]@{ name = $_.Name; status = $_.Status.ToString(); startType = $_.StartType.ToString() }
    })
}

$result.serviceEvents = Get-Probe {
    $since = (Get-Date).AddHours(-24)
    $events = @(Get-WinEvent -FilterHashtable @{ LogName = 'System'; ProviderName = 'Service Control Manager'; StartTime = $since } -MaxEvents 500 -ErrorAction SilentlyContinue)
    @($events | Where-Object { $_.Properties.Count -gt 0 -and [string]$_.Properties[0].Value -match '^(containerd|kubelet)$' } |
        Select-Object -First 20 | ForEach-Object {
            [ordered]@{ id = $_.Id; time = $_.TimeCreated.ToUniversalTime().ToString('o'); service = [string]$_.Properties[0].Value; message = $_.Message }
        })
}

function Get-CriStatus {
    $ErrorActionPreference = 'Continue'
    $crictl = Join-Path $env:ProgramFiles 'containerd\crictl.exe'
    if (-not (Test-Path -LiteralPath $crictl)) {
        return [ordered]@{ ran = $false; ok = $false; detail = "$crictl not found" }
    }
    $out = & $crictl --timeout 5s info 2>&1 | ForEach-Object { "$_" }
    $code = $LASTEXITCODE
    $text = $out -join "`n"
    if ($code -ne 0) {
        return [ordered]@{ ran = $true; ok = $false; detail = $text }
    }
    # Only the status: the rest of crictl info is containerd's
    # configuration, registry credentials included.
    $status = $null
    try { $status = ($text | ConvertFrom-Json).status } catch { $status = $null }
    [ordered]@{ ran = $true; ok = $true; detail = 'crictl info answered'; status = $status }
}
$result.cri = Get-Probe { Get-CriStatus }

$kubeletLog = 'C:\var\log\kubelet\kubelet.err.log'
$result.kubeletLog = Get-Probe {
    if (Test-Path -LiteralPath $kubeletLog) { @(Get-Content -LiteralPath $kubeletLog -Tail 300) } else { throw "$kubeletLog does not exist" }
}

# Collected with --collect only, never parsed: containerd's own log (the
# service is registered with --log-file) and the Calico CNI plugin's log.
$result.containerdLog = Get-Probe {
    $p = 'C:\var\log\containerd\containerd.log'
    if (Test-Path -LiteralPath $p) { @(Get-Content -LiteralPath $p -Tail 300) } else { throw "$p does not exist" }
}
$result.calicoCNILog = Get-Probe {
    $p = 'C:\var\log\calico\cni\cni.log'
    if (Test-Path -LiteralPath $p) { @(Get-Content -LiteralPath $p -Tail 300) } else { throw "$p does not exist" }
}

$result.api = Get-Probe {
    $client = New-Object System.Net.Sockets.TcpClient
    try {
        $task = $client.ConnectAsync($apiHost, $apiPort)
        if (-not $task.Wait(5000)) { throw "no answer within 5 s" }
        'connected'
    } finally {
        $client.Dispose()
    }
}

function Get-W32tmStatus {
    $ErrorActionPreference = 'Continue'
    # Localised text: kept for --collect, never parsed.
    $out = w32tm /query /status 2>&1 | ForEach-Object { "$_" }
    $out -join "`n"
}
$result.w32tm = Get-Probe { Get-W32tmStatus }

$cniDir = 'C:\etc\cni\net.d'
$result.cni = Get-Probe {
    if (-not (Test-Path -LiteralPath $cniDir)) { throw "$cniDir does not exist" }
    @(Get-ChildItem -LiteralPath $cniDir -File | Where-Object { $_.Extension -in '.conf', '.conflist', '.json' } | ForEach-Object {
        $text = [System.IO.File]::ReadAllText($_.FullName)
        if ($text.Length -gt 65536) { $text = $text.Substring(0, 65536) }
        [ordered]@{ name = $_.Name; content = $text }
    })
}

$result.hns = Get-Probe {
    @(Get-HnsNetwork | ForEach-Object {
        [ordered]@{
            name = $_.Name; type = $_.Type; managementIP = $_.ManagementIP; drMacAddress = $_.DrMacAddress
            subnets = @($_.Subnets | ForEach-Object { [ordered]@{ addressPrefix = $_.AddressPrefix; gatewayAddress = $_.GatewayAddress; policies = @($_.Policies) } })
            policies = @($_.Policies)
        }
    })
}

$result.firewall = Get-Probe {
    $rule = Get-NetFirewallRule -Name OverlayTraffic4789UDP -ErrorAction SilentlyContinue
    if ($null -eq $rule) { return $null }
    [ordered]@{ enabled = $rule.Enabled.ToString(); direction = $rule.Direction.ToString(); action = $rule.Action.ToString() }
}

$result | ConvertTo-Json -Depth 8 -Compress
