package bundle

import (
	"context"
	"crypto/sha256"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// bigArtifacts is the lab's list with every file made size bytes long (a
// real bundle is about 700 MB; a few MiB per file keep the run short).
func bigArtifacts(b *testing.B, size int) ([]Artifact, *upstream) {
	arts := mustArtifacts(b)
	up := newUpstream(b, nil)
	block := make([]byte, size)
	for i, a := range arts {
		body := append([]byte(a.Path), block...)[:size]
		up.files[mirrorPath(b, a.URL)] = body
		if a.ChecksumFrom == ChecksumFile {
			// One file per artifact: the bare-sum format.
			up.files[mirrorPath(b, a.ChecksumURL)] = []byte(sha(body))
			if a.Name == NameRunc {
				up.files[mirrorPath(b, a.ChecksumURL)] = []byte(sha(body) + "  runc.amd64\n")
			}
		}
		arts[i] = a
	}
	return arts, up
}

// BenchmarkVerify verifies a 17-file bundle of 4 MiB files and reports
// its time against sha256sum -c on the same directory, in the same run
// (verify_vs_sha256sum: 1.0 is as fast as coreutils).
func BenchmarkVerify(b *testing.B) {
	tool, err := exec.LookPath("sha256sum")
	if err != nil {
		b.Fatal(err)
	}
	arts, up := bigArtifacts(b, 4<<20)
	dir := b.TempDir()
	if _, err := Download(context.Background(), dir, arts, mirrorOpts(up)); err != nil {
		b.Fatal(err)
	}
	var ours, peer time.Duration
	b.SetBytes(int64(len(arts)) * 4 << 20)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		rep, err := VerifyArtifacts(context.Background(), dir, arts)
		if err != nil || rep.Err() != nil {
			b.Fatal(err, rep.Err())
		}
		ours += time.Since(t0)
		b.StopTimer()
		t0 = time.Now()
		cmd := exec.Command(tool, "-c", "--quiet", SumsFile)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("%v %s", err, out)
		}
		peer += time.Since(t0)
		b.StartTimer()
	}
	b.ReportMetric(float64(ours)/float64(peer), "verify_vs_sha256sum")
}

// BenchmarkDownload downloads the same bundle from a local server into a
// fresh directory (temp file, sha256, fsync, rename per file) and reports
// its time against a bare GET of the same bytes into sha256 (no disk),
// measured in the same run.
func BenchmarkDownload(b *testing.B) {
	arts, up := bigArtifacts(b, 4<<20)
	var ours, peer time.Duration
	b.SetBytes(int64(len(arts)) * 4 << 20)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		dir := filepath.Join(b.TempDir(), "bundle")
		t0 := time.Now()
		if _, err := Download(context.Background(), dir, arts, mirrorOpts(up)); err != nil {
			b.Fatal(err)
		}
		ours += time.Since(t0)
		b.StopTimer()
		_ = os.RemoveAll(dir)
		t0 = time.Now()
		for _, a := range arts {
			u, _ := MirrorURL(up.srv.URL, a.URL)
			resp, err := http.Get(u)
			if err != nil {
				b.Fatal(err)
			}
			h := sha256.New()
			_, err = io.Copy(h, resp.Body)
			resp.Body.Close()
			if err != nil {
				b.Fatal(err)
			}
		}
		peer += time.Since(t0)
		b.StartTimer()
	}
	b.ReportMetric(float64(ours)/float64(peer), "download_vs_bare_get")
}
