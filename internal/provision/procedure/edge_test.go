package procedure

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hybridctl/hybridctl/internal/plan"
	"github.com/hybridctl/hybridctl/internal/provision/engine"
	"github.com/hybridctl/hybridctl/internal/provision/transport"
)

// Tests written for the mutants that survived hack/mutation.sh
// (docs/testing.md).

// fakeBundleConn answers the bundle state script with out and records the
// scripts run and the uploads' destinations; an upload to a path ending in
// fail fails.
type fakeBundleConn struct {
	out     string
	fail    string
	scripts []string
	uploads []string
}

func (f *fakeBundleConn) Run(_ context.Context, script string) (*transport.Result, error) {
	f.scripts = append(f.scripts, script)
	return &transport.Result{Stdout: []byte(f.out)}, nil
}

func (f *fakeBundleConn) UploadStream(_ context.Context, dst string, r io.Reader, _ string, _ os.FileMode) error {
	f.uploads = append(f.uploads, dst)
	if f.fail != "" && strings.HasSuffix(dst, f.fail) {
		return errors.New("upload failed")
	}
	_, err := io.Copy(io.Discard, r)
	return err
}

func windowsHost(t *testing.T) engine.Host {
	t.Helper()
	for _, h := range labHosts() {
		if h.IsWindows() {
			return h
		}
	}
	t.Fatal("no Windows host in the lab")
	return engine.Host{}
}

// TestBundleStateWindows: the Windows state script lists the node's files
// as one PowerShell array; what the node reports decides what is sent
// (only the file it lacks, then SHA256SUMS, as Windows paths).
func TestBundleStateWindows(t *testing.T) {
	p := planFile(t, "lab.yaml")
	dir, _ := testBundle(t, "lab.yaml")
	b, err := BundleFrom(context.Background(), p, dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(b.Windows) < 2 {
		t.Fatalf("%d Windows files", len(b.Windows))
	}
	win := windowsHost(t)
	var quoted, lines []string
	for _, f := range b.Windows {
		quoted = append(quoted, transport.PSQuote(f.Path))
		lines = append(lines, f.SHA256+" "+f.Path)
	}
	all := strings.Join(lines, "\n") + "\n" + bundleSumsMarker + sumsHex(b.Windows) + "\n"
	conn := &fakeBundleConn{out: all}
	phase := &bundleUploadPhase{bundle: b, connect: func(context.Context, string) (bundleConn, error) { return conn, nil }}
	run, reason, err := phase.ShouldRun(context.Background(), win)
	want := fmt.Sprintf(`all %d bundle files are in C:\k\bundle with their sha256`, len(b.Windows))
	if err != nil || run || reason != want {
		t.Errorf("ShouldRun with every file there: %v %q %v", run, reason, err)
	}
	if wantList := "$paths = @(" + strings.Join(quoted, ", ") + ")\n"; len(conn.scripts) != 1 || !strings.Contains(conn.scripts[0], wantList) {
		t.Errorf("the state script lacks\n%s\ngot\n%s", wantList, conn.scripts)
	}
	// The node lacks the first file: only it and SHA256SUMS are sent.
	conn.out = strings.Join(lines[1:], "\n") + "\n" + bundleSumsMarker + sumsHex(b.Windows) + "\n"
	if err := phase.Run(context.Background(), win); err != nil {
		t.Fatal(err)
	}
	first := `C:\k\bundle\` + strings.ReplaceAll(b.Windows[0].Path, "/", `\`)
	if len(conn.uploads) != 2 || conn.uploads[0] != first || conn.uploads[1] != `C:\k\bundle\SHA256SUMS` {
		t.Errorf("uploads %q, want %s and SHA256SUMS", conn.uploads, first)
	}
	// A failed upload of SHA256SUMS fails the phase.
	conn.fail = "SHA256SUMS"
	if err := phase.Run(context.Background(), win); err == nil || err.Error() != "upload failed" {
		t.Errorf("SHA256SUMS not written: %v", err)
	}
}

// TestBundleDryRunNumbers: the dry run gives the sizes in MiB, the file
// count and how the node's prepare script checks the files, per OS.
func TestBundleDryRunNumbers(t *testing.T) {
	phase := labBundlePhase(t)
	b := phase.bundle
	for _, tc := range []struct {
		h     engine.Host
		files []BundleFile
		want  []string
	}{
		{labHosts()[1], b.Linux, []string{
			"read the sha256 of the 7 bundle files under /var/cache/hybridctl/bundle (3.1 MiB in all) and remove partial uploads",
			"/var/cache/hybridctl/bundle/linux-amd64/kubelet unless it is there with sha256 ",
			" (3.1 MiB, 0644; streamed",
			" (0.0 MiB, 0644; streamed",
			"write /var/cache/hybridctl/bundle/SHA256SUMS with the 7 lines of these files (prepare.sh checks them with sha256sum -c)",
		}},
		{windowsHost(t), b.Windows, []string{
			fmt.Sprintf(`write C:\k\bundle\SHA256SUMS with the %d lines of these files (prepare.ps1 checks them with Get-FileHash)`, len(b.Windows)),
		}},
	} {
		lines, err := phase.DryRun(context.Background(), tc.h)
		if err != nil {
			t.Fatal(err)
		}
		if len(lines) != len(tc.files)+2 {
			t.Errorf("%s: %d lines for %d files", tc.h.Name, len(lines), len(tc.files))
		}
		text := strings.Join(lines, "\n")
		for _, w := range tc.want {
			if !strings.Contains(text, w) {
				t.Errorf("%s: the dry run lacks %q:\n%s", tc.h.Name, w, text)
			}
		}
	}
}

// TestExpectationsFromPlan: the control planes' addresses, and the builds
// of the Windows nodes that have one, are what preflight compares.
func TestExpectationsFromPlan(t *testing.T) {
	p := planFile(t, "lab.yaml")
	x := Expectations(p)
	if x.LinuxID != "ubuntu" || x.LinuxVersionID != "26.04" || x.APIName != p.APIServer.Host ||
		fmt.Sprint(x.APIAddresses) != "[192.168.10.23]" || fmt.Sprint(x.WindowsBuilds) != "map[k8s-lab-win-1:10.0.26100]" {
		t.Errorf("expectations %+v", x)
	}
	for i := range p.Nodes {
		p.Nodes[i].WindowsBuild = ""
	}
	if x := Expectations(p); len(x.WindowsBuilds) != 0 {
		t.Errorf("Windows builds without a build in the plan: %v", x.WindowsBuilds)
	}
	// Upstream packages at Kubernetes 1.37: the distribution's containerd
	// must be 2.0 or later; with a bundle (the spec's tarball) it is not
	// checked, nor before Kubernetes 1.36.
	if x.ContainerdMin != "2.0" || x.ContainerdFor != "Kubernetes v1.37" || x.ContainerdSpec != "2.2.2" {
		t.Errorf("upstream containerd expectation %q %q %q", x.ContainerdMin, x.ContainerdFor, x.ContainerdSpec)
	}
	p.PackagesSource = "bundle"
	if x := Expectations(p); x.ContainerdMin != "" {
		t.Errorf("bundle: containerd minimum %q", x.ContainerdMin)
	}
	p.PackagesSource, p.KubernetesVersion = "upstream", "v1.35.4"
	if x := Expectations(p); x.ContainerdMin != "" {
		t.Errorf("Kubernetes v1.35: containerd minimum %q", x.ContainerdMin)
	}
}

// TestDownloadLimits: a manifest of exactly maxManifestBytes is read, one
// byte more is refused with the limit named; an HTTP error and an
// unreachable server are errors that name the URL.
func TestDownloadLimits(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/exact":
			_, _ = w.Write(bytes.Repeat([]byte("a"), maxManifestBytes))
		case "/over":
			_, _ = w.Write(bytes.Repeat([]byte("a"), maxManifestBytes+1))
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	ctx := context.Background()
	under := srv.URL + "/"
	if data, err := download(ctx, nil, srv.URL+"/exact", under); err != nil || len(data) != maxManifestBytes {
		t.Errorf("exactly the limit: %d bytes, %v", len(data), err)
	}
	if _, err := download(ctx, nil, srv.URL+"/over", under); err == nil || err.Error() != "downloading "+srv.URL+"/over: larger than 33554432 bytes" {
		t.Errorf("one byte over the limit: %v", err)
	}
	if _, err := download(ctx, nil, srv.URL+"/nope", under); err == nil || err.Error() != "downloading "+srv.URL+"/nope: 404 Not Found" {
		t.Errorf("a 404: %v", err)
	}
	srv.Close()
	if _, err := download(ctx, nil, srv.URL+"/exact", under); err == nil || !strings.Contains(err.Error(), srv.URL+"/exact") || !strings.Contains(err.Error(), "air-gapped? use --manifests-dir") {
		t.Errorf("an unreachable server: %v", err)
	}
}

// TestSSHConfigsFromPlan: one configuration per node, in plan order, with
// the OS, the user, port 22 unless given, the address unless an SSH host
// is given, and sudo for Linux users other than root only.
func TestSSHConfigsFromPlan(t *testing.T) {
	p := planFile(t, "lab.yaml")
	p.Nodes[1].SSH.User = "root"
	p.Nodes[2].SSH.Host, p.Nodes[2].SSH.Port = "jump.example", 2222
	p.Nodes[3].SSH.Host = ""
	var got []string
	for _, c := range SSHConfigs(p, transport.Config{ConnectTimeout: 7}) {
		got = append(got, fmt.Sprintf("%s %s %s %s sudo=%v %d", c.Host, c.Address, c.User, c.OS, c.Sudo, c.ConnectTimeout))
	}
	want := []string{
		"k8s-lab-master-1 192.168.10.23:22 user linux sudo=true 7",
		"k8s-lab-node-1 192.168.10.24:22 root linux sudo=false 7",
		"k8s-lab-node-2 jump.example:2222 user linux sudo=true 7",
		"k8s-lab-win-1 192.168.10.25:22 Administrator windows sudo=false 7",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("configs:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestKubeadmInitChecksItsOutput: kubeadm init that exits 0 without its
// success line is a failure with the output kept; one that fails is that
// failure.
func TestKubeadmInitChecksItsOutput(t *testing.T) {
	for _, tc := range []struct {
		res  *transport.Result
		err  error
		want string
	}{
		{&transport.Result{Stdout: []byte("[init] Using Kubernetes version: v1.37.2\n")}, nil, `kubeadm init ended without "` + kubeadmInitDone + `"`},
		{nil, &transport.CommandError{ExitCode: 1, Command: "kubeadm init"}, `command "kubeadm init" on  failed with exit code 1`},
	} {
		f := newFake(func(script string, _ int) (*transport.Result, error) {
			if strings.HasPrefix(script, "kubeadm init") {
				return tc.res, tc.err
			}
			return out("ok\n")
		})
		err := (&kubeadmInitPhase{files: files, connect: conn(f)}).Run(context.Background(), cp1)
		if err == nil || err.Error() != tc.want {
			t.Errorf("got %v, want %s", err, tc.want)
		}
	}
}

// TestJoinShouldRun: a node without kubelet.conf (the check exits 1) is
// joined; another exit code or a lost connection is an error, not "run".
func TestJoinShouldRun(t *testing.T) {
	for _, windows := range []bool{false, true} {
		h := node1
		if windows {
			h = win1
		}
		for _, tc := range []struct {
			err     error
			run     bool
			wantErr bool
		}{
			{&transport.CommandError{ExitCode: 1}, true, false},
			{&transport.CommandError{ExitCode: 2}, false, true},
			{&transport.CommandError{ExitCode: -1, Err: errors.New("connection lost")}, false, true},
		} {
			p, _, _, _, _ := joinFixture(t, windows, nil)
			_, check := p.paths()
			checked := false
			node := newFake(func(script string, _ int) (*transport.Result, error) {
				checked = checked || script == check
				return nil, tc.err
			})
			p.connect = func(context.Context, string) (hostConn, error) { return node, nil }
			run, _, err := p.ShouldRun(context.Background(), h)
			if !checked || run != tc.run || (err != nil) != tc.wantErr {
				t.Errorf("windows=%v, check fails with %v: run=%v err=%v (check run: %v)", windows, tc.err, run, err, checked)
			}
		}
	}
}

// TestResetDrainDefaults: reset drains one node at a time with the given
// timeout, 5 minutes when none (or a negative one) is given, and keeps
// each pod's own termination grace period (-1, kubectl's default).
func TestResetDrainDefaults(t *testing.T) {
	for given, want := range map[time.Duration]string{0: "5m0s", -time.Second: "5m0s", time.Nanosecond: "1ns", 2 * time.Minute: "2m0s"} {
		d := labDeps(t)
		d.ResetNodes, d.DrainTimeout = []string{"k8s-lab-node-1"}, given
		dp, ok := engine.Impl(mustResetPhases(t, withReboot(d, time.Minute))[0]).(*drainPhase)
		if !ok {
			t.Fatal("reset does not start with the drain")
		}
		lines, err := dp.DryRun(context.Background(), engine.ClusterHost())
		wantLine := "kubectl drain k8s-lab-node-1 --ignore-daemonsets --delete-emptydir-data --timeout " + want + " (cordon, then evict its pods)"
		if err != nil || len(lines) != 1 || lines[0] != wantLine {
			t.Errorf("DrainTimeout %v: %q %v", given, lines, err)
		}
		if dp.gracePeriod != -1 {
			t.Errorf("grace period %d, want -1 (each pod's own)", dp.gracePeriod)
		}
	}
}

// TestJoinTokenFileRemovalFailure: when join.yaml (it holds the token)
// cannot be removed after a successful join, the phase fails saying so;
// after a failed join, the join's error is kept.
func TestJoinTokenFileRemovalFailure(t *testing.T) {
	rmErr := &transport.CommandError{ExitCode: -1, Command: "rm", Err: errors.New("connection lost")}
	joinErr := &transport.CommandError{ExitCode: 1, Command: "kubeadm join"}
	for _, failJoin := range []bool{false, true} {
		p, _, _, _, _ := joinFixture(t, false, nil)
		node := newFake(func(script string, _ int) (*transport.Result, error) {
			switch {
			case strings.HasPrefix(script, "rm -f "):
				return nil, rmErr
			case failJoin && strings.Contains(script, "join --config"):
				return nil, joinErr
			}
			return out("")
		})
		connect := p.connect
		p.connect = func(ctx context.Context, h string) (hostConn, error) {
			if h == node1.Name {
				return node, nil
			}
			return connect(ctx, h)
		}
		err := p.Run(context.Background(), node1)
		switch {
		case failJoin && !errors.Is(err, joinErr):
			t.Errorf("a failed join and a failed removal: %v, want the join's error", err)
		case !failJoin && (!errors.Is(err, rmErr) || !strings.HasPrefix(err.Error(), "removing "+linuxJoinFile+" (it holds the join token): ")):
			t.Errorf("a failed removal after the join: %v", err)
		}
	}
}

// TestSumsSortedByPath: the node's SHA256SUMS lists its files by path,
// whatever their order in the bundle, in sha256sum's format.
func TestSumsSortedByPath(t *testing.T) {
	a, b := strings.Repeat("a", 64), strings.Repeat("b", 64)
	got := string(sums([]BundleFile{{Path: "linux-amd64/kubelet", SHA256: b}, {Path: "linux-amd64/kubeadm", SHA256: a}}))
	if want := a + "  linux-amd64/kubeadm\n" + b + "  linux-amd64/kubelet\n"; got != want {
		t.Errorf("sums:\n%s\nwant\n%s", got, want)
	}
}

// TestAddonDownloadStaysInItsRelease: an add-on's manifest is downloaded
// only from its own release (served here by a local server standing in for
// github.com); a URL of another release, another repository or another
// site is refused before any request.
func TestAddonDownloadStaysInItsRelease(t *testing.T) {
	var requests atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		_, _ = w.Write([]byte("kind: ServiceAccount\n"))
	}))
	defer srv.Close()
	ctx := context.Background()
	good := AddonSource{Name: "cert-manager", Version: "v1.21.2", URL: plan.CertManagerURLPrefix + "v1.21.2/cert-manager.yaml", Client: upstreamClient(srv)}
	if data, err := good.load(ctx); err != nil || string(data) != "kind: ServiceAccount\n" {
		t.Fatalf("the release's manifest: %q, %v", data, err)
	}
	for name, u := range map[string]string{
		"another release":    plan.CertManagerURLPrefix + "v1.0.0/cert-manager.yaml",
		"climbing out":       plan.CertManagerURLPrefix + "v1.21.2/../../../../evil/repo/releases/download/v1/cert-manager.yaml",
		"another add-on":     plan.MetricsServerURLPrefix + "v1.21.2/components.yaml",
		"another site":       srv.URL + "/cert-manager.yaml",
		"a query":            plan.CertManagerURLPrefix + "v1.21.2/cert-manager.yaml?x=1",
		"an unknown version": plan.CertManagerURLPrefix + "v1.21.2-x/cert-manager.yaml",
	} {
		a := good
		a.URL = u
		if _, err := a.load(ctx); err == nil || !strings.Contains(err.Error(), "refusing to download") {
			t.Errorf("%s: %v", name, err)
		}
	}
	bad := good
	bad.Version = "v1.21.2/../../x"
	if _, err := bad.load(ctx); err == nil || !strings.Contains(err.Error(), "add-on cert-manager version") {
		t.Errorf("a version with a path: %v", err)
	}
	if n := requests.Load(); n != 1 {
		t.Errorf("%d requests, want the one for the release's manifest", n)
	}
}
