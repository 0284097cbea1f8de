package render

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
)

// PublicSite matches the public registries and download sites an
// air-gapped site cannot reach.
var PublicSite = regexp.MustCompile(`pkgs\.k8s\.io|dl\.k8s\.io|github\.com|raw\.githubusercontent\.com|registry\.k8s\.io|docker\.io|quay\.io|mcr\.microsoft\.com`)

// publicSiteLines returns every line of the files that names a public
// site other than as a containerd mirror directory name.
func publicSiteLines(files map[string]File) []string {
	var out []string
	for path, f := range files {
		for i, line := range strings.Split(string(f.Data), "\n") {
			if PublicSite.MatchString(certsDirMention.ReplaceAllString(line, "")) {
				out = append(out, fmt.Sprintf("%s:%d: %s", path, i+1, strings.TrimSpace(line)))
			}
		}
	}
	sort.Strings(out)
	return out
}

// TestOfflineRenderNamesNoPublicSite: a spec with a private registry and a
// bundle (Linux only, and the hybrid lab with add-ons) renders no file that
// names a public registry or download site
// (except as a mirror directory); the guide's lab, upstream, names them on
// many lines, so the grep can fail.
func TestOfflineRenderNamesNoPublicSite(t *testing.T) {
	if got := publicSiteLines(mustRender(t, labPlan(t), Options{})); len(got) < 10 {
		t.Fatalf("the upstream render names public sites on only %d lines; the grep is broken:\n%s", len(got), strings.Join(got, "\n"))
	}
	files := mustRender(t, labLinuxPlan(t), Options{})
	if got := publicSiteLines(files); len(got) > 0 {
		t.Errorf("lab-linux (registry and bundle) renders public sites:\n%s", strings.Join(got, "\n"))
	}
	// The hybrid lab with its add-ons: prepare.ps1 and the runbook's
	// add-on manifests too.
	if got := publicSiteLines(mustRender(t, labOfflinePlan(t), Options{})); len(got) > 0 {
		t.Errorf("the lab with a registry and a bundle renders public sites:\n%s", strings.Join(got, "\n"))
	}
	// A near miss: the same spec with packages from upstream names pkgs.k8s.io.
	p := labLinuxPlan(t)
	p.PackagesSource = "upstream"
	if got := publicSiteLines(mustRender(t, p, Options{})); len(got) == 0 {
		t.Error("lab-linux with packages.source upstream names no public site: the grep is broken")
	}
}

// TestBundlePrepare: in bundle mode prepare.sh checks the uploaded files
// with sha256sum -c and installs each from the bundle directory, never
// through apt-get or the network; upstream mode keeps apt and pkgs.k8s.io.
func TestBundlePrepare(t *testing.T) {
	p := labLinuxPlan(t)
	sh := string(mustRender(t, p, Options{})["nodes/k8s-lab-node-1/prepare.sh"].Data)
	b, err := LinuxBundleOf(p)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"BUNDLE_DIR='/var/cache/hybridctl/bundle'",
		"CONTAINERD_TGZ='linux-amd64/containerd-2.2.2-linux-amd64.tar.gz'",
		"RUNC_BIN='linux-amd64/runc.amd64'",
		"CNI_TGZ='linux-amd64/cni-plugins-linux-amd64-v1.10.0.tgz'",
		"CRICTL_TGZ='linux-amd64/crictl-v1.37.0-linux-amd64.tar.gz'",
		"KUBELET_BIN='linux-amd64/kubelet'", "KUBEADM_BIN='linux-amd64/kubeadm'", "KUBECTL_BIN='linux-amd64/kubectl'",
		"sha256sum --check --strict --quiet 'SHA256SUMS'",
		`tar -xzf "$BUNDLE_DIR/$CONTAINERD_TGZ"`,
		`install_file 755 /usr/local/sbin/runc <"$BUNDLE_DIR/$RUNC_BIN"`,
		`install_file 755 "/opt/cni/bin/${f##*/}"`,
		`install_file 755 /usr/local/bin/crictl`,
		`install_file 755 /usr/bin/kubelet <"$BUNDLE_DIR/$KUBELET_BIN"`,
		`install_file 755 /usr/bin/kubeadm <"$BUNDLE_DIR/$KUBEADM_BIN"`,
		`install_file 755 /usr/bin/kubectl <"$BUNDLE_DIR/$KUBECTL_BIN"`,
		"install_file 644 /usr/local/lib/systemd/system/containerd.service",
		"ExecStart=/usr/local/bin/containerd\n",
		"install_file 644 /usr/lib/systemd/system/kubelet.service ",
		"install_file 644 /usr/lib/systemd/system/kubelet.service.d/10-kubeadm.conf",
		"ExecStart=/usr/bin/kubelet $KUBELET_KUBECONFIG_ARGS $KUBELET_CONFIG_ARGS $KUBELET_KUBEADM_ARGS $KUBELET_EXTRA_ARGS\n",
		"EnvironmentFile=-/var/lib/kubelet/kubeadm-flags.env\n",
		`"$CONTAINERD" config default`,
		"for t in tar gzip sha256sum cmp install systemctl mount losetup cp nsenter ip; do",
		"for t in conntrack socat ethtool; do",
		"chrony is not installed and packages.source is bundle",
	} {
		if !strings.Contains(sh, want) {
			t.Errorf("bundle-mode prepare.sh lacks %q", want)
		}
	}
	for _, path := range b.Paths() {
		if !strings.Contains(sh, "'"+path+"'") {
			t.Errorf("prepare.sh does not install %s", path)
		}
	}
	// No package manager or download runs (the words may appear in
	// messages); the only URLs are the registry's and the units' documentation and licence.
	if m := regexp.MustCompile(`(?m)^[\t ]*(\|[\t ]*)?(apt-get|apt-mark|apt|curl|wget|gpg)\b.*`).FindString(sh); m != "" {
		t.Errorf("bundle-mode prepare.sh runs %q", m)
	}
	var urls []string
	for _, u := range regexp.MustCompile(`https?://[^\s'"]+`).FindAllString(sh, -1) {
		if u != "https://192.168.10.1:5000" { // the private registry, in hosts.toml
			urls = append(urls, u)
		}
	}
	sort.Strings(urls)
	if got, want := strings.Join(urls, " "), "http://www.apache.org/licenses/LICENSE-2.0 https://containerd.io https://kubernetes.io/docs/"; got != want {
		t.Errorf("bundle-mode prepare.sh names URLs %s, want %s", got, want)
	}
	if strings.Contains(sh, "APT_REPO") {
		t.Error("bundle-mode prepare.sh sets APT_REPO")
	}
	// The heredoc terminators stand alone on their lines.
	if n := strings.Count(sh, "\nUNIT\n"); n != 3 {
		t.Errorf("%d unit heredocs end with UNIT, want 3", n)
	}
	up := string(mustRender(t, labPlan(t), Options{})["nodes/k8s-lab-node-1/prepare.sh"].Data)
	for _, want := range []string{"apt-get install -y -qq containerd", "APT_REPO='https://pkgs.k8s.io/core:/stable:/v1.37/deb/'", `"kubelet=$pkg_version"`} {
		if !strings.Contains(up, want) {
			t.Errorf("upstream prepare.sh lacks %q", want)
		}
	}
	for _, bad := range []string{"BUNDLE_DIR", "sha256sum", "/usr/local/sbin/runc"} {
		if strings.Contains(up, bad) {
			t.Errorf("upstream prepare.sh contains %q", bad)
		}
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "prepare.sh")
	if err := os.WriteFile(path, []byte(sh), 0o644); err != nil {
		t.Fatal(err)
	}
	shellcheck(t, path)
}

// TestCgroupV1Kubelet: allowCgroupV1 (a container or an old kernel, which
// lacks CAP_SYS_RESOURCE) renders failCgroupV1 false and oomScoreAdj 0 in
// the cluster's KubeletConfiguration; without it neither is written.
func TestCgroupV1Kubelet(t *testing.T) {
	cfg := string(mustRender(t, labLinuxPlan(t), Options{})["cluster/kubeadm-config.yaml"].Data)
	for _, want := range []string{"\noomScoreAdj: 0\n", "\nfailCgroupV1: false\n", "- SystemVerification\n"} {
		if !strings.Contains(cfg, want) {
			t.Errorf("allowCgroupV1: kubeadm-config.yaml lacks %q", want)
		}
	}
	up := string(mustRender(t, labPlan(t), Options{})["cluster/kubeadm-config.yaml"].Data)
	for _, bad := range []string{"oomScoreAdj", "failCgroupV1", "SystemVerification"} {
		if strings.Contains(up, bad) {
			t.Errorf("without allowCgroupV1 kubeadm-config.yaml has %s", bad)
		}
	}
}
