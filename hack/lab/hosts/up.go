package hosts

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/hybridctl/hybridctl/internal/atomicfile"
)

// Options tune Up.
type Options struct {
	// RegistryBin is distribution's registry binary; empty: no registry.
	RegistryBin string
	// Log receives progress lines.
	Log func(format string, args ...any)
	// BootTimeout bounds one node's boot (default 10 minutes: two shared
	// cores under load).
	BootTimeout time.Duration
}

// ErrUp is returned by Up when the lab already has a state file.
var ErrUp = errors.New("the lab is already up")

// Up makes the lab: the bridge, the gateway's DNS and registry, and one
// booted node per spec node, reachable over SSH with the lab key. Each
// resource is recorded before it is made; on error the lab is left as it
// is for Down (and for a look at what went wrong).
func Up(ctx context.Context, lab *Lab, opts Options) error {
	if opts.Log == nil {
		opts.Log = func(string, ...any) {}
	}
	if opts.BootTimeout == 0 {
		opts.BootTimeout = 10 * time.Minute
	}
	log := opts.Log
	if m := Requirements(); len(m) > 0 {
		return fmt.Errorf("the lab cannot run here; missing: %s", strings.Join(m, "; "))
	}
	if err := checkHostIsolation(lab); err != nil {
		return err
	}
	st, err := LoadState(lab.StatePath())
	if err != nil {
		return err
	}
	if len(st.Resources) > 0 {
		return fmt.Errorf("%w (%s); run lab down first", ErrUp, lab.StatePath())
	}
	st.Lab = lab.Name

	if err := st.Add(ctx, Resource{KindDir, lab.Dir}); err != nil {
		return err
	}
	for _, d := range []string{lab.Dir, filepath.Join(lab.Dir, "pki"), lab.LogDir(), filepath.Join(lab.Dir, "nodes")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return err
		}
	}
	tree, err := EnsureTree(ctx, lab.CacheDir, log)
	if err != nil {
		return err
	}

	// Keys and certificates.
	now := time.Now()
	ca, err := NewCA(lab.Name, now)
	if err != nil {
		return err
	}
	regCert, regKey, err := ca.ServerCert(lab.Gateway, now)
	if err != nil {
		return err
	}
	key, err := NewSSHKey("hybridctl-lab-" + lab.Name)
	if err != nil {
		return err
	}
	pki := filepath.Join(lab.Dir, "pki")
	for _, f := range []struct {
		path string
		data []byte
		mode os.FileMode
	}{
		{lab.CACertPath(), ca.CertPEM, 0o644},
		{filepath.Join(pki, "registry.crt"), regCert, 0o644},
		{filepath.Join(pki, "registry.key"), regKey, 0o600},
		{lab.KeyPath(), key.PrivatePEM, 0o600},
		{lab.KeyPath() + ".pub", []byte(key.Public), 0o644},
	} {
		if err := atomicfile.Write(ctx, f.path, f.data, f.mode, atomicfile.Options{}); err != nil {
			return err
		}
	}

	// The bridge with the gateway address.
	br := lab.Bridge()
	log("bridge %s with %s/%d", br, lab.Gateway, lab.Network.Bits())
	if err := st.Add(ctx, Resource{KindLink, br}); err != nil {
		return err
	}
	if _, err := run(ctx, "ip", "link", "add", br, "type", "bridge"); err != nil {
		return err
	}
	if _, err := run(ctx, "ip", "addr", "add", fmt.Sprintf("%s/%d", lab.Gateway, lab.Network.Bits()), "dev", br); err != nil {
		return err
	}
	up := []string{"link", "set", br, "up"}
	if lab.MTU > 0 {
		up = append(up, "mtu", strconv.Itoa(lab.MTU))
	}
	if _, err := run(ctx, "ip", up...); err != nil {
		return err
	}

	// The host resolves the plan's names too (kubectl uses the API name).
	if err := st.Add(ctx, Resource{KindHosts, lab.HostsMarker()}); err != nil {
		return err
	}
	if err := editHostsFile(lab.HostsMarker(), lab.hostsLines()); err != nil {
		return err
	}

	// One cgroup tree per hierarchy holds every process of the lab.
	hs, err := hierarchies()
	if err != nil {
		return err
	}
	var roots []string
	for _, h := range hs {
		root := filepath.Join(h.Mount, h.Self, lab.CgroupName())
		if err := st.Add(ctx, Resource{KindCgroup, root}); err != nil {
			return err
		}
		roots = append(roots, root)
	}

	// DNS: dnsmasq answering the plan's records on the gateway.
	log("dnsmasq on %s:53 (%d records)", lab.Gateway, len(lab.Records))
	if _, err := startIn(ctx, roots, "dnsmasq", filepath.Join(lab.LogDir(), "dnsmasq.log"),
		"dnsmasq", lab.DnsmasqArgs(filepath.Join(lab.Dir, "dnsmasq.pid"))...); err != nil {
		return err
	}

	// The registry over TLS.
	if opts.RegistryBin != "" {
		cfg := filepath.Join(lab.Dir, "registry.yml")
		conf := lab.RegistryConfig(lab.RegistryStorage(), filepath.Join(pki, "registry.crt"), filepath.Join(pki, "registry.key"))
		if err := os.MkdirAll(lab.RegistryStorage(), 0o755); err != nil {
			return err
		}
		if err := atomicfile.Write(ctx, cfg, []byte(conf), 0o600, atomicfile.Options{}); err != nil {
			return err
		}
		log("registry on %s (TLS, lab CA)", lab.Registry())
		if _, err := startIn(ctx, roots, "registry", filepath.Join(lab.LogDir(), "registry.log"),
			opts.RegistryBin, "serve", cfg); err != nil {
			return err
		}
		if err := waitTLS(ctx, lab.Registry(), ca.Cert, 60*time.Second); err != nil {
			return fmt.Errorf("registry: %w (log: %s)", err, filepath.Join(lab.LogDir(), "registry.log"))
		}
	}

	// The nodes: a copy of the tree each, made theirs, then booted.
	hostKeys := map[string]string{}
	for _, n := range lab.Nodes {
		if err := st.Add(ctx, Resource{KindDir, lab.NodeDir(n.Name)}); err != nil {
			return err
		}
		if err := st.Add(ctx, Resource{KindNspawnRun, n.Name}); err != nil {
			return err
		}
		log("node %s: tree", n.Name)
		pub, err := prepareNode(ctx, lab, n, tree, key.Public, ca.CertPEM)
		if err != nil {
			return fmt.Errorf("node %s: %w", n.Name, err)
		}
		hostKeys[n.Name] = pub
	}
	if err := atomicfile.Write(ctx, lab.KnownHostsPath(), []byte(lab.KnownHosts(hostKeys)), 0o644, atomicfile.Options{}); err != nil {
		return err
	}
	for _, n := range lab.Nodes {
		var cgs []string
		for _, r := range roots {
			cgs = append(cgs, filepath.Join(r, "node-"+n.Name))
		}
		log("node %s: boot at %s", n.Name, n.Address)
		if _, err := startIn(ctx, cgs, "node-"+n.Name, filepath.Join(lab.LogDir(), n.Name+".console.log"),
			"systemd-nspawn", lab.NspawnArgs(n)...); err != nil {
			return fmt.Errorf("node %s: %w", n.Name, err)
		}
	}
	var wg sync.WaitGroup
	errs := make([]error, len(lab.Nodes))
	for i, n := range lab.Nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = finishBoot(ctx, lab, n, roots, opts)
			if errs[i] != nil {
				errs[i] = fmt.Errorf("node %s: %w (console: %s)", n.Name, errs[i], filepath.Join(lab.LogDir(), n.Name+".console.log"))
			}
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	return checkHostIsolation(lab)
}

// NspawnArgs boots node n: its own systemd, on the lab bridge, in the
// caller's cgroup (no machined here: the host's PID 1 is not systemd), with
// the keyring calls containerd's runc needs allowed.
func (l *Lab) NspawnArgs(n Node) []string {
	args := []string{
		"-D", l.NodeRoot(n.Name), "-M", n.Name, "-b",
		"--network-bridge=" + l.Bridge(), "--register=no", "--keep-unit", "--console=read-only",
		"--system-call-filter=add_key keyctl request_key",
		"--resolv-conf=off", "--timezone=off", "--link-journal=no",
	}
	for _, d := range NodeTmpfs() {
		args = append(args, "--tmpfs="+d.Path+":mode="+d.Mode+",size="+NodeTmpfsSize)
	}
	return args
}

// NodeTmpfs lists the directories each node gets on a file system of its own
// (a tmpfs; it holds what is written, no more): the kubelet's root
// (nodefs) and containerd's (imagefs). The kubelet evicts and taints a
// node with disk-pressure when its image file system has less than 15%
// free; on the host's disk that depends on everything else on this machine
// (the lab's first runs here had 14% free and every node tainted, so no
// pod scheduled), on a file system of the node's own it depends on the
// node alone.
func NodeTmpfs() []struct{ Path, Mode string } {
	return []struct{ Path, Mode string }{
		{"/var/lib/kubelet", "0700"},
		{"/var/lib/containerd", "0711"},
	}
}

// NodeTmpfsSize bounds each of NodeTmpfs(): the control plane's images
// (etcd, the API server, controller manager, scheduler, kube-proxy, CoreDNS,
// pause, the lab's programs) take under 1 GiB.
const NodeTmpfsSize = "8G"

// prepareNode copies the tree for n and writes what makes it n: name,
// address, machine-id, keys, users, the lab CA. It returns n's host key in
// authorized_keys form.
func prepareNode(ctx context.Context, lab *Lab, n Node, tree, authorized string, caPEM []byte) (string, error) {
	root := lab.NodeRoot(n.Name)
	if err := os.MkdirAll(lab.NodeDir(n.Name), 0o700); err != nil {
		return "", err
	}
	if _, err := run(ctx, "cp", "-a", "--reflink=auto", tree, root); err != nil {
		return "", err
	}
	hostKey, err := NewSSHKey("root@" + n.Name)
	if err != nil {
		return "", err
	}
	mid := make([]byte, 16)
	if _, err := rand.Read(mid); err != nil {
		return "", err
	}
	_ = os.Remove(filepath.Join(root, "etc/resolv.conf"))
	files := []struct {
		path string
		data string
		mode os.FileMode
	}{
		{"etc/hostname", n.Name + "\n", 0o644},
		{"etc/hosts", lab.NodeHosts(n), 0o644},
		{"etc/machine-id", hex.EncodeToString(mid) + "\n", 0o444},
		{"etc/resolv.conf", lab.ResolvConf(), 0o644},
		{"etc/systemd/network/10-hybridctl-lab.network", lab.NetworkdFile(n), 0o644},
		{"etc/ssh/sshd_config.d/hybridctl-lab.conf", SSHDConfig + "HostKey /etc/ssh/ssh_host_ed25519_key\n", 0o644},
		{"etc/ssh/ssh_host_ed25519_key", string(hostKey.PrivatePEM), 0o600},
		{"etc/ssh/ssh_host_ed25519_key.pub", hostKey.Public, 0o644},
		{"root/.ssh/authorized_keys", authorized, 0o600},
		{"usr/local/share/ca-certificates/hybridctl-lab.crt", string(caPEM), 0o644},
		{"etc/tmpfiles.d/hybridctl-lab-kmsg.conf", KmsgTmpfiles, 0o644},
		{"etc/systemd/journald.conf.d/hybridctl-lab.conf", "[Journal]\nStorage=volatile\nRuntimeMaxUse=32M\n", 0o644},
		{"lib/modules/" + kernelRelease() + "/modules.builtin", ModulesBuiltin, 0o644},
	}
	for _, k := range SortedSysctls() {
		files = append(files, struct {
			path string
			data string
			mode os.FileMode
		}{"etc/hybridctl-lab/sysctl/" + strings.ReplaceAll(k, "/", "."), KubeletSysctls[k] + "\n", 0o444})
	}
	for _, f := range files {
		p := filepath.Join(root, f.path)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return "", err
		}
		if err := os.WriteFile(p, []byte(f.data), f.mode); err != nil {
			return "", err
		}
		if err := os.Chmod(p, f.mode); err != nil {
			return "", err
		}
	}
	if err := os.Chmod(filepath.Join(root, "root/.ssh"), 0o700); err != nil {
		return "", err
	}
	// systemd-networkd on; the timers that would reach for the network off.
	links := map[string]string{
		"etc/systemd/system/multi-user.target.wants/systemd-networkd.service": "/lib/systemd/system/systemd-networkd.service",
		"etc/systemd/system/sockets.target.wants/systemd-networkd.socket":     "/lib/systemd/system/systemd-networkd.socket",
		"etc/systemd/system/apt-daily.timer":                                  "/dev/null",
		"etc/systemd/system/apt-daily-upgrade.timer":                          "/dev/null",
	}
	for l, target := range links {
		p := filepath.Join(root, l)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return "", err
		}
		_ = os.Remove(p)
		if err := os.Symlink(target, p); err != nil {
			return "", err
		}
	}
	if _, err := run(ctx, "chroot", root, "update-ca-certificates"); err != nil {
		return "", err
	}
	if _, err := run(ctx, "chroot", root, "depmod", kernelRelease()); err != nil {
		return "", err
	}
	for _, u := range lab.Users() {
		if n.User != u {
			continue
		}
		if _, err := run(ctx, "chroot", root, "useradd", "-m", "-s", "/bin/bash", "-G", "sudo", "--", u); err != nil {
			return "", err
		}
		if err := os.WriteFile(filepath.Join(root, "etc/sudoers.d/hybridctl-lab-"+u), []byte(u+" ALL=(ALL) NOPASSWD:ALL\n"), 0o440); err != nil {
			return "", err
		}
		if _, err := run(ctx, "chroot", root, "sh", "-c", `install -d -m 700 -o "$1" -g "$1" "/home/$1/.ssh" && install -m 600 -o "$1" -g "$1" /root/.ssh/authorized_keys "/home/$1/.ssh/authorized_keys"`, "sh", u); err != nil {
			return "", err
		}
	}
	return hostKey.Public, nil
}

// finishBoot waits for n's systemd, applies the host-side fixes the kubelet
// needs in a container, and waits for sshd.
func finishBoot(ctx context.Context, lab *Lab, n Node, roots []string, opts Options) error {
	ctx, cancel := context.WithTimeout(ctx, opts.BootTimeout)
	defer cancel()
	var leader int
	for leader == 0 {
		for _, r := range roots {
			if leader = findLeader(filepath.Join(r, "node-"+n.Name)); leader != 0 {
				break
			}
		}
		if leader == 0 {
			if err := sleep(ctx, 200*time.Millisecond); err != nil {
				return fmt.Errorf("no container init appeared: %w", err)
			}
		}
	}
	pid := strconv.Itoa(leader)
	var state string
	for {
		out, _ := run(ctx, "nsenter", "-t", pid, "-a", "systemctl", "is-system-running")
		state = strings.TrimSpace(string(out))
		if i := strings.LastIndex(state, "\n"); i >= 0 {
			state = state[i+1:]
		}
		if state == "running" || state == "degraded" {
			break
		}
		if err := sleep(ctx, time.Second); err != nil {
			return fmt.Errorf("systemd did not finish booting (%s): %w", state, err)
		}
	}
	if state == "degraded" {
		out, _ := run(ctx, "nsenter", "-t", pid, "-a", "systemctl", "--failed", "--no-legend", "--plain")
		opts.Log("node %s: booted degraded: %s", n.Name, strings.Join(strings.Fields(string(out)), " "))
	}
	// nspawn mounts the v1 controllers read-only; the kubelet and
	// containerd make cgroups in them (the node's own subtree: its cgroup
	// namespace starts at the lab's per-node cgroup).
	for _, c := range []string{"cpu", "cpuacct", "cpuset", "memory", "devices", "freezer", "blkio", "pids", "net_cls", "net_prio", "perf_event", "hugetlb"} {
		_, _ = run(ctx, "nsenter", "-t", pid, "-m", "sh", "-c", `! mountpoint -q "$1" || mount -o remount,bind,rw "$1"`, "sh", "/sys/fs/cgroup/"+c)
	}
	// The kubelet's sysctl values over the read-only keys, in this node only.
	for _, k := range SortedSysctls() {
		src := "/etc/hybridctl-lab/sysctl/" + strings.ReplaceAll(k, "/", ".")
		dst := "/proc/sys/" + k
		if _, err := run(ctx, "nsenter", "-t", pid, "-m", "sh", "-c",
			`[ "$(cat "$2")" = "$(cat "$1")" ] || { mount --bind "$1" "$2" && mount -o remount,bind,ro "$2"; }`, "sh", src, dst); err != nil {
			return fmt.Errorf("sysctl %s: %w", k, err)
		}
	}
	addr := net.JoinHostPort(n.Address.String(), "22")
	for {
		if banner(ctx, addr) {
			opts.Log("node %s: up (ssh %s)", n.Name, addr)
			return nil
		}
		if err := sleep(ctx, 500*time.Millisecond); err != nil {
			return fmt.Errorf("sshd on %s did not answer: %w", addr, err)
		}
	}
}

// findLeader returns the container's init in cgroup dir: the process whose
// PID in its own namespace is 1.
func findLeader(dir string) int {
	for _, p := range cgroupPids(dir) {
		data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", p))
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(data), "\n") {
			if f := strings.Fields(line); len(f) >= 3 && f[0] == "NSpid:" && f[len(f)-1] == "1" {
				return p
			}
		}
	}
	return 0
}

// banner reports whether an SSH server answers at addr.
func banner(ctx context.Context, addr string) bool {
	d := net.Dialer{Timeout: 2 * time.Second}
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return false
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(3 * time.Second))
	buf := make([]byte, 4)
	_, err = c.Read(buf)
	return err == nil && string(buf) == "SSH-"
}

// waitTLS waits until a TLS server that ca signed answers at addr.
func waitTLS(ctx context.Context, addr string, ca *x509.Certificate, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	pool := x509.NewCertPool()
	pool.AddCert(ca)
	for {
		d := tls.Dialer{NetDialer: &net.Dialer{Timeout: 2 * time.Second}, Config: &tls.Config{RootCAs: pool}}
		c, err := d.DialContext(ctx, "tcp", addr)
		if err == nil {
			_ = c.Close()
			return nil
		}
		if serr := sleep(ctx, 300*time.Millisecond); serr != nil {
			return fmt.Errorf("%s did not answer: %w", addr, err)
		}
	}
}

// startIn starts a program in the given cgroups (one per hierarchy), in its
// own session, output appended to logPath; it keeps running after the lab
// command exits. The cgroups are joined by a shell before it execs the
// program, so no process of the lab ever runs outside them.
func startIn(ctx context.Context, cgroups []string, what, logPath, name string, args ...string) (int, error) {
	for _, c := range cgroups {
		if err := makeCgroup(c); err != nil {
			return 0, err
		}
	}
	p, err := lookPath(name)
	if err != nil {
		if filepath.IsAbs(name) {
			p = name
		} else {
			return 0, err
		}
	}
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return 0, err
	}
	defer logf.Close()
	sh := []string{"-c", `while [ "$1" != -- ]; do echo $$ >"$1/cgroup.procs" || exit 125; shift; done; shift; exec "$@"`, "lab-" + what}
	sh = append(sh, cgroups...)
	sh = append(sh, "--", p)
	sh = append(sh, args...)
	cmd := exec.Command("/bin/sh", sh...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	cmd.Env = []string{"PATH=/usr/sbin:/usr/bin:/sbin:/bin", "LC_ALL=C"}
	if err := cmd.Start(); err != nil {
		return 0, fmt.Errorf("starting %s: %w", what, err)
	}
	pid := cmd.Process.Pid
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		data, _ := os.ReadFile(logPath)
		return 0, fmt.Errorf("%s exited at once (%v): %s", what, err, tail(data, 10))
	case <-time.After(700 * time.Millisecond):
	case <-ctx.Done():
		return pid, ctx.Err()
	}
	return pid, nil
}

// editHostsFile replaces the marked lines of /etc/hosts in place (the file
// may be a bind mount, which a rename would not replace).
func editHostsFile(marker string, lines []string) error {
	const path = "/etc/hosts"
	old, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	next := EditHosts(string(old), marker, lines)
	if next == string(old) {
		return nil
	}
	return os.WriteFile(path, []byte(next), 0o644)
}

// checkHostIsolation refuses a host through which the nodes could reach
// anything outside the bridge, and a node network the host already routes.
func checkHostIsolation(lab *Lab) error {
	fwd, err := os.ReadFile("/proc/sys/net/ipv4/ip_forward")
	if err != nil {
		return err
	}
	if strings.TrimSpace(string(fwd)) != "0" {
		return errors.New("the host forwards IPv4 (net.ipv4.ip_forward = 1): the lab's nodes could reach other networks through it; the lab refuses to run on it")
	}
	routes, err := os.ReadFile("/proc/net/route")
	if err != nil {
		return err
	}
	return CheckRoutes(string(routes), lab.Network, lab.Bridge())
}

func kernelRelease() string {
	var u syscall.Utsname
	if err := syscall.Uname(&u); err != nil {
		return "unknown"
	}
	var b bytes.Buffer
	for _, c := range u.Release {
		if c == 0 {
			break
		}
		b.WriteByte(byte(c))
	}
	return b.String()
}

func sleep(ctx context.Context, d time.Duration) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(d):
		return nil
	}
}
