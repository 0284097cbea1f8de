package bundle

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

func sha(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// content is the made-up content of an artifact: distinct per path, a few
// KiB so that a download takes several reads.
func content(a Artifact) []byte {
	return []byte(strings.Repeat("upstream "+a.Path+" "+a.Version+"\n", 200))
}

// upstream is a local HTTP server on 127.0.0.1 that serves the artifacts
// and their checksum files at the paths a mirror has (/<host>/<path>), in
// the formats the real sites use: dl.k8s.io's bare .sha256, containerd's
// "<sum>  <file>" .sha256sum, runc's one runc.sha256sum for every asset.
type upstream struct {
	srv *httptest.Server
	mu  sync.Mutex
	// files maps a mirror path to its body; hits counts requests per path.
	files map[string][]byte
	hits  map[string]int
	// handler, when set, serves instead (tests that misbehave).
	handler func(w http.ResponseWriter, r *http.Request) bool
}

func mirrorPath(t testing.TB, u string) string {
	t.Helper()
	p, err := url.Parse(u)
	if err != nil {
		t.Fatal(err)
	}
	return "/" + p.Host + p.Path
}

func newUpstream(t testing.TB, arts []Artifact) *upstream {
	t.Helper()
	up := &upstream{files: map[string][]byte{}, hits: map[string]int{}}
	runc := map[string]string{}
	for _, a := range arts {
		body := content(a)
		up.files[mirrorPath(t, a.URL)] = body
		if a.ChecksumFrom != ChecksumFile {
			continue
		}
		sp := mirrorPath(t, a.ChecksumURL)
		switch {
		case strings.HasSuffix(sp, "/runc.sha256sum"):
			runc[sp] += sha([]byte("arm64")) + "  runc.arm64\n" + sha(body) + "  " + a.File() + "\n"
		case strings.HasPrefix(sp, "/dl.k8s.io/"):
			up.files[sp] = []byte(sha(body))
		default:
			up.files[sp] = []byte(sha(body) + "  " + a.File() + "\n")
		}
	}
	for p, s := range runc {
		up.files[p] = []byte(s)
	}
	up.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		up.mu.Lock()
		up.hits[r.URL.Path]++
		h := up.handler
		body, ok := up.files[r.URL.Path]
		up.mu.Unlock()
		if h != nil && h(w, r) {
			return
		}
		if !ok {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Length", fmt.Sprint(len(body)))
		_, _ = w.Write(body)
	}))
	t.Cleanup(up.srv.Close)
	return up
}

func (u *upstream) set(p string, body []byte) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.files[p] = body
}

func (u *upstream) count(p string) int {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.hits[p]
}

// layout writes a complete, correct bundle for arts into a new directory.
func layout(t testing.TB, arts []Artifact) string {
	t.Helper()
	dir := t.TempDir()
	var sums []Sum
	for _, a := range arts {
		p := filepath.Join(dir, filepath.FromSlash(a.Path))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, content(a), 0o644); err != nil {
			t.Fatal(err)
		}
		sums = append(sums, Sum{SHA256: sha(content(a)), Path: a.Path})
	}
	if err := WriteSums(context.Background(), filepath.Join(dir, SumsFile), sums); err != nil {
		t.Fatal(err)
	}
	return dir
}

// partFiles lists temporary download files left anywhere under dir.
func partFiles(t testing.TB, dir string) []string {
	t.Helper()
	var out []string
	_ = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && strings.Contains(path.Base(p), ".part-") {
			out = append(out, p)
		}
		return nil
	})
	return out
}
