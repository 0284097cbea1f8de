package procedure

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/hybridctl/hybridctl/internal/kubeconfig"
	"github.com/hybridctl/hybridctl/internal/provision/engine"
)

// KubeconfigTarget says where the kubeconfig phase imports admin.conf:
// the user's kubeconfig file, under the cluster's name (context NAME,
// cluster NAME, user NAME-admin), as `hybridctl kubeconfig import` does.
type KubeconfigTarget struct {
	Store *kubeconfig.Store
	Name  string
	// Context is the context the API phases use when it is not Name:
	// the one the user gave (--context) for a cluster hybridctl did not
	// import. The kubeconfig phase then imports nothing.
	Context string
	// Server replaces admin.conf's server URL when set.
	Server string
	// VerifyTimeout bounds the check that the credentials work (default
	// kubeconfig.DefaultVerifyTimeout).
	VerifyTimeout time.Duration
}

// kubeconfigPhase reads admin.conf from the control plane over SSH (it
// never touches a local file) and imports it into the user's kubeconfig,
// verifying the credentials against the API first. Importing the same
// content again changes nothing; a context of the same name with other
// content (another cluster) is an error, never overwritten.
type kubeconfigPhase struct {
	target   *KubeconfigTarget
	hosts    []engine.Host
	connect  func(ctx context.Context, host string) (hostConn, error)
	redactor *engine.Redactor
}

func (p *kubeconfigPhase) DryRun(context.Context, engine.Host) ([]string, error) {
	cps := engine.ControlPlanes(p.hosts)
	if len(cps) == 0 {
		return nil, errors.New("the cluster has no control-plane node")
	}
	where, name := "your kubeconfig", "the cluster's name"
	if p.target != nil {
		where, name = p.target.Store.Path, p.target.Name
	}
	return []string{
		fmt.Sprintf("on %s as root: read /etc/kubernetes/admin.conf (kept in memory, never printed or written elsewhere)", cps[0].Name),
		fmt.Sprintf("verify it against the API, then import it into %s as context %s (cluster %s, user %s-admin); an existing different entry is an error", where, name, name, name),
	}, nil
}

// context is the context the API phases use.
func (t *KubeconfigTarget) context() string {
	if t.Context != "" {
		return t.Context
	}
	return t.Name
}

// ShouldRun implements engine.Skipper: with a context of the user's own
// (--context) there is nothing to import.
func (p *kubeconfigPhase) ShouldRun(context.Context, engine.Host) (bool, string, error) {
	if p.target.Context != "" && p.target.Context != p.target.Name {
		return false, "the API phases use the context you gave (--context " + p.target.Context + "): nothing to import", nil
	}
	return true, "", nil
}

// Diff implements engine.Differ: an import when the context is not in
// the kubeconfig yet. (An existing one is compared with admin.conf when
// the phase runs; a different one is an error then, never overwritten.)
func (p *kubeconfigPhase) Diff(ctx context.Context, h engine.Host) ([]engine.Change, error) {
	if run, _, _ := p.ShouldRun(ctx, h); !run {
		return nil, nil
	}
	cfg, err := p.target.Store.Read(ctx)
	if err != nil {
		return nil, err
	}
	if _, ok := cfg.Contexts[p.target.Name]; ok {
		return nil, nil
	}
	return []engine.Change{{Action: engine.ActionCreate, Object: "context " + p.target.Name,
		Summary: "import the control plane's admin.conf into " + p.target.Store.Path + " as context " + p.target.Name}}, nil
}

func (p *kubeconfigPhase) Run(ctx context.Context, _ engine.Host) error {
	cps := engine.ControlPlanes(p.hosts)
	if len(cps) == 0 {
		return errors.New("the cluster has no control-plane node")
	}
	c, err := p.connect(ctx, cps[0].Name)
	if err != nil {
		return err
	}
	res, err := c.Run(ctx, "cat /etc/kubernetes/admin.conf")
	if err != nil {
		return fmt.Errorf("reading admin.conf on %s: %w", cps[0].Name, err)
	}
	p.redactKeys(res.Stdout)
	// The same import as `hybridctl kubeconfig import -`: no plugin runs,
	// no local file is read, --verify before anything is written.
	imp, err := kubeconfig.Import(ctx, p.target.Store, kubeconfig.ImportOptions{
		Source: "-", SourceData: res.Stdout, Name: p.target.Name, Server: p.target.Server,
		Verify: true, VerifyTimeout: p.target.VerifyTimeout, // 0: kubeconfig.DefaultVerifyTimeout
	})
	if err != nil {
		return fmt.Errorf("importing admin.conf of %s: %w", cps[0].Name, err)
	}
	for _, w := range imp.Warnings {
		engine.Warn(ctx, "admin.conf of %s: %s", cps[0].Name, w)
	}
	return nil
}

// redactKeys teaches the redactor admin.conf's private key and token, the
// values that must never show up in an error or output.
func (p *kubeconfigPhase) redactKeys(adminConf []byte) {
	if p.redactor == nil {
		return
	}
	sc := bufio.NewScanner(bytes.NewReader(adminConf))
	sc.Buffer(make([]byte, 64*1024), 1<<20)
	for sc.Scan() {
		k, v, ok := strings.Cut(strings.TrimSpace(sc.Text()), ":")
		if ok && (k == "client-key-data" || k == "token") {
			p.redactor.Add(engine.NewSecret(strings.TrimSpace(v)))
		}
	}
}
