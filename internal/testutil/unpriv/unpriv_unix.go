//go:build unix

// Package unpriv re-runs a test as an unprivileged user when the tests run
// as root, for tests whose point is a permission that root ignores (a
// read-only directory, a file mode). CI and the lab run as root, so such a
// test would otherwise never run its real assertions there.
package unpriv

import (
	"bytes"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"syscall"
	"testing"
)

// EnvChild marks the child process that runs the test unprivileged.
const EnvChild = "HYBRIDCTL_UNPRIV_CHILD"

// Nobody is the user and group the child runs as.
const Nobody = 65534

// Run reports whether the caller should run the test body itself: true when
// the process is not root (the normal case for contributors, and the child).
// As root it re-runs the calling top-level test in a child process as
// nobody, fails the test unless the child ran it and it passed, and returns
// false.
func Run(t *testing.T) bool {
	t.Helper()
	if os.Geteuid() != 0 {
		return true
	}
	if os.Getenv(EnvChild) != "" {
		t.Fatal("unpriv: the child process still runs as root")
	}
	// The test binary lives in go's private build directory (0700): copy it
	// where nobody can run it.
	dir, err := os.MkdirTemp("", "hybridctl-unpriv-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	tmp := filepath.Join(dir, "tmp")
	if err := os.Mkdir(tmp, 0o1777); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{dir, tmp} {
		if err := os.Chmod(d, map[bool]os.FileMode{true: 0o1777, false: 0o755}[d == tmp]); err != nil {
			t.Fatal(err)
		}
	}
	bin := filepath.Join(dir, "test.bin")
	if err := copyExecutable(os.Args[0], bin); err != nil {
		t.Fatalf("unpriv: copy the test binary: %v", err)
	}
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(t.Context(), bin, "-test.run", "^"+regexp.QuoteMeta(t.Name())+"$", "-test.v", "-test.count=1")
	// The child starts in the package directory when nobody can reach it
	// (as in a normal clone), else in its own temporary directory (a clone
	// under /root, a 0700 temporary directory): the tests that use this do
	// not read files relative to the package.
	cmd.Dir = tmp
	if reachableByOthers(wd) {
		cmd.Dir = wd
	}
	// GOTMPDIR too: t.TempDir creates its directories there when it is set
	// (gremlins sets it to its own 0700 directory), and nobody could not.
	cmd.Env = append(os.Environ(), EnvChild+"=1", "HOME="+tmp, "TMPDIR="+tmp, "GOTMPDIR="+tmp, "XDG_CACHE_HOME="+tmp)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: Nobody, Gid: Nobody}}
	out, err := cmd.CombinedOutput()
	t.Logf("unpriv: %s ran as uid %d:\n%s", t.Name(), Nobody, out)
	if err != nil {
		t.Fatalf("unpriv: %s as uid %d failed: %v", t.Name(), Nobody, err)
	}
	if !bytes.Contains(out, []byte("--- PASS: "+t.Name()+" ")) {
		t.Fatalf("unpriv: the child did not report %s as passed", t.Name())
	}
	return false
}

// reachableByOthers reports whether every directory from / to dir lets
// other users through (the x bit for others).
func reachableByOthers(dir string) bool {
	for d := dir; ; d = filepath.Dir(d) {
		fi, err := os.Stat(d)
		if err != nil || fi.Mode().Perm()&0o001 == 0 {
			return false
		}
		if filepath.Dir(d) == d {
			return true
		}
	}
}

func copyExecutable(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o755)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
