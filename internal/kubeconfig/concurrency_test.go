package kubeconfig

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"k8s.io/client-go/tools/clientcmd"

	kt "github.com/hybridctl/hybridctl/internal/kubeconfig/kubeconfigtest"
)

const concurrentImports = 50

// writeSources writes n distinct kubeadm-shaped admin.conf files (same
// names inside, different servers and CAs) and returns their paths.
func writeSources(t *testing.T, n int) []string {
	t.Helper()
	dir := t.TempDir()
	paths := make([]string, n)
	for i := range n {
		ca := kt.NewCA(t, "kubernetes")
		cert, key := ca.Issue(t, "kubernetes-admin", []string{"kubeadm:cluster-admins"})
		paths[i] = kt.WriteFile(t, filepath.Join(dir, fmt.Sprintf("admin-%02d.conf", i)),
			kt.AdminConf(fmt.Sprintf("https://127.0.0.%d:6443", i+1), ca.CertPEM, cert, key), 0o600)
	}
	return paths
}

func assertAllImported(t *testing.T, st *Store, n int) {
	t.Helper()
	// Every lock file went with its lock: nothing is left beside the file.
	for _, lock := range []string{st.Path + lockSuffix, st.Path + ".lock"} {
		if _, err := os.Stat(lock); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s left behind (%v)", lock, err)
		}
	}
	cfg, err := clientcmd.LoadFromFile(st.Path)
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Contexts) != n || len(cfg.Clusters) != n || len(cfg.AuthInfos) != n {
		t.Fatalf("after %d concurrent imports: %d contexts, %d clusters, %d users", n, len(cfg.Contexts), len(cfg.Clusters), len(cfg.AuthInfos))
	}
	for i := range n {
		name := fmt.Sprintf("c%02d", i)
		cl, ok := cfg.Clusters[name]
		if !ok {
			t.Errorf("cluster %s lost", name)
			continue
		}
		if want := fmt.Sprintf("https://127.0.0.%d:6443", i+1); cl.Server != want {
			t.Errorf("cluster %s: server %s, want %s", name, cl.Server, want)
		}
	}
	assertMode(t, st.Path, 0o600)
	if bs, _ := st.ListBackups(); len(bs) > DefaultBackups {
		t.Errorf("%d backups kept, want at most %d", len(bs), DefaultBackups)
	}
}

func TestConcurrentImportsGoroutines(t *testing.T) {
	srcs := writeSources(t, concurrentImports)
	st := newStore(t)
	st.LockTimeout = 5 * time.Minute // generous: the test is about losing nothing, not speed (-race on a loaded machine is slow)
	var wg sync.WaitGroup
	errs := make(chan error, concurrentImports)
	for i, src := range srcs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// Each goroutine has its own Store, as separate commands would.
			own := &Store{Path: st.Path, LockTimeout: st.LockTimeout}
			_, err := Import(context.Background(), own, ImportOptions{Source: src, Name: fmt.Sprintf("c%02d", i)})
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	assertAllImported(t, st, concurrentImports)
}

// TestConcurrentImportsProcesses runs the imports in separate processes (this
// test binary, re-executed), so the flock is what keeps them apart.
func TestConcurrentImportsProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("starts 50 processes; skipped under -short")
	}
	srcs := writeSources(t, concurrentImports)
	st := newStore(t)
	cmds := make([]*exec.Cmd, len(srcs))
	for i, src := range srcs {
		cmd := exec.Command(os.Args[0], "-test.run=^TestHelperImportProcess$", "-test.count=1")
		cmd.Env = append(os.Environ(),
			"HYBRIDCTL_TEST_IMPORT_TARGET="+st.Path,
			"HYBRIDCTL_TEST_IMPORT_SOURCE="+src,
			fmt.Sprintf("HYBRIDCTL_TEST_IMPORT_NAME=c%02d", i))
		cmds[i] = cmd
	}
	outs := make([][]byte, len(cmds))
	errs := make([]error, len(cmds))
	var wg sync.WaitGroup
	for i, cmd := range cmds {
		wg.Add(1)
		go func() {
			defer wg.Done()
			outs[i], errs[i] = cmd.CombinedOutput()
		}()
	}
	wg.Wait()
	for i := range cmds {
		if errs[i] != nil {
			t.Errorf("process %d: %v\n%s", i, errs[i], outs[i])
		}
	}
	assertAllImported(t, st, concurrentImports)
}

// TestHelperImportProcess is the child of TestConcurrentImportsProcesses; it
// does nothing in a normal run.
func TestHelperImportProcess(t *testing.T) {
	target := os.Getenv("HYBRIDCTL_TEST_IMPORT_TARGET")
	if target == "" {
		t.Skip("helper process for TestConcurrentImportsProcesses")
	}
	st := &Store{Path: target, LockTimeout: 5 * time.Minute}
	if _, err := Import(context.Background(), st, ImportOptions{Source: os.Getenv("HYBRIDCTL_TEST_IMPORT_SOURCE"), Name: os.Getenv("HYBRIDCTL_TEST_IMPORT_NAME")}); err != nil {
		t.Fatal(err)
	}
}
