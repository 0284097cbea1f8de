package cli

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hybridctl/hybridctl/internal/bundle"
	"github.com/hybridctl/hybridctl/internal/plan"
	"github.com/hybridctl/hybridctl/internal/spec"
)

// TestBundleListJSON: the design §5 shape, an array (never null) of
// objects with name, os, path, url and sha256 (a string, empty when not
// pinned), in the list's order.
func TestBundleListJSON(t *testing.T) {
	for _, c := range []struct {
		file      string
		n, nWin   int
		firstPath string
	}{
		{"../../examples/lab.yaml", 17, 6, "linux-amd64/containerd-2.2.2-linux-amd64.tar.gz"},
		{"../../examples/lab-linux.yaml", 9, 0, "linux-amd64/containerd-2.2.2-linux-amd64.tar.gz"},
	} {
		r := runCLI(t, "", "bundle", "list", "-f", c.file, "-o", "json")
		if r.code != 0 {
			t.Fatalf("%s: exit %d: %s", c.file, r.code, r.err)
		}
		if !strings.HasPrefix(strings.TrimSpace(r.out), "[") {
			t.Fatalf("%s: not an array: %.40s", c.file, r.out)
		}
		var got []map[string]any
		if err := json.Unmarshal([]byte(r.out), &got); err != nil {
			t.Fatal(err)
		}
		if len(got) != c.n {
			t.Errorf("%s: %d entries, want %d", c.file, len(got), c.n)
		}
		win := 0
		for i, e := range got {
			for _, k := range []string{"name", "os", "path", "url", "sha256"} {
				if _, ok := e[k].(string); !ok {
					t.Errorf("%s: entry %d: %q is %T, want a string", c.file, i, k, e[k])
				}
			}
			if e["os"] == "windows" {
				win++
			}
			if u, _ := e["url"].(string); !strings.HasPrefix(u, "https://") {
				t.Errorf("%s: entry %d url %q", c.file, i, u)
			}
		}
		if win != c.nWin || got[0]["path"] != c.firstPath {
			t.Errorf("%s: %d windows entries, first path %v", c.file, win, got[0]["path"])
		}
	}
	r := runCLI(t, "", "bundle", "list", "-f", "../../examples/lab.yaml")
	if r.code != 0 || !strings.Contains(r.out, "OS") || !strings.Contains(r.out, "windows-amd64/nssm-2.24.zip") || !strings.Contains(r.out, "first-download") {
		t.Errorf("table: exit %d\n%s%s", r.code, r.out, r.err)
	}
}

// TestBundleUsage: exit 2 for bad command lines, naming the subcommand.
func TestBundleUsage(t *testing.T) {
	for _, args := range [][]string{
		{"bundle", "list", "-f", "../../examples/lab.yaml", "-o", "xml"},
		{"bundle", "download", "-f", "../../examples/lab.yaml"},
		{"bundle", "download", "-f", "../../examples/lab.yaml", "-d", t.TempDir(), "--mirror", "ftp://x"},
		{"bundle", "download", "-f", "../../examples/lab.yaml", "-d", t.TempDir(), "--timeout", "0s"},
		{"bundle", "verify", "-f", "../../examples/lab.yaml"},
		{"bundle", "verify", "extra"},
	} {
		r := runCLI(t, "", args...)
		if r.code != ExitUsage || !strings.Contains(r.err, "See 'hybridctl bundle "+args[1]+" --help'") {
			t.Errorf("%v: exit %d, stderr %q", args, r.code, r.err)
		}
	}
	if r := runCLI(t, "", "bundle", "list", "-f", filepath.Join(t.TempDir(), "none.yaml")); r.code != ExitIncomplete {
		t.Errorf("a missing spec: exit %d", r.code)
	}
}

// mirror serves the artifacts of a spec at /<host>/<path> on 127.0.0.1,
// with checksum files as the upstream sites publish them.
type mirror struct {
	srv   *httptest.Server
	mu    sync.Mutex
	files map[string][]byte
	// hook, when set, serves a request instead (and returns true).
	hook func(w http.ResponseWriter, r *http.Request) bool
}

func (m *mirror) setHook(h func(w http.ResponseWriter, r *http.Request) bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.hook = h
}

func hexSum(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

func newMirror(t *testing.T, specFile string) (*mirror, []bundle.Artifact) {
	t.Helper()
	r, err := spec.LoadFile(context.Background(), specFile)
	if err != nil || r.Err() != nil {
		t.Fatal(err, r.Err())
	}
	p, err := plan.Derive(r.Cluster, r.Diagnostics)
	if err != nil {
		t.Fatal(err)
	}
	arts, err := bundle.Artifacts(p)
	if err != nil {
		t.Fatal(err)
	}
	m := &mirror{files: map[string][]byte{}}
	key := func(u string) string {
		x, err := url.Parse(u)
		if err != nil {
			t.Fatal(err)
		}
		return "/" + x.Host + x.Path
	}
	runc := ""
	for _, a := range arts {
		body := []byte(strings.Repeat(a.Path+"\n", 500))
		m.files[key(a.URL)] = body
		switch {
		case a.ChecksumFrom != bundle.ChecksumFile:
		case a.Name == bundle.NameRunc:
			runc += hexSum(body) + "  " + a.File() + "\n"
			m.files[key(a.ChecksumURL)] = []byte(runc)
		default:
			m.files[key(a.ChecksumURL)] = []byte(hexSum(body) + "  " + a.File() + "\n")
		}
	}
	m.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		m.mu.Lock()
		b, ok := m.files[r.URL.Path]
		hook := m.hook
		m.mu.Unlock()
		if hook != nil && hook(w, r) {
			return
		}
		if !ok {
			http.NotFound(w, r)
			return
		}
		_, _ = w.Write(b)
	}))
	t.Cleanup(m.srv.Close)
	return m, arts
}

// TestBundleDownloadAndVerify: download from a local mirror, verify passes;
// a corrupted file makes verify exit 1 naming it; a served file that does
// not match its checksum is exit 1, a 404 exit 3; an unreadable directory
// is exit 3.
func TestBundleDownloadAndVerify(t *testing.T) {
	const specFile = "../../examples/lab-linux.yaml"
	m, arts := newMirror(t, specFile)
	dir := filepath.Join(t.TempDir(), "bundle")
	r := runCLI(t, "", "bundle", "download", "-f", specFile, "-d", dir, "--mirror", m.srv.URL)
	if r.code != 0 {
		t.Fatalf("download: exit %d\n%s%s", r.code, r.out, r.err)
	}
	if !strings.Contains(r.out, "downloaded  linux-amd64/kubelet") || !strings.Contains(r.out, "wrote "+filepath.Join(dir, "SHA256SUMS")+" (9 files)") ||
		!strings.Contains(r.err, "note: manifests/tigera-operator.yaml: https://raw.githubusercontent.com/projectcalico/calico/v3.33.0/manifests/tigera-operator.yaml publishes no checksum") {
		t.Errorf("download output:\n%s%s", r.out, r.err)
	}
	r = runCLI(t, "", "bundle", "verify", "-f", specFile, "-d", dir)
	if r.code != 0 || !strings.Contains(r.out, "9 files, complete and intact") {
		t.Fatalf("verify: exit %d\n%s%s", r.code, r.out, r.err)
	}
	r = runCLI(t, "", "bundle", "download", "-f", specFile, "-d", dir, "--mirror", m.srv.URL)
	if r.code != 0 || strings.Contains(r.out, "downloaded") || strings.Count(r.out, "present") != len(arts) {
		t.Errorf("second download: exit %d\n%s%s", r.code, r.out, r.err)
	}

	kubeadm := filepath.Join(dir, "linux-amd64", "kubeadm")
	if err := os.WriteFile(kubeadm, []byte("not kubeadm"), 0o755); err != nil {
		t.Fatal(err)
	}
	r = runCLI(t, "", "bundle", "verify", "-f", specFile, "-d", dir)
	if r.code != ExitProblem || !strings.Contains(r.err, kubeadm+": corrupted: sha256 ") {
		t.Errorf("corrupted kubeadm: exit %d\n%s%s", r.code, r.out, r.err)
	}
	r = runCLI(t, "", "bundle", "verify", "-f", specFile, "-d", dir, "-o", "json")
	var rep struct {
		OK       []string `json:"ok"`
		Problems []struct{ Path, Message string }
		Extra    []string `json:"extra"`
	}
	if err := json.Unmarshal([]byte(r.out), &rep); err != nil || r.code != ExitProblem || len(rep.Problems) != 1 || rep.Problems[0].Path != "linux-amd64/kubeadm" || rep.Extra == nil {
		t.Errorf("verify -o json: exit %d, %v, %+v\n%s", r.code, err, rep, r.out)
	}
	if err := os.Remove(kubeadm); err != nil {
		t.Fatal(err)
	}
	r = runCLI(t, "", "bundle", "verify", "-f", specFile, "-d", dir)
	if r.code != ExitProblem || !strings.Contains(r.err, kubeadm+": missing") {
		t.Errorf("missing kubeadm: exit %d\n%s", r.code, r.err)
	}
	r = runCLI(t, "", "bundle", "verify", "-f", specFile, "-d", filepath.Join(dir, "absent"))
	if r.code != ExitIncomplete {
		t.Errorf("absent dir: exit %d\n%s", r.code, r.err)
	}

	// The mirror serves a different kubelet than its checksum file says.
	kubelet, _ := bundle.Find(arts, bundle.OSLinux, bundle.NameKubelet)
	u, _ := url.Parse(kubelet.URL)
	m.mu.Lock()
	m.files["/"+u.Host+u.Path] = []byte("evil")
	m.mu.Unlock()
	dir2 := t.TempDir()
	r = runCLI(t, "", "bundle", "download", "-f", specFile, "-d", dir2, "--mirror", m.srv.URL)
	if r.code != ExitProblem || !strings.Contains(r.err, "linux-amd64/kubelet: ") || !strings.Contains(r.err, "nothing was kept") {
		t.Errorf("bad kubelet: exit %d\n%s", r.code, r.err)
	}
	if _, err := os.Stat(filepath.Join(dir2, "linux-amd64", "kubelet")); err == nil {
		t.Error("the bad kubelet was kept")
	}
	m.mu.Lock()
	delete(m.files, "/"+u.Host+u.Path)
	m.mu.Unlock()
	r = runCLI(t, "", "bundle", "download", "-f", specFile, "-d", dir2, "--mirror", m.srv.URL)
	if r.code != ExitIncomplete || !strings.Contains(r.err, "404") {
		t.Errorf("404: exit %d\n%s", r.code, r.err)
	}
}

// TestBundleDownloadIsGraceful: the first Ctrl-C cancels download's
// context (so no half-written file is left) instead of exiting at once.
func TestBundleDownloadIsGraceful(t *testing.T) {
	root := NewRootCmd(Streams{In: strings.NewReader(""), Out: &strings.Builder{}, Err: &strings.Builder{}})
	for _, c := range []struct {
		path []string
		want bool
	}{{[]string{"bundle", "download"}, true}, {[]string{"bundle", "verify"}, false}, {[]string{"bundle", "list"}, false}} {
		cmd, _, err := root.Find(c.path)
		if err != nil {
			t.Fatal(err)
		}
		if isGraceful(cmd) != c.want {
			t.Errorf("%v graceful = %v", c.path, !c.want)
		}
	}
}

// TestBundleDownloadCtrlC: the whole command under Run with a real
// interrupt: Ctrl-C while kubelet is half received stops cleanly (exit 3,
// "re-run to resume"), leaves no temporary file, no kubelet and no
// SHA256SUMS; the next run completes.
func TestBundleDownloadCtrlC(t *testing.T) {
	const specFile = "../../examples/lab-linux.yaml"
	m, arts := newMirror(t, specFile)
	kubelet, _ := bundle.Find(arts, bundle.OSLinux, bundle.NameKubelet)
	u, _ := url.Parse(kubelet.URL)
	halfSent := make(chan struct{})
	release := make(chan struct{})
	defer close(release)
	m.setHook(func(w http.ResponseWriter, r *http.Request) bool {
		if r.URL.Path != "/"+u.Host+u.Path {
			return false
		}
		w.Header().Set("Content-Length", "1000000")
		_, _ = w.Write(make([]byte, 100000))
		w.(http.Flusher).Flush()
		close(halfSent)
		select {
		case <-release:
		case <-r.Context().Done():
		}
		return true
	})
	dir := filepath.Join(t.TempDir(), "bundle")
	sigs := make(chan os.Signal, 2)
	exited := make(chan int, 1)
	var out, errOut lockedBuf
	code := make(chan int, 1)
	go func() {
		code <- Run([]string{"bundle", "download", "-f", specFile, "-d", dir, "--mirror", m.srv.URL}, sigs, func(c int) { exited <- c }, strings.NewReader(""), &out, &errOut)
	}()
	select {
	case <-halfSent:
	case <-time.After(60 * time.Second):
		t.Fatalf("kubelet never requested\n%s%s", out.String(), errOut.String())
	}
	sigs <- os.Interrupt
	select {
	case c := <-code:
		if c != ExitIncomplete {
			t.Errorf("exit %d, want 3\n%s", c, errOut.String())
		}
	case c := <-exited:
		t.Fatalf("exited at once (%d) on the first Ctrl-C", c)
	case <-time.After(60 * time.Second):
		t.Fatal("the download did not stop")
	}
	if !strings.Contains(errOut.String(), "linux-amd64/kubelet") || !strings.Contains(errOut.String(), "context canceled") {
		t.Errorf("stderr: %s", errOut.String())
	}
	var left []string
	_ = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && strings.Contains(d.Name(), ".part-") {
			left = append(left, p)
		}
		return nil
	})
	if len(left) != 0 {
		t.Errorf("half-written files: %v", left)
	}
	for _, p := range []string{"linux-amd64/kubelet", "SHA256SUMS"} {
		if _, err := os.Stat(filepath.Join(dir, p)); err == nil {
			t.Errorf("%s exists after Ctrl-C", p)
		}
	}
	m.setHook(nil)
	r := runCLI(t, "", "bundle", "download", "-f", specFile, "-d", dir, "--mirror", m.srv.URL)
	if r.code != 0 || strings.Count(r.out, "present") != 4 {
		t.Errorf("resume: exit %d\n%s%s", r.code, r.out, r.err)
	}
}
