package hostfacts_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/hybridctl/hybridctl/internal/hostfacts"
	"github.com/hybridctl/hybridctl/internal/hostfacts/hostfactstest"
	"github.com/hybridctl/hybridctl/internal/provision/engine"
	"github.com/hybridctl/hybridctl/internal/provision/transport"
)

// parseInstalled parses the installation script's sections, given as for
// installedOutput.
func parseInstalled(t *testing.T, s string) *hostfacts.Installed {
	t.Helper()
	f, err := hostfacts.ParseInstalled(hostfactstest.Sections(s), hostfactstest.Marker)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// installedOutput builds the installation script's sections, each "###
// NAME" and its content, and the end section.
func installedOutput(sections ...string) string {
	var b strings.Builder
	for i := 0; i+1 < len(sections); i += 2 {
		b.WriteString("### " + sections[i] + "\n" + sections[i+1])
		if !strings.HasSuffix(sections[i+1], "\n") {
			b.WriteByte('\n')
		}
	}
	return b.String() + "### end\n"
}

// ParseInstalled reads each program's version from what it prints, the
// files whole, the kernel settings and swap.
func TestParseInstalled(t *testing.T) {
	f := parseInstalled(t, installedOutput(
		"kubelet-conf", "present",
		"admin-conf", "",
		"kubelet-version", "Kubernetes v1.36.3",
		"kubeadm-version", "v1.37.2",
		"kubectl-version", "Client Version: v1.37.2",
		"containerd-version", "containerd github.com/containerd/containerd/v2 v2.2.2 a1b2c3",
		"containerd-config", "version = 3\n",
		"kubelet-config", "kind: KubeletConfiguration\n",
		"kubeadm-flags", "KUBELET_KUBEADM_ARGS=\"--container-runtime-endpoint=unix:///run/containerd/containerd.sock\"\n",
		"sysctl", "net.ipv4.ip_forward=1\nnet.bridge.bridge-nf-call-iptables=0\n",
		"swaps", "/swap.img file 4194300 0 -2\n",
	))
	if !f.KubeletConf || f.AdminConf || f.Kubelet != "v1.36.3" || f.Kubeadm != "v1.37.2" || f.Kubectl != "v1.37.2" || f.Containerd != "v2.2.2" {
		t.Errorf("parsed %+v", f)
	}
	if f.ContainerdConfig != "version = 3\n" || !strings.Contains(f.KubeadmFlags, "--container-runtime-endpoint") {
		t.Errorf("files %q %q", f.ContainerdConfig, f.KubeadmFlags)
	}
	if f.Sysctl["net.ipv4.ip_forward"] != "1" || f.Sysctl["net.bridge.bridge-nf-call-iptables"] != "0" || !f.Swap {
		t.Errorf("sysctl %v swap %v", f.Sysctl, f.Swap)
	}
	empty := parseInstalled(t, installedOutput("kubelet-version", "kubelet: command not found", "swaps", ""))
	if empty.Kubelet != "" || empty.Swap || empty.KubeletConf {
		t.Errorf("nothing installed: %+v", empty)
	}
	for in, want := range map[string]string{"Kubernetes v1.37.0-rc.1": "v1.37.0-rc.1", "1.2": "", "x v10.20.30 y": "v10.20.30"} {
		if got := parseInstalled(t, installedOutput("kubelet-version", in)).Kubelet; got != want {
			t.Errorf("the version in %q: %q, want %q", in, got, want)
		}
	}
}

// TestParseInstalledRefuses: output without this run's sections, without
// the end section, with the end section cut short, or with a section
// twice.
func TestParseInstalledRefuses(t *testing.T) {
	m := hostfactstest.Marker
	for _, tc := range []struct{ name, out, want string }{
		{"the old fixed marker", "### hybridctl kubelet-conf\npresent\n### hybridctl end\n", "no section"},
		{"no end section", hostfactstest.Sections("### kubelet-conf\npresent\n"), "ended early"},
		{"the end section cut short", hostfactstest.Sections("### kubelet-conf\npresent\n") + hostfacts.BeginLine(m, "end") + "\n", "ended early"},
		{"a section twice", hostfactstest.Sections("### swaps\n\n### swaps\n/swap\n### end\n"), `section "swaps" appears twice`},
	} {
		if _, err := hostfacts.ParseInstalled(tc.out, m); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
	}
	if _, err := hostfacts.ParseInstalled(hostfactstest.Sections("### end\n"), m); err != nil {
		t.Errorf("only the end section: %v", err)
	}
}

// GatherInstalled refuses output cut short (no end section), and names
// the host.
func TestGatherInstalledNeedsTheEndMarker(t *testing.T) {
	h := engine.Host{Name: "w1", OS: engine.Windows}
	ctx := context.Background()
	out := func(s string) func(time.Time) string { return func(time.Time) string { return s } }
	if _, err := hostfacts.GatherInstalled(ctx, hostfactstest.Runner{Out: out("### kubelet-conf\npresent\n")}, h); err == nil || !strings.Contains(err.Error(), "reading w1: the facts script ended early") {
		t.Errorf("no end section: %v", err)
	}
	if _, err := hostfacts.GatherInstalled(ctx, hostfactstest.Runner{Err: errors.New("exit 255")}, h); err == nil || !strings.Contains(err.Error(), "reading w1: exit 255") {
		t.Errorf("a failed script: %v", err)
	}
	f, err := hostfacts.GatherInstalled(ctx, hostfactstest.Runner{Out: out("### kubelet-conf\n\n### end\n")}, h)
	if err != nil || f.KubeletConf {
		t.Errorf("an empty section: %+v %v", f, err)
	}
}

// FuzzParseInstalled: whatever a host prints, ParseInstalled neither
// panics nor hangs, and what it reads is a whole Installed.
func FuzzParseInstalled(f *testing.F) {
	m := hostfactstest.Marker
	f.Add(hostfactstest.Sections(installedOutput("kubelet-version", "Kubernetes v1.36.3", "sysctl", "net.ipv4.ip_forward=1\n=x\nk=\n", "swaps", "/swap.img file 1 0 -2\n")))
	f.Add(hostfactstest.Sections("### kubelet-conf\npresent\n") + hostfacts.BeginLine(m, "end") + "\n")
	f.Add(hostfactstest.Sections(installedOutput("containerd-version", "containerd github.com/containerd/containerd/v2 v2.2.2", "kubectl-version", "v1.2.3-rc.1+x")))
	f.Fuzz(func(t *testing.T, out string) {
		in, err := hostfacts.ParseInstalled(out, m)
		if err != nil {
			return
		}
		if in.Sysctl == nil {
			t.Fatal("a nil sysctl map")
		}
		for _, v := range []string{in.Kubelet, in.Kubeadm, in.Kubectl, in.Containerd} {
			if v != "" && !strings.HasPrefix(v, "v") {
				t.Fatalf("version %q", v)
			}
		}
	})
}

// scripts records the scripts a Runner is given.
type scripts struct {
	hostfactstest.Runner
	ran *[]string
}

func (s scripts) Run(ctx context.Context, script string) (*transport.Result, error) {
	*s.ran = append(*s.ran, script)
	return s.Runner.Run(ctx, script)
}

// GatherInstalled runs the host's own OS's script.
func TestGatherInstalledScriptOfTheOS(t *testing.T) {
	out := func(time.Time) string { return "### end\n" }
	for _, h := range []engine.Host{{Name: "l", OS: engine.Linux}, {Name: "w", OS: engine.Windows}} {
		var ran []string
		if _, err := hostfacts.GatherInstalled(context.Background(), scripts{hostfactstest.Runner{Out: out}, &ran}, h); err != nil {
			t.Fatal(err)
		}
		windows := len(ran) == 1 && strings.Contains(ran[0], "$ErrorActionPreference") && strings.Contains(ran[0], `C:\k\kubelet.exe`)
		linux := len(ran) == 1 && strings.HasPrefix(ran[0], "set +e\n") && strings.Contains(ran[0], "kubelet --version")
		if windows != (h.OS == engine.Windows) || linux != (h.OS == engine.Linux) {
			t.Errorf("%s: ran %d scripts, the Windows one %v, the Linux one %v", h.OS, len(ran), windows, linux)
		}
	}
}
