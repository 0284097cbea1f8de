package release

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"
)

var testTime = time.Date(2026, 11, 30, 10, 11, 12, 0, time.UTC)

func testMembers() []member {
	return []member{
		{Name: "README.md", Mode: 0o644, Data: []byte("# readme\n")},
		{Name: "hybridctl", Mode: 0o755, Data: bytes.Repeat([]byte{0x7f, 'E', 'L', 'F'}, 1000)},
		{Name: "LICENSE", Mode: 0o644, Data: []byte("licence\n")},
	}
}

// readTarGz returns the headers and contents of a tar.gz, in order.
func readTarGz(t *testing.T, data []byte) ([]*tar.Header, map[string][]byte) {
	t.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	if zr.Name != "" || !zr.ModTime.IsZero() {
		t.Errorf("gzip header carries name %q, time %v: want neither", zr.Name, zr.ModTime)
	}
	tr := tar.NewReader(zr)
	var hs []*tar.Header
	files := map[string][]byte{}
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		hs = append(hs, h)
		files[h.Name] = b
	}
	return hs, files
}

func TestTarGz(t *testing.T) {
	a, err := tarGz(testMembers(), testTime)
	if err != nil {
		t.Fatal(err)
	}
	// The same files in another order, a time with nanoseconds: the same bytes.
	m := testMembers()
	m[0], m[2] = m[2], m[0]
	b, err := tarGz(m, testTime.Add(300*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a, b) {
		t.Error("the same members in another order gave other bytes")
	}
	hs, files := readTarGz(t, a)
	var names []string
	for _, h := range hs {
		names = append(names, h.Name)
		if h.Uid != 0 || h.Gid != 0 || h.Uname != "" || h.Gname != "" {
			t.Errorf("%s: owner %d:%d (%q:%q), want 0:0 without names", h.Name, h.Uid, h.Gid, h.Uname, h.Gname)
		}
		if !h.ModTime.Equal(testTime) {
			t.Errorf("%s: time %v, want %v", h.Name, h.ModTime, testTime)
		}
		if h.Typeflag != tar.TypeReg {
			t.Errorf("%s: type %c, want a regular file", h.Name, h.Typeflag)
		}
		want := int64(0o644)
		if h.Name == "hybridctl" {
			want = 0o755
		}
		if h.Mode != want {
			t.Errorf("%s: mode %o, want %o", h.Name, h.Mode, want)
		}
	}
	if got := strings.Join(names, " "); got != "LICENSE README.md hybridctl" {
		t.Errorf("entries %q, want sorted LICENSE README.md hybridctl", got)
	}
	if !bytes.Equal(files["hybridctl"], testMembers()[1].Data) {
		t.Error("the binary's content changed in the archive")
	}
	// Another time, other bytes: the time is in the archive.
	c, err := tarGz(testMembers(), testTime.Add(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Equal(a, c) {
		t.Error("another time gave the same bytes")
	}
}

func TestZip(t *testing.T) {
	a, err := zipOf(testMembers(), testTime)
	if err != nil {
		t.Fatal(err)
	}
	m := testMembers()
	m[0], m[1] = m[1], m[0]
	b, err := zipOf(m, testTime)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a, b) {
		t.Error("the same members in another order gave other bytes")
	}
	zr, err := zip.NewReader(bytes.NewReader(a), int64(len(a)))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range zr.File {
		names = append(names, f.Name)
		if !f.Modified.Equal(testTime) {
			t.Errorf("%s: time %v, want %v", f.Name, f.Modified, testTime)
		}
		want := os.FileMode(0o644)
		if f.Name == "hybridctl" {
			want = 0o755
		}
		if f.Mode() != want {
			t.Errorf("%s: mode %v, want %v", f.Name, f.Mode(), want)
		}
		if f.Method != zip.Deflate {
			t.Errorf("%s: method %d, want deflate", f.Name, f.Method)
		}
	}
	if got := strings.Join(names, " "); got != "LICENSE README.md hybridctl" {
		t.Errorf("entries %q, want sorted", got)
	}
}

func TestArchiveMemberNames(t *testing.T) {
	for _, name := range []string{"", "a/b", `a\b`, ".", ".."} {
		if _, err := tarGz([]member{{Name: name, Mode: 0o644}}, testTime); err == nil {
			t.Errorf("tar member %q accepted", name)
		}
		if _, err := zipOf([]member{{Name: name, Mode: 0o644}}, testTime); err == nil {
			t.Errorf("zip member %q accepted", name)
		}
	}
	if _, err := tarGz([]member{{Name: "a", Mode: 0o644}, {Name: "a", Mode: 0o644}}, testTime); err == nil || !strings.Contains(err.Error(), `"a" twice`) {
		t.Errorf("a duplicate member: %v", err)
	}
}

func TestParsePlatforms(t *testing.T) {
	all, err := ParsePlatforms("")
	if err != nil || len(all) != 5 {
		t.Fatalf("every platform: %v, %v", all, err)
	}
	got, err := ParsePlatforms("windows/amd64, linux/amd64,linux/amd64")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].String() != "linux/amd64" || got[1].String() != "windows/amd64" {
		t.Errorf("got %v, want linux/amd64 then windows/amd64 (the release order, once each)", got)
	}
	for _, bad := range []string{"linux", "linux/386", "freebsd/amd64", "linux/amd64,", "Linux/amd64"} {
		if _, err := ParsePlatforms(bad); err == nil || !strings.Contains(err.Error(), "not a release platform") {
			t.Errorf("%q: %v, want a refusal", bad, err)
		}
	}
	if p := (Platform{"windows", "amd64"}); p.Exe() != "hybridctl.exe" || p.ArchiveExt() != ".zip" {
		t.Errorf("windows: %s %s", p.Exe(), p.ArchiveExt())
	}
	if p := (Platform{"darwin", "arm64"}); p.Exe() != "hybridctl" || p.ArchiveExt() != ".tar.gz" {
		t.Errorf("darwin: %s %s", p.Exe(), p.ArchiveExt())
	}
}

func TestSourceCheck(t *testing.T) {
	good := Source{Version: "v1.2.3", Commit: strings.Repeat("a", 40), Time: testTime}
	if err := good.Check(); err != nil {
		t.Fatalf("a good source: %v", err)
	}
	for _, c := range []struct {
		name string
		mod  func(*Source)
		want string
	}{
		{"no v", func(s *Source) { s.Version = "1.2.3" }, "version"},
		{"not semver", func(s *Source) { s.Version = "v1.2" }, "version"},
		{"short commit", func(s *Source) { s.Commit = strings.Repeat("a", 39) }, "commit"},
		{"upper-case commit", func(s *Source) { s.Commit = strings.Repeat("A", 40) }, "commit"},
		{"no time", func(s *Source) { s.Time = time.Time{} }, "SOURCE_DATE_EPOCH"},
	} {
		s := good
		c.mod(&s)
		if err := s.Check(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error about %s", c.name, err, c.want)
		}
	}
	if err := (Source{Version: "v0.0.0-20261130101112-0123456789ab", Commit: strings.Repeat("0", 64), Time: testTime}).Check(); err != nil {
		t.Errorf("a pseudo-version and a SHA-256 commit: %v", err)
	}
	if got := PseudoVersion("0123456789abcdef0123456789abcdef01234567", testTime.In(time.FixedZone("x", 3600))); got != "v0.0.0-20261130101112-0123456789ab" {
		t.Errorf("PseudoVersion: %s", got)
	}
	for _, bad := range []string{"", "0", "-5", "12x", "1.5"} {
		if _, err := ParseEpoch(bad); err == nil {
			t.Errorf("SOURCE_DATE_EPOCH %q accepted", bad)
		}
	}
	if got, err := ParseEpoch(" 1764497472\n"); err != nil || got.Unix() != 1764497472 || got.Location() != time.UTC {
		t.Errorf("ParseEpoch: %v %v", got, err)
	}
}

func TestHighestTag(t *testing.T) {
	for _, c := range []struct {
		tags []string
		want string
	}{
		{nil, ""},
		{[]string{"vnext", "release-1"}, ""},
		{[]string{"v1.2.3"}, "v1.2.3"},
		{[]string{"v1.2.3", "v1.10.0", "v1.9.9"}, "v1.10.0"},
		{[]string{"v2.0.0-rc.1", "v1.9.0"}, "v2.0.0-rc.1"},
		{[]string{"v2.0.0-rc.1", "v2.0.0"}, "v2.0.0"},
		{[]string{"1.5.0", "v1.4.0"}, "v1.4.0"},
	} {
		if got := highestTag(c.tags); got != c.want {
			t.Errorf("%v: %q, want %q", c.tags, got, c.want)
		}
	}
}

func git(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-C", dir}, args...)...)
	cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com",
		"GIT_AUTHOR_DATE=2026-11-30T10:11:12Z", "GIT_COMMITTER_DATE=2026-11-30T10:11:12Z", "GIT_CONFIG_NOSYSTEM=1", "HOME="+dir)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

func TestDescribe(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Fatalf("git is needed: %v", err)
	}
	ctx := context.Background()
	dir := t.TempDir()
	git(t, dir, "init", "-q", "-b", "main")
	if err := os.WriteFile(filepath.Join(dir, "a"), []byte("a\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	git(t, dir, "add", "a")
	git(t, dir, "commit", "-q", "-m", "a")
	head := git(t, dir, "rev-parse", "HEAD")

	s, err := Describe(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	if s.Commit != head || !s.Time.Equal(testTime) || s.Version != "v0.0.0-20261130101112-"+head[:12] {
		t.Errorf("untagged: %+v", s)
	}
	git(t, dir, "tag", "v1.2.3")
	git(t, dir, "tag", "v1.10.0-rc.1")
	git(t, dir, "tag", "not-a-version")
	if s, err = Describe(ctx, dir); err != nil || s.Version != "v1.10.0-rc.1" {
		t.Errorf("tagged: %+v, %v; want the highest v-tag", s, err)
	}
	// An untracked file does not make the tree dirty; a changed tracked file does.
	if err := os.WriteFile(filepath.Join(dir, "untracked"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Describe(ctx, dir); err != nil {
		t.Errorf("an untracked file: %v", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "a"), []byte("changed\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Describe(ctx, dir); err == nil || !strings.Contains(err.Error(), "uncommitted changes") {
		t.Errorf("a changed tracked file: %v, want a refusal", err)
	}
	if _, err := Describe(ctx, t.TempDir()); err == nil || !strings.Contains(err.Error(), "git rev-parse") {
		t.Errorf("not a checkout: %v", err)
	}
}

func TestKrewManifest(t *testing.T) {
	sum := strings.Repeat("ab", 32)
	archives := []krewArchive{
		{Platform{"linux", "amd64"}, "hybridctl_v1.2.3_linux_amd64.tar.gz", sum},
		{Platform{"windows", "amd64"}, "hybridctl_v1.2.3_windows_amd64.zip", sum},
	}
	data, err := krewManifest("v1.2.3", Homepage, "https://example.com/dl", archives)
	if err != nil {
		t.Fatal(err)
	}
	var p krewPlugin
	if err := yaml.UnmarshalStrict(data, &p); err != nil {
		t.Fatalf("%v\n%s", err, data)
	}
	if p.APIVersion != "krew.googlecontainertools.github.com/v1alpha2" || p.Kind != "Plugin" || p.Metadata.Name != "hybridctl" || p.Spec.Version != "v1.2.3" {
		t.Errorf("header: %+v", p)
	}
	if strings.ContainsAny(p.Spec.ShortDescription, "\r\n") || p.Spec.ShortDescription == "" {
		t.Errorf("short description %q: krew wants one line", p.Spec.ShortDescription)
	}
	if len(p.Spec.Platforms) != 2 {
		t.Fatalf("platforms: %+v", p.Spec.Platforms)
	}
	w := p.Spec.Platforms[1]
	if w.URI != "https://example.com/dl/hybridctl_v1.2.3_windows_amd64.zip" || w.Sha256 != sum || w.Bin != "hybridctl.exe" ||
		w.Selector.MatchLabels["os"] != "windows" || w.Selector.MatchLabels["arch"] != "amd64" || len(w.Selector.MatchLabels) != 2 {
		t.Errorf("windows platform: %+v", w)
	}
	for _, bad := range []string{"", "example.com/dl", "ftp://example.com/", "https://"} {
		if _, err := krewManifest("v1.2.3", Homepage, bad, archives); err == nil {
			t.Errorf("download URL %q accepted", bad)
		}
	}
	if _, err := krewManifest("v1.2.3", Homepage, "https://example.com/", nil); err == nil {
		t.Error("a manifest without archives")
	}
}

func TestChecksumsFormat(t *testing.T) {
	dir := t.TempDir()
	for name, data := range map[string]string{"b.tar.gz": "bb", "a.zip": "a", "c d.json": "c"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	list, err := checksums(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 3 || list[0].Name != "a.zip" || list[2].Name != "c d.json" || list[1].Size != 2 {
		t.Fatalf("list: %+v", list)
	}
	if err := os.WriteFile(filepath.Join(dir, ChecksumsName), formatChecksums(list), 0o644); err != nil {
		t.Fatal(err)
	}
	// sha256sum -c is how a user checks them.
	cmd := exec.Command("sha256sum", "-c", "--strict", ChecksumsName)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("sha256sum -c: %v\n%s", err, out)
	}
	if err := os.WriteFile(filepath.Join(dir, "a.zip"), []byte("A"), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd = exec.Command("sha256sum", "-c", "--strict", ChecksumsName)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err == nil {
		t.Fatalf("sha256sum -c passed a changed file:\n%s", out)
	}
	if err := os.Symlink("a.zip", filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	if _, err := checksums(dir); err == nil {
		t.Error("a symbolic link in the release directory was listed")
	}
}

func TestSBOMSerial(t *testing.T) {
	a, b := sbomSerial([]byte("one")), sbomSerial([]byte("two"))
	if a == b || a != sbomSerial([]byte("one")) || len(a) != 36 || a[14] != '5' {
		t.Errorf("serials %s %s: want stable, distinct, name-based (version 5) UUIDs", a, b)
	}
}

func TestSignerFromEnv(t *testing.T) {
	dir := t.TempDir()
	key, cert, pass, open := filepath.Join(dir, "key.pem"), filepath.Join(dir, "cert.pem"), filepath.Join(dir, "pass"), filepath.Join(dir, "open.pem")
	for p, mode := range map[string]os.FileMode{key: 0o600, cert: 0o644, pass: 0o600, open: 0o644} {
		if err := os.WriteFile(p, []byte("x"), mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
	}
	env := func(kv ...string) func(string) string {
		m := map[string]string{}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return func(k string) string { return m[k] }
	}
	if s, err := SignerFromEnv(env()); s != nil || err != nil {
		t.Errorf("nothing set: %+v, %v; want no signer", s, err)
	}
	s, err := SignerFromEnv(env(EnvSignKey, key, EnvSignCert, cert, EnvSignPasswordFile, pass, EnvSignTimestampURL, "http://127.0.0.1:1/tsa"))
	if err != nil {
		t.Fatal(err)
	}
	s.Description, s.URL = "hybridctl v1", Homepage
	args := strings.Join(s.args("in.exe", "out.exe"), " ")
	want := "sign -certs " + cert + " -key " + key + " -readpass " + pass + " -h sha256 -n hybridctl v1 -i " + Homepage + " -ts http://127.0.0.1:1/tsa -in in.exe -out out.exe"
	if args != want || s.Tool != "osslsigncode" {
		t.Errorf("args:\n%s\nwant\n%s (tool %s)", args, want, s.Tool)
	}
	for _, c := range []struct {
		name string
		env  func(string) string
		want string
	}{
		{"key only", env(EnvSignKey, key), "both"},
		{"cert only", env(EnvSignCert, cert), "both"},
		{"missing key file", env(EnvSignKey, filepath.Join(dir, "nope"), EnvSignCert, cert), "no such file"},
		{"key readable by others", env(EnvSignKey, open, EnvSignCert, cert), "readable by others"},
		{"passphrase readable by others", env(EnvSignKey, key, EnvSignCert, cert, EnvSignPasswordFile, open), "readable by others"},
		{"key is a directory", env(EnvSignKey, dir, EnvSignCert, cert), "not a regular file"},
		{"timestamp URL not http", env(EnvSignKey, key, EnvSignCert, cert, EnvSignTimestampURL, "tsa.example.com"), "RFC 3161"},
		{"timestamp without key", env(EnvSignTimestampURL, "http://127.0.0.1:1/"), "nothing to sign with"},
	} {
		if _, err := SignerFromEnv(c.env); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error saying %q", c.name, err, c.want)
		}
	}
}
