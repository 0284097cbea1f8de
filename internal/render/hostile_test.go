package render

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"text/template/parse"

	"github.com/hybridctl/hybridctl/internal/plan"
)

// evil is a value that breaks any script that does not quote it and runs a
// command in any that evaluates it.
const evil = "x'\"$(touch PWNED)`touch PWNED`;touch PWNED #\u2019$env:X"

// hostilePlan is the lab plan with hostile values in everything that goes
// into a script, bypassing spec validation.
func hostilePlan(t testing.TB) *plan.Plan {
	p := labPlan(t)
	p.Cluster = "lab" + evil
	p.DNSSuffix = "example.com" + evil
	p.KubernetesVersion = "v1.37.2" + evil
	p.Versions.Kubernetes = "v1.37.2" + evil
	p.Versions.Containerd = "2.2.2" + evil
	p.Versions.Crictl = "1.37.0" + evil
	p.SandboxImage = "registry.k8s.io/pause:3.10.2|&\\" + evil
	p.KubernetesAptRepo = "https://pkgs.k8s.io/" + evil + "/"
	p.NodeNetwork.Gateway = "192.168.10.1" + evil
	p.NodeNetwork.CIDR = "192.168.10.0/24" + evil
	p.NodeNetwork.DNSServers = []string{"192.168.10.1" + evil, "$(reboot)"}
	p.NodeNetwork.NTPServers = []string{"router" + evil, "`reboot`"}
	p.APIServer.Host = "api" + evil
	for i := range p.Nodes {
		n := &p.Nodes[i]
		n.Name = n.Name + evil
		n.FQDN = n.Name + "." + p.DNSSuffix
		n.Address = n.Address + evil
	}
	return p
}

// mustRenderUnchecked renders a plan that Render's checkPlan refuses, to
// test the quoting of what checkPlan would never let through.
func mustRenderUnchecked(t testing.TB, p *plan.Plan, o Options) map[string]File {
	t.Helper()
	if err := checkPlan(p); err == nil {
		t.Fatal("checkPlan accepts the hostile plan")
	}
	files, err := renderChecked(p, o)
	if err != nil {
		t.Fatalf("render: %v", err)
	}
	m := map[string]File{}
	for _, f := range files {
		m[f.Path] = f
	}
	return m
}

// values are the node-independent values the scripts assign, by variable.
func shellValues(p *plan.Plan, n plan.Node) map[string]string {
	return map[string]string{
		"NODE_NAME": n.Name, "NODE_FQDN": n.FQDN, "ADDRESS": n.Address, "GATEWAY": p.NodeNetwork.Gateway,
		"DNS_SUFFIX": p.DNSSuffix, "KUBERNETES_VERSION": p.Versions.Kubernetes, "CONTAINERD_VERSION": p.Versions.Containerd,
		"SANDBOX_IMAGE": p.SandboxImage, "APT_REPO": p.KubernetesAptRepo,
		"DNS_SERVERS": strings.Join(p.NodeNetwork.DNSServers, "\x01"), "NTP_SERVERS": strings.Join(p.NodeNetwork.NTPServers, "\x01"),
	}
}

func TestHostileBash(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("bash not found")
	}
	p := hostilePlan(t)
	files := mustRenderUnchecked(t, p, Options{})
	dir := t.TempDir()
	checked := 0
	for _, n := range p.Nodes {
		if n.IsWindows() {
			continue
		}
		f, ok := files["nodes/"+n.Name+"/prepare.sh"]
		if !ok {
			t.Fatalf("no prepare.sh for %q", n.Name)
		}
		script := filepath.Join(dir, "prepare.sh")
		if err := os.WriteFile(script, f.Data, 0o644); err != nil {
			t.Fatal(err)
		}
		if out, err := exec.Command(bash, "-n", script).CombinedOutput(); err != nil {
			t.Fatalf("bash -n: %v\n%s", err, out)
		}
		// SC2016 (no expansion in single quotes) and SC1112 (a unicode
		// quote) point at the hostile literals: that they stay literal is
		// what this test proves.
		shellcheck(t, script, "--exclude=SC2016,SC1112")
		// Run the assignments (everything before the first function) and
		// print what bash holds.
		head, _, ok := strings.Cut(string(f.Data), "\nstep() {")
		if !ok {
			t.Fatal("prepare.sh: no step() function")
		}
		want := shellValues(p, n)
		var probe strings.Builder
		probe.WriteString(head + "\n")
		for _, v := range []string{"NODE_NAME", "NODE_FQDN", "ADDRESS", "GATEWAY", "DNS_SUFFIX", "KUBERNETES_VERSION", "CONTAINERD_VERSION", "SANDBOX_IMAGE", "APT_REPO"} {
			probe.WriteString(`printf '%s=%s\0' ` + v + ` "$` + v + `"` + "\n")
		}
		probe.WriteString(`(IFS=$'\x01'; printf 'DNS_SERVERS=%s\0NTP_SERVERS=%s\0' "${DNS_SERVERS[*]}" "${NTP_SERVERS[*]}")` + "\n")
		cmd := exec.Command(bash, "-c", probe.String())
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "IFACE=eth0")
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("running the assignments: %v", err)
		}
		got := map[string]string{}
		for _, kv := range strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00") {
			k, v, _ := strings.Cut(kv, "=")
			got[k] = v
		}
		for k, v := range want {
			if got[k] != v {
				t.Errorf("%s: bash holds %q, want %q", k, got[k], v)
			}
		}
		if _, err := os.Stat(filepath.Join(dir, "PWNED")); err == nil {
			t.Fatal("a value ran a command")
		}
		checked++
	}
	if checked != 3 {
		t.Fatalf("checked %d Linux scripts, want 3", checked)
	}
}

var psAssign = regexp.MustCompile(`(?m)^\s*(?:\[string\] )?\$([A-Za-z]+) = (.*?),?\r?$`)

func TestHostilePowerShell(t *testing.T) {
	p := hostilePlan(t)
	// Script URLs with quotes are refused by Options.Validate; put them
	// past it to test the quoting itself.
	files := map[string]File{}
	r := &renderer{plan: p, opts: Options{InstallContainerdURL: "https://example.com/" + evil, PrepareNodeURL: "https://example.com/'; Restart-Computer; '"},
		emit: func(f File) error { files[f.Path] = f; return nil }, seen: map[string]bool{}}
	var err error
	if r.tmpl, err = newTemplates(); err != nil {
		t.Fatal(err)
	}
	if err := r.nodes(); err != nil {
		t.Fatal(err)
	}
	var win plan.Node
	for _, n := range p.Nodes {
		if n.IsWindows() {
			win = n
		}
	}
	f := files["nodes/"+win.Name+"/prepare.ps1"]
	text := string(bytes.TrimPrefix(f.Data, []byte{0xEF, 0xBB, 0xBF}))
	want := map[string]string{
		"NodeName": win.Name, "Address": win.Address, "Gateway": p.NodeNetwork.Gateway, "DnsSuffix": p.DNSSuffix,
		"NtpPeers": ntpPeers(p.NodeNetwork.NTPServers), "NodeCIDR": p.NodeNetwork.CIDR, "KubernetesVersion": p.Versions.Kubernetes,
		"ContainerdVersion": p.Versions.Containerd, "CrictlVersion": p.Versions.Crictl, "ApiHost": p.APIServer.Host,
		"InstallContainerdUrl": "https://example.com/" + evil, "PrepareNodeUrl": "https://example.com/'; Restart-Computer; '",
	}
	got := map[string]string{}
	for _, m := range psAssign.FindAllStringSubmatch(text, -1) {
		if _, ok := want[m[1]]; !ok {
			continue
		}
		v, ok := unPsQuote(m[2])
		if !ok {
			t.Errorf("$%s = %s is not one single-quoted literal", m[1], m[2])
		}
		got[m[1]] = v
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("$%s: script holds %q, want %q", k, got[k], v)
		}
	}
	// DNS servers: an array of literals.
	line := regexp.MustCompile(`(?m)^\$DnsServers = @\((.*)\)\r?$`).FindStringSubmatch(text)
	if line == nil {
		t.Fatal("no $DnsServers line")
	}
	if !strings.Contains(line[1], PsQuote(p.NodeNetwork.DNSServers[0])+", "+PsQuote(p.NodeNetwork.DNSServers[1])) {
		t.Errorf("$DnsServers = @(%s): not the quoted servers", line[1])
	}
	if !strings.Contains(text, "\r\n") || strings.Contains(strings.ReplaceAll(text, "\r\n", ""), "\n") {
		t.Error("prepare.ps1 line ends are not all CRLF")
	}
}

// Every value a script template prints goes through its quoting function:
// an action in prepare.sh.tmpl ends in sh, in prepare.ps1.tmpl in ps, or in
// comments line (no line breaks). The only exceptions are integers.
func TestScriptTemplatesQuoteEveryValue(t *testing.T) {
	tm, err := newTemplates()
	if err != nil {
		t.Fatal(err)
	}
	ints := map[string]bool{".Plan.NodeNetwork.PrefixLength": true}
	for name, quote := range map[string]string{"prepare.sh.tmpl": "sh", "prepare.ps1.tmpl": "ps"} {
		tt := tm.Lookup(name)
		if tt == nil {
			t.Fatalf("no template %s", name)
		}
		actions := 0
		var walk func(n parse.Node)
		walk = func(n parse.Node) {
			switch n := n.(type) {
			case *parse.ListNode:
				if n == nil {
					return
				}
				for _, c := range n.Nodes {
					walk(c)
				}
			case *parse.ActionNode:
				actions++
				if len(n.Pipe.Decl) > 0 {
					return
				}
				last := n.Pipe.Cmds[len(n.Pipe.Cmds)-1]
				if id, ok := last.Args[0].(*parse.IdentifierNode); ok && (id.Ident == quote || id.Ident == "line") {
					return
				}
				if ints[last.String()] {
					return
				}
				t.Errorf("%s: {{%s}} prints a value without %s", name, n.Pipe, quote)
			case *parse.IfNode:
				walk(n.List)
				walk(n.ElseList)
			case *parse.RangeNode:
				walk(n.List)
				walk(n.ElseList)
			case *parse.WithNode:
				walk(n.List)
				walk(n.ElseList)
			}
		}
		walk(tt.Tree.Root)
		if actions < 10 {
			t.Errorf("%s: only %d actions found; the walk is broken", name, actions)
		}
	}
}

// shellcheck runs shellcheck on a bash script; it is a Debian package
// (apt-get install shellcheck) and the test fails without it unless -short.
func shellcheck(t *testing.T, path string, extra ...string) {
	t.Helper()
	sc, err := exec.LookPath("shellcheck")
	if err != nil {
		if testing.Short() {
			t.Log("shellcheck not installed; skipped under -short")
			return
		}
		t.Fatal("shellcheck not installed (apt-get install shellcheck)")
	}
	if out, err := exec.Command(sc, append(append([]string{"--shell=bash", "--severity=style"}, extra...), path)...).CombinedOutput(); err != nil {
		t.Errorf("shellcheck %s: %v\n%s", path, err, out)
	}
}

func TestShellcheckLab(t *testing.T) {
	files := mustRender(t, labPlan(t), Options{})
	dir := t.TempDir()
	n := 0
	for p, f := range files {
		if !strings.HasSuffix(p, ".sh") {
			continue
		}
		path := filepath.Join(dir, strings.ReplaceAll(p, "/", "_"))
		if err := os.WriteFile(path, f.Data, 0o644); err != nil {
			t.Fatal(err)
		}
		shellcheck(t, path)
		n++
	}
	if n != 3 {
		t.Errorf("%d bash scripts, want 3", n)
	}
}
