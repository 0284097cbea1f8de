package render

import (
	"bytes"
	"fmt"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/hybridctl/hybridctl/internal/bundle"
	"github.com/hybridctl/hybridctl/internal/plan"
	"github.com/hybridctl/hybridctl/internal/spec"
)

// SigWindowsToolsCommit pins the sig-windows-tools scripts prepare.ps1
// downloads (the guide advises a link to a commit rather than master).
const SigWindowsToolsCommit = "401ee6fcd8369cd8c293bd361275fdbe6f24ed07"

// Default script URLs and their SHA256 at SigWindowsToolsCommit.
const (
	DefaultInstallContainerdURL    = "https://raw.githubusercontent.com/kubernetes-sigs/sig-windows-tools/" + SigWindowsToolsCommit + "/hostprocess/Install-Containerd.ps1"
	DefaultInstallContainerdSHA256 = "34AB189F73283AC346C86D1C0C6E8D4C7ED567E5720CC1E20B497FB7033C50BD"
	DefaultPrepareNodeURL          = "https://raw.githubusercontent.com/kubernetes-sigs/sig-windows-tools/" + SigWindowsToolsCommit + "/hostprocess/PrepareNode.ps1"
	DefaultPrepareNodeSHA256       = "5FB75BB136B83BE01BAE3225E0DDF7120647626D3C794BC9BAF6D718DCC0C4D8"
)

// NSSMZipSHA256 is the sha256 of nssm 2.24's release zip (nssm.cc's
// nssm-2.24.zip, as the Chocolatey package nssm and Bazel http_archive
// rules pin it), which the Kubernetes project's mirror PrepareNode.ps1
// downloads from (NSSMZipURL) holds. nssm publishes no checksum file: in
// upstream mode prepare.ps1 checks the download against this value.
const NSSMZipSHA256 = "727d1e42275c605e0f04aba98095c38a8e1e46def453cdffce42869428aa6743"

// NSSMZipURL is where PrepareNode.ps1 downloads nssm from.
const NSSMZipURL = "https://k8stestinfrabinaries.blob.core.windows.net/nssm-mirror/nssm-2.24.zip"

// UpstreamDownload is a file sig-windows-tools' scripts download on a
// Windows node (packages.source upstream), with where its sha256 comes
// from: SumsURL, the checksum file its release publishes beside it, or
// SHA256, pinned in hybridctl.
type UpstreamDownload struct {
	URL     string
	SumsURL string
	SHA256  string
}

// UpstreamDownloads lists, in the order the scripts fetch them, the URLs
// Install-Containerd.ps1 and PrepareNode.ps1 at SigWindowsToolsCommit
// download for the plan's versions, spelt as the scripts spell them:
// Install-Containerd.ps1's DownloadFile of
// github.com/containerd/containerd/releases/download/v${ContainerDVersion}/containerd-${ContainerDVersion}-windows-amd64.tar.gz
// (containerd publishes a .sha256sum beside each archive) and of
// github.com/kubernetes-sigs/cri-tools/releases/download/v$crictlVersion/crictl-v$crictlVersion-windows-amd64.tar.gz
// (.sha256); PrepareNode.ps1's dl.k8s.io/$KubernetesVersion/bin/windows/amd64/kubelet.exe
// and kubeadm.exe, the version with its "v" (dl.k8s.io publishes .sha256),
// and the nssm zip (pinned, NSSMZipSHA256).
func UpstreamDownloads(p *plan.Plan) []UpstreamDownload {
	v := p.Versions
	k8s := "v" + strings.TrimPrefix(v.Kubernetes, "v")
	ctrd := "https://github.com/containerd/containerd/releases/download/v" + v.Containerd + "/containerd-" + v.Containerd + "-windows-amd64.tar.gz"
	crictl := "https://github.com/kubernetes-sigs/cri-tools/releases/download/v" + v.Crictl + "/crictl-v" + v.Crictl + "-windows-amd64.tar.gz"
	kubelet := "https://dl.k8s.io/" + k8s + "/bin/windows/amd64/kubelet.exe"
	kubeadm := "https://dl.k8s.io/" + k8s + "/bin/windows/amd64/kubeadm.exe"
	return []UpstreamDownload{
		{URL: ctrd, SumsURL: ctrd + ".sha256sum"},
		{URL: crictl, SumsURL: crictl + ".sha256"},
		{URL: kubelet, SumsURL: kubelet + ".sha256"},
		{URL: kubeadm, SumsURL: kubeadm + ".sha256"},
		{URL: NSSMZipURL, SHA256: NSSMZipSHA256},
	}
}

// runtimeClass renders one RuntimeClass for one Windows build (guide:
// "Taint, RuntimeClass and Linux DaemonSets").
func runtimeClass(rc plan.RuntimeClass) ([]byte, error) {
	obj := nodev1.RuntimeClass{
		TypeMeta:   typeMeta("node.k8s.io/v1", "RuntimeClass"),
		ObjectMeta: metav1.ObjectMeta{Name: rc.Name},
		Handler:    rc.Handler,
		Scheduling: &nodev1.Scheduling{
			NodeSelector: map[string]string{
				"kubernetes.io/os":                 "windows",
				"kubernetes.io/arch":               "amd64",
				"node.kubernetes.io/windows-build": rc.Build,
			},
			Tolerations: []corev1.Toleration{{
				Key: plan.WindowsTaintKey, Operator: corev1.TolerationOpEqual, Value: plan.WindowsTaintValue, Effect: corev1.TaintEffectNoSchedule,
			}},
		},
	}
	header := comment(
		fmt.Sprintf("RuntimeClass for %s (build %s, images tagged %s), rendered by hybridctl.", rc.Release, rc.Build, rc.ImageTag),
		"Nodes: "+joinComma(rc.Nodes)+".",
	)
	return yamlDocs(header, obj)
}

// kubeProxyWindows renders the kube-proxy DaemonSet for Windows as the guide
// applies it: sig-windows-tools hostprocess/calico/kube-proxy/kube-proxy.yml
// (at SigWindowsToolsCommit) with KUBE_PROXY_VERSION replaced by the cluster
// version, built from k8s.io/api types.
func kubeProxyWindows(p *plan.Plan) ([]byte, error) {
	hostProcess := true
	system := `NT AUTHORITY\system`
	labels := map[string]string{"k8s-app": "kube-proxy-windows"}
	ds := appsv1.DaemonSet{
		TypeMeta: typeMeta("apps/v1", "DaemonSet"),
		ObjectMeta: metav1.ObjectMeta{
			Name: "kube-proxy-windows", Namespace: "kube-system",
			Labels: map[string]string{"k8s-app": "kube-proxy"},
		},
		Spec: appsv1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					// Not in sig-windows-tools' manifest: the guide's rule "os.name is
					// worth setting always" (the API then checks Windows rules, and
					// hybridctl doctor's HC103 has nothing to say).
					OS:                 &corev1.PodOS{Name: corev1.Windows},
					ServiceAccountName: "kube-proxy",
					SecurityContext: &corev1.PodSecurityContext{WindowsOptions: &corev1.WindowsSecurityContextOptions{
						HostProcess: &hostProcess, RunAsUserName: &system,
					}},
					HostNetwork: true,
					Containers: []corev1.Container{{
						Name:       "kube-proxy",
						Image:      p.KubeProxy.WindowsImage,
						Args:       []string{"$env:CONTAINER_SANDBOX_MOUNT_POINT/kube-proxy/start.ps1"},
						WorkingDir: "$env:CONTAINER_SANDBOX_MOUNT_POINT/kube-proxy/",
						// Not upstream's Always: the tag names the cluster's
						// version, so one pull per node and version is enough,
						// and a restart does not depend on Docker Hub (its
						// rate limits) or on the tag not having moved.
						ImagePullPolicy: corev1.PullIfNotPresent,
						Env: []corev1.EnvVar{
							{Name: "NODENAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "spec.nodeName"}}},
							{Name: "POD_IP", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "status.podIP"}}},
						},
						VolumeMounts: []corev1.VolumeMount{{MountPath: "/var/lib/kube-proxy", Name: "kube-proxy"}},
					}},
					NodeSelector: map[string]string{"kubernetes.io/os": "windows"},
					Tolerations: []corev1.Toleration{
						{Key: "CriticalAddonsOnly", Operator: corev1.TolerationOpExists},
						{Operator: corev1.TolerationOpExists},
					},
					Volumes: []corev1.Volume{{
						Name:         "kube-proxy",
						VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "kube-proxy"}}},
					}},
				},
			},
			// Not upstream's RollingUpdate: start.ps1 deletes every HNS
			// policy list when it starts, so a node's Services route
			// nowhere until the new pod has rebuilt them. hybridctl
			// restarts each node's pod itself: upgrade while the node is
			// drained, apply one node at a time.
			UpdateStrategy: appsv1.DaemonSetUpdateStrategy{Type: appsv1.OnDeleteDaemonSetStrategyType},
		},
	}
	header := comment(
		"kube-proxy for Windows nodes (HostProcess, kernelspace mode), rendered by hybridctl.",
		"Guide: \"kube-proxy for Windows\": sig-windows-tools hostprocess/calico/kube-proxy/kube-proxy.yml",
		"at "+SigWindowsToolsCommit+" with KUBE_PROXY_VERSION = "+p.KubernetesVersion+".",
		"It borrows kubeadm's kube-proxy ServiceAccount and ConfigMap (the kubeconfig) in kube-system.",
	)
	return yamlDocs(header, ds)
}

// ps1Data is what prepare.ps1.tmpl reads.
type ps1Data struct {
	Plan                    *plan.Plan
	Node                    plan.Node
	NTPPeers                string
	InstallContainerdURL    string
	InstallContainerdSHA256 string
	PrepareNodeURL          string
	PrepareNodeSHA256       string
	// Downloads are what the upstream scripts download (upstream mode).
	Downloads []UpstreamDownload
	// Hosts are containerd's certs.d directories (private registry only).
	Hosts    []hostsFile
	CertsDir string
	// Bundle is set with packages.source bundle: the node installs from
	// the files bundle-upload put in WindowsBundleDir, and the upstream
	// scripts (which download) are not used.
	Bundle *bundlePs
}

func (r *renderer) windowsPrepare(n plan.Node) ([]byte, error) {
	d := ps1Data{
		Plan: r.plan, Node: n, NTPPeers: ntpPeers(r.plan.NodeNetwork.NTPServers),
		Hosts: containerdHosts(r.plan, WindowsCertsDir, `\`), CertsDir: WindowsCertsDir,
	}
	if r.plan.PackagesSource == spec.SourceBundle {
		files, err := WindowsBundleOf(r.plan)
		if err != nil {
			return nil, fmt.Errorf("node %s: prepare.ps1: %w", n.Name, err)
		}
		d.Bundle = &bundlePs{Dir: WindowsBundleDir, Sums: BundleSumsFile, Files: files,
			NSSMExe: bundle.NSSMExeInZip, StartKubelet: StartKubeletScript(n.Name)}
	} else {
		d.InstallContainerdURL, d.InstallContainerdSHA256 = r.opts.InstallContainerdURL, r.opts.InstallContainerdSHA256
		d.PrepareNodeURL, d.PrepareNodeSHA256 = r.opts.PrepareNodeURL, r.opts.PrepareNodeSHA256
		d.Downloads = UpstreamDownloads(r.plan)
	}
	var buf bytes.Buffer
	if err := r.tmpl.ExecuteTemplate(&buf, "prepare.ps1.tmpl", d); err != nil {
		return nil, fmt.Errorf("node %s: prepare.ps1: %w", n.Name, err)
	}
	// Windows PowerShell 5.1 reads a script without a BOM as the ANSI code
	// page; the rendered script is ASCII unless a value is not, so CRLF line
	// ends and a UTF-8 BOM make it read the same everywhere.
	out := append([]byte{0xEF, 0xBB, 0xBF}, bytes.ReplaceAll(buf.Bytes(), []byte("\n"), []byte("\r\n"))...)
	return out, nil
}

// StartKubeletScript is C:\k\StartKubelet.ps1 of a Windows node whose
// packages come from a bundle: the wrapper the kubelet service (nssm) runs
// at every start. It is what sig-windows-tools' PrepareNode.ps1 writes (at
// SigWindowsToolsCommit, for Kubernetes 1.27 and later: the same permanent
// flags) without its Invoke-Expression: the flags kubeadm join wrote to
// kubeadm-flags.env are split on white space (as systemd splits
// $KUBELET_KUBEADM_ARGS on Linux) and passed as arguments, so nothing in
// the file is run as PowerShell. Re-read at every start, they follow
// kubeadm join and upgrades.
func StartKubeletScript(nodeName string) string {
	return `# C:\k\StartKubelet.ps1: the kubelet service (nssm) runs this at every start.
# Rendered by hybridctl for ` + oneLine(nodeName) + ` (packages.source bundle): the wrapper
# sig-windows-tools' PrepareNode.ps1 writes, without Invoke-Expression. The
# kubelet gets the flags kubeadm join wrote to kubeadm-flags.env, then the
# permanent ones of a Windows node (no cgroups, DNS through HNS).
$envFile = 'C:\var\lib\kubelet\kubeadm-flags.env'
$line = Get-Content -LiteralPath $envFile -ErrorAction Stop | Where-Object { $_ -like 'KUBELET_KUBEADM_ARGS=*' } | Select-Object -First 1
if ($null -eq $line) {
    Write-Error "$envFile has no KUBELET_KUBEADM_ARGS line (kubeadm join writes it)"
    exit 1
}
$kubeadmFlags = @($line.Substring('KUBELET_KUBEADM_ARGS='.Length).Trim().Trim('"') -split '\s+' | Where-Object { $_ -ne '' })
$flags = $kubeadmFlags + @(
    "--cert-dir=$env:SystemDrive\var\lib\kubelet\pki",
    '--config=/var/lib/kubelet/config.yaml',
    '--bootstrap-kubeconfig=/etc/kubernetes/bootstrap-kubelet.conf',
    '--kubeconfig=/etc/kubernetes/kubelet.conf',
    ` + PsQuote("--hostname-override="+nodeName) + `,
    '--enable-debugging-handlers',
    '--cgroups-per-qos=false',
    '--enforce-node-allocatable=',
    '--resolv-conf='
)
& 'C:\k\kubelet.exe' @flags
exit $LASTEXITCODE
`
}

// ntpPeers is w32tm's /manualpeerlist: each server with the 0x8 (client
// mode) flag, space separated.
func ntpPeers(servers []string) string {
	var b bytes.Buffer
	for i, s := range servers {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(s + ",0x8")
	}
	return b.String()
}

func joinComma(s []string) string {
	var b bytes.Buffer
	for i, x := range s {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(x)
	}
	return b.String()
}
