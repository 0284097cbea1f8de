package procedure

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"k8s.io/client-go/rest"

	"github.com/hybridctl/hybridctl/internal/provision/engine"
	"github.com/hybridctl/hybridctl/internal/provision/transport"
)

// SSHOptions are the SSH settings of apply and reset as the user gave them;
// zero fields take the defaults (SSHOptions.Config). The command reads the
// environment (home directory, $SSH_AUTH_SOCK) and passes it in.
type SSHOptions struct {
	// KnownHosts is the known_hosts file; default Home/.ssh/known_hosts.
	KnownHosts string
	// AcceptNewHostKeys adds the keys of hosts not yet in known_hosts (a
	// changed key is always refused).
	AcceptNewHostKeys bool
	// Identities are private key files; default: the agent, else the
	// first of Home/.ssh/id_ed25519, id_ecdsa, id_rsa that exist (all of
	// them that exist, in that order).
	Identities []string
	// AgentSocket is the SSH agent's socket ($SSH_AUTH_SOCK), "" for none.
	AgentSocket string
	// Home is the user's home directory, "" when unknown.
	Home string
	// ConnectTimeout bounds one connection attempt.
	ConnectTimeout time.Duration
}

// DefaultKeyFiles are the key files looked for in ~/.ssh, in order, when
// no identity is given and no agent runs (OpenSSH's order).
func DefaultKeyFiles() []string { return []string{"id_ed25519", "id_ecdsa", "id_rsa"} }

// Config is the transport configuration with the defaults applied.
func (o SSHOptions) Config() transport.Config {
	kh := o.KnownHosts
	if kh == "" && o.Home != "" {
		kh = filepath.Join(o.Home, ".ssh", "known_hosts")
	}
	c := transport.Config{
		KnownHosts:     &transport.KnownHosts{Path: kh, AcceptNew: o.AcceptNewHostKeys},
		AgentSocket:    o.AgentSocket,
		KeyFiles:       o.Identities,
		ConnectTimeout: o.ConnectTimeout,
	}
	if len(c.KeyFiles) == 0 && c.AgentSocket == "" && o.Home != "" {
		for _, k := range DefaultKeyFiles() {
			p := filepath.Join(o.Home, ".ssh", k)
			if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() {
				c.KeyFiles = append(c.KeyFiles, p)
			}
		}
	}
	return c
}

// StatePath is apply's state file: explicit when given, else
// .hybridctl/CLUSTER.state.json beside the spec (in the working directory
// for a spec read from standard input).
func StatePath(explicit, specFile, cluster string) string {
	if explicit != "" {
		return explicit
	}
	dir := "."
	if specFile != "" && specFile != "<stdin>" && specFile != "-" {
		dir = filepath.Dir(specFile)
	}
	return filepath.Join(dir, ".hybridctl", cluster+".state.json")
}

// ResetOptions are what Reset needs besides the hosts.
type ResetOptions struct {
	// Cluster names the cluster (the state file's owner).
	Cluster string
	// Hosts are every node of the spec; Connect reaches them over SSH.
	Hosts   []engine.Host
	Connect func(ctx context.Context, host string) (*transport.Client, error)
	// Nodes are the nodes to take apart; empty means all of them.
	Nodes []string
	// RESTConfig connects drain and delete-node to the cluster.
	RESTConfig func(ctx context.Context) (*rest.Config, error)
	// RebootTimeout bounds a Windows node's reboot; DrainTimeout the
	// draining of one node.
	RebootTimeout, DrainTimeout time.Duration
	// StatePath is apply's state file, whose records of the reset nodes
	// are dropped after a complete reset.
	StatePath string
	// DryRun, Offline, Skip, Only and Concurrency are the engine's
	// options of the same names.
	DryRun, Offline bool
	Skip, Only      []string
	Concurrency     int
	// Reporter makes the progress reporter for the phase list; nil
	// reports nothing.
	Reporter func(phases []engine.Descriptor) engine.Reporter
	Redactor *engine.Redactor
}

// Reset runs reset's phases on the chosen nodes (the cluster pseudo-host
// too) and, when every phase succeeded and it was not a dry run, forgets
// those nodes in apply's state file so that apply starts over on them.
// Unknown nodes wrap engine.ErrUnknownHost, unknown phases
// engine.ErrUnknownPhase; nothing runs then.
func Reset(ctx context.Context, o ResetOptions) error {
	phases, err := ResetPhases(Deps{Hosts: o.Hosts, Connect: o.Connect, ResetNodes: o.Nodes,
		RESTConfig: o.RESTConfig, DrainTimeout: o.DrainTimeout, RebootTimeout: o.RebootTimeout})
	if err != nil {
		return err
	}
	var hosts []string
	if len(o.Nodes) > 0 {
		hosts = append([]string{engine.ClusterHostName}, o.Nodes...)
	}
	var reporter engine.Reporter
	if o.Reporter != nil {
		reporter = o.Reporter(engine.Descriptors(phases))
	}
	e, err := engine.New(phases, o.Hosts, engine.Options{
		Cluster: o.Cluster, DryRun: o.DryRun, Offline: o.Offline, Skip: o.Skip, Only: o.Only,
		Hosts: hosts, Concurrency: o.Concurrency, Reporter: reporter, Redactor: o.Redactor,
	})
	if err != nil {
		return err
	}
	if err := e.Run(ctx); err != nil || o.DryRun {
		return err
	}
	reset := o.Nodes
	if len(reset) == 0 {
		for _, h := range o.Hosts {
			reset = append(reset, h.Name)
		}
		reset = append(reset, engine.ClusterHostName)
	}
	return ForgetNodes(ctx, o.StatePath, o.Cluster, reset)
}

// ForgetNodes drops every record of nodes from the state file at path, so
// that apply runs their steps again. A missing state file stays missing.
func ForgetNodes(ctx context.Context, path, cluster string, nodes []string) error {
	if path == "" {
		return nil
	}
	if _, err := os.Stat(path); err != nil {
		if os.IsNotExist(err) {
			return nil
		}
		return fmt.Errorf("state file %s: %w", path, err)
	}
	st, err := engine.LoadState(path, cluster)
	if err != nil {
		return err
	}
	for _, n := range nodes {
		st.Forget(n)
	}
	return st.Save(ctx, path)
}
