package hosts

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/hybridctl/hybridctl/internal/spec"
)

func testLab(t *testing.T) *Lab {
	t.Helper()
	dir := t.TempDir()
	return &Lab{
		Name: "lab", Dir: filepath.Join(dir, "clusters", "lab"), CacheDir: dir,
		Network: netip.MustParsePrefix("192.168.10.0/24"), Gateway: netip.MustParseAddr("192.168.10.1"),
		DNSSuffix: "example.com", MTU: 1500,
		Records: []Record{
			{"k8s-lab-api.example.com", netip.MustParseAddr("192.168.10.23")},
			{"k8s-lab-master-1.example.com", netip.MustParseAddr("192.168.10.23")},
		},
		Nodes: []Node{
			{Name: "k8s-lab-master-1", FQDN: "k8s-lab-master-1.example.com", Address: netip.MustParseAddr("192.168.10.23"), User: "user", ControlPlane: true},
			{Name: "k8s-lab-node-1", FQDN: "k8s-lab-node-1.example.com", Address: netip.MustParseAddr("192.168.10.24"), User: "root"},
		},
	}
}

func loadSpec(t *testing.T, yaml string) *spec.Result {
	t.Helper()
	r := spec.Parse("cluster.yaml", []byte(yaml))
	if err := r.Err(); err != nil {
		t.Fatalf("test spec invalid: %v", err)
	}
	return r
}

func TestFromSpecMisfits(t *testing.T) {
	data, err := os.ReadFile("../../../examples/lab.yaml")
	if err != nil {
		t.Fatal(err)
	}
	r := loadSpec(t, string(data))
	_, err = FromSpec(r, "/x/clusters/lab", "/x")
	var mf *MisfitError
	if !errors.As(err, &mf) {
		t.Fatalf("the guide's lab (a Windows node) fits the lab: %v", err)
	}
	var paths []string
	for _, m := range mf.Misfits {
		paths = append(paths, m.Path)
		if m.Line == 0 {
			t.Errorf("%s: no line", m)
		}
	}
	if !slices.Contains(paths, "spec.nodes[3].os") {
		t.Errorf("the Windows node is not named: %v", mf)
	}
	if !strings.Contains(err.Error(), "cluster.yaml:") || !strings.Contains(err.Error(), "k8s-lab-win-1 is a Windows node") {
		t.Errorf("message does not name file and node:\n%v", err)
	}
}

func TestFromSpecFieldsOneByOne(t *testing.T) {
	base := `apiVersion: hybridctl.dev/v1alpha1
kind: Cluster
metadata: {name: other}
spec:
  controlPlaneEndpoint: api.test.lan:6443
  network:
    nodeCIDR: 10.77.0.0/24
    gateway: 10.77.0.1
    dnsServers: [DNS]
    ntpServers: [NTP]
    dnsSuffix: test.lan
    podCIDR: 10.244.0.0/16
  images: {registry: REGISTRY}
  packages: {source: SOURCE}
  allowCgroupV1: true
  nodes:
  - {name: cp, role: control-plane, address: 10.77.0.10}
  - {name: w1, address: 10.77.0.11, ssh: {user: deploy, port: PORT}}
`
	fill := func(dns, ntp, port string) string {
		return strings.NewReplacer("DNS", dns, "NTP", ntp, "PORT", port, "REGISTRY", "10.77.0.1:5000", "SOURCE", "bundle").Replace(base)
	}
	lab, err := FromSpec(loadSpec(t, fill("10.77.0.1", "10.77.0.1", "22")), "/x/clusters/other", "/x")
	if err != nil {
		t.Fatalf("a fitting spec is refused: %v", err)
	}
	if lab.Name != "other" || len(lab.Nodes) != 2 || lab.Nodes[1].User != "deploy" || !lab.Nodes[0].ControlPlane {
		t.Errorf("lab = %+v", lab)
	}
	if lab.APIEndpoint != "api.test.lan:6443" {
		t.Errorf("API endpoint %q", lab.APIEndpoint)
	}
	if got := lab.Registry(); got != "10.77.0.1:5000" {
		t.Errorf("registry %s", got)
	}
	if !slices.Contains(lab.Records, Record{"api.test.lan", netip.MustParseAddr("10.77.0.10")}) ||
		!slices.Contains(lab.Records, Record{"w1.test.lan", netip.MustParseAddr("10.77.0.11")}) {
		t.Errorf("records %v", lab.Records)
	}
	if got := lab.Users(); !slices.Equal(got, []string{"deploy"}) {
		t.Errorf("users %v", got)
	}
	for _, c := range []struct{ dns, ntp, port, path string }{
		{"10.77.0.2", "10.77.0.1", "22", "spec.network.dnsServers"},
		{"10.77.0.1", "10.77.0.9", "22", "spec.network.ntpServers"},
		{"10.77.0.1", "10.77.0.1", "2222", "spec.nodes[1].ssh.port"},
	} {
		_, err := FromSpec(loadSpec(t, fill(c.dns, c.ntp, c.port)), "/x/clusters/other", "/x")
		var mf *MisfitError
		if !errors.As(err, &mf) || len(mf.Misfits) != 1 || mf.Misfits[0].Path != c.path {
			t.Errorf("%s: want exactly one misfit there, got %v", c.path, err)
		}
	}
	for _, c := range []struct{ registry, source, path string }{
		{"10.77.0.1:5001", "bundle", "spec.images.registry"},
		{"10.77.0.2:5000", "bundle", "spec.images.registry"},
		{"registry.test.lan:5000", "bundle", "spec.images.registry"},
		{"10.77.0.1:5000", "upstream", "spec.packages.source"},
	} {
		y := strings.NewReplacer("DNS", "10.77.0.1", "NTP", "10.77.0.1", "PORT", "22", "REGISTRY", c.registry, "SOURCE", c.source).Replace(base)
		_, err := FromSpec(loadSpec(t, y), "/x/clusters/other", "/x")
		var mf *MisfitError
		if !errors.As(err, &mf) || len(mf.Misfits) != 1 || mf.Misfits[0].Path != c.path || mf.Misfits[0].Line != 13+boolInt(c.path == "spec.packages.source") {
			t.Errorf("%s %s: want one misfit at %s (line), got %v", c.registry, c.source, c.path, err)
		}
	}
	// The versions the bundle holds: only those the lab builds.
	if lab.Versions.Containerd != "2.2.2" || lab.Versions.Kubernetes != "v1.37.2" {
		t.Errorf("versions %+v", lab.Versions)
	}
	if got, want := lab.BundleDir(), "/x/bundles/v1.37.2"; got != want {
		t.Errorf("bundle directory %s, want %s", got, want)
	}
	// Every release the lab builds fits, each with a bundle of its own.
	y := strings.Replace(fill("10.77.0.1", "10.77.0.1", "22"), "spec:\n", "spec:\n  kubernetesVersion: v1.36.3\n  crictl: {version: 1.37.0}\n", 1)
	old, err := FromSpec(loadSpec(t, y), "/x/clusters/other", "/x")
	if err != nil {
		t.Fatalf("a v1.36.3 spec: %v", err)
	}
	if old.Versions.Kubernetes != "v1.36.3" || old.BundleDir() != "/x/bundles/v1.36.3" {
		t.Errorf("v1.36.3: versions %+v, bundle %s", old.Versions, old.BundleDir())
	}
	if !strings.Contains(strings.Join(old.ApplyFlags(), " "), "--bundle /x/bundles/v1.36.3") {
		t.Errorf("v1.36.3 apply flags: %v", old.ApplyFlags())
	}
	for _, c := range []struct{ field, yaml string }{
		{"spec.kubernetesVersion", "  kubernetesVersion: v1.37.1\n"},
		{"spec.kubernetesVersion", "  kubernetesVersion: v1.36.2\n  crictl: {version: 1.37.0}\n"},
		{"spec.containerd.version", "  containerd: {version: 2.2.1}\n"},
		{"spec.runc.version", "  runc: {version: 1.5.2}\n"},
		{"spec.cniPlugins.version", "  cniPlugins: {version: 1.9.0}\n"},
		{"spec.crictl.version", "  crictl: {version: 1.37.1}\n"},
	} {
		y := strings.Replace(fill("10.77.0.1", "10.77.0.1", "22"), "spec:\n", "spec:\n"+c.yaml, 1)
		_, err := FromSpec(loadSpec(t, y), "/x/clusters/other", "/x")
		var mf *MisfitError
		if !errors.As(err, &mf) || len(mf.Misfits) != 1 || mf.Misfits[0].Path != c.field || mf.Misfits[0].Line != 5 {
			t.Errorf("%s: want one misfit at line 5, got %v", c.field, err)
		}
	}
	// An NTP server given by name is not an address off the bridge.
	if _, err := FromSpec(loadSpec(t, fill("10.77.0.1", "ntp.test.lan", "22")), "/x/clusters/other", "/x"); err != nil {
		t.Errorf("an NTP name is refused: %v", err)
	}
}

func TestNames(t *testing.T) {
	for _, ok := range []string{"a", "k8s-lab-node-1", strings.Repeat("a", 63)} {
		if err := validName(ok); err != nil {
			t.Errorf("%q refused: %v", ok, err)
		}
	}
	for _, bad := range []string{"", "-a", "a-", "A", "a_b", "a.b", "a/b", strings.Repeat("a", 64), "../x"} {
		if validName(bad) == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	for _, ok := range []string{"root", "user", "_svc", "deploy-2"} {
		if err := validUser(ok); err != nil {
			t.Errorf("user %q refused: %v", ok, err)
		}
	}
	for _, bad := range []string{"", "2x", "-x", "a b", "x;rm", strings.Repeat("u", 33)} {
		if validUser(bad) == nil {
			t.Errorf("user %q accepted", bad)
		}
	}
}

func TestStateRecordsBeforeAndDrops(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "a", "state.json")
	st, err := LoadState(path)
	if err != nil || len(st.Resources) != 0 {
		t.Fatalf("missing state: %v %v", st, err)
	}
	rs := []Resource{
		{KindDir, "/root/.cache/hybridctl/lab/clusters/lab"},
		{KindLink, "hl-0123abcd"},
		{KindHosts, HostsMarkerPrefix + "lab"},
		{KindCgroup, "/sys/fs/cgroup/cpu/" + CgroupPrefix + "lab"},
		{KindNspawnRun, "k8s-lab-node-1"},
	}
	for _, r := range rs {
		if err := st.Add(ctx, r); err != nil {
			t.Fatal(err)
		}
		again, err := LoadState(path)
		if err != nil {
			t.Fatal(err)
		}
		if !again.Has(r) {
			t.Fatalf("%s not on disk right after Add", r)
		}
	}
	if err := st.Add(ctx, rs[1]); err != nil || len(st.Resources) != len(rs) {
		t.Errorf("a second Add of the same resource: %v, %d", err, len(st.Resources))
	}
	if info, err := os.Stat(path); err != nil || info.Mode().Perm() != 0o600 {
		t.Errorf("state file mode: %v %v", info, err)
	}
	for _, r := range rs {
		if err := st.Drop(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("an empty state leaves its file: %v", err)
	}
}

func TestStateRefusesWhatDownCouldNotRemoveSafely(t *testing.T) {
	bad := []string{
		`{"lab":"x","resources":[{"kind":"dir","name":"relative/path/deep"}]}`,
		`{"lab":"x","resources":[{"kind":"dir","name":"/"}]}`,
		`{"lab":"x","resources":[{"kind":"dir","name":"/root/x"}]}`,
		`{"lab":"x","resources":[{"kind":"dir","name":"/a/b/../../../etc"}]}`,
		`{"lab":"x","resources":[{"kind":"cgroup","name":"/sys/fs/cgroup/cpu"}]}`,
		`{"lab":"x","resources":[{"kind":"cgroup","name":"/tmp/` + CgroupPrefix + `x"}]}`,
		`{"lab":"x","resources":[{"kind":"link","name":"eth0"}]}`,
		`{"lab":"x","resources":[{"kind":"link","name":"hl-0123456789abcdef"}]}`,
		`{"lab":"x","resources":[{"kind":"hosts","name":"localhost"}]}`,
		`{"lab":"x","resources":[{"kind":"nspawn-run","name":"../../etc"}]}`,
		`{"lab":"x","resources":[{"kind":"rm-rf","name":"/"}]}`,
		`{"lab":"x","extra":1}`,
		`{"lab":`,
	}
	for _, b := range bad {
		var s State
		if err := ParseState([]byte(b), &s); err == nil {
			t.Errorf("accepted %s", b)
		}
	}
	var s State
	if err := ParseState([]byte(`{"lab":"x","resources":[{"kind":"dir","name":"/root/.cache/x"}]}`), &s); err != nil {
		t.Errorf("a good state refused: %v", err)
	}
}

func FuzzParseState(f *testing.F) {
	f.Add([]byte(`{"lab":"x","resources":[{"kind":"dir","name":"/root/.cache/x"}]}`))
	f.Add([]byte(`{"lab":"x","resources":[{"kind":"cgroup","name":"/sys/fs/cgroup/cpu/hybridctl-lab-x"}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		var s State
		if ParseState(data, &s) != nil {
			return
		}
		for _, r := range s.Resources {
			if r.validate() != nil {
				t.Fatalf("accepted %s", r)
			}
			if r.Kind == KindDir && (!filepath.IsAbs(r.Name) || strings.Contains(r.Name, "..")) {
				t.Fatalf("accepted dir %q", r.Name)
			}
		}
	})
}

func TestEditHosts(t *testing.T) {
	const marker = HostsMarkerPrefix + "lab"
	host := "127.0.0.1 localhost\n10.0.0.5 other # hybridctl-lab other\n::1 ip6-localhost"
	lines := []string{"192.168.10.23 k8s-lab-api.example.com " + marker}
	added := EditHosts(host, marker, lines)
	want := "127.0.0.1 localhost\n10.0.0.5 other # hybridctl-lab other\n::1 ip6-localhost\n192.168.10.23 k8s-lab-api.example.com " + marker + "\n"
	if added != want {
		t.Fatalf("added:\n%q\nwant\n%q", added, want)
	}
	if again := EditHosts(added, marker, lines); again != added {
		t.Errorf("adding twice changes the file:\n%q", again)
	}
	removed := EditHosts(added, marker, nil)
	if strings.Contains(removed, marker) || !strings.Contains(removed, "# hybridctl-lab other") || !strings.Contains(removed, "127.0.0.1 localhost") {
		t.Errorf("removed:\n%q", removed)
	}
	// A line that only mentions the marker in the middle is not the lab's.
	mid := "1.2.3.4 x " + marker + " y\n"
	if got := EditHosts(mid, marker, nil); got != mid {
		t.Errorf("a foreign line was removed: %q", got)
	}
	if got := MarkedHostsLines(added); len(got) != 2 {
		t.Errorf("marked lines %q", got)
	}
}

func TestCheckRoutes(t *testing.T) {
	routes := "Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT\n" +
		"eth0\t00000000\t010200C0\t0003\t0\t0\t0\t00000000\t0\t0\t0\n" +
		"eth0\t000200C0\t00000000\t0001\t0\t0\t0\t00FFFFFF\t0\t0\t0\n" +
		"hl-1\t000AA8C0\t00000000\t0001\t0\t0\t0\t00FFFFFF\t0\t0\t0\n"
	lab := netip.MustParsePrefix("192.168.10.0/24")
	if err := CheckRoutes(routes, lab, "hl-1"); err != nil {
		t.Errorf("the default route or the lab's own bridge refused: %v", err)
	}
	if err := CheckRoutes(routes, lab, "hl-2"); err == nil || !strings.Contains(err.Error(), "192.168.10.0/24 on hl-1") {
		t.Errorf("another interface's route into the lab network: %v", err)
	}
	for _, n := range []string{"192.0.2.128/25", "192.0.0.0/16"} {
		if err := CheckRoutes(routes, netip.MustParsePrefix(n), "hl-1"); err == nil {
			t.Errorf("%s overlaps eth0's 192.0.2.0/24 but is accepted", n)
		}
	}
	if err := CheckRoutes(routes, netip.MustParsePrefix("192.0.3.0/24"), "hl-1"); err != nil {
		t.Errorf("the neighbouring /24: %v", err)
	}
	if err := CheckRoutes("h\neth0 ZZ 0 0 0 0 0 00FFFFFF\n", lab, "x"); err == nil {
		t.Error("a malformed line is accepted")
	}
}

func TestParseProcCgroup(t *testing.T) {
	data := "9:name=systemd:/\n8:pids:/\n4:memory:/process_api/25da\n1:cpu:/\n0::/\n"
	have := map[string]bool{"/sys/fs/cgroup/systemd": true, "/sys/fs/cgroup/pids": true, "/sys/fs/cgroup/memory": true, "/sys/fs/cgroup/cpu": true, "/sys/fs/cgroup/unified": true}
	hs, err := ParseProcCgroup(data, "/sys/fs/cgroup", func(p string) bool { return have[p] })
	if err != nil {
		t.Fatal(err)
	}
	want := []Hierarchy{
		{"/sys/fs/cgroup/systemd", "/"}, {"/sys/fs/cgroup/pids", "/"}, {"/sys/fs/cgroup/memory", "/process_api/25da"},
		{"/sys/fs/cgroup/cpu", "/"}, {"/sys/fs/cgroup/unified", "/"},
	}
	if !slices.Equal(hs, want) {
		t.Errorf("got %v", hs)
	}
	// Pure cgroup v2: the unified line is the root.
	hs, _ = ParseProcCgroup("0::/user.slice\n", "/sys/fs/cgroup", func(p string) bool { return p == "/sys/fs/cgroup" })
	if !slices.Equal(hs, []Hierarchy{{"/sys/fs/cgroup", "/user.slice"}}) {
		t.Errorf("v2: %v", hs)
	}
	if _, err := ParseProcCgroup("garbage\n", "/r", func(string) bool { return true }); err == nil {
		t.Error("garbage accepted")
	}
}

func TestMakeCgroupCopiesCpuset(t *testing.T) {
	root := t.TempDir()
	for f, v := range map[string]string{"cpuset.cpus": "0-1\n", "cpuset.mems": "0\n"} {
		if err := os.WriteFile(filepath.Join(root, f), []byte(v), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// cgroupfs makes the files in a new directory empty; a plain directory
	// does not, so the test creates them as the kernel would.
	child := filepath.Join(root, CgroupPrefix+"lab")
	if err := os.Mkdir(child, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"cpuset.cpus", "cpuset.mems"} {
		if err := os.WriteFile(filepath.Join(child, f), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := makeCgroup(filepath.Join(child, "node-a")); err != nil {
		t.Fatal(err)
	}
	for f, v := range map[string]string{"cpuset.cpus": "0-1\n", "cpuset.mems": "0\n"} {
		got, _ := os.ReadFile(filepath.Join(child, f))
		if string(got) != v {
			t.Errorf("%s = %q, want the parent's %q", f, got, v)
		}
	}
}

func TestMountsUnder(t *testing.T) {
	mi := "22 1 0:21 / / rw - ext4 /dev/vda rw\n" +
		"30 22 0:40 / /c/lab/nodes/a\\040b rw - overlay o rw\n" +
		"31 22 0:41 / /c/lab rw - tmpfs t rw\n" +
		"32 22 0:42 / /c/labx rw - tmpfs t rw\n"
	got := MountsUnder(mi, "/c/lab")
	if !slices.Equal(got, []string{"/c/lab/nodes/a b", "/c/lab"}) {
		t.Errorf("got %q", got)
	}
}

func TestRenderedFiles(t *testing.T) {
	lab := testLab(t)
	n := lab.Nodes[0]
	nw := lab.NetworkdFile(n)
	for _, want := range []string{"Name=host0", "Address=192.168.10.23/24", "Gateway=192.168.10.1", "DNS=192.168.10.1", "Domains=example.com", "MTUBytes=1500"} {
		if !strings.Contains(nw, want+"\n") {
			t.Errorf("networkd file lacks %s:\n%s", want, nw)
		}
	}
	if got := lab.ResolvConf(); got != "nameserver 192.168.10.1\nsearch example.com\n" {
		t.Errorf("resolv.conf %q", got)
	}
	args := strings.Join(lab.DnsmasqArgs("/p"), " ")
	for _, want := range []string{"--no-resolv", "--no-hosts", "--interface=" + lab.Bridge(), "--listen-address=192.168.10.1",
		"--host-record=k8s-lab-api.example.com,192.168.10.23", "--local=/example.com/"} {
		if !strings.Contains(args, want) {
			t.Errorf("dnsmasq lacks %s: %s", want, args)
		}
	}
	if strings.Contains(args, "--server") || strings.Contains(args, "dhcp") {
		t.Errorf("dnsmasq forwards or serves DHCP: %s", args)
	}
	if b := lab.Bridge(); len(b) > 15 || !strings.HasPrefix(b, BridgePrefix) || b == (&Lab{Name: "lab2"}).Bridge() {
		t.Errorf("bridge name %q", b)
	}
	cfg := lab.RegistryConfig("/s", "/c.crt", "/k.key")
	if !strings.Contains(cfg, `addr: "192.168.10.1:5000"`) || !strings.Contains(cfg, `certificate: "/c.crt"`) {
		t.Errorf("registry config:\n%s", cfg)
	}
	fl := strings.Join(lab.ApplyFlags(), " ")
	for _, want := range []string{"--identity " + lab.KeyPath(), "--known-hosts " + lab.KnownHostsPath(), "--bundle ", "--kubeconfig ", "--state ", "--ignore-preflight-errors time-sync"} {
		if !strings.Contains(fl, want) {
			t.Errorf("apply flags lack %q: %s", want, fl)
		}
	}
	if strings.Contains(strings.Join(lab.Flags(), " "), "--bundle") {
		t.Error("reset gets --bundle")
	}
	args = strings.Join(lab.NspawnArgs(n), " ")
	for _, want := range []string{"-M k8s-lab-master-1", "--register=no", "--keep-unit", "--network-bridge=" + lab.Bridge(), "--system-call-filter=add_key keyctl request_key",
		"--tmpfs=/var/lib/kubelet:mode=0700,size=8G", "--tmpfs=/var/lib/containerd:mode=0711,size=8G"} {
		if !strings.Contains(args, want) {
			t.Errorf("nspawn lacks %q: %s", want, args)
		}
	}
}

func TestKnownHostsAndKeys(t *testing.T) {
	lab := testLab(t)
	pub := map[string]string{}
	var signers []ssh.Signer
	for _, n := range lab.Nodes {
		k, err := NewSSHKey("root@" + n.Name)
		if err != nil {
			t.Fatal(err)
		}
		s, err := ssh.ParsePrivateKey(k.PrivatePEM)
		if err != nil {
			t.Fatalf("private key does not parse: %v", err)
		}
		signers = append(signers, s)
		pub[n.Name] = k.Public
	}
	kh := lab.KnownHosts(pub)
	rest := []byte(kh)
	for i, n := range lab.Nodes {
		_, hosts, key, _, r, err := ssh.ParseKnownHosts(rest)
		if err != nil {
			t.Fatalf("known_hosts line %d: %v\n%s", i+1, err, kh)
		}
		rest = r
		if !slices.Equal(hosts, []string{n.Address.String(), n.Name, n.FQDN}) {
			t.Errorf("hosts %v", hosts)
		}
		if string(key.Marshal()) != string(signers[i].PublicKey().Marshal()) {
			t.Errorf("%s: known_hosts key is not its host key", n.Name)
		}
	}
}

func TestCAIssuesRegistryCert(t *testing.T) {
	now := time.Now()
	ca, err := NewCA("lab", now)
	if err != nil {
		t.Fatal(err)
	}
	certPEM, _, err := ca.ServerCert(netip.MustParseAddr("192.168.10.1"), now)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := pem.Decode(certPEM)
	cert, err := x509.ParseCertificate(b.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(ca.Cert)
	opts := x509.VerifyOptions{Roots: pool, DNSName: "192.168.10.1", CurrentTime: now}
	if _, err := cert.Verify(opts); err != nil {
		t.Errorf("registry cert does not verify for the gateway: %v", err)
	}
	opts.DNSName = "192.168.10.2"
	if _, err := cert.Verify(opts); err == nil {
		t.Error("registry cert verifies for another address")
	}
	other, _ := NewCA("other", now)
	pool2 := x509.NewCertPool()
	pool2.AddCert(other.Cert)
	if _, err := cert.Verify(x509.VerifyOptions{Roots: pool2, DNSName: "192.168.10.1", CurrentTime: now}); err == nil {
		t.Error("verifies against another lab's CA")
	}
}

func TestTreeStampNamesEveryPackage(t *testing.T) {
	s := TreeStamp()
	for _, p := range TreePackages {
		if !strings.Contains(s, p) {
			t.Errorf("stamp lacks %s", p)
		}
	}
	for _, p := range []string{"systemd", "dbus", "openssh-server", "iproute2", "ca-certificates"} {
		if !slices.Contains(TreePackages, p) {
			t.Errorf("tree lacks %s", p)
		}
	}
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// Down replays the state newest first, leaves no state file, and a second
// Down finds nothing to do (the directory kind only: the others change the
// host).
func TestDownRemovesRecordedDirsIdempotently(t *testing.T) {
	ctx := context.Background()
	base := t.TempDir()
	lab := &Lab{Name: "t-down", Dir: filepath.Join(base, "clusters", "t-down"), CacheDir: base}
	st, err := LoadState(lab.StatePath())
	if err != nil {
		t.Fatal(err)
	}
	node := lab.NodeDir("n1")
	for _, r := range []Resource{{KindDir, lab.Dir}, {KindDir, node}} {
		if err := st.Add(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.MkdirAll(filepath.Join(node, "root", "etc"), 0o755); err != nil {
		t.Fatal(err)
	}
	outside := filepath.Join(base, "keep-me")
	if err := os.WriteFile(outside, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 2; i++ {
		if err := Down(ctx, lab, nil); err != nil {
			t.Fatalf("down #%d: %v", i+1, err)
		}
		if _, err := os.Stat(lab.Dir); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("down #%d left %s: %v", i+1, lab.Dir, err)
		}
	}
	if _, err := os.Stat(outside); err != nil {
		t.Errorf("down removed a file it did not make: %v", err)
	}
	if left := Leftovers(Scope{ClustersDir: filepath.Join(base, "clusters"), Name: "t-down"}); len(left) != 0 {
		t.Errorf("leftovers after down: %v", left)
	}
}
