package bundle

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func mustArtifacts(t testing.TB) []Artifact {
	t.Helper()
	arts, err := Artifacts(labPlan(t))
	if err != nil {
		t.Fatal(err)
	}
	return arts
}

func TestVerifyGoodBundle(t *testing.T) {
	arts := mustArtifacts(t)
	dir := layout(t, arts)
	r, err := Verify(context.Background(), dir, labPlan(t))
	if err != nil {
		t.Fatal(err)
	}
	if r.Err() != nil || len(r.OK) != len(arts) || len(r.Extra) != 0 {
		t.Fatalf("report %+v, err %v", r, r.Err())
	}
	// A Linux-only plan against the same directory: the Windows files are
	// extra, reported and not wrong.
	r, err = Verify(context.Background(), dir, linuxLabPlan(t))
	if err != nil {
		t.Fatal(err)
	}
	linuxArts, err := Artifacts(linuxLabPlan(t))
	if err != nil {
		t.Fatal(err)
	}
	if r.Err() != nil || len(r.Extra) != len(arts)-len(linuxArts) || len(r.OK) != len(linuxArts) || !strings.HasPrefix(r.Extra[len(r.Extra)-1], "windows-amd64/") {
		t.Errorf("linux plan on a full bundle: problems %v extra %v", r.Problems, r.Extra)
	}
}

// TestVerifyFindsEachProblem: each way a bundle can be wrong is one
// problem naming the file; the rest of the bundle still checks out.
func TestVerifyFindsEachProblem(t *testing.T) {
	arts := mustArtifacts(t)
	kubelet := filepath.Join("linux-amd64", "kubelet")
	outside := filepath.Join(t.TempDir(), "kubelet")
	if err := os.WriteFile(outside, content(arts[4]), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name   string
		break_ func(dir string) error
		path   string
		want   string
	}{
		{"corrupted", func(dir string) error {
			return os.WriteFile(filepath.Join(dir, kubelet), []byte("not kubelet"), 0o644)
		}, "linux-amd64/kubelet", "corrupted: sha256 "},
		{"one byte flipped", func(dir string) error {
			p := filepath.Join(dir, kubelet)
			b, _ := os.ReadFile(p)
			b[len(b)/2] ^= 1
			return os.WriteFile(p, b, 0o644)
		}, "linux-amd64/kubelet", "corrupted"},
		{"missing", func(dir string) error { return os.Remove(filepath.Join(dir, kubelet)) }, "linux-amd64/kubelet", "missing"},
		{"missing directory", func(dir string) error { return os.RemoveAll(filepath.Join(dir, "windows-amd64")) }, "windows-amd64/kubelet.exe", "missing"},
		{"a directory", func(dir string) error {
			p := filepath.Join(dir, kubelet)
			_ = os.Remove(p)
			return os.Mkdir(p, 0o755)
		}, "linux-amd64/kubelet", "not a regular file"},
		{"link outside", func(dir string) error {
			p := filepath.Join(dir, kubelet)
			_ = os.Remove(p)
			return os.Symlink(outside, p)
		}, "linux-amd64/kubelet", "outside the bundle"},
		{"directory link outside", func(dir string) error {
			other := t.TempDir()
			if err := os.Rename(filepath.Join(dir, "manifests"), filepath.Join(other, "manifests")); err != nil {
				return err
			}
			return os.Symlink(filepath.Join(other, "manifests"), filepath.Join(dir, "manifests"))
		}, "manifests/tigera-operator.yaml", "outside the bundle"},
		{"dangling link", func(dir string) error {
			p := filepath.Join(dir, kubelet)
			_ = os.Remove(p)
			return os.Symlink("nowhere", p)
		}, "linux-amd64/kubelet", "a symbolic link to nothing"},
		{"not listed", func(dir string) error {
			sums, err := ReadSums(context.Background(), filepath.Join(dir, SumsFile))
			if err != nil {
				return err
			}
			var keep []Sum
			for _, s := range sums {
				if s.Path != "linux-amd64/kubelet" {
					keep = append(keep, s)
				}
			}
			return WriteSums(context.Background(), filepath.Join(dir, SumsFile), keep)
		}, "linux-amd64/kubelet", "not listed in SHA256SUMS"},
		{"no SHA256SUMS", func(dir string) error { return os.Remove(filepath.Join(dir, SumsFile)) }, "SHA256SUMS", "missing"},
		{"hostile SHA256SUMS", func(dir string) error {
			f, err := os.OpenFile(filepath.Join(dir, SumsFile), os.O_APPEND|os.O_WRONLY, 0)
			if err != nil {
				return err
			}
			defer f.Close()
			_, err = f.WriteString(hexA + "  ../../etc/shadow\n")
			return err
		}, "SHA256SUMS", ":18: \"../../etc/shadow\" has a \"..\" element"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := layout(t, arts)
			if err := c.break_(dir); err != nil {
				t.Fatal(err)
			}
			r, err := VerifyArtifacts(context.Background(), dir, arts)
			if err != nil {
				t.Fatal(err)
			}
			found := false
			for _, p := range r.Problems {
				if p.Path == c.path && strings.Contains(p.Message, c.want) {
					found = true
				}
			}
			if !found || r.Err() == nil || !strings.Contains(r.Err().Error(), c.path) {
				t.Errorf("problems %v, want %s: ...%s...", r.Problems, c.path, c.want)
			}
		})
	}
}

func TestVerifyLinkInsideAndExtras(t *testing.T) {
	arts := mustArtifacts(t)
	dir := layout(t, arts)
	// A link that stays inside the bundle is fine.
	store := filepath.Join(dir, "store")
	if err := os.Mkdir(store, 0o755); err != nil {
		t.Fatal(err)
	}
	kubelet := filepath.Join(dir, "linux-amd64", "kubelet")
	if err := os.Rename(kubelet, filepath.Join(store, "kubelet")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../store/kubelet", kubelet); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "linux-amd64", ".kubelet.part-123"), []byte("half"), 0o644); err != nil {
		t.Fatal(err)
	}
	r, err := VerifyArtifacts(context.Background(), dir, arts)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"linux-amd64/.kubelet.part-123", "store/kubelet"}
	if r.Err() != nil || strings.Join(r.Extra, ",") != strings.Join(want, ",") {
		t.Errorf("problems %v extra %v, want extra %v", r.Problems, r.Extra, want)
	}
}

func TestVerifyCannotRead(t *testing.T) {
	arts := mustArtifacts(t)
	if _, err := VerifyArtifacts(context.Background(), filepath.Join(t.TempDir(), "absent"), arts); err == nil || !strings.Contains(err.Error(), "absent") {
		t.Errorf("absent dir: %v", err)
	}
	file := filepath.Join(t.TempDir(), "file")
	_ = os.WriteFile(file, nil, 0o644)
	if _, err := VerifyArtifacts(context.Background(), file, arts); err == nil || !strings.Contains(err.Error(), "not a directory") {
		t.Errorf("a file: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := VerifyArtifacts(ctx, layout(t, arts), arts); err == nil {
		t.Error("a cancelled verify succeeded")
	}
}
