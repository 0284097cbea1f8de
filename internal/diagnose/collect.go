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
// that was not reached. dir is the user's: followed if it is a link,
// created 0700 when missing, its mode left alone when it exists
// (--collect /tmp must not close /tmp). What is below it is hybridctl's:
// a symbolic link there (DIR/NODE -> ../elsewhere) is refused, named, and
// nothing is written through it (internal/atomicfile's Dir).
func Collect(ctx context.Context, dir string, r *Result) error {
	d, err := OpenCollect(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return CollectTo(ctx, d, r)
}

// OpenCollect opens (or makes, 0700) the --collect directory dir, as
// Collect does; Options.Collect takes it so that a gathering too long to
// parse is kept there as it arrives.
func OpenCollect(dir string) (*atomicfile.Dir, error) {
	if st, err := os.Stat(dir); err == nil && !st.IsDir() {
		return nil, fmt.Errorf("collect: %s is not a directory", dir)
	}
	d, err := atomicfile.OpenDir(dir, 0o700)
	if err != nil {
		return nil, fmt.Errorf("collect: %w", err)
	}
	return d, nil
}

// CollectTo is Collect into the directory OpenCollect opened.
func CollectTo(ctx context.Context, d *atomicfile.Dir, r *Result) error {
	for _, n := range r.Nodes {
		if n.Facts == nil {
			continue
		}
		if err := collectNode(ctx, d, n); err != nil {
			return err
		}
	}
	var b bytes.Buffer
	if err := WriteJSON(&b, r); err != nil {
		return err
	}
	if err := d.WriteFile(ctx, "findings.json", Redact(b.Bytes()), 0o600, atomicfile.Options{}); err != nil {
		return fmt.Errorf("collect: %w", err)
	}
	return nil
}

// collectNode writes one node's raw outputs under d/NODE.
func collectNode(ctx context.Context, d *atomicfile.Dir, n NodeResult) error {
	name := safeName(n.Name)
	for _, f := range n.Facts.Raw {
		rel := filepath.FromSlash(f.Name)
		if !filepath.IsLocal(rel) {
			return fmt.Errorf("collect: %s: %q leaves the node's directory", n.Name, f.Name)
		}
	}
	nd, err := mkdirPrivate(d, name)
	if err != nil {
		return err
	}
	defer nd.Close()
	for _, f := range n.Facts.Raw {
		rel := filepath.FromSlash(f.Name)
		sub, err := mkdirPrivate(nd, filepath.Dir(rel))
		if err != nil {
			return err
		}
		err = sub.WriteFile(ctx, filepath.Base(rel), Redact(f.Data), 0o600, atomicfile.Options{})
		sub.Close()
		if err != nil {
			return fmt.Errorf("collect: %s: %w", n.Name, err)
		}
	}
	return nil
}

// mkdirPrivate makes rel below d (without following links) and sets it
// 0700 (an existing one too): only for directories inside the collection.
func mkdirPrivate(d *atomicfile.Dir, rel string) (*atomicfile.Dir, error) {
	sub, err := d.MkdirAll(rel, 0o700)
	if err != nil {
		return nil, fmt.Errorf("collect: %w", err)
	}
	if err := sub.Chmod(0o700); err != nil {
		sub.Close()
		return nil, fmt.Errorf("collect: %w", err)
	}
	return sub, nil
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
