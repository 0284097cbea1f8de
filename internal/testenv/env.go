package testenv

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"k8s.io/client-go/rest"
)

// Options says what Start prepares beyond an empty cluster.
type Options struct {
	// Calico installs the Calico CRDs and admission policies from
	// <shared>/calico/v3_projectcalico_org.yaml and waits until the CRDs are
	// Established.
	Calico bool
	// Lab loads testdata/clusters/lab (LabDir), the guide's lab cluster at
	// the end of the guide; it implies Calico. It is loaded before Load.
	Lab bool
	// Load lists fixture directories loaded with LoadDir, in order, after
	// the Calico CRDs.
	Load []string
	// Logf, when set, receives progress lines (start-up timings, stops).
	Logf func(format string, args ...any)
	// APIServerFlags are added after the flags kubeadm would give
	// kube-apiserver (a later flag wins), for example
	// "--feature-gates=WatchList=false" to test a server without a feature.
	APIServerFlags []string
	// Cache, when set, is a directory (created) that keeps the etcd data
	// of environments after their objects were loaded, for benchmarks
	// that load large fixtures: a later Start with the same binaries,
	// options and fixture files (compared by content) starts etcd on a
	// copy of that data instead of loading the objects again. The newest
	// two entries are kept. Tests leave it empty: their environments
	// always start empty.
	Cache string
}

// Env is a running etcd + kube-apiserver pair. Its methods are safe for
// concurrent use.
type Env struct {
	dir        string // temporary directory; removed by Stop
	ca         *ca
	host       string // https://127.0.0.1:PORT
	kubeconfig string
	admin      *rest.Config
	etcd       *process
	apiserver  *process
	logf       func(string, ...any)

	stopOnce sync.Once
	stopErr  error
}

// Identity of the admin kubeconfig. kubeadm's super-admin.conf uses the same
// group; it bypasses authorization.
const (
	AdminUser  = "kubernetes-admin"
	AdminGroup = "system:masters"
)

// ServiceCIDR and the rest are the values kubeadm gives kube-apiserver for
// the guide's lab.
const (
	ServiceCIDR           = "10.96.0.0/12"
	ServiceAccountIssuer  = "https://kubernetes.default.svc.cluster.local"
	startTimeout          = 3 * time.Minute // a loaded machine (niced test runs) needs over a minute
	restoreTimeout        = 5 * time.Minute
	apiserverStopGrace    = 5 * time.Second
	etcdStopGrace         = 5 * time.Second
	maxPortAttempts       = 3
	readyzPollInterval    = 100 * time.Millisecond
	defaultServiceAccount = "default"
)

// Start starts etcd and kube-apiserver on free loopback ports with a fresh
// CA, waits until /readyz answers ok, then applies opts. On error nothing is
// left running. Call Stop when done (Main and StartT do).
func Start(ctx context.Context, opts Options) (_ *Env, err error) {
	logf := opts.Logf
	if logf == nil {
		logf = func(string, ...any) {}
	}
	apiserverBin, err := Binary("kube-apiserver")
	if err != nil {
		return nil, err
	}
	etcdBin, err := etcdBinary()
	if err != nil {
		return nil, err
	}
	removeStaleDirs()
	dir, err := os.MkdirTemp("", dirPrefix)
	if err != nil {
		return nil, fmt.Errorf("create testenv directory: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, ownerFile), []byte(strconv.Itoa(os.Getpid())), 0o600); err != nil {
		_ = os.RemoveAll(dir)
		return nil, fmt.Errorf("create testenv directory: %w", err)
	}
	e := &Env{dir: dir, logf: logf}
	defer func() {
		if err != nil {
			if serr := e.Stop(); serr != nil {
				err = errors.Join(err, serr)
			}
		}
	}()
	began := time.Now()
	if err := e.writePKI(); err != nil {
		return nil, err
	}
	load := opts.Load
	if opts.Lab {
		lab, err := LabDir()
		if err != nil {
			return nil, err
		}
		load = append([]string{lab}, load...)
	}
	calico := ""
	if opts.Calico || opts.Lab {
		if calico, err = CalicoCRDs(ctx); err != nil {
			return nil, err
		}
	}
	key, restore := "", ""
	if opts.Cache != "" {
		t := time.Now()
		if key, err = cacheKey(opts, etcdBin, apiserverBin, calico, load); err != nil {
			return nil, err
		}
		restore = cachedData(opts.Cache, key)
		logf("testenv: etcd cache entry %s (found: %t) in %s", key, restore != "", time.Since(t).Round(time.Millisecond))
	}
	if restore != "" {
		t := time.Now()
		err := e.start(ctx, etcdBin, apiserverBin, opts.APIServerFlags, restore)
		if err == nil {
			logf("testenv: kube-apiserver %s ready at %s on a copy of %s after %s", KubernetesVersion, e.host, restore, time.Since(t).Round(time.Millisecond))
			return e, nil
		}
		// A damaged entry (a copy cut short): drop it and load afresh.
		logf("testenv: starting on %s failed, loading instead: %v", restore, err)
		e.stopProcesses()
		_ = os.RemoveAll(filepath.Dir(restore))
	}
	if err := e.start(ctx, etcdBin, apiserverBin, opts.APIServerFlags, ""); err != nil {
		return nil, err
	}
	logf("testenv: kube-apiserver %s ready at %s after %s", KubernetesVersion, e.host, time.Since(began).Round(time.Millisecond))
	if err := e.ensureServiceAccounts(ctx, "default", "kube-system", "kube-public"); err != nil {
		return nil, err
	}
	if calico != "" {
		t := time.Now()
		if err := e.LoadFile(ctx, calico); err != nil {
			return nil, fmt.Errorf("install Calico CRDs: %w", err)
		}
		logf("testenv: Calico CRDs established after %s", time.Since(t).Round(time.Millisecond))
	}
	for _, d := range load {
		t := time.Now()
		if err := e.LoadDir(ctx, d); err != nil {
			return nil, err
		}
		logf("testenv: loaded %s in %s", d, time.Since(t).Round(time.Millisecond))
	}
	if opts.Cache != "" {
		// Stop both processes so that etcd's files are quiet, copy them
		// into the cache, and start again on the same data.
		t := time.Now()
		if err := e.stopProcesses(); err != nil {
			return nil, err
		}
		if err := saveCache(opts.Cache, key, e.path("etcd")); err != nil {
			return nil, err
		}
		if err := e.start(ctx, etcdBin, apiserverBin, opts.APIServerFlags, e.path("etcd")); err != nil {
			return nil, err
		}
		logf("testenv: etcd data saved as %s and restarted in %s", filepath.Join(opts.Cache, key), time.Since(t).Round(time.Millisecond))
	}
	return e, nil
}

// start starts etcd and kube-apiserver, retrying when a port was taken.
// data is the etcd data directory to start from: "" for a new one,
// e.path("etcd") to keep the current one, another directory to start on a
// copy of it.
func (e *Env) start(ctx context.Context, etcdBin, apiserverBin string, extra []string, data string) error {
	var lastErr error
	for range maxPortAttempts {
		lastErr = e.startProcesses(ctx, etcdBin, apiserverBin, extra, data)
		if lastErr == nil || !errors.Is(lastErr, errPortTaken) {
			break
		}
		e.stopProcesses()
	}
	return lastErr
}

var errPortTaken = errors.New("port taken")

const (
	dirPrefix = "hybridctl-testenv-"
	ownerFile = "owner.pid"
)

// removeStaleDirs removes the directories of environments whose owning
// process died without stopping them (SIGKILL, a panic in a test): their
// children died with it (parent-death signal), their files stay behind.
// Directories without an owner file, or whose owner lives, are left alone.
func removeStaleDirs() {
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), dirPrefix+"*"))
	for _, d := range dirs {
		b, err := os.ReadFile(filepath.Join(d, ownerFile))
		if err != nil {
			continue
		}
		pid, err := strconv.Atoi(string(b))
		if err != nil || pid <= 0 || processAlive(pid) {
			continue
		}
		_ = os.RemoveAll(d)
	}
}

func (e *Env) path(elem ...string) string {
	return filepath.Join(append([]string{e.dir}, elem...)...)
}

// Stop stops kube-apiserver, then etcd (in this order: kube-apiserver hangs
// in shutdown without etcd), each with SIGTERM and, after a short grace, a
// SIGKILL to its process group; then removes the temporary directory unless
// HYBRIDCTL_TESTENV_KEEP is set. Stop is idempotent.
func (e *Env) Stop() error {
	e.stopOnce.Do(func() {
		e.stopErr = e.stopProcesses()
		if os.Getenv(EnvKeep) != "" {
			// Without an owner the directory is not reclaimed as stale.
			_ = os.Remove(filepath.Join(e.dir, ownerFile))
			e.logf("testenv: kept %s", e.dir)
			return
		}
		if err := os.RemoveAll(e.dir); err != nil {
			e.stopErr = errors.Join(e.stopErr, fmt.Errorf("remove %s: %w", e.dir, err))
		}
	})
	return e.stopErr
}
