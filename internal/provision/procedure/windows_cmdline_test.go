package procedure

import (
	"context"
	"path"
	"strings"
	"testing"
	"time"
	"unicode/utf16"

	"github.com/hybridctl/hybridctl/internal/hostfacts"
	"github.com/hybridctl/hybridctl/internal/provision/engine"
	"github.com/hybridctl/hybridctl/internal/provision/transport"
	"github.com/hybridctl/hybridctl/internal/render"
)

// TestWindowsCommandLinesFit sends what apply, reset, upgrade and node
// diagnose send to a Windows node through the loopback SSH server (as
// os: windows) and checks that every command line that arrives is within
// cmd.exe's limit, OpenSSH's default shell on Windows. The transport
// refuses a longer line before sending it, so a command that needed one
// fails here too. diff reads the cluster's API only and sends nothing to
// the nodes.
func TestWindowsCommandLinesFit(t *testing.T) {
	c, srv := loopback(t, func(cfg *transport.Config) { cfg.OS = engine.Windows })
	win := labHosts()[3]
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	p := planFile(t, "lab.yaml")
	files, err := render.Render(p, render.Options{Token: "abcdef.0123456789abcdef", CACertHash: "sha256:" + strings.Repeat("0f", 32)})
	if err != nil {
		t.Fatal(err)
	}
	byPath := map[string]render.File{}
	for _, f := range files {
		byPath[f.Path] = f
	}
	must := func(what string, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	sent := map[string][2]int{} // what: first and last command index
	step := func(what string, f func()) {
		first := len(srv.Commands())
		f()
		sent[what] = [2]int{first, len(srv.Commands())}
	}

	// apply: preflight's facts (with a 253-character API name, the longest
	// a DNS name can be), bundle-upload (the state script and the streamed
	// files), windows-prepare, its boot id, the join and its cleanup.
	api := strings.Repeat(strings.Repeat("a", 62)+".", 4) + "a"
	step("preflight", func() { _, _ = hostfacts.GatherHost(ctx, c, win, api) })
	step("bundle-upload", func() {
		phase := labBundlePhase(t)
		phase.connect = func(context.Context, string) (bundleConn, error) { return c, nil }
		must("bundle-upload", phase.Run(ctx, win))
	})
	step("windows-prepare", func() {
		must("upload prepare.ps1", c.Upload(ctx, windowsPrepare, byPath["nodes/"+win.Name+"/prepare.ps1"].Data, 0o600))
		_, err := c.Run(ctx, windowsPrepareCommand)
		must("prepare", err)
		_, err = c.BootID(ctx)
		must("boot id", err)
	})
	step("join-windows", func() {
		must("upload join.yaml", c.Upload(ctx, windowsJoinFile, byPath["nodes/"+win.Name+"/join.yaml"].Data, 0o600))
		n := 0
		for name, f := range byPath {
			if strings.HasPrefix(name, "nodes/"+win.Name+"/patches/") {
				must("upload patch", c.Upload(ctx, windowsPatchesDir+`\`+path.Base(f.Path), f.Data, 0o644))
				n++
			}
		}
		if n == 0 {
			t.Error("the lab's Windows node has no patches")
		}
		_, err := c.Run(ctx, windowsPathFirst+"\n"+transport.NativeCommand(windowsKubeadm, "join", "--config", windowsJoinFile))
		must("join", err)
		_, err = c.Run(ctx, "Remove-Item -Force -ErrorAction SilentlyContinue "+transport.PSQuote(windowsJoinFile))
		must("remove join.yaml", err)
	})
	// reset: the check, the reset, the detached HNS removal and reboot.
	step("reset", func() {
		for _, s := range []string{windowsJoinedCheck, windowsResetScript, windowsResetDetach()} {
			_, err := c.Run(ctx, s)
			must("reset", err)
		}
	})
	// upgrade: both sources.
	step("upgrade", func() {
		for _, bundle := range []bool{true, false} {
			_, err := c.Run(ctx, windowsUpgradeScript(UpgradeDeps{To: "v1.37.2", Bundle: bundle, Containerd: "2.2.2"}, win.Name,
				windowsBinaries{Kubeadm: "windows-amd64/kubeadm.exe", Kubelet: "windows-amd64/kubelet.exe", Containerd: "windows-amd64/containerd-2.2.2-windows-amd64.tar.gz"}))
			must("upgrade", err)
		}
	})
	// node diagnose: the clock, then the node script (the stand-in's
	// answer is no gathering output: only what is sent counts here).
	step("node diagnose", func() {
		_, _ = hostfacts.GatherNode(ctx, c, win.Name, hostfacts.API{Host: api, Port: 6443}, nil)
	})

	cmds := srv.Commands()
	longest, longestWhat, asFile := 0, "", 0
	for what, r := range sent {
		if r[1]-r[0] == 0 {
			t.Errorf("%s sent nothing", what)
		}
		for _, l := range cmds[r[0]:r[1]] {
			n := len(utf16.Encode([]rune(l)))
			if n > transport.MaxWindowsCommandLine {
				t.Errorf("%s: a command line of %d characters: %.120s…", what, n, l)
			}
			if n > longest {
				longest, longestWhat = n, what
			}
			if strings.Contains(l, " -File ") {
				asFile++
			}
		}
	}
	// The gathering script is longer than a command line: it went as a file.
	if r := sent["node diagnose"]; !strings.Contains(cmds[r[1]-1], " -File ") {
		t.Errorf("node diagnose's gathering did not run as a file: %.120s", cmds[r[1]-1])
	}
	t.Logf("%d command lines, the longest %d characters (%s); %d scripts run as files", len(cmds), longest, longestWhat, asFile)
}
