package diagnose

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/hybridctl/hybridctl/internal/atomicfile"
	"github.com/hybridctl/hybridctl/internal/redact"
)

// Redact removes secrets from collected output: redact's ordered table
// of patterns (docs/node.md lists what is and is not redacted).
func Redact(b []byte) []byte { return redact.Bytes(b) }

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
