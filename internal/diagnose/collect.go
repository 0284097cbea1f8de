package diagnose

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/hybridctl/hybridctl/internal/atomicfile"
)

// Redactions are applied to every file --collect writes: PEM blocks (keys,
// certificates), JSON Web Tokens (ServiceAccount tokens), kubeadm bootstrap
// tokens, kubeconfig *-data fields and key=value / "key": "value" pairs
// whose key names a secret.
var redactions = []struct {
	re   *regexp.Regexp
	with string
}{
	{regexp.MustCompile(`(?s)-----BEGIN [A-Z0-9 ]+-----.*?-----END [A-Z0-9 ]+-----`), "<redacted PEM block>"},
	{regexp.MustCompile(`eyJ[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]+`), "<redacted JWT>"},
	{regexp.MustCompile(`\b[a-z0-9]{6}\.[a-z0-9]{16}\b`), "<redacted bootstrap token>"},
	{regexp.MustCompile(`(?i)("?[a-z-]*(?:key|token|certificate|cert)-data"?\s*:\s*)"?[A-Za-z0-9+/=_.-]+"?`), "${1}<redacted>"},
	{regexp.MustCompile(`(?i)("(?:[a-z_]*token|password|passwd|secret|auth|identitytoken|registrytoken|client_secret)"\s*:\s*)"(?:[^"\\]|\\.)*"`), `${1}"<redacted>"`},
	{regexp.MustCompile(`(?i)\b((?:[a-z_-]*token|password|passwd|secret|bearer)\s*[=:]\s*|bearer\s+)[^\s"',;]+`), "${1}<redacted>"},
}

// Redact removes secrets from collected output.
func Redact(b []byte) []byte {
	for _, r := range redactions {
		b = r.re.ReplaceAll(b, []byte(r.with))
	}
	return b
}

// Collect writes every reached node's raw outputs under dir/NODE/ and the
// run's report as dir/findings.json: directories 0700, files 0600, each
// written atomically, every file redacted. Nothing is written for a node
// that was not reached.
func Collect(ctx context.Context, dir string, r *Result) error {
	// dir itself is the user's: created 0700 when missing, its mode left
	// alone when it exists (--collect /tmp must not close /tmp). What is
	// in it is ours: 0700 directories, 0600 files.
	if st, err := os.Stat(dir); err == nil && !st.IsDir() {
		return fmt.Errorf("collect: %s is not a directory", dir)
	} else if err != nil {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return fmt.Errorf("collect: %w", err)
		}
	}
	for _, n := range r.Nodes {
		if n.Facts == nil {
			continue
		}
		nd := filepath.Join(dir, safeName(n.Name))
		if err := mkdirPrivate(nd); err != nil {
			return err
		}
		for _, f := range n.Facts.Raw {
			p := filepath.Join(nd, filepath.FromSlash(f.Name))
			if rel, err := filepath.Rel(nd, p); err != nil || strings.HasPrefix(rel, "..") {
				return fmt.Errorf("collect: %s: %q leaves the node's directory", n.Name, f.Name)
			}
			if err := mkdirPrivate(filepath.Dir(p)); err != nil {
				return err
			}
			if err := atomicfile.Write(ctx, p, Redact(f.Data), 0o600, atomicfile.Options{}); err != nil {
				return fmt.Errorf("collect: %s: %w", n.Name, err)
			}
		}
	}
	var b bytes.Buffer
	if err := WriteJSON(&b, r); err != nil {
		return err
	}
	if err := atomicfile.Write(ctx, filepath.Join(dir, "findings.json"), Redact(b.Bytes()), 0o600, atomicfile.Options{}); err != nil {
		return fmt.Errorf("collect: %w", err)
	}
	return nil
}

// mkdirPrivate creates dir (and parents) 0700 and tightens it to 0700 if it
// exists: only for directories inside the collection.
func mkdirPrivate(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("collect: %w", err)
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		return fmt.Errorf("collect: %w", err)
	}
	return nil
}

// safeName makes a node name a directory name.
func safeName(s string) string {
	s = strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.' {
			return r
		}
		return '_'
	}, s)
	if s == "" || s == "." || s == ".." {
		s = "_" + s
	}
	return s
}
