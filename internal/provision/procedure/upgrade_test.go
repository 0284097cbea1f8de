package procedure

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/hybridctl/hybridctl/internal/plan"
	"github.com/hybridctl/hybridctl/internal/provision/engine"
	"github.com/hybridctl/hybridctl/internal/provision/transport"
	"github.com/hybridctl/hybridctl/internal/pwshtest"
	"github.com/hybridctl/hybridctl/internal/render"
	"github.com/hybridctl/hybridctl/internal/spec"
	"github.com/hybridctl/hybridctl/internal/testenv"
)

func kubelet(name, version string, ready bool) corev1.Node {
	st := corev1.ConditionTrue
	if !ready {
		st = corev1.ConditionFalse
	}
	n := corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}
	n.Status.NodeInfo.KubeletVersion = version
	n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: st}}
	return n
}

// TestCheckUpgrade: both sides of each limit: one minor up passes, two
// do not; a patch up passes, a downgrade (even a patch) does not; kubelets
// three minors older than the target pass, four do not; a kubelet newer
// than the target does not; a NotReady node refuses, or is skipped with
// allowNotReady.
func TestCheckUpgrade(t *testing.T) {
	ready := []corev1.Node{kubelet("cp", "v1.36.3", true), kubelet("w", "v1.34.0", true)}
	for _, tc := range []struct {
		name, server, target string
		nodes                []corev1.Node
		allow                bool
		want                 string // "" passes; else a part of the error
		skip                 []string
	}{
		{"one minor up", "v1.36.3", "v1.37.2", ready, false, "", nil},
		{"a patch up", "v1.37.0", "v1.37.2", []corev1.Node{kubelet("cp", "v1.37.0", true)}, false, "", nil},
		{"the same version", "v1.37.2", "v1.37.2", []corev1.Node{kubelet("cp", "v1.37.2", true)}, false, "", nil},
		{"two minors up", "v1.35.4", "v1.37.2", []corev1.Node{kubelet("cp", "v1.35.4", true)}, false, "more than one minor at once; upgrade to v1.36.x first", nil},
		{"a minor down", "v1.37.2", "v1.36.3", []corev1.Node{kubelet("cp", "v1.37.2", true)}, false, "a downgrade", nil},
		{"a patch down", "v1.37.2", "v1.37.1", []corev1.Node{kubelet("cp", "v1.37.2", true)}, false, "a downgrade", nil},
		{"a kubelet three minors older", "v1.36.3", "v1.37.2", []corev1.Node{kubelet("old", "v1.34.9", true)}, false, "", nil},
		{"a kubelet four minors older", "v1.36.3", "v1.37.2", []corev1.Node{kubelet("old", "v1.33.9", true)}, false, "node old runs kubelet v1.33.9, more than 3 minors older", nil},
		{"a kubelet newer than the target", "v1.36.3", "v1.37.2", []corev1.Node{kubelet("new", "v1.38.0", true)}, false, "newer than v1.37.2", nil},
		{"a NotReady node", "v1.36.3", "v1.37.2", []corev1.Node{kubelet("cp", "v1.36.3", true), kubelet("down", "v1.36.3", false)}, false, "node down is NotReady", nil},
		{"a NotReady node, allowed", "v1.36.3", "v1.37.2", []corev1.Node{kubelet("cp", "v1.36.3", true), kubelet("down", "v1.36.3", false)}, true, "", []string{"down"}},
		{"a version that is none", "v1.36.3", "v1.37.2", []corev1.Node{kubelet("odd", "banana", true)}, false, "not a version", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			skip, err := CheckUpgrade(tc.server, tc.target, tc.nodes, tc.allow)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.want != "" && (err == nil || !errors.Is(err, ErrUpgradeRefused) || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
			if strings.Join(skip, ",") != strings.Join(tc.skip, ",") {
				t.Errorf("skip %v, want %v", skip, tc.skip)
			}
		})
	}
}

// TestCheckContainerd: a Windows node, or a Linux node with a bundle,
// gets the spec's containerd in its step: a note names it when it differs,
// even below 2.0; with packages.source upstream a Linux node keeps its
// containerd, and one below what the new kubelet needs (2.0 from v1.36 on)
// refuses the upgrade while 2.0.0 passes; another runtime, or a version
// that is none, is left to doctor.
func TestCheckContainerd(t *testing.T) {
	node := func(name, os, runtime string) corev1.Node {
		n := kubelet(name, "v1.36.3", true)
		n.Status.NodeInfo.ContainerRuntimeVersion = runtime
		n.Status.NodeInfo.OperatingSystem = os
		return n
	}
	for _, tc := range []struct {
		name, target, want string
		bundle             bool
		nodes              []corev1.Node
		refused, noted     string
	}{
		{"as the spec", "v1.37.2", "2.2.2", true, []corev1.Node{node("a", "linux", "containerd://2.2.2"), node("w", "windows", "containerd://2.2.2")}, "", ""},
		{"the spec's with a v", "v1.37.2", "v2.2.2", false, []corev1.Node{node("w", "windows", "containerd://2.2.2")}, "", ""},
		{"Windows, another version", "v1.37.2", "2.2.2", false, []corev1.Node{node("w", "windows", "containerd://2.1.4")}, "", "node w runs containerd 2.1.4: its step installs containerd 2.2.2"},
		{"Windows below 2.0", "v1.37.2", "2.2.2", false, []corev1.Node{node("w", "windows", "containerd://1.7.24")}, "", "node w runs containerd 1.7.24: its step installs containerd 2.2.2"},
		{"Linux bundle below 2.0", "v1.37.2", "2.2.2", true, []corev1.Node{node("a", "linux", "containerd://1.7.24")}, "", "node a runs containerd 1.7.24: its step installs"},
		{"Linux upstream, another 2.x", "v1.37.2", "2.2.2", false, []corev1.Node{node("a", "linux", "containerd://2.0.0")}, "", ""},
		{"Linux upstream below 2.0", "v1.37.2", "2.2.2", false, []corev1.Node{node("a", "linux", "containerd://2.2.2"), node("old", "linux", "containerd://1.7.24")}, "node old runs containerd 1.7.24, and the kubelet of v1.37.2 needs containerd 2.0 or newer", ""},
		{"Linux upstream below 2.0, a v1.35 kubelet", "v1.35.4", "1.7.24", false, []corev1.Node{node("old", "linux", "containerd://1.7.20")}, "", ""},
		{"another runtime", "v1.37.2", "2.2.2", true, []corev1.Node{node("c", "linux", "cri-o://1.37.0")}, "", ""},
		{"no version", "v1.37.2", "2.2.2", true, []corev1.Node{node("c", "linux", "containerd://banana")}, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			notes, err := CheckContainerd(tc.target, tc.want, tc.bundle, tc.nodes)
			switch {
			case tc.refused == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.refused != "" && (err == nil || !errors.Is(err, ErrUpgradeRefused) || !strings.Contains(err.Error(), tc.refused)):
				t.Fatalf("err = %v, want %q", err, tc.refused)
			}
			got := strings.Join(notes, "\n")
			if (tc.noted == "") != (got == "") || !strings.Contains(got, tc.noted) {
				t.Errorf("notes %q, want %q", got, tc.noted)
			}
		})
	}
}

// TestUpgradeScripts: the Linux script parses with bash -n in both
// modes and both package sources and installs kubeadm as prepare.sh would;
// the Windows script parses with the repository's PowerShell checker.
func TestUpgradeScripts(t *testing.T) {
	p := labPlan(t)
	files, err := render.Render(p, render.Options{})
	if err != nil {
		t.Fatal(err)
	}
	a := ArtifactsOf(files)
	prep, err := a.get("nodes/k8s-lab-node-1/prepare.sh")
	if err != nil {
		t.Fatal(err)
	}
	bundlePrepare := "BUNDLE_DIR='/var/cache/hybridctl/bundle'\nKUBEADM_BIN='linux-amd64/kubeadm'\n"
	var ps []pwshtest.Script
	for _, bundle := range []bool{false, true} {
		up := UpgradeDeps{To: "v1.37.2", Bundle: bundle, AptRepo: p.KubernetesAptRepo}
		for _, mode := range []string{"apply", "node"} {
			script, err := linuxUpgradeScriptFor(up, "k8s-lab-node-1", mode, map[bool]string{false: string(prep.Data), true: bundlePrepare}[bundle])
			if err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(t.TempDir(), "upgrade.sh")
			if err := os.WriteFile(path, []byte(script), 0o600); err != nil {
				t.Fatal(err)
			}
			if out, err := exec.Command("bash", "-n", path).CombinedOutput(); err != nil {
				t.Errorf("bundle %v, %s: bash -n: %v\n%s\n%s", bundle, mode, err, out, script)
			}
			for _, want := range []string{"kubeadm upgrade " + mode + " --config " + linuxUpgradeConfig, "VERSION='v1.37.2'", upgradedKubeadm} {
				if !strings.Contains(script, want) {
					t.Errorf("bundle %v, %s: no %q in\n%s", bundle, mode, want, script)
				}
			}
			if bundle && !strings.Contains(script, `install -m 755 "$BUNDLE_DIR/$KUBEADM_BIN" /usr/bin/kubeadm.new`) {
				t.Errorf("bundle: kubeadm not from the bundle:\n%s", script)
			}
			if !bundle && !strings.Contains(script, "APT_REPO='https://pkgs.k8s.io/core:/stable:/v1.37/deb/'") {
				t.Errorf("apt: not the new minor's repository:\n%s", script)
			}
		}
		if _, err := linuxUpgradeScriptFor(UpgradeDeps{To: "v1.37.2", Bundle: true}, "n", "node", "no variables"); err == nil {
			t.Error("a bundle upgrade from a prepare.sh without the bundle's kubeadm: no error")
		}
		bins := windowsBinaries{Kubeadm: "windows-amd64/kubeadm.exe", Kubelet: "windows-amd64/kubelet.exe", Containerd: "windows-amd64/containerd-2.2.2-windows-amd64.tar.gz"}
		w := windowsUpgradeScript(up, "k8s-lab-win-1", bins)
		for _, want := range []string{"Invoke-Native 'C:\\k\\kubeadm.exe' @('upgrade', 'node')", "kubelet.exe.old", "Stop-Service -Name kubelet", "--pod-infra-container-image"} {
			if !strings.Contains(w, want) {
				t.Errorf("Windows, bundle %v: no %q", bundle, want)
			}
		}
		if strings.Contains(w, "containerd") {
			t.Errorf("Windows, bundle %v, no containerd version: the script touches containerd:\n%s", bundle, w)
		}
		up.Containerd = "v2.2.2"
		wc := windowsUpgradeScript(up, "k8s-lab-win-1", bins)
		get := map[bool]string{false: "Get-Containerd $tgz", true: "Get-New $ContainerdSrc $tgz"}[bundle]
		// In order: the kubelet stopped, containerd and every shim stopped,
		// the new files, containerd started and checked, the kubelet
		// started; only when the node runs another version.
		at := 0
		for _, want := range []string{"$ContainerdVersion = '2.2.2'", "$NewContainerd = $have -notmatch", "Stop-Service -Name kubelet", "if ($NewContainerd) {", get,
			"Stop-Service -Name containerd -Force", "Get-Process -Name 'containerd-shim-runhcs-v1' -ErrorAction SilentlyContinue | Stop-Process -Force",
			"Invoke-Native 'tar.exe' @('-x', '-f', $tgz, '--strip-components', '1', '-C', $ContainerdDir)", "Start-Service -Name containerd",
			"after its upgrade, not v$ContainerdVersion", "Start-Service -Name kubelet"} {
			i := strings.Index(wc[at:], want)
			if i < 0 {
				t.Errorf("Windows, bundle %v, containerd: no %q after byte %d:\n%s", bundle, want, at, wc)
				break
			}
			at += i + len(want)
		}
		if bundle && !strings.Contains(wc, "$ContainerdSrc = 'windows-amd64/containerd-2.2.2-windows-amd64.tar.gz'") {
			t.Errorf("bundle: containerd not from the bundle:\n%s", wc)
		}
		if !bundle && !strings.Contains(wc, `"$url.sha256sum"`) {
			t.Errorf("upstream: containerd's published sha256 not checked:\n%s", wc)
		}
		if strings.Contains(wc, "config.toml'") || strings.Contains(wc, "config default") {
			t.Errorf("Windows: the containerd upgrade rewrites config.toml:\n%s", wc)
		}
		name := map[bool]string{false: "upgrade from dl.k8s.io", true: "upgrade from the bundle"}[bundle]
		ps = append(ps, pwshtest.Script{Name: name, Text: transport.WrapPowerShell(w)}, pwshtest.Script{Name: name + ", containerd", Text: transport.WrapPowerShell(wc)})
	}
	pwshtest.Check(t, ps...)
}

// TestUpgradeRefusesBeforeAnyHost: against the real API server (v1.37.2),
// an upgrade to v1.36 is a downgrade, refused before any host is
// contacted; to the server's own version with every node at it, nothing
// runs (the nodes are already there).
func TestUpgradeRefusesBeforeAnyHost(t *testing.T) {
	env := testenv.StartT(t, testenv.Options{})
	dir := t.TempDir()
	kc := filepath.Join(dir, "kubeconfig")
	cfg, err := clientcmd.LoadFromFile(env.KubeconfigPath())
	if err != nil {
		t.Fatal(err)
	}
	cfg.Contexts["lab"] = cfg.Contexts[cfg.CurrentContext]
	if err := clientcmd.WriteToFile(*cfg, kc); err != nil {
		t.Fatal(err)
	}
	var dialed atomic.Int32
	connect := func(ctx context.Context, host string) (*transport.Client, error) {
		dialed.Add(1)
		return nil, errors.New("no host may be contacted")
	}
	res, err := spec.LoadFile(context.Background(), "../../../examples/lab-linux-v1.36.yaml")
	if err != nil || res.Err() != nil {
		t.Fatalf("%v %v", err, res.Err())
	}
	p, err := plan.Derive(res.Cluster, res.Diagnostics)
	if err != nil {
		t.Fatal(err)
	}
	bundleDir := t.TempDir()
	_, err = Upgrade(context.Background(), UpgradeOptions{Options: Options{Plan: p, Kubeconfig: kc, Context: "lab", Connect: connect, BundleDir: bundleDir}})
	if !errors.Is(err, ErrUpgradeRefused) || !strings.Contains(err.Error(), "a downgrade") || dialed.Load() != 0 {
		t.Fatalf("v1.36 on a v1.37 API server: %v (%d hosts dialed)", err, dialed.Load())
	}
	// The new version's bundle is checked before any host is contacted:
	// an empty directory is refused, naming what is missing.
	cur := planFile(t, "lab-linux.yaml")
	_, err = Upgrade(context.Background(), UpgradeOptions{Options: Options{Plan: cur, Kubeconfig: kc, Connect: connect, BundleDir: t.TempDir()}})
	if err == nil || errors.Is(err, ErrUpgradeRefused) || dialed.Load() != 0 {
		t.Fatalf("an empty bundle: %v (%d hosts dialed)", err, dialed.Load())
	}

	// Every node already at the server's version and Ready: each node
	// step is skipped as done (read from the Nodes, no state file), and
	// nothing fails although no host can be reached.
	cs, err := kubernetes.NewForConfig(env.AdminConfig())
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range cur.Nodes {
		node := kubelet(n.Name, cur.KubernetesVersion, true)
		node.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: n.Address}}
		created, err := cs.CoreV1().Nodes().Create(t.Context(), &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n.Name}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		created.Status = node.Status
		if _, err := cs.CoreV1().Nodes().UpdateStatus(t.Context(), created, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	dir2, _ := testBundle(t, "lab-linux.yaml")
	var skipped []string
	sum, err := Upgrade(context.Background(), UpgradeOptions{Options: Options{Plan: cur, Kubeconfig: kc, Connect: connect, BundleDir: dir2,
		Skip: []string{"bundle-upload", "calico", "calico-ready", "kube-proxy-windows"},
		Reporter: func([]engine.Descriptor) engine.Reporter {
			return engine.ReporterFunc(func(e engine.Event) {
				if e.Type == engine.EventSkip && strings.HasPrefix(e.Phase, "upgrade-") {
					skipped = append(skipped, e.Host+": "+e.Reason)
				}
			})
		}}})
	if err != nil || sum.Done != 0 || len(skipped) != len(cur.Nodes) {
		t.Fatalf("all at the version: %+v %v, skipped %q", sum, err, skipped)
	}
	for _, s := range skipped {
		if !strings.HasSuffix(s, "kubelet "+cur.KubernetesVersion+" already") {
			t.Errorf("skip reason %q", s)
		}
	}
}
