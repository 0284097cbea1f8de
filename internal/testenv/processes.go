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
	"time"

	"k8s.io/client-go/kubernetes"
)

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
