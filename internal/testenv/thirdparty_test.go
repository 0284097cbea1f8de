package testenv

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// source is a vendored data set's SOURCE file (testdata/third_party/**/SOURCE).
type source struct {
	Repository  string `json:"repository"`
	Commit      string `json:"commit"`
	Date        string `json:"date,omitempty"`
	Note        string `json:"note,omitempty"`
	Licence     string `json:"licence"`
	LicenceFile string `json:"licenceFile"`
	Files       []struct {
		Path   string `json:"path"`
		File   string `json:"file"`
		SHA256 string `json:"sha256"`
	} `json:"files"`
}

// checkSource verifies one vendored directory against its SOURCE file and
// returns the problems found: every field set, the licence file present,
// every listed file present with the recorded sha256 (of its upstream,
// uncompressed content), and no unlisted file beside them.
func checkSource(dir string) []string {
	var probs []string
	b, err := os.ReadFile(filepath.Join(dir, "SOURCE"))
	if err != nil {
		return []string{err.Error()}
	}
	var s source
	if err := yaml.UnmarshalStrict(b, &s); err != nil {
		return []string{fmt.Sprintf("%s/SOURCE: %v", dir, err)}
	}
	for field, v := range map[string]string{"repository": s.Repository, "commit": s.Commit, "licence": s.Licence, "licenceFile": s.LicenceFile} {
		if strings.TrimSpace(v) == "" {
			probs = append(probs, fmt.Sprintf("%s/SOURCE: %s is empty", dir, field))
		}
	}
	if len(s.Commit) != 40 {
		probs = append(probs, fmt.Sprintf("%s/SOURCE: commit %q is not a full 40-digit commit id", dir, s.Commit))
	}
	if len(s.Files) == 0 {
		probs = append(probs, fmt.Sprintf("%s/SOURCE: no files listed", dir))
	}
	listed := map[string]bool{"SOURCE": true}
	if s.LicenceFile != "" {
		listed[s.LicenceFile] = true
		if fi, err := os.Stat(filepath.Join(dir, s.LicenceFile)); err != nil || fi.Size() == 0 {
			probs = append(probs, fmt.Sprintf("%s: licence file %s missing or empty", dir, s.LicenceFile))
		}
	}
	for _, f := range s.Files {
		if f.File == "" || f.Path == "" || len(f.SHA256) != 64 {
			probs = append(probs, fmt.Sprintf("%s/SOURCE: entry %+v needs path, file and a sha256", dir, f))
			continue
		}
		listed[f.File] = true
		got, err := plainSHA256(filepath.Join(dir, f.File))
		if err != nil {
			probs = append(probs, err.Error())
			continue
		}
		if got != f.SHA256 {
			probs = append(probs, fmt.Sprintf("%s/%s: sha256 %s, SOURCE records %s", dir, f.File, got, f.SHA256))
		}
	}
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			probs = append(probs, err.Error())
			return nil
		}
		if d.IsDir() {
			if p != dir {
				if _, err := os.Stat(filepath.Join(p, "SOURCE")); err == nil {
					return filepath.SkipDir // a data set of its own
				}
			}
			return nil
		}
		rel, _ := filepath.Rel(dir, p)
		if !listed[filepath.ToSlash(rel)] {
			probs = append(probs, fmt.Sprintf("%s: %s is not listed in SOURCE", dir, rel))
		}
		return nil
	})
	return probs
}

// plainSHA256 hashes a file's content, decompressing NAME.gz first.
func plainSHA256(p string) (string, error) {
	f, err := os.Open(p)
	if err != nil {
		return "", err
	}
	defer f.Close()
	var r io.Reader = f
	if strings.HasSuffix(p, ".gz") {
		zr, err := gzip.NewReader(f)
		if err != nil {
			return "", fmt.Errorf("%s: %w", p, err)
		}
		defer zr.Close()
		r = zr
	}
	h := sha256.New()
	if _, err := io.Copy(h, r); err != nil {
		return "", fmt.Errorf("%s: %w", p, err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// TestThirdPartyProvenance: every vendored data set under
// testdata/third_party has a SOURCE file (repository, commit, licence, and
// the sha256 of each file) and its licence, and its files are exactly what
// SOURCE records.
func TestThirdPartyProvenance(t *testing.T) {
	root, err := RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	base := filepath.Join(root, "testdata", "third_party")
	// The real-world corpus lists a commit per file (its SOURCE files are
	// tables); internal/checks' TestCorpusProvenance checks it.
	corpus := filepath.Join(base, "corpus")
	if _, err := os.Stat(filepath.Join(corpus, "expected.tsv")); err != nil {
		t.Errorf("the corpus this test leaves to TestCorpusProvenance is not where expected: %v", err)
	}
	var sets []string
	err = filepath.WalkDir(base, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && p == corpus {
			return filepath.SkipDir
		}
		if !d.IsDir() && d.Name() == "SOURCE" {
			sets = append(sets, filepath.Dir(p))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(sets)
	for _, want := range []string{CalicoVendored, "prometheus-community-helm-charts"} {
		if _, err := os.Stat(filepath.Join(base, want, "SOURCE")); err != nil {
			t.Errorf("vendored data set %s: %v", want, err)
		}
	}
	for _, dir := range sets {
		for _, p := range checkSource(dir) {
			t.Error(p)
		}
	}
	// Every top-level directory is a data set or holds data sets.
	entries, err := os.ReadDir(base)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if !e.IsDir() || e.Name() == "corpus" {
			continue
		}
		found := false
		for _, s := range sets {
			if s == filepath.Join(base, e.Name()) || strings.HasPrefix(s, filepath.Join(base, e.Name())+string(filepath.Separator)) {
				found = true
			}
		}
		if !found {
			t.Errorf("testdata/third_party/%s has no SOURCE file", e.Name())
		}
	}
}

// TestCheckSourceCatchesTampering: the provenance check fails on an edited
// file, a missing licence and an unlisted file.
func TestCheckSourceCatchesTampering(t *testing.T) {
	dir := t.TempDir()
	data := []byte("kind: ConfigMap\n")
	sum := sha256.Sum256(data)
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write(data)
	zw.Close()
	write := func(name string, b []byte) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("SOURCE", []byte(fmt.Sprintf("repository: https://example.invalid/r\ncommit: %s\nlicence: Apache-2.0\nlicenceFile: LICENSE\nfiles:\n- path: a.yaml\n  file: a.yaml.gz\n  sha256: %x\n", strings.Repeat("a", 40), sum)))
	write("a.yaml.gz", gz.Bytes())
	if p := checkSource(dir); len(p) != 1 || !strings.Contains(p[0], "licence file LICENSE") {
		t.Fatalf("missing licence: %v", p)
	}
	write("LICENSE", []byte("licence text\n"))
	if p := checkSource(dir); len(p) != 0 {
		t.Fatalf("clean set: %v", p)
	}
	write("extra.yaml", data)
	if p := checkSource(dir); len(p) != 1 || !strings.Contains(p[0], "extra.yaml is not listed") {
		t.Fatalf("unlisted file: %v", p)
	}
	os.Remove(filepath.Join(dir, "extra.yaml"))
	zw = gzip.NewWriter(&gz)
	gz.Reset()
	zw.Write([]byte("kind: Secret\n"))
	zw.Close()
	write("a.yaml.gz", gz.Bytes())
	if p := checkSource(dir); len(p) != 1 || !strings.Contains(p[0], "sha256") {
		t.Fatalf("edited file: %v", p)
	}
}

// TestThirdPartyDirDecompresses: gzipped files come back under their
// upstream name with the recorded content; plain sets are read in place.
func TestThirdPartyDirDecompresses(t *testing.T) {
	p, err := CalicoCRDs(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	got, err := plainSHA256(p)
	if err != nil {
		t.Fatal(err)
	}
	if got != "e1db47669488b300ed9d98d4b8c519936fe86fdc2d0208bab5d85ea26ac5c047" {
		t.Errorf("decompressed CRDs sha256 %s", got)
	}
	charts, err := ThirdPartyDir(t.Context(), "prometheus-community-helm-charts")
	if err != nil {
		t.Fatal(err)
	}
	root, _ := RepoRoot()
	if charts != filepath.Join(root, "testdata", "third_party", "prometheus-community-helm-charts") {
		t.Errorf("plain data set not read in place: %s", charts)
	}
	if _, err := ThirdParty(t.Context(), CalicoVendored, "no-such.yaml"); err == nil {
		t.Error("missing vendored file: no error")
	}
}
