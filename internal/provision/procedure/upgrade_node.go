package procedure

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"

	"github.com/hybridctl/hybridctl/internal/kubeclient"
	"github.com/hybridctl/hybridctl/internal/provision/engine"
	"github.com/hybridctl/hybridctl/internal/provision/transport"
	"github.com/hybridctl/hybridctl/internal/render"
)

// Where upgrade puts its files on a Linux node, and the lines its scripts
// print when they succeed.
const (
	linuxUpgradeScript = linuxWorkDir + "/upgrade.sh"
	linuxUpgradeConfig = linuxWorkDir + "/upgrade.yaml"
	upgradedKubeadm    = "kubeadm upgraded on "
	upgradedWindows    = "kubelet upgraded on "
	restartKubelet     = "systemctl daemon-reload && systemctl restart kubelet"
)

// transientLimit is how long an upgrade step asks the API server again
// when it does not answer (transientAPIError) before it gives up: long
// enough for an API server's restart.
const transientLimit = 2 * time.Minute

// upgradeNodePhase upgrades nodes of one role to the new version, Limit
// of them at once (control planes one at a time): each node is skipped
// when its kubelet already runs the version and it is schedulable (or
// cordoned by someone else); otherwise it gets the new kubeadm and runs
// kubeadm upgrade (apply on the first control plane, while the cluster's
// configuration still names the old version; node everywhere else), is
// cordoned (marked with UpgradeAnnotation) and drained, gets the new
// kubelet and kubectl and restarts the kubelet, and is uncordoned once
// Ready at the new version; then the step waits until what its drain
// evicted is available again (awaitEvicted), so the next node is drained
// only then: a node counts against Limit until that wait ends. A failure
// leaves the node cordoned and says so; a wait that times out leaves the
// node upgraded and uncordoned and closes the gate: no other node is
// drained in this run.
type upgradeNodePhase struct {
	role                                         upgradeRole
	up                                           UpgradeDeps
	limit                                        int
	files                                        Artifacts
	connect                                      func(ctx context.Context, host string) (hostConn, error)
	restConfig                                   func(ctx context.Context) (*rest.Config, error)
	drainTimeout, readyTimeout, availableTimeout time.Duration
	poll                                         time.Duration
	// staticPods reads a node's static pods (kubeletStaticPods when nil).
	staticPods staticPodsFunc
}

// Limit implements engine.Limiter.
func (p *upgradeNodePhase) Limit() int { return p.limit }

// Narrow implements engine.Narrower: the nodes left out (NotReady, with
// --allow-not-ready) are not upgraded.
func (p *upgradeNodePhase) Narrow(hosts []engine.Host) []engine.Host {
	var out []engine.Host
	for _, h := range hosts {
		skip := false
		for _, s := range p.up.SkipNodes {
			skip = skip || s == h.Name
		}
		if !skip {
			out = append(out, h)
		}
	}
	return out
}

// ShouldRun implements engine.Skipper from what the node is, not from a
// state file: a node at the version that is schedulable, or cordoned by
// someone else, has nothing left to do; a node hybridctl cordoned is
// finished; a spec node that is not in the cluster is apply's to join.
func (p *upgradeNodePhase) ShouldRun(ctx context.Context, h engine.Host) (bool, string, error) {
	client, err := clientFor(ctx, p.restConfig, "upgrade")
	if err != nil {
		return false, "", err
	}
	var n *corev1.Node
	err = retryTransient(ctx, transientLimit, p.poll, func(ctx context.Context) (err error) {
		n, err = client.CoreV1().Nodes().Get(ctx, h.Name, metav1.GetOptions{})
		return err
	})
	if apierrors.IsNotFound(err) {
		return false, "not a member of the cluster: hybridctl apply joins it (at the spec's version)", nil
	}
	if err != nil {
		return false, "", fmt.Errorf("reading node %s: %w", h.Name, err)
	}
	_, ours := n.Annotations[UpgradeAnnotation]
	if n.Status.NodeInfo.KubeletVersion == p.up.To && !ours {
		return false, "kubelet " + p.up.To + " already", nil
	}
	return true, "", nil
}

func (p *upgradeNodePhase) DryRun(_ context.Context, h engine.Host) ([]string, error) {
	drain := fmt.Sprintf("kubectl drain %s --ignore-daemonsets --delete-emptydir-data --timeout %s (cordon, annotated %s; then evict its pods, respecting PodDisruptionBudgets)", h.Name, p.drainTimeout, UpgradeAnnotation)
	ready := fmt.Sprintf("wait up to %s until %s is Ready with kubelet %s; kubectl uncordon %s", p.readyTimeout, h.Name, p.up.To, h.Name)
	if p.role == roleControlPlane {
		ready = fmt.Sprintf("wait up to %s until %s is Ready with kubelet %s, and until every static pod its kubelet runs (the API server, etcd, the controller manager, the scheduler) has a Ready mirror pod for its manifest as the new kubelet hashes it: the new kubelet restarts them; kubectl uncordon %s", p.readyTimeout, h.Name, p.up.To, h.Name)
	}
	available := fmt.Sprintf("wait up to %s until what the drain evicted is available again (the Deployments, StatefulSets and ReplicaSets whose pods it evicted at their available replicas of before the drain, and every PodDisruptionBudget healthy then at currentHealthy >= desiredHealthy) before another node is drained", p.availableTimeout)
	if h.OS == engine.Windows {
		script := windowsUpgradeScript(p.up, h.Name, p.windowsFiles(h))
		ready := fmt.Sprintf("wait up to %s until %s is Ready with kubelet %s", p.readyTimeout, h.Name, p.up.To)
		proxy := fmt.Sprintf("kubectl -n kube-system delete pod (the kube-proxy-windows pod on %s, when older than the DaemonSet's template: it updates OnDelete); wait up to %s until its replacement is Ready; kubectl uncordon %s", h.Name, p.readyTimeout, h.Name)
		return []string{drain, transport.DescribeWindowsRun(script, firstLine(script)+" (the new kubeadm.exe, kubeadm upgrade node, kubelet.exe replaced while the service is stopped, the old one kept as C:\\k\\kubelet.exe.old"+p.containerdNote()+")"), ready, proxy, available}, nil
	}
	f, err := p.files.get("nodes/" + h.Name + "/prepare.sh")
	if err != nil {
		return nil, err
	}
	kubeadm := "kubeadm upgrade node --config " + linuxUpgradeConfig
	if p.role == roleControlPlane {
		kubeadm = "kubeadm upgrade apply --config " + linuxUpgradeConfig + " --yes (on the first control plane, while the cluster's kubeadm-config names the old version; kubeadm upgrade node on the others)"
	}
	source := "the bundle in /var/cache/hybridctl/bundle (sha256 checked)"
	bundled := ", and the bundle's containerd and runc where the node's differ"
	if !p.up.Bundle {
		bundled = ""
		source = p.up.AptRepo + " (apt-get install kubeadm=" + strings.TrimPrefix(p.up.To, "v") + "-*)"
	}
	return []string{
		"upload " + linuxUpgradeConfig + " (kubeadm UpgradeConfiguration to " + p.up.To + ") and " + linuxUpgradeScript,
		"run as root: bash " + linuxUpgradeScript + ": kubeadm " + p.up.To + " from " + source + ", then " + kubeadm,
		drain,
		describeFile(f, linuxPrepare, 0o700), "run as root: bash " + linuxPrepare + " (the new kubelet and kubectl" + bundled + "; it changes nothing else that already matches the spec)",
		"run as root: " + restartKubelet,
		ready,
		available,
	}, nil
}

// containerdNote says what the Windows script does with containerd.
func (p *upgradeNodePhase) containerdNote() string {
	if p.up.Containerd == "" {
		return ""
	}
	return "; containerd " + strings.TrimPrefix(p.up.Containerd, "v") + " in place when the node runs another version, containerd and its shims stopped first, config.toml kept"
}

func firstLine(s string) string {
	for _, l := range strings.Split(s, "\n") {
		if strings.HasPrefix(l, "# ") {
			return strings.TrimPrefix(l, "# ")
		}
	}
	return ""
}

func (p *upgradeNodePhase) Run(ctx context.Context, h engine.Host) error {
	if err := p.up.gate.check(); err != nil {
		return fmt.Errorf("%s left as it is (not drained, nothing changed): %w", h.Name, err)
	}
	client, err := clientFor(ctx, p.restConfig, "upgrade")
	if err != nil {
		return err
	}
	c, err := p.connect(ctx, h.Name)
	if err != nil {
		return err
	}
	if h.OS == engine.Windows {
		return p.runWindows(ctx, client, c, h)
	}
	mode := "node"
	if p.role == roleControlPlane {
		if at, err := clusterConfigVersion(ctx, client); err != nil {
			return err
		} else if at != p.up.To {
			mode = "apply"
		}
	}
	prep, err := p.files.get("nodes/" + h.Name + "/prepare.sh")
	if err != nil {
		return err
	}
	script, err := linuxUpgradeScriptFor(p.up, h.Name, mode, string(prep.Data))
	if err != nil {
		return err
	}
	cfg, err := p.files.get(upgradeConfigPath)
	if err != nil {
		return err
	}
	if err := c.Upload(ctx, linuxUpgradeConfig, cfg.Data, 0o600); err != nil {
		return err
	}
	if err := c.Upload(ctx, linuxUpgradeScript, []byte(script), 0o700); err != nil {
		return err
	}
	if mode == "apply" {
		engine.Warn(ctx, "kubeadm upgrade apply %s on %s: the API server, controller manager, scheduler and etcd restart one after another", p.up.To, h.Name)
	}
	res, err := c.Run(ctx, "bash "+linuxUpgradeScript)
	if err != nil {
		return err
	}
	if !strings.Contains(string(res.Stdout), upgradedKubeadm+h.Name) {
		return &outputError{msg: "upgrade.sh ended without \"" + upgradedKubeadm + h.Name + "\"", out: append(res.Stdout, res.Stderr...)}
	}
	ev, err := p.cordonAndDrain(ctx, client, h.Name)
	if err != nil {
		return err
	}
	if err := c.Upload(ctx, linuxPrepare, prep.Data, 0o700); err != nil {
		return cordoned(err, h.Name)
	}
	res, err = c.Run(ctx, "bash "+linuxPrepare)
	if err != nil {
		return cordoned(err, h.Name)
	}
	if !strings.Contains(string(res.Stdout), linuxReady+h.Name) {
		return &outputError{msg: "prepare.sh ended without \"" + linuxReady + h.Name + "\" (" + h.Name + " stays cordoned)", out: append(res.Stdout, res.Stderr...)}
	}
	if _, err := c.Run(ctx, restartKubelet); err != nil {
		return cordoned(err, h.Name)
	}
	var before func(context.Context, kubeclient.Interface, string) error
	if p.role == roleControlPlane {
		static := p.staticPods
		if static == nil {
			static = kubeletStaticPods
		}
		before = func(ctx context.Context, client kubeclient.Interface, node string) error {
			return awaitStaticPods(ctx, client, node, static, p.readyTimeout, p.poll)
		}
	}
	if err := p.readyAndUncordon(ctx, client, h.Name, before); err != nil {
		return err
	}
	return p.awaitEvicted(ctx, client, ev)
}

func (p *upgradeNodePhase) runWindows(ctx context.Context, client kubeclient.Interface, c hostConn, h engine.Host) error {
	ev, err := p.cordonAndDrain(ctx, client, h.Name)
	if err != nil {
		return err
	}
	res, err := c.Run(ctx, windowsUpgradeScript(p.up, h.Name, p.windowsFiles(h)))
	if err != nil {
		return cordoned(err, h.Name)
	}
	if !strings.Contains(string(res.Stdout), upgradedWindows+h.Name) {
		return &outputError{msg: "the upgrade script ended without \"" + upgradedWindows + h.Name + "\" (" + h.Name + " stays cordoned)", out: append(res.Stdout, res.Stderr...)}
	}
	if err := p.readyAndUncordon(ctx, client, h.Name, p.restartKubeProxyWindows); err != nil {
		return err
	}
	return p.awaitEvicted(ctx, client, ev)
}

// restartKubeProxyWindows restarts node's kube-proxy-windows pod when it
// is older than the DaemonSet's template (the DaemonSet updates OnDelete),
// while the node is still drained, and waits until its new pod is Ready.
func (p *upgradeNodePhase) restartKubeProxyWindows(ctx context.Context, client kubeclient.Interface, node string) error {
	hash, err := kubeProxyWindowsRevision(ctx, client, p.readyTimeout, p.poll)
	if err != nil || hash == "" {
		return err
	}
	if deleted, err := restartKubeProxyWindows(ctx, client, node, hash, p.readyTimeout, p.poll); err != nil {
		return err
	} else if deleted {
		engine.Progress(ctx, "kube-proxy-windows on %s restarted with the DaemonSet's template", node)
	}
	return nil
}

// windowsFiles are the bundle's kubeadm.exe and kubelet.exe for h, as its
// prepare.ps1 names them.
func (p *upgradeNodePhase) windowsFiles(h engine.Host) windowsBinaries {
	w := windowsBinaries{Kubeadm: "windows-amd64/kubeadm.exe", Kubelet: "windows-amd64/kubelet.exe",
		Containerd: "windows-amd64/containerd-" + strings.TrimPrefix(p.up.Containerd, "v") + "-windows-amd64.tar.gz"}
	if f, err := p.files.get("nodes/" + h.Name + "/prepare.ps1"); err == nil {
		if m := psVar("KubeadmFile").FindSubmatch(f.Data); m != nil {
			w.Kubeadm = string(m[1])
		}
		if m := psVar("KubeletFile").FindSubmatch(f.Data); m != nil {
			w.Kubelet = string(m[1])
		}
		if m := psVar("ContainerdTgz").FindSubmatch(f.Data); m != nil {
			w.Containerd = string(m[1])
		}
	}
	return w
}

func psVar(name string) *regexp.Regexp {
	return regexp.MustCompile(`(?m)^\$` + name + ` = '([^']+)'$`)
}

func cordoned(err error, node string) error {
	return fmt.Errorf("%w (%s stays cordoned: run hybridctl upgrade again, or kubectl uncordon %s)", err, node, node)
}

// cordonAndDrain marks the node as cordoned by the upgrade, then drains
// it; it returns what the drain evicted, read just before the evictions.
func (p *upgradeNodePhase) cordonAndDrain(ctx context.Context, client kubeclient.Interface, node string) (*evicted, error) {
	patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:"true"}},"spec":{"unschedulable":true}}`, UpgradeAnnotation)
	if err := retryTransient(ctx, transientLimit, p.poll, func(ctx context.Context) error {
		_, err := client.CoreV1().Nodes().Patch(ctx, node, types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{})
		return err
	}); err != nil {
		return nil, fmt.Errorf("cordon %s: %w", node, err)
	}
	ev := &evicted{node: node}
	snapshot := func(ctx context.Context, pods []corev1.Pod) error {
		e, err := snapshotEvictions(ctx, client, node, pods)
		if err != nil {
			return err
		}
		ev = e
		return nil
	}
	if err := drainNode(ctx, client, node, p.drainTimeout, -1, snapshot); err != nil {
		return nil, cordoned(err, node)
	}
	return ev, nil
}

// awaitEvicted waits until what the node's drain evicted is available
// again; a timeout closes the gate, so no other node is drained.
func (p *upgradeNodePhase) awaitEvicted(ctx context.Context, client kubeclient.Interface, ev *evicted) error {
	err := awaitEvicted(ctx, client, ev, p.availableTimeout, p.poll)
	if errors.Is(err, errNotAvailableAgain) {
		p.up.gate.close(err)
	}
	return err
}

// readyAndUncordon waits until the node is Ready at the new version, runs
// before (when set) while the node is still cordoned, then uncordons it
// and removes the upgrade's mark.
func (p *upgradeNodePhase) readyAndUncordon(ctx context.Context, client kubeclient.Interface, node string, before func(context.Context, kubeclient.Interface, string) error) error {
	pending, err := waitUntil(ctx, p.readyTimeout, p.poll, func(ctx context.Context) (bool, string) {
		n, err := client.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		if v := n.Status.NodeInfo.KubeletVersion; v != p.up.To {
			return false, "kubelet " + v
		}
		left := notReadyNodes([]corev1.Node{*n}, []string{node})
		return len(left) == 0, strings.Join(left, "; ")
	})
	if err != nil {
		return cordoned(fmt.Errorf("%s not Ready at %s after its upgrade: %s", node, p.up.To, pending), node)
	}
	if before != nil {
		if err := before(ctx, client, node); err != nil {
			return cordoned(err, node)
		}
	}
	patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:null}},"spec":{"unschedulable":null}}`, UpgradeAnnotation)
	if err := retryTransient(ctx, transientLimit, p.poll, func(ctx context.Context) error {
		_, err := client.CoreV1().Nodes().Patch(ctx, node, types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{})
		return err
	}); err != nil {
		return fmt.Errorf("uncordon %s: %w", node, err)
	}
	return nil
}

// clusterConfigVersion is the kubernetesVersion of the cluster's kubeadm
// ClusterConfiguration: kubeadm upgrade apply moves it to the new version.
func clusterConfigVersion(ctx context.Context, client kubeclient.Interface) (string, error) {
	cm, err := client.CoreV1().ConfigMaps("kube-system").Get(ctx, "kubeadm-config", metav1.GetOptions{})
	if err != nil {
		return "", fmt.Errorf("kube-system/kubeadm-config: %w", err)
	}
	var cc struct {
		KubernetesVersion string `json:"kubernetesVersion"`
	}
	if err := yaml.Unmarshal([]byte(cm.Data["ClusterConfiguration"]), &cc); err != nil {
		return "", fmt.Errorf("kube-system/kubeadm-config: %w", err)
	}
	return cc.KubernetesVersion, nil
}

// upgradeConfigPath is where the rendered UpgradeConfiguration sits among
// the artifacts (Artifacts.WithUpgrade adds it).
const upgradeConfigPath = "cluster/upgrade.yaml"

// shVar reads a variable prepare.sh sets (NAME='value').
func shVar(script, name string) string {
	m := regexp.MustCompile(`(?m)^` + name + `='([^']*)'$`).FindStringSubmatch(script)
	if m == nil {
		return ""
	}
	return m[1]
}

// linuxUpgradeScriptFor is the script that gives a Linux node the new
// kubeadm (from the bundle the node has, its sha256 checked, or from the
// minor's Debian repository, as prepare.sh installs it) and runs kubeadm
// upgrade mode ("apply" or "node") with the UpgradeConfiguration.
func linuxUpgradeScriptFor(up UpgradeDeps, node, mode, prepare string) (string, error) {
	var b strings.Builder
	q := render.ShQuote
	fmt.Fprintf(&b, "#!/usr/bin/env bash\n# Upgrades kubeadm on %s to %s and runs kubeadm upgrade %s; rendered by hybridctl upgrade.\nset -euo pipefail\n", node, up.To, mode)
	fmt.Fprintf(&b, "VERSION=%s\n", q(up.To))
	b.WriteString("die() { printf 'upgrade.sh: %s\\n' \"$*\" >&2; exit 1; }\n")
	if up.Bundle {
		dir, bin := shVar(prepare, "BUNDLE_DIR"), shVar(prepare, "KUBEADM_BIN")
		if dir == "" || bin == "" {
			return "", fmt.Errorf("nodes/%s/prepare.sh names no bundle kubeadm (BUNDLE_DIR, KUBEADM_BIN)", node)
		}
		fmt.Fprintf(&b, "BUNDLE_DIR=%s\nKUBEADM_BIN=%s\n", q(dir), q(bin))
		b.WriteString(`want=$(awk -v f="$KUBEADM_BIN" '$2 == f || $2 == "*" f { print $1 }' "$BUNDLE_DIR/SHA256SUMS")
[[ -n "$want" ]] || die "$KUBEADM_BIN is not in $BUNDLE_DIR/SHA256SUMS: run hybridctl upgrade with the new version's bundle"
got=$(sha256sum <"$BUNDLE_DIR/$KUBEADM_BIN" | cut -d' ' -f1)
[[ "$got" == "$want" ]] || die "$BUNDLE_DIR/$KUBEADM_BIN does not match its sha256"
install -m 755 "$BUNDLE_DIR/$KUBEADM_BIN" /usr/bin/kubeadm.new
mv -f /usr/bin/kubeadm.new /usr/bin/kubeadm
`)
	} else {
		fmt.Fprintf(&b, "APT_REPO=%s\n", q(up.AptRepo))
		b.WriteString(`printf 'deb [signed-by=/etc/apt/keyrings/kubernetes-apt-keyring.gpg] %s /\n' "$APT_REPO" >/etc/apt/sources.list.d/kubernetes.list
apt-get update -qq
apt-get install -y -qq --allow-change-held-packages "kubeadm=${VERSION#v}-*" >/dev/null
apt-mark hold kubeadm >/dev/null
`)
	}
	b.WriteString(`got=$(kubeadm version -o short)
[[ "$got" == "$VERSION" ]] || die "kubeadm is $got after its upgrade, not $VERSION"
`)
	if mode == "apply" {
		b.WriteString("kubeadm upgrade apply --config " + linuxUpgradeConfig + " --yes\n")
	} else {
		b.WriteString("kubeadm upgrade node --config " + linuxUpgradeConfig + "\n")
	}
	fmt.Fprintf(&b, "printf '%s%%s\\n' %s\n", upgradedKubeadm, q(node))
	return b.String(), nil
}

// windowsBinaries are the bundle's paths of a Windows node's binaries.
type windowsBinaries struct{ Kubeadm, Kubelet, Containerd string }

// windowsUpgradeScript is the PowerShell that upgrades a drained Windows
// worker: the new kubeadm.exe (from C:\k\bundle with its sha256 checked,
// or from dl.k8s.io with the sha256 published beside it), kubeadm upgrade
// node, the kubelet service (nssm) stopped, kubelet.exe replaced (the old
// one kept as kubelet.exe.old, for a rollback), flags the new version
// removed taken out of StartKubelet.ps1 (--pod-infra-container-image,
// removed from the kubelet in v1.35), the service started.
func windowsUpgradeScript(up UpgradeDeps, node string, w windowsBinaries) string {
	q := transport.PSQuote
	var b strings.Builder
	fmt.Fprintf(&b, "# Upgrades the kubelet and kubeadm of %s to %s; sent by hybridctl upgrade.\n", node, up.To)
	b.WriteString("$ErrorActionPreference = 'Stop'\n")
	fmt.Fprintf(&b, "$Version = %s\n", q(up.To))
	if up.Bundle {
		b.WriteString(`$BundleDir = 'C:\k\bundle'
$Sums = Get-Content -LiteralPath (Join-Path $BundleDir 'SHA256SUMS')
function Get-New([string] $File, [string] $Dest) {
    $want = $null
    foreach ($line in $Sums) {
        $f = $line -split '\s+'
        if ($f.Count -ge 2 -and ($f[1] -eq $File -or $f[1] -eq "*$File")) { $want = $f[0].ToLowerInvariant() }
    }
    if ($null -eq $want) { throw "$File is not in the bundle's SHA256SUMS: run hybridctl upgrade with the new version's bundle" }
    $src = Join-Path $BundleDir $File
    $got = (Get-FileHash -LiteralPath $src -Algorithm SHA256).Hash.ToLowerInvariant()
    if ($got -ne $want) { throw "$src does not match its sha256" }
    Copy-Item -LiteralPath $src -Destination $Dest -Force
}
`)
		fmt.Fprintf(&b, "$KubeadmSrc = %s\n$KubeletSrc = %s\n", q(w.Kubeadm), q(w.Kubelet))
		if up.Containerd != "" {
			fmt.Fprintf(&b, "$ContainerdSrc = %s\n", q(w.Containerd))
		}
	} else {
		// Each file is checked against the sha256 its publisher puts beside
		// it: dl.k8s.io a .sha256, containerd's releases a .sha256sum.
		b.WriteString(`function Get-Published([string] $Url, [string] $SumUrl, [string] $Dest) {
    Invoke-WebRequest -UseBasicParsing -Uri $Url -OutFile $Dest
    $sum = Invoke-WebRequest -UseBasicParsing -Uri $SumUrl
    $text = if ($sum.Content -is [byte[]]) { [Text.Encoding]::ASCII.GetString($sum.Content) } else { [string] $sum.Content }
    $want = ($text.Trim() -split '\s+')[0].ToLowerInvariant()
    $got = (Get-FileHash -LiteralPath $Dest -Algorithm SHA256).Hash.ToLowerInvariant()
    if ($got -ne $want) { Remove-Item -LiteralPath $Dest -Force; throw "$Url does not match its published sha256" }
}
function Get-New([string] $File, [string] $Dest) {
    $url = "https://dl.k8s.io/$Version/bin/windows/amd64/$File"
    Get-Published $url "$url.sha256" $Dest
}
$KubeadmSrc = 'kubeadm.exe'
$KubeletSrc = 'kubelet.exe'
`)
		if up.Containerd != "" {
			b.WriteString(`function Get-Containerd([string] $Dest) {
    $url = "https://github.com/containerd/containerd/releases/download/v$ContainerdVersion/containerd-$ContainerdVersion-windows-amd64.tar.gz"
    Get-Published $url "$url.sha256sum" $Dest
}
`)
		}
	}
	if up.Containerd != "" {
		fmt.Fprintf(&b, "$ContainerdVersion = %s\n", q(strings.TrimPrefix(up.Containerd, "v")))
		b.WriteString(`$ContainerdDir = Join-Path $env:ProgramFiles 'containerd'
$ContainerdExe = Join-Path $ContainerdDir 'containerd.exe'
$have = (& $ContainerdExe --version) -join ' '
$NewContainerd = $have -notmatch ('\sv' + [regex]::Escape($ContainerdVersion) + '(\s|$)')
`)
	}
	b.WriteString(`Write-Host "==> kubeadm.exe $Version"
Get-New $KubeadmSrc 'C:\k\kubeadm.exe.new'
Move-Item -LiteralPath 'C:\k\kubeadm.exe.new' -Destination 'C:\k\kubeadm.exe' -Force
$got = (& 'C:\k\kubeadm.exe' version -o short)
if ($got -ne $Version) { throw "kubeadm.exe is $got after its upgrade, not $Version" }
`)
	b.WriteString(transport.NativeCommand(windowsKubeadm, "upgrade", "node") + "\n")
	b.WriteString(`Write-Host "==> kubelet.exe $Version (the old one kept as C:\k\kubelet.exe.old)"
Get-New $KubeletSrc 'C:\k\kubelet.exe.new'
Stop-Service -Name kubelet
Copy-Item -LiteralPath 'C:\k\kubelet.exe' -Destination 'C:\k\kubelet.exe.old' -Force
Move-Item -LiteralPath 'C:\k\kubelet.exe.new' -Destination 'C:\k\kubelet.exe' -Force
`)
	if up.Containerd != "" {
		get := "Get-New $ContainerdSrc $tgz"
		if !up.Bundle {
			get = "Get-Containerd $tgz"
		}
		b.WriteString(`if ($NewContainerd) {
    # The node is drained and its kubelet stopped. A running shim's binary
    # cannot be replaced, so containerd and every shim stop first (the
    # DaemonSet pods left on the node restart with the kubelet);
    # config.toml is kept (Install-Containerd.ps1 would rewrite it from
    # containerd's defaults).
    Write-Host "==> containerd $ContainerdVersion (was: $have)"
    $tgz = 'C:\k\containerd.tar.gz.new'
    ` + get + `
    Stop-Service -Name containerd -Force
    Get-Process -Name 'containerd-shim-runhcs-v1' -ErrorAction SilentlyContinue | Stop-Process -Force
    $deadline = (Get-Date).AddMinutes(2)
    while (Get-Process -Name 'containerd-shim-runhcs-v1' -ErrorAction SilentlyContinue) {
        if ((Get-Date) -gt $deadline) { throw 'containerd-shim-runhcs-v1 still runs 2 minutes after it was stopped' }
        Start-Sleep -Seconds 1
    }
    Invoke-Native 'tar.exe' @('-x', '-f', $tgz, '--strip-components', '1', '-C', $ContainerdDir)
    Remove-Item -LiteralPath $tgz -Force
    Start-Service -Name containerd
    $got = (& $ContainerdExe --version) -join ' '
    if ($got -notmatch ('\sv' + [regex]::Escape($ContainerdVersion) + '(\s|$)')) { throw "containerd is $got after its upgrade, not v$ContainerdVersion" }
}
`)
	}
	b.WriteString(`$start = 'C:\k\StartKubelet.ps1'
if (Test-Path -LiteralPath $start) {
    $text = Get-Content -LiteralPath $start -Raw
    $new = $text -replace '\s*--pod-infra-container-image[= ]\S+', ''
    if ($new -ne $text) { Set-Content -LiteralPath $start -Value $new -NoNewline }
}
Start-Service -Name kubelet
`)
	fmt.Fprintf(&b, "Write-Output (%s + %s)\n", q(upgradedWindows), q(node))
	return b.String()
}
