package testenv

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
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

func (e *Env) writePKI() error {
	c, err := newCA()
	if err != nil {
		return err
	}
	e.ca = c
	servingCert, servingKey, err := c.issue("kube-apiserver", nil,
		[]net.IP{net.ParseIP("127.0.0.1"), net.ParseIP("10.96.0.1")},
		[]string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local"})
	if err != nil {
		return err
	}
	saKey, saPub, err := newServiceAccountKey()
	if err != nil {
		return err
	}
	files := map[string][]byte{
		"ca.crt":        c.certPEM,
		"apiserver.crt": servingCert,
		"apiserver.key": servingKey,
		"sa.key":        saKey,
		"sa.pub":        saPub,
	}
	if err := os.Mkdir(e.path("pki"), 0o700); err != nil {
		return fmt.Errorf("create pki directory: %w", err)
	}
	for name, b := range files {
		if err := os.WriteFile(e.path("pki", name), b, 0o600); err != nil {
			return fmt.Errorf("write %s: %w", name, err)
		}
	}
	return nil
}

func (e *Env) path(elem ...string) string {
	return filepath.Join(append([]string{e.dir}, elem...)...)
}

func (e *Env) startProcesses(ctx context.Context, etcdBin, apiserverBin string, extra []string, data string) error {
	ports, err := freePorts(3)
	if err != nil {
		return err
	}
	etcdClient, etcdPeer, securePort := ports[0], ports[1], ports[2]
	etcdURL := "http://127.0.0.1:" + strconv.Itoa(etcdClient)
	peerURL := "http://127.0.0.1:" + strconv.Itoa(etcdPeer)
	dataDir := e.path("etcd")
	if data != dataDir {
		if err := os.RemoveAll(dataDir); err != nil {
			return fmt.Errorf("clear etcd data directory: %w", err)
		}
		if data != "" {
			if err := copyTree(data, dataDir); err != nil {
				return fmt.Errorf("copy etcd data %s: %w", data, err)
			}
		}
	}
	e.etcd, err = startProcess(ctx, "etcd", e.path("etcd.log"), etcdBin,
		"--name=testenv",
		"--data-dir="+dataDir,
		"--listen-client-urls="+etcdURL,
		"--advertise-client-urls="+etcdURL,
		"--listen-peer-urls="+peerURL,
		"--initial-advertise-peer-urls="+peerURL,
		"--initial-cluster=testenv="+peerURL,
		"--initial-cluster-state=new",
		"--snapshot-count=10000",
		"--logger=zap",
		"--log-outputs=stderr",
	)
	if err != nil {
		return err
	}
	host := net.JoinHostPort("127.0.0.1", strconv.Itoa(securePort))
	e.host = "https://" + host
	pki := func(n string) string { return e.path("pki", n) }
	// The flags kubeadm writes into kube-apiserver.yaml, with paths and
	// addresses of this environment. Aggregation (front-proxy) and the
	// kubelet client certificate are left out: nothing here serves them.
	args := []string{
		// The endpoint reconciler refuses loopback addresses; with none,
		// the kubernetes Service simply has no Endpoints.
		"--advertise-address=127.0.0.1",
		"--endpoint-reconciler-type=none",
		"--bind-address=127.0.0.1",
		"--secure-port=" + strconv.Itoa(securePort),
		"--allow-privileged=true",
		"--authorization-mode=Node,RBAC",
		"--enable-admission-plugins=NodeRestriction",
		"--enable-bootstrap-token-auth=true",
		"--client-ca-file=" + pki("ca.crt"),
		"--tls-cert-file=" + pki("apiserver.crt"),
		"--tls-private-key-file=" + pki("apiserver.key"),
		"--etcd-servers=" + etcdURL,
		"--service-account-issuer=" + ServiceAccountIssuer,
		"--service-account-key-file=" + pki("sa.pub"),
		"--service-account-signing-key-file=" + pki("sa.key"),
		"--service-cluster-ip-range=" + ServiceCIDR,
		"--cert-dir=" + e.path("pki"),
		"--profiling=false",
	}
	args = append(args, extra...)
	e.apiserver, err = startProcess(ctx, "kube-apiserver", e.path("kube-apiserver.log"), apiserverBin, args...)
	if err != nil {
		return err
	}
	certPEM, keyPEM, err := e.ca.issue(AdminUser, []string{AdminGroup}, nil, nil)
	if err != nil {
		return err
	}
	e.admin = e.restConfig(certPEM, keyPEM)
	e.kubeconfig = e.path("admin.conf")
	if err := e.WriteKubeconfig(e.kubeconfig, e.admin); err != nil {
		return err
	}
	timeout := startTimeout
	if data != "" {
		// kube-apiserver fills its watch caches from the data first.
		timeout = restoreTimeout
	}
	return e.waitReady(ctx, timeout)
}

// waitReady polls /readyz until it answers ok, a process exits or the
// deadline passes.
func (e *Env) waitReady(ctx context.Context, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	client, err := kubernetes.NewForConfig(e.admin)
	if err != nil {
		return fmt.Errorf("admin client: %w", err)
	}
	var last error
	for {
		var status int
		body, err := client.Discovery().RESTClient().Get().AbsPath("/readyz").Do(ctx).StatusCode(&status).Raw()
		if err == nil && status == http.StatusOK && bytes.Equal(bytes.TrimSpace(body), []byte("ok")) {
			return nil
		}
		if err != nil {
			last = err
		}
		for _, p := range []*process{e.etcd, e.apiserver} {
			if exited, werr := p.exited(); exited {
				tail := p.logTail()
				if bytes.Contains([]byte(tail), []byte("address already in use")) {
					return fmt.Errorf("%s: %w", p.name, errPortTaken)
				}
				return fmt.Errorf("%s exited during start-up (%v); log %s ends:\n%s", p.name, werr, p.log, tail)
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("kube-apiserver at %s not ready after %s (last error: %v); log %s ends:\n%s",
				e.host, timeout, last, e.apiserver.log, e.apiserver.logTail())
		case <-time.After(readyzPollInterval):
		}
	}
}

func (e *Env) restConfig(certPEM, keyPEM []byte) *rest.Config {
	return &rest.Config{
		Host: e.host,
		TLSClientConfig: rest.TLSClientConfig{
			CAData:   e.ca.certPEM,
			CertData: certPEM,
			KeyData:  keyPEM,
		},
		QPS:   -1, // no client-side rate limit; the server is local
		Burst: -1,
	}
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

func (e *Env) stopProcesses() error {
	var errs []error
	if e.apiserver != nil {
		errs = append(errs, e.apiserver.stop(apiserverStopGrace))
		e.apiserver = nil
	}
	if e.etcd != nil {
		errs = append(errs, e.etcd.stop(etcdStopGrace))
		e.etcd = nil
	}
	return errors.Join(errs...)
}

// Host returns the API server's URL, https://127.0.0.1:PORT.
func (e *Env) Host() string { return e.host }

// Dir returns the environment's temporary directory (logs: etcd.log,
// kube-apiserver.log; pki/; admin.conf).
func (e *Env) Dir() string { return e.dir }

// CAData returns the PEM certificate of the environment's CA, which signs
// the serving certificate and all client certificates.
func (e *Env) CAData() []byte { return bytes.Clone(e.ca.certPEM) }

// AdminConfig returns a fresh copy of the admin client configuration
// (kubernetes-admin in system:masters, client-certificate auth).
func (e *Env) AdminConfig() *rest.Config { return rest.CopyConfig(e.admin) }

// KubeconfigPath returns the path of the admin kubeconfig (mode 0600).
func (e *Env) KubeconfigPath() string { return e.kubeconfig }

// Client returns a typed clientset for the admin.
func (e *Env) Client() (*kubernetes.Clientset, error) {
	return kubernetes.NewForConfig(e.AdminConfig())
}

// UserConfig mints a client certificate signed by the environment's CA for
// user (certificate CN) in groups (O entries) and returns a configuration
// that authenticates with it, exactly as a kubelet or a person with a
// kubeadm-issued certificate would. Authorization is the API server's: RBAC,
// and the Node authorizer for system:node:NAME in system:nodes.
func (e *Env) UserConfig(user string, groups ...string) (*rest.Config, error) {
	if user == "" {
		return nil, errors.New("UserConfig: empty user name")
	}
	certPEM, keyPEM, err := e.ca.issue(user, groups, nil, nil)
	if err != nil {
		return nil, err
	}
	return e.restConfig(certPEM, keyPEM), nil
}

// WriteKubeconfig writes cfg (as returned by AdminConfig or UserConfig) as a
// kubeconfig file with one cluster, user and context named "testenv", mode
// 0600, atomically.
func (e *Env) WriteKubeconfig(path string, cfg *rest.Config) error {
	kc := clientcmdapi.NewConfig()
	kc.Clusters["testenv"] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: cfg.CAData}
	kc.AuthInfos["testenv"] = &clientcmdapi.AuthInfo{
		ClientCertificateData: cfg.CertData,
		ClientKeyData:         cfg.KeyData,
		Token:                 cfg.BearerToken,
		Impersonate:           cfg.Impersonate.UserName,
		ImpersonateGroups:     cfg.Impersonate.Groups,
	}
	kc.Contexts["testenv"] = &clientcmdapi.Context{Cluster: "testenv", AuthInfo: "testenv"}
	kc.CurrentContext = "testenv"
	b, err := clientcmd.Write(*kc)
	if err != nil {
		return fmt.Errorf("encode kubeconfig %s: %w", path, err)
	}
	return writeFileAtomic(path, b, 0o600)
}

func writeFileAtomic(path string, b []byte, mode os.FileMode) (err error) {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	defer func() {
		if err != nil {
			_ = f.Close()
			_ = os.Remove(f.Name())
		}
	}()
	if err := f.Chmod(mode); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if _, err := f.Write(b); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Rename(f.Name(), path); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// freePorts returns n distinct loopback ports that were free a moment ago.
// Another process can take one before the child binds it; Start retries.
func freePorts(n int) ([]int, error) {
	var ports []int
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			_ = l.Close()
		}
	}()
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("find a free loopback port: %w", err)
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// process is a started child with its log file.
type process struct {
	name string
	log  string
	cmd  *exec.Cmd
	done chan struct{}
	err  error // valid after done is closed
}

func startProcess(ctx context.Context, name, logPath, bin string, args ...string) (*process, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
	if err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	// Not exec.CommandContext: the process must outlive the start-up
	// context; Stop ends it.
	cmd := exec.Command(bin, args...)
	cmd.Stdout = logFile
	cmd.Stderr = logFile
	cmd.Dir = filepath.Dir(logPath)
	prepare(cmd)
	if err := cmd.Start(); err != nil {
		_ = logFile.Close()
		return nil, fmt.Errorf("start %s (%s): %w", name, bin, err)
	}
	p := &process{name: name, log: logPath, cmd: cmd, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		_ = logFile.Close()
		close(p.done)
	}()
	return p, nil
}

func (p *process) exited() (bool, error) {
	select {
	case <-p.done:
		return true, p.err
	default:
		return false, nil
	}
}

// stop sends SIGTERM to the process group, waits up to grace, then SIGKILL.
func (p *process) stop(grace time.Duration) error {
	if exited, _ := p.exited(); exited {
		return nil
	}
	_ = signalGroup(p.cmd, sigTerm)
	select {
	case <-p.done:
		return nil
	case <-time.After(grace):
	}
	_ = signalGroup(p.cmd, sigKill)
	select {
	case <-p.done:
		return nil
	case <-time.After(10 * time.Second):
		return fmt.Errorf("%s (pid %d) did not exit after SIGKILL", p.name, p.cmd.Process.Pid)
	}
}

// logTail returns the last lines of the process's log.
func (p *process) logTail() string {
	b, err := os.ReadFile(p.log)
	if err != nil {
		return fmt.Sprintf("(cannot read log: %v)", err)
	}
	const max = 4000
	if len(b) > max {
		b = b[len(b)-max:]
		if i := bytes.IndexByte(b, '\n'); i >= 0 {
			b = b[i+1:]
		}
	}
	return string(b)
}
