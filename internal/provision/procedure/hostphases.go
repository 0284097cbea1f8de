package procedure

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io/fs"
	"sort"
	"strings"
	"time"

	"github.com/hybridctl/hybridctl/internal/provision/engine"
	"github.com/hybridctl/hybridctl/internal/provision/transport"
	"github.com/hybridctl/hybridctl/internal/render"
)

// Where apply puts rendered files on the hosts. The Windows directory is
// the one prepare.ps1 itself uses as its work directory.
const (
	linuxWorkDir       = "/var/lib/hybridctl"
	linuxPrepare       = linuxWorkDir + "/prepare.sh"
	linuxKubeadmConfig = linuxWorkDir + "/kubeadm-config.yaml"
	windowsPrepare     = `C:\k\hybridctl\prepare.ps1`
	// windowsMaxRounds bounds prepare.ps1's run-reboot-run cycle: rename,
	// Containers feature, Hyper-V each need one reboot.
	windowsMaxRounds = 5
)

// The lines the rendered scripts print (internal/render templates).
const (
	linuxReady      = "ready for kubeadm on "
	windowsReady    = "ready for kubeadm join"
	windowsRerun    = "and run prepare.ps1 again"
	kubeadmInitDone = "Your Kubernetes control-plane has initialized successfully"
)

// Artifacts are rendered files by their path in a render directory.
type Artifacts map[string]render.File

// ArtifactsOf indexes render.Render's result.
func ArtifactsOf(files []render.File) Artifacts {
	a := Artifacts{}
	for _, f := range files {
		a[f.Path] = f
	}
	return a
}

// under returns the paths starting with prefix, sorted.
func (a Artifacts) under(prefix string) []string {
	var out []string
	for p := range a {
		if strings.HasPrefix(p, prefix) {
			out = append(out, p)
		}
	}
	sort.Strings(out)
	return out
}

func (a Artifacts) get(path string) (render.File, error) {
	f, ok := a[path]
	if !ok {
		return render.File{}, fmt.Errorf("the render has no %s", path)
	}
	return f, nil
}

func describeFile(f render.File, dst string, mode fs.FileMode) string {
	return fmt.Sprintf("upload %s to %s (%04o, %d bytes, sha256 %x; `hybridctl render` writes the same file)",
		f.Path, dst, mode, len(f.Data), sha256.Sum256(f.Data))
}

// hostConn is what the host phases need of a connection
// (*transport.Client); an interface so the control flow around reboots can
// be tested without a Windows machine.
type hostConn interface {
	Upload(ctx context.Context, dst string, data []byte, mode fs.FileMode) error
	Run(ctx context.Context, script string) (*transport.Result, error)
	Reboot(ctx context.Context) error
}

// outputError is a script that exited 0 without its success line; the
// output is kept for the failure report (engine.OutputError).
type outputError struct {
	msg string
	out []byte
}

func (e *outputError) Error() string         { return e.msg }
func (e *outputError) CommandOutput() string { return string(e.out) }

// linuxPrepare runs the rendered nodes/NAME/prepare.sh: the guide's Linux
// preparation, containerd and Kubernetes packages. The script is
// idempotent (it checks before changing), so a re-run is safe.
type linuxPreparePhase struct {
	files   Artifacts
	connect func(ctx context.Context, host string) (hostConn, error)
	members
}

// ShouldRun implements engine.Skipper: members are left alone.
func (p *linuxPreparePhase) ShouldRun(_ context.Context, h engine.Host) (bool, string, error) {
	skip, why := p.skip(h)
	return !skip, why, nil
}

func (p *linuxPreparePhase) DryRun(_ context.Context, h engine.Host) ([]string, error) {
	f, err := p.files.get("nodes/" + h.Name + "/prepare.sh")
	if err != nil {
		return nil, err
	}
	return []string{describeFile(f, linuxPrepare, 0o700), "run as root: bash " + linuxPrepare + "  (must end with \"" + linuxReady + h.Name + "\")"}, nil
}

func (p *linuxPreparePhase) Run(ctx context.Context, h engine.Host) error {
	f, err := p.files.get("nodes/" + h.Name + "/prepare.sh")
	if err != nil {
		return err
	}
	c, err := p.connect(ctx, h.Name)
	if err != nil {
		return err
	}
	if err := c.Upload(ctx, linuxPrepare, f.Data, 0o700); err != nil {
		return err
	}
	res, err := c.Run(ctx, "bash "+linuxPrepare)
	if err != nil {
		return err
	}
	if !strings.Contains(string(res.Stdout), linuxReady+h.Name) {
		return &outputError{msg: "prepare.sh ended without \"" + linuxReady + h.Name + "\"", out: append(res.Stdout, res.Stderr...)}
	}
	return nil
}

// windowsPreparePhase runs the rendered prepare.ps1 (name, DNS suffix,
// time, firewall, Containers feature, Install-Containerd.ps1,
// PrepareNode.ps1) in its run-reboot-run cycle: when the script says a
// reboot is needed, the node is rebooted, waited for, and the script run
// again, until it reports ready.
type windowsPreparePhase struct {
	files         Artifacts
	connect       func(ctx context.Context, host string) (hostConn, error)
	rebootTimeout time.Duration
	members
}

// ShouldRun implements engine.Skipper: members are left alone.
func (p *windowsPreparePhase) ShouldRun(_ context.Context, h engine.Host) (bool, string, error) {
	skip, why := p.skip(h)
	return !skip, why, nil
}

// windowsPrepareCommand runs prepare.ps1 in its own powershell.exe (its
// own 'Stop' and strict mode), through Invoke-Native: its output is passed
// on and its exit code decides.
var windowsPrepareCommand = transport.NativeCommand("powershell.exe", "-NoProfile", "-NonInteractive", "-ExecutionPolicy", "Bypass", "-File", windowsPrepare)

func (p *windowsPreparePhase) DryRun(_ context.Context, h engine.Host) ([]string, error) {
	f, err := p.files.get("nodes/" + h.Name + "/prepare.ps1")
	if err != nil {
		return nil, err
	}
	return []string{
		describeFile(f, windowsPrepare, 0o600),
		transport.DescribeWindowsRun(windowsPrepareCommand, windowsPrepareCommand),
		fmt.Sprintf("when it asks for a reboot: Restart-Computer -Force, wait for a new boot (up to %s), run it again; at most %d rounds, until \"%s\"", p.rebootTimeout, windowsMaxRounds, windowsReady),
	}, nil
}

func (p *windowsPreparePhase) Run(ctx context.Context, h engine.Host) error {
	f, err := p.files.get("nodes/" + h.Name + "/prepare.ps1")
	if err != nil {
		return err
	}
	c, err := p.connect(ctx, h.Name)
	if err != nil {
		return err
	}
	if err := c.Upload(ctx, windowsPrepare, f.Data, 0o600); err != nil {
		return err
	}
	for round := 1; round <= windowsMaxRounds; round++ {
		res, err := c.Run(ctx, windowsPrepareCommand)
		if err != nil {
			return err
		}
		out := string(res.Stdout)
		switch {
		case strings.Contains(out, windowsReady):
			return nil
		case strings.Contains(out, windowsRerun):
			engine.Warn(ctx, "prepare.ps1 round %d asks for a reboot: %s", round, lastLine(out))
			rctx, cancel := context.WithTimeout(ctx, p.rebootTimeout)
			err := c.Reboot(rctx)
			cancel()
			if err != nil {
				return err
			}
		default:
			return &outputError{msg: "prepare.ps1 ended without \"" + windowsReady + "\" or a reboot request", out: append(res.Stdout, res.Stderr...)}
		}
	}
	return fmt.Errorf("prepare.ps1 still asks for a reboot after %d rounds", windowsMaxRounds)
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}

// kubeadmInitPhase initialises the control plane with the rendered
// kubeadm-config.yaml, unless admin.conf shows it already is.
type kubeadmInitPhase struct {
	files   Artifacts
	connect func(ctx context.Context, host string) (hostConn, error)
	members
}

func (p *kubeadmInitPhase) ShouldRun(ctx context.Context, h engine.Host) (bool, string, error) {
	if skip, why := p.skip(h); skip {
		return false, why, nil
	}
	c, err := p.connect(ctx, h.Name)
	if err != nil {
		return false, "", err
	}
	_, err = c.Run(ctx, "test -e /etc/kubernetes/admin.conf")
	var ce *transport.CommandError
	switch {
	case err == nil:
		return false, "/etc/kubernetes/admin.conf exists: the control plane is initialised", nil
	case errors.As(err, &ce) && ce.ExitCode == 1:
		return true, "", nil
	default:
		return false, "", err
	}
}

func (p *kubeadmInitPhase) DryRun(_ context.Context, h engine.Host) ([]string, error) {
	f, err := p.files.get("cluster/kubeadm-config.yaml")
	if err != nil {
		return nil, err
	}
	return []string{
		describeFile(f, linuxKubeadmConfig, 0o600),
		"run as root: kubeadm config validate --config " + linuxKubeadmConfig,
		"run as root: kubeadm init --config " + linuxKubeadmConfig,
	}, nil
}

func (p *kubeadmInitPhase) Run(ctx context.Context, h engine.Host) error {
	f, err := p.files.get("cluster/kubeadm-config.yaml")
	if err != nil {
		return err
	}
	c, err := p.connect(ctx, h.Name)
	if err != nil {
		return err
	}
	if err := c.Upload(ctx, linuxKubeadmConfig, f.Data, 0o600); err != nil {
		return err
	}
	if _, err := c.Run(ctx, "kubeadm config validate --config "+linuxKubeadmConfig); err != nil {
		return err
	}
	res, err := c.Run(ctx, "kubeadm init --config "+linuxKubeadmConfig)
	if err != nil {
		return err
	}
	if !strings.Contains(string(res.Stdout), kubeadmInitDone) {
		return &outputError{msg: "kubeadm init ended without \"" + kubeadmInitDone + "\"", out: append(res.Stdout, res.Stderr...)}
	}
	engine.Warn(ctx, "move /etc/kubernetes/super-admin.conf off %s to a safe place (the guide does; apply leaves it)", h.Name)
	return nil
}
