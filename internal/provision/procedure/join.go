package procedure

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"path"
	"regexp"
	"strings"

	"github.com/hybridctl/hybridctl/internal/provision/engine"
	"github.com/hybridctl/hybridctl/internal/provision/transport"
	"github.com/hybridctl/hybridctl/internal/render"
)

// Paths of the join files on the nodes. The Windows paths are the guide's.
const (
	linuxJoinFile     = linuxWorkDir + "/join.yaml"
	windowsJoinFile   = `C:\k\join.yaml`
	windowsPatchesDir = `C:\k\patches`
	// windowsKubeadm is where PrepareNode.ps1 puts kubeadm; called by full
	// path (the machine PATH it set is not the SSH session's).
	windowsKubeadm = `C:\k\kubeadm.exe`
	// windowsPathFirst puts C:\k first on the process's PATH, where
	// kubeadm finds kubelet.exe.
	windowsPathFirst = `$env:Path = 'C:\k;' + $env:Path`
	joinTokenTTL     = "1h"
)

var tokenRE = regexp.MustCompile(`^[a-z0-9]{6}\.[a-z0-9]{16}$`)

// CACertHash is kubeadm's discovery hash of a CA certificate:
// "sha256:" and the hex SHA-256 of its SubjectPublicKeyInfo.
func CACertHash(caPEM []byte) (string, error) {
	blk, _ := pem.Decode(caPEM)
	if blk == nil || blk.Type != "CERTIFICATE" {
		return "", errors.New("ca.crt: no PEM certificate")
	}
	cert, err := x509.ParseCertificate(blk.Bytes)
	if err != nil {
		return "", fmt.Errorf("ca.crt: %w", err)
	}
	sum := sha256.Sum256(cert.RawSubjectPublicKeyInfo)
	return "sha256:" + hex.EncodeToString(sum[:]), nil
}

// joinPhase joins nodes with a fresh bootstrap token (TTL one hour)
// created on the control plane over SSH, and the CA hash of its ca.crt.
// The rendered join.yaml gets the secrets filled in, goes to the node
// 0600 (Windows: Administrators and SYSTEM only) over stdin, and is
// deleted after kubeadm join whatever its outcome. A node with a
// kubelet.conf has joined already and is skipped.
type joinPhase struct {
	title    string
	windows  bool
	files    Artifacts
	hosts    []engine.Host
	connect  func(ctx context.Context, host string) (hostConn, error)
	redactor *engine.Redactor
	members
}

func (p *joinPhase) paths() (join, check string) {
	if p.windows {
		return windowsJoinFile, `if (Test-Path C:\etc\kubernetes\kubelet.conf) { exit 0 } else { exit 1 }`
	}
	return linuxJoinFile, "test -e /etc/kubernetes/kubelet.conf"
}

func (p *joinPhase) ShouldRun(ctx context.Context, h engine.Host) (bool, string, error) {
	if skip, why := p.skip(h); skip {
		return false, why, nil
	}
	c, err := p.connect(ctx, h.Name)
	if err != nil {
		return false, "", err
	}
	_, check := p.paths()
	_, err = c.Run(ctx, check)
	var ce *transport.CommandError
	switch {
	case err == nil:
		return false, "kubelet.conf exists: the node has joined", nil
	case errors.As(err, &ce) && ce.ExitCode == 1:
		return true, "", nil
	default:
		return false, "", err
	}
}

func (p *joinPhase) controlPlane() (engine.Host, error) {
	cps := engine.ControlPlanes(p.hosts)
	if len(cps) == 0 {
		return engine.Host{}, errors.New("the cluster has no control-plane node")
	}
	return cps[0], nil
}

func (p *joinPhase) DryRun(_ context.Context, h engine.Host) ([]string, error) {
	cp, err := p.controlPlane()
	if err != nil {
		return nil, err
	}
	f, err := p.files.get("nodes/" + h.Name + "/join.yaml")
	if err != nil {
		return nil, err
	}
	join, _ := p.paths()
	lines := []string{
		fmt.Sprintf("on %s as root: kubeadm token create --ttl %s --description 'hybridctl join %s' (the token is never printed)", cp.Name, joinTokenTTL, h.Name),
		fmt.Sprintf("on %s: read /etc/kubernetes/pki/ca.crt and compute the discovery hash (sha256 of its public key)", cp.Name),
		fmt.Sprintf("upload %s with the token and hash filled in to %s (0600)", f.Path, join),
	}
	if p.windows {
		for _, pf := range p.patches(h) {
			lines = append(lines, fmt.Sprintf("upload %s to %s\\%s", pf.Path, windowsPatchesDir, path.Base(pf.Path)))
		}
	}
	run := "run as root: kubeadm join --config " + join
	if p.windows {
		run = transport.DescribeWindowsRun(windowsJoinScript(join), windowsPathFirst+"; "+transport.NativeCommand(windowsKubeadm, "join", "--config", join)+" (kubeadm's preflight finds kubelet.exe on PATH)")
	}
	return append(lines, run, "remove "+join+" (it holds the token), also when the join fails"), nil
}

func (p *joinPhase) patches(h engine.Host) []render.File {
	var out []render.File
	prefix := "nodes/" + h.Name + "/patches/"
	for name, f := range p.files {
		if strings.HasPrefix(name, prefix) {
			out = append(out, f)
		}
	}
	return out
}

// secrets creates a token on the control plane and reads the CA hash.
func (p *joinPhase) secrets(ctx context.Context, h engine.Host) (engine.Secret, string, error) {
	cp, err := p.controlPlane()
	if err != nil {
		return engine.Secret{}, "", err
	}
	c, err := p.connect(ctx, cp.Name)
	if err != nil {
		return engine.Secret{}, "", err
	}
	res, err := c.Run(ctx, fmt.Sprintf("kubeadm token create --ttl %s --description %s", joinTokenTTL, transport.ShellQuote("hybridctl join "+h.Name)))
	if err != nil {
		return engine.Secret{}, "", fmt.Errorf("creating a join token on %s: %w", cp.Name, err)
	}
	tok := engine.NewSecret(string(bytes.TrimSpace(res.Stdout)))
	if p.redactor != nil {
		p.redactor.AddBootstrapToken(tok)
	}
	if !tokenRE.MatchString(tok.Reveal()) {
		return engine.Secret{}, "", fmt.Errorf("kubeadm token create on %s printed no token", cp.Name)
	}
	ca, err := c.Run(ctx, "cat /etc/kubernetes/pki/ca.crt")
	if err != nil {
		return engine.Secret{}, "", fmt.Errorf("reading the cluster CA on %s: %w", cp.Name, err)
	}
	hash, err := CACertHash(ca.Stdout)
	if err != nil {
		return engine.Secret{}, "", fmt.Errorf("%s: %w", cp.Name, err)
	}
	return tok, hash, nil
}

func (p *joinPhase) Run(ctx context.Context, h engine.Host) (err error) {
	f, err := p.files.get("nodes/" + h.Name + "/join.yaml")
	if err != nil {
		return err
	}
	if !bytes.Contains(f.Data, []byte(render.TokenPlaceholder)) || !bytes.Contains(f.Data, []byte(render.CACertHashPlaceholder)) {
		return fmt.Errorf("%s has no token/hash placeholders to fill", f.Path)
	}
	tok, hash, err := p.secrets(ctx, h)
	if err != nil {
		return err
	}
	data := bytes.ReplaceAll(f.Data, []byte(render.TokenPlaceholder), []byte(tok.Reveal()))
	data = bytes.ReplaceAll(data, []byte(render.CACertHashPlaceholder), []byte(hash))
	c, err := p.connect(ctx, h.Name)
	if err != nil {
		return err
	}
	join, _ := p.paths()
	remove := "rm -f " + join
	if p.windows {
		remove = "Remove-Item -Force -ErrorAction SilentlyContinue " + transport.PSQuote(join)
	}
	// The file holds the token: remove it whatever happens next, even when
	// ctx was cancelled (a short, separate context).
	defer func() {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
		defer cancel()
		if _, rerr := c.Run(rctx, remove); rerr != nil && err == nil {
			err = fmt.Errorf("removing %s (it holds the join token): %w", join, rerr)
		}
	}()
	if err := c.Upload(ctx, join, data, 0o600); err != nil {
		return err
	}
	if p.windows {
		for _, pf := range p.patches(h) {
			if err := c.Upload(ctx, windowsPatchesDir+`\`+path.Base(pf.Path), pf.Data, 0o644); err != nil {
				return err
			}
		}
	}
	cmd := "kubeadm join --config " + join
	if p.windows {
		// kubeadm's join preflight runs `kubelet --version` through PATH,
		// whatever path kubeadm.exe itself is called by; PrepareNode.ps1 put
		// both in C:\k, which the SSH session's PATH may predate: C:\k goes
		// first on PATH in the same process.
		cmd = windowsJoinScript(join)
	}
	_, err = c.Run(ctx, cmd)
	return err
}

// windowsJoinScript is what join-windows runs: C:\k first on PATH, then
// kubeadm join with the uploaded configuration.
func windowsJoinScript(join string) string {
	return windowsPathFirst + "\n" + transport.NativeCommand(windowsKubeadm, "join", "--config", join)
}
