package bundle

import (
	"context"
	"errors"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func mirrorOpts(up *upstream) DownloadOptions {
	return DownloadOptions{Mirror: up.srv.URL, RequestTimeout: time.Minute, IdleTimeout: 30 * time.Second}
}

func TestMirrorURL(t *testing.T) {
	for _, c := range []struct{ mirror, up, want string }{
		{"", "https://dl.k8s.io/release/v1/bin/kubelet", "https://dl.k8s.io/release/v1/bin/kubelet"},
		{"http://127.0.0.1:8080", "https://dl.k8s.io/release/v1/bin/kubelet", "http://127.0.0.1:8080/dl.k8s.io/release/v1/bin/kubelet"},
		{"https://mirror.example.internal/site/", "https://github.com/a/b/releases/download/v1/x.tgz", "https://mirror.example.internal/site/github.com/a/b/releases/download/v1/x.tgz"},
	} {
		got, err := MirrorURL(c.mirror, c.up)
		if err != nil || got != c.want {
			t.Errorf("MirrorURL(%q, %q) = %q, %v; want %q", c.mirror, c.up, got, err, c.want)
		}
	}
	for _, bad := range []string{"ftp://x", "127.0.0.1:8080", "http://", "http://u:p@x", "http://x/?a=b", "http://x/#f"} {
		if _, err := MirrorURL(bad, "https://dl.k8s.io/x"); err == nil {
			t.Errorf("mirror %q accepted", bad)
		}
	}
}

// TestDownloadThenVerify: everything comes from the local mirror, checked
// against the checksum files, SHA256SUMS written; verify passes; a second
// run fetches only the checksum files (resume skips every good file).
func TestDownloadThenVerify(t *testing.T) {
	ctx := context.Background()
	arts := mustArtifacts(t)
	up := newUpstream(t, arts)
	dir := filepath.Join(t.TempDir(), "bundle")
	var progress []string
	o := mirrorOpts(up)
	o.Progress = func(r Result) { progress = append(progress, r.Action+" "+r.Artifact.Path) }
	res, err := Download(ctx, dir, arts, o)
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != len(arts) || len(progress) != len(arts) {
		t.Fatalf("%d results, %d progress lines", len(res), len(progress))
	}
	for _, r := range res {
		if r.Action != "downloaded" || r.SHA256 != sha(content(r.Artifact)) || r.Bytes != int64(len(content(r.Artifact))) {
			t.Errorf("%s: %+v", r.Artifact.Path, r)
		}
		want := ChecksumNone
		if r.Artifact.ChecksumFrom == ChecksumFile {
			want = up.srv.URL + mirrorPath(t, r.Artifact.ChecksumURL)
		}
		if r.ChecksumFrom != want {
			t.Errorf("%s: checksum from %q, want %q", r.Artifact.Path, r.ChecksumFrom, want)
		}
	}
	rep, err := VerifyArtifacts(ctx, dir, arts)
	if err != nil || rep.Err() != nil || len(rep.OK) != len(arts) || len(rep.Extra) != 0 {
		t.Fatalf("verify after download: %v %+v", err, rep)
	}
	st, _ := os.Stat(filepath.Join(dir, "linux-amd64", "kubelet"))
	if st.Mode().Perm() != 0o644 {
		t.Errorf("kubelet mode %v", st.Mode())
	}

	kubelet := mirrorPath(t, arts[4].URL)
	nssm := mirrorPath(t, arts[12].URL)
	res, err = Download(ctx, dir, arts, mirrorOpts(up))
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range res {
		if r.Action != "present" {
			t.Errorf("second run: %s %s", r.Action, r.Artifact.Path)
		}
	}
	if up.count(kubelet) != 1 || up.count(nssm) != 1 {
		t.Errorf("second run fetched again: kubelet %d, nssm %d requests", up.count(kubelet), up.count(nssm))
	}
	if r := res[12]; !strings.HasPrefix(r.ChecksumFrom, SumsFile) {
		t.Errorf("nssm's checksum on the second run came from %q, want the recorded SHA256SUMS", r.ChecksumFrom)
	}

	// A corrupted file is caught by verify and fetched again by download;
	// only that file.
	p := filepath.Join(dir, "linux-amd64", "kubelet")
	if err := os.WriteFile(p, []byte("corrupt"), 0o644); err != nil {
		t.Fatal(err)
	}
	rep, _ = VerifyArtifacts(ctx, dir, arts)
	if rep.Err() == nil || !strings.Contains(rep.Err().Error(), "linux-amd64/kubelet: corrupted") {
		t.Errorf("verify missed the corrupted kubelet: %v", rep.Err())
	}
	res, err = Download(ctx, dir, arts, mirrorOpts(up))
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range res {
		if (r.Action == "downloaded") != (r.Artifact.Path == "linux-amd64/kubelet") {
			t.Errorf("third run: %s %s", r.Action, r.Artifact.Path)
		}
	}
	if rep, _ := VerifyArtifacts(ctx, dir, arts); rep.Err() != nil {
		t.Error(rep.Err())
	}
}

// TestDownloadRefusesBadContent: a served file that does not match its
// checksum file, and checksum files that do not fit, stop the download
// with the file named, leave no file and no SHA256SUMS.
func TestDownloadRefusesBadContent(t *testing.T) {
	arts := mustArtifacts(t)
	for _, c := range []struct {
		name   string
		spoil  func(t *testing.T, up *upstream)
		want   string
		sumErr bool
	}{
		{"corrupted artifact", func(t *testing.T, up *upstream) {
			up.set(mirrorPath(t, arts[4].URL), []byte("evil kubelet"))
		}, "linux-amd64/kubelet: http://", true},
		{"checksum file disagrees", func(t *testing.T, up *upstream) {
			up.set(mirrorPath(t, arts[4].ChecksumURL), []byte(hexA))
		}, "but ", true},
		{"checksum file names another file", func(t *testing.T, up *upstream) {
			up.set(mirrorPath(t, arts[0].ChecksumURL), []byte(hexA+"  containerd-9.9.9-linux-amd64.tar.gz\n"))
		}, "has no line for containerd-2.2.2-linux-amd64.tar.gz", false},
		{"checksum file is not one", func(t *testing.T, up *upstream) {
			up.set(mirrorPath(t, arts[4].ChecksumURL), []byte("<html>rate limited</html>"))
		}, "linux-amd64/kubelet: checksum file", false},
		{"runc line missing", func(t *testing.T, up *upstream) {
			up.set(mirrorPath(t, arts[1].ChecksumURL), []byte(hexA+"  runc.arm64\n"))
		}, "has no line for runc.amd64", false},
		{"404", func(t *testing.T, up *upstream) {
			up.mu.Lock()
			delete(up.files, mirrorPath(t, arts[5].URL))
			up.mu.Unlock()
		}, "linux-amd64/kubeadm: http://", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			up := newUpstream(t, arts)
			c.spoil(t, up)
			dir := t.TempDir()
			_, err := Download(context.Background(), dir, arts, mirrorOpts(up))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want it to contain %q", err, c.want)
			}
			var ce *ChecksumError
			if errors.As(err, &ce) != c.sumErr {
				t.Errorf("ChecksumError: %v, want %v (%v)", errors.As(err, &ce), c.sumErr, err)
			}
			if c.name == "404" && !strings.Contains(err.Error(), "404") {
				t.Errorf("404 not named: %v", err)
			}
			if _, err := os.Stat(filepath.Join(dir, SumsFile)); err == nil {
				t.Error("SHA256SUMS written after a failure")
			}
			if left := partFiles(t, dir); len(left) != 0 {
				t.Errorf("half-written files left: %v", left)
			}
			for _, a := range arts[4:6] {
				if b, err := os.ReadFile(filepath.Join(dir, a.Path)); err == nil && string(b) != string(content(a)) {
					t.Errorf("%s kept with the wrong content", a.Path)
				}
			}
		})
	}
}

// TestDownloadDeadlines: a server that stops sending hits the idle
// deadline; one that trickles hits the request deadline; the size cap
// stops a body that is too large with or without a Content-Length.
func TestDownloadDeadlines(t *testing.T) {
	arts := mustArtifacts(t)[:1]
	body := mirrorPath(t, arts[0].URL)
	stuck := make(chan struct{})
	t.Cleanup(func() { close(stuck) })
	for _, c := range []struct {
		name    string
		handler func(w http.ResponseWriter, r *http.Request) bool
		opts    func(*DownloadOptions)
		want    string
	}{
		{"no headers", func(w http.ResponseWriter, r *http.Request) bool {
			if r.URL.Path != body {
				return false
			}
			select {
			case <-stuck:
			case <-r.Context().Done():
			}
			return true
		}, func(o *DownloadOptions) { o.IdleTimeout = 300 * time.Millisecond }, "nothing received for 300ms"},
		{"stops mid-body", func(w http.ResponseWriter, r *http.Request) bool {
			if r.URL.Path != body {
				return false
			}
			w.Header().Set("Content-Length", "100000")
			_, _ = w.Write([]byte("partial"))
			w.(http.Flusher).Flush()
			select {
			case <-stuck:
			case <-r.Context().Done():
			}
			return true
		}, func(o *DownloadOptions) { o.IdleTimeout = 300 * time.Millisecond }, "nothing received for 300ms"},
		{"trickles", func(w http.ResponseWriter, r *http.Request) bool {
			if r.URL.Path != body {
				return false
			}
			for i := 0; i < 100; i++ {
				if _, err := w.Write([]byte("x")); err != nil {
					return true
				}
				w.(http.Flusher).Flush()
				select {
				case <-time.After(50 * time.Millisecond):
				case <-r.Context().Done():
					return true
				}
			}
			return true
		}, func(o *DownloadOptions) { o.RequestTimeout = 400 * time.Millisecond; o.IdleTimeout = 5 * time.Second }, "not finished within the deadline of 400ms"},
		{"too large, declared", nil, func(o *DownloadOptions) { o.MaxBytes = int64(len(content(arts[0]))) - 1 }, "more than the limit"},
		{"too large, chunked", func(w http.ResponseWriter, r *http.Request) bool {
			if r.URL.Path != body {
				return false
			}
			for i := 0; i < 20; i++ {
				_, _ = w.Write(make([]byte, 1000))
				w.(http.Flusher).Flush()
			}
			return true
		}, func(o *DownloadOptions) { o.MaxBytes = 10000 }, "more than the limit of 10000 bytes"},
	} {
		t.Run(c.name, func(t *testing.T) {
			up := newUpstream(t, arts)
			up.handler = c.handler
			o := mirrorOpts(up)
			c.opts(&o)
			dir := t.TempDir()
			_, err := Download(context.Background(), dir, arts, o)
			if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), arts[0].Path) {
				t.Fatalf("err = %v, want %q naming %s", err, c.want, arts[0].Path)
			}
			if left := partFiles(t, dir); len(left) != 0 {
				t.Errorf("half-written files left: %v", left)
			}
			if _, err := os.Stat(filepath.Join(dir, arts[0].Path)); err == nil {
				t.Error("the file exists after a failed download")
			}
		})
	}
}

// TestDownloadCancel: Ctrl-C (the context cancelled) in the middle of a
// body leaves no half-written file, keeps the good ones, writes no
// SHA256SUMS, and says it was cancelled.
func TestDownloadCancel(t *testing.T) {
	arts := mustArtifacts(t)[:5]
	up := newUpstream(t, arts)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	kubelet := mirrorPath(t, arts[4].URL)
	up.handler = func(w http.ResponseWriter, r *http.Request) bool {
		if r.URL.Path != kubelet {
			return false
		}
		w.Header().Set("Content-Length", "1000000")
		_, _ = w.Write(make([]byte, 70000))
		w.(http.Flusher).Flush()
		cancel()
		<-r.Context().Done()
		return true
	}
	dir := t.TempDir()
	_, err := Download(ctx, dir, arts, mirrorOpts(up))
	if !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "linux-amd64/kubelet") {
		t.Fatalf("err = %v", err)
	}
	if left := partFiles(t, dir); len(left) != 0 {
		t.Errorf("half-written files left: %v", left)
	}
	if _, err := os.Stat(filepath.Join(dir, "linux-amd64", "kubelet")); err == nil {
		t.Error("kubelet exists after the cancel")
	}
	if _, err := os.Stat(filepath.Join(dir, SumsFile)); err == nil {
		t.Error("SHA256SUMS written after a cancel")
	}
	for _, a := range arts[:4] {
		if b, err := os.ReadFile(filepath.Join(dir, a.Path)); err != nil || string(b) != string(content(a)) {
			t.Errorf("%s: %v", a.Path, err)
		}
	}
	// A killed run's temporary file is removed by the next run.
	stale := filepath.Join(dir, "linux-amd64", ".kubelet.part-999")
	if err := os.WriteFile(stale, []byte("half"), 0o644); err != nil {
		t.Fatal(err)
	}
	up.handler = nil
	if _, err := Download(context.Background(), dir, arts, mirrorOpts(up)); err != nil {
		t.Fatal(err)
	}
	if left := partFiles(t, dir); len(left) != 0 {
		t.Errorf("stale files left: %v", left)
	}
}

// TestDownloadHostileSums: an existing SHA256SUMS that does not parse is
// never added to, and nothing is downloaded.
func TestDownloadHostileSums(t *testing.T) {
	arts := mustArtifacts(t)[:2]
	up := newUpstream(t, arts)
	for _, bad := range []string{hexA + "  ../x\n", hexA + "  /etc/passwd\n", hexA + "  a\n" + hexB + "  a\n"} {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, SumsFile), []byte(bad), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := Download(context.Background(), dir, arts, mirrorOpts(up))
		if err == nil || !strings.Contains(err.Error(), "SHA256SUMS:") {
			t.Errorf("%q: err = %v", bad, err)
		}
		if n := up.count(mirrorPath(t, arts[0].URL)); n != 0 {
			t.Errorf("downloaded %d times despite a hostile SHA256SUMS", n)
		}
	}
}

// TestDownloadKeepsOtherLines: lines of an earlier SHA256SUMS for files
// still there (a bundle shared by two specs) are kept; lines of files
// gone are dropped.
func TestDownloadKeepsOtherLines(t *testing.T) {
	arts := mustArtifacts(t)
	up := newUpstream(t, arts)
	dir := t.TempDir()
	if _, err := Download(context.Background(), dir, arts, mirrorOpts(up)); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(dir, "manifests", "components.yaml")); err != nil {
		t.Fatal(err)
	}
	linux := ForOS(arts, OSLinux)
	if _, err := Download(context.Background(), dir, linux, mirrorOpts(up)); err != nil {
		t.Fatal(err)
	}
	sums, err := ReadSums(context.Background(), filepath.Join(dir, SumsFile))
	if err != nil {
		t.Fatal(err)
	}
	if len(sums) != len(arts)-1 {
		t.Errorf("%d lines, want %d", len(sums), len(arts)-1)
	}
	for _, s := range sums {
		if s.Path == "manifests/components.yaml" {
			t.Error("the line of a removed file was kept")
		}
	}
}

// TestSHA256SUMSIsSha256sumFormat: coreutils' sha256sum -c accepts what
// Download writes (prepare.sh runs it on the nodes), and rejects it once a
// file is corrupted.
func TestSHA256SUMSIsSha256sumFormat(t *testing.T) {
	tool, err := exec.LookPath("sha256sum")
	if err != nil {
		t.Fatalf("sha256sum (coreutils) is needed: %v", err)
	}
	arts := mustArtifacts(t)
	up := newUpstream(t, arts)
	dir := t.TempDir()
	if _, err := Download(context.Background(), dir, arts, mirrorOpts(up)); err != nil {
		t.Fatal(err)
	}
	check := func() (string, error) {
		cmd := exec.Command(tool, "--strict", "-c", SumsFile)
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	if out, err := check(); err != nil || strings.Count(out, ": OK") != len(arts) {
		t.Fatalf("sha256sum -c: %v\n%s", err, out)
	}
	if err := os.WriteFile(filepath.Join(dir, "linux-amd64", "kubectl"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := check(); err == nil || !strings.Contains(out, "linux-amd64/kubectl: FAILED") {
		t.Errorf("sha256sum -c after corruption: %v\n%s", err, out)
	}
}

// TestDownloadPinned: a pinned sha256 is checked without a checksum file;
// a served file that differs is refused, naming the pin.
func TestDownloadPinned(t *testing.T) {
	arts := mustArtifacts(t)[:1]
	arts[0].SHA256 = sha(content(arts[0]))
	arts[0].ChecksumFrom = ChecksumPinned
	up := newUpstream(t, arts)
	dir := t.TempDir()
	res, err := Download(context.Background(), dir, arts, mirrorOpts(up))
	if err != nil || res[0].ChecksumFrom != ChecksumPinned {
		t.Fatalf("%v %+v", err, res)
	}
	if n := up.count(mirrorPath(t, arts[0].ChecksumURL)); n != 0 {
		t.Errorf("fetched the checksum file of a pinned artifact %d times", n)
	}
	arts[0].SHA256 = hexA
	_ = os.Remove(filepath.Join(dir, arts[0].Path))
	_, err = Download(context.Background(), dir, arts, mirrorOpts(up))
	var ce *ChecksumError
	if !errors.As(err, &ce) || ce.From != ChecksumPinned || ce.Want != hexA {
		t.Errorf("err = %v", err)
	}
	// Verify holds a file to its pin even when SHA256SUMS agrees with it.
	layoutDir := layout(t, arts)
	rep, err := VerifyArtifacts(context.Background(), layoutDir, arts)
	if err != nil || rep.Err() == nil || !strings.Contains(rep.Err().Error(), "is not the "+hexA+" hybridctl pins") {
		t.Errorf("verify against a pin: %v %v", err, rep.Err())
	}
}

// TestDownloadRefusesDowngrade: a redirect from https to http is not
// followed (the default client's rule; tests give their own client).
func TestDownloadRefusesDowngrade(t *testing.T) {
	from, _ := http.NewRequest(http.MethodGet, "https://github.com/x", nil)
	to, _ := http.NewRequest(http.MethodGet, "http://objects.example/x", nil)
	if err := noDowngrade(to, []*http.Request{from}); err == nil {
		t.Error("https -> http followed")
	}
	toS, _ := http.NewRequest(http.MethodGet, "https://objects.example/x", nil)
	if err := noDowngrade(toS, []*http.Request{from}); err != nil {
		t.Errorf("https -> https: %v", err)
	}
	plain, _ := http.NewRequest(http.MethodGet, "http://127.0.0.1/x", nil)
	if err := noDowngrade(plain, []*http.Request{plain}); err != nil {
		t.Errorf("http -> http (a plain mirror): %v", err)
	}
	many := make([]*http.Request, 10)
	for i := range many {
		many[i] = from
	}
	if err := noDowngrade(toS, many); err == nil {
		t.Error("an 11th redirect followed")
	}
}

// TestDownloadWritesOnlyInsideDir: a directory of the bundle that is a
// symbolic link is refused, named, before anything is written, wherever it
// points (elsewhere, or another directory of the bundle); so is a link at
// a file's or at SHA256SUMS's place. The bundle directory itself may be a
// link: the user named it.
func TestDownloadWritesOnlyInsideDir(t *testing.T) {
	arts := mustArtifacts(t)[:1]
	up := newUpstream(t, arts)
	dir, elsewhere := t.TempDir(), t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "store"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, target := range []string{elsewhere, "store"} {
		link := filepath.Join(dir, LinuxDir)
		_ = os.Remove(link)
		if err := os.Symlink(target, link); err != nil {
			t.Fatal(err)
		}
		_, err := Download(context.Background(), dir, arts, mirrorOpts(up))
		if err == nil || !strings.Contains(err.Error(), "refusing to write through "+link+": it is a symbolic link") {
			t.Fatalf("%s: err = %v", target, err)
		}
		for _, d := range []string{elsewhere, filepath.Join(dir, "store")} {
			if entries, _ := os.ReadDir(d); len(entries) != 0 {
				t.Errorf("written through the link to %s: %v", d, entries)
			}
		}
	}
	if err := os.Remove(filepath.Join(dir, LinuxDir)); err != nil {
		t.Fatal(err)
	}
	// A link where a file goes.
	if err := os.Mkdir(filepath.Join(dir, LinuxDir), 0o755); err != nil {
		t.Fatal(err)
	}
	victim := filepath.Join(elsewhere, "victim")
	if err := os.WriteFile(victim, []byte("keep"), 0o644); err != nil {
		t.Fatal(err)
	}
	fileLink := filepath.Join(dir, filepath.FromSlash(arts[0].Path))
	if err := os.Symlink(victim, fileLink); err != nil {
		t.Fatal(err)
	}
	if _, err := Download(context.Background(), dir, arts, mirrorOpts(up)); err == nil || !strings.Contains(err.Error(), "refusing to write through "+fileLink) {
		t.Fatalf("a link at a file's place: %v", err)
	}
	if b, _ := os.ReadFile(victim); string(b) != "keep" {
		t.Errorf("written through the file link: %q", b)
	}
	if err := os.Remove(fileLink); err != nil {
		t.Fatal(err)
	}
	// A link at SHA256SUMS's place.
	sumsLink := filepath.Join(dir, SumsFile)
	if err := os.Symlink(victim, sumsLink); err != nil {
		t.Fatal(err)
	}
	if _, err := Download(context.Background(), dir, arts, mirrorOpts(up)); err == nil || !strings.Contains(err.Error(), "refusing to write through "+sumsLink) {
		t.Fatalf("a link at SHA256SUMS: %v", err)
	}
	if b, _ := os.ReadFile(victim); string(b) != "keep" {
		t.Errorf("SHA256SUMS written through the link: %q", b)
	}
	if err := os.Remove(sumsLink); err != nil {
		t.Fatal(err)
	}
	// The bundle directory named through a link is the user's.
	named := filepath.Join(t.TempDir(), "bundle")
	if err := os.Symlink(dir, named); err != nil {
		t.Fatal(err)
	}
	if _, err := Download(context.Background(), named, arts, mirrorOpts(up)); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(fileLink); err != nil {
		t.Errorf("not downloaded through the user's link: %v", err)
	}
}
