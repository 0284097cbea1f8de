package apply

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/hybridctl/hybridctl/internal/kubeconfig"
	"github.com/hybridctl/hybridctl/internal/provision"
)

// KubeconfigTarget says where the kubeconfig phase imports admin.conf:
// the user's kubeconfig file, under the cluster's name (context NAME,
// cluster NAME, user NAME-admin), as `hybridctl kubeconfig import` does.
type KubeconfigTarget struct {
	Store *kubeconfig.Store
	Name  string
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
	hosts    []provision.Host
	connect  func(ctx context.Context, host string) (hostConn, error)
	redactor *provision.Redactor
}

func (p *kubeconfigPhase) Title() string { return "kubeconfig" }
func (p *kubeconfigPhase) Description() string {
	return "import the control plane's admin.conf into your kubeconfig (hybridctl kubeconfig import)"
}
func (p *kubeconfigPhase) Targets([]provision.Host) []provision.Host {
	return []provision.Host{provision.ClusterHost()}
}
func (p *kubeconfigPhase) Waits() []string { return []string{"kubeadm-init"} }

func (p *kubeconfigPhase) DryRun(context.Context, provision.Host) ([]string, error) {
	cps := provision.ControlPlanes(p.hosts)
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

func (p *kubeconfigPhase) Run(ctx context.Context, _ provision.Host) error {
	if p.target == nil || p.target.Store == nil {
		return fmt.Errorf("%w: phase kubeconfig has no target kubeconfig", provision.ErrNotImplemented)
	}
	cps := provision.ControlPlanes(p.hosts)
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
		provision.Warn(ctx, "admin.conf of %s: %s", cps[0].Name, w)
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
			p.redactor.Add(provision.NewSecret(strings.TrimSpace(v)))
		}
	}
}
