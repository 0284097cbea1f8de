package procedure

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/hybridctl/hybridctl/internal/provision/engine"
	"github.com/hybridctl/hybridctl/internal/provision/transport"
	"github.com/hybridctl/hybridctl/internal/provision/transport/sshtest"
)

// TestSSHOptionsDefaults: known_hosts and the key files default as OpenSSH
// does, and only when nothing was given.
func TestSSHOptionsDefaults(t *testing.T) {
	home := t.TempDir()
	ssh := filepath.Join(home, ".ssh")
	if err := os.MkdirAll(filepath.Join(ssh, "id_ed25519"), 0o700); err != nil { // a directory, not a key
		t.Fatal(err)
	}
	for _, k := range []string{"id_rsa", "id_ecdsa", "id_dsa"} {
		if err := os.WriteFile(filepath.Join(ssh, k), []byte("key"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		name       string
		o          SSHOptions
		knownHosts string
		keys       []string
	}{
		{"defaults", SSHOptions{Home: home}, filepath.Join(ssh, "known_hosts"), []string{filepath.Join(ssh, "id_ecdsa"), filepath.Join(ssh, "id_rsa")}},
		{"an agent: no key files", SSHOptions{Home: home, AgentSocket: "/run/agent.sock"}, filepath.Join(ssh, "known_hosts"), nil},
		{"identities given", SSHOptions{Home: home, Identities: []string{"/k/a"}}, filepath.Join(ssh, "known_hosts"), []string{"/k/a"}},
		{"known_hosts given", SSHOptions{Home: home, KnownHosts: "/k/known", AgentSocket: "s"}, "/k/known", nil},
		{"no home", SSHOptions{}, "", nil},
	} {
		got := c.o.Config()
		if got.KnownHosts == nil || got.KnownHosts.Path != c.knownHosts || !slices.Equal(got.KeyFiles, c.keys) {
			t.Errorf("%s: known_hosts %+v, keys %q; want %s, %q", c.name, got.KnownHosts, got.KeyFiles, c.knownHosts, c.keys)
		}
	}
	got := SSHOptions{AcceptNewHostKeys: true, AgentSocket: "s", ConnectTimeout: 7}.Config()
	if !got.KnownHosts.AcceptNew || got.AgentSocket != "s" || got.ConnectTimeout != 7 {
		t.Errorf("options not carried over: %+v", got)
	}
}

func TestStatePath(t *testing.T) {
	for _, c := range []struct{ explicit, spec, want string }{
		{"", "cluster.yaml", ".hybridctl/lab.state.json"},
		{"", "/srv/sites/a/cluster.yaml", "/srv/sites/a/.hybridctl/lab.state.json"},
		{"", "<stdin>", ".hybridctl/lab.state.json"},
		{"", "-", ".hybridctl/lab.state.json"},
		{"", "", ".hybridctl/lab.state.json"},
		{"/tmp/s.json", "/srv/cluster.yaml", "/tmp/s.json"},
	} {
		if got := StatePath(c.explicit, c.spec, "lab"); got != c.want {
			t.Errorf("StatePath(%q, %q) = %s, want %s", c.explicit, c.spec, got, c.want)
		}
	}
}

const stateJSON = `{"apiVersion":"hybridctl.dev/v1alpha1","kind":"ApplyState","cluster":"lab","hosts":{` +
	`"n1":{"preflight":{"finishedAt":"2026-11-29T00:00:00Z"}},` +
	`"n2":{"preflight":{"finishedAt":"2026-11-29T00:00:00Z"}},` +
	`"cluster":{"calico":{"finishedAt":"2026-11-29T00:00:00Z"}}}}`

func hostsIn(t *testing.T, path string) []string {
	t.Helper()
	st, err := engine.LoadState(path, "lab")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for h := range st.Hosts {
		out = append(out, h)
	}
	slices.Sort(out)
	return out
}

func TestForgetNodes(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	path := filepath.Join(dir, "state.json")
	if err := os.WriteFile(path, []byte(stateJSON), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := ForgetNodes(ctx, path, "lab", []string{"n1", "unknown"}); err != nil {
		t.Fatal(err)
	}
	if got := hostsIn(t, path); !slices.Equal(got, []string{"cluster", "n2"}) {
		t.Errorf("after forgetting n1: %q", got)
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("state file mode: %v %v", fi, err)
	}
	missing := filepath.Join(dir, "none", "state.json")
	if err := ForgetNodes(ctx, missing, "lab", []string{"n1"}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(missing); !os.IsNotExist(err) {
		t.Errorf("a missing state file was created: %v", err)
	}
	if err := ForgetNodes(ctx, path, "other", []string{"n2"}); err == nil || !strings.Contains(err.Error(), `belongs to cluster "lab"`) {
		t.Errorf("another cluster's state: %v", err)
	}
	if got := hostsIn(t, path); !slices.Equal(got, []string{"cluster", "n2"}) {
		t.Errorf("a refused forget changed the file: %q", got)
	}
}

// TestReset runs Reset over the in-process SSH server: the chosen nodes
// are forgotten in the state file after a complete reset, and nothing is
// forgotten after a dry run, an unknown node or an unknown phase.
func TestReset(t *testing.T) {
	for _, p := range []string{"/etc/kubernetes/kubelet.conf", "/etc/kubernetes/admin.conf"} {
		if _, err := os.Stat(p); err == nil {
			t.Skipf("%s exists on this machine", p)
		}
	}
	if entries, _ := os.ReadDir("/etc/cni/net.d"); len(entries) > 0 {
		t.Skip("/etc/cni/net.d is not empty on this machine")
	}
	key := sshtest.NewKey(t)
	srv := sshtest.Start(t, key.Signer.PublicKey())
	srv.Shim("kubeadm", "#!/bin/sh\necho \"kubeadm stand-in: $*\"\n")
	srv.Shim("rm", "#!/bin/sh\necho \"rm stand-in: $*\"\n")
	dir := t.TempDir()
	base := SSHOptions{Identities: []string{key.Path}, KnownHosts: filepath.Join(dir, "known_hosts"), AcceptNewHostKeys: true}.Config()
	hosts := []engine.Host{
		{Name: "cp", Role: engine.RoleControlPlane, OS: engine.Linux, Address: "127.0.0.1"},
		{Name: "n1", Role: engine.RoleWorker, OS: engine.Linux, Address: "127.0.0.1"},
		{Name: "n2", Role: engine.RoleWorker, OS: engine.Linux, Address: "127.0.0.1"},
	}
	var configs []transport.Config
	for _, h := range hosts {
		c := base
		c.Host, c.Address, c.User, c.OS = h.Name, srv.Addr, "root", engine.Linux
		configs = append(configs, c)
	}
	pool := transport.NewPool(configs...)
	defer pool.Close()
	state := filepath.Join(dir, "state.json")
	reset := func(o ResetOptions) error {
		if err := os.WriteFile(state, []byte(stateJSON), 0o600); err != nil {
			t.Fatal(err)
		}
		o.Cluster, o.Hosts, o.Connect, o.StatePath, o.RESTConfig = "lab", hosts, pool.Get, state, noAPI
		o.Skip = append(o.Skip, "drain", "delete-node") // no API server here
		return Reset(context.Background(), o)
	}
	var events []engine.Event
	if err := reset(ResetOptions{Nodes: []string{"n1"}, Reporter: func(phases []engine.Descriptor) engine.Reporter {
		if len(phases) != len(ResetProcedure()) {
			t.Errorf("the reporter got %d phases", len(phases))
		}
		return engine.ReporterFunc(func(e engine.Event) { events = append(events, e) })
	}}); err != nil {
		t.Fatal(err)
	}
	if got := hostsIn(t, state); !slices.Equal(got, []string{"cluster", "n2"}) {
		t.Errorf("after resetting n1: %q", got)
	}
	if len(events) == 0 {
		t.Errorf("no progress reported")
	}
	var visited []string
	if err := reset(ResetOptions{Reporter: func([]engine.Descriptor) engine.Reporter {
		return engine.ReporterFunc(func(e engine.Event) {
			if strings.HasPrefix(e.Phase, "reset-") {
				visited = append(visited, fmt.Sprintf("%s %s %s", e.Phase, e.Host, e.Type))
			}
		})
	}}); err != nil {
		t.Fatal(err)
	}
	slices.Sort(visited)
	// Every host is visited (and skipped: the stand-ins have nothing to take apart).
	if want := []string{"reset-control-plane cp skip", "reset-workers n1 skip", "reset-workers n2 skip"}; !slices.Equal(visited, want) {
		t.Errorf("a reset of every node ran %q, want %q", visited, want)
	}
	if got := hostsIn(t, state); len(got) != 0 {
		t.Errorf("after resetting every node: %q", got)
	}
	if err := reset(ResetOptions{Nodes: []string{"n1"}, DryRun: true}); err != nil {
		t.Fatal(err)
	}
	if got := hostsIn(t, state); len(got) != 3 {
		t.Errorf("a dry run changed the state: %q", got)
	}
	if err := reset(ResetOptions{Nodes: []string{"n9"}}); !errors.Is(err, engine.ErrUnknownHost) {
		t.Errorf("unknown node: %v", err)
	}
	if err := reset(ResetOptions{Only: []string{"reset-wrokers"}}); !errors.Is(err, engine.ErrUnknownPhase) {
		t.Errorf("unknown phase: %v", err)
	}
	if got := hostsIn(t, state); len(got) != 3 {
		t.Errorf("a refused reset changed the state: %q", got)
	}
}
