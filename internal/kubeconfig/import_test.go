package kubeconfig

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"github.com/hybridctl/hybridctl/internal/testutil/unpriv"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	api "k8s.io/client-go/tools/clientcmd/api"

	kt "github.com/hybridctl/hybridctl/internal/kubeconfig/kubeconfigtest"
)

func newStore(t testing.TB) *Store {
	t.Helper()
	return &Store{Path: filepath.Join(t.TempDir(), "home", ".kube", "config"), LockTimeout: 20 * time.Second}
}

func importFile(t testing.TB, st *Store, src, name string, mod func(*ImportOptions)) (*ImportResult, error) {
	t.Helper()
	o := ImportOptions{Source: src, Name: name}
	if mod != nil {
		mod(&o)
	}
	return Import(context.Background(), st, o)
}

func mustRead(t testing.TB, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// contextConfig resolves one context of a kubeconfig file exactly as kubectl
// does (clientcmd's loading rules, with $KUBECONFIG-style precedence).
func contextConfig(t testing.TB, files []string, contextName string) *rest.Config {
	t.Helper()
	rules := &clientcmd.ClientConfigLoadingRules{Precedence: files}
	rc, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{CurrentContext: contextName}).ClientConfig()
	if err != nil {
		t.Fatalf("context %q: %v", contextName, err)
	}
	return rc
}

func serverVersion(t testing.TB, rc *rest.Config) string {
	t.Helper()
	rc = rest.CopyConfig(rc)
	rc.Timeout = 10 * time.Second
	v, err := Verify(context.Background(), &api.Cluster{Server: rc.Host, CertificateAuthorityData: rc.CAData},
		&api.AuthInfo{ClientCertificateData: rc.CertData, ClientKeyData: rc.KeyData}, 10*time.Second, "test")
	if err != nil {
		t.Fatalf("reaching %s: %v", rc.Host, err)
	}
	return v.ServerVersion
}

// TestGuideTrap is the guide's scenario: two kubeadm clusters whose admin.conf
// files use the same names and differ in server and CA.
func TestGuideTrap(t *testing.T) {
	dir := t.TempDir()
	prod, lab := kt.StartFakeCluster(t, "prod"), kt.StartFakeCluster(t, "lab")
	prodConf := kt.WriteFile(t, filepath.Join(dir, "prod-admin.conf"), prod.AdminConf(), 0o600)
	labConf := kt.WriteFile(t, filepath.Join(dir, "lab-admin.conf"), lab.AdminConf(), 0o600)

	// The trap, as client-go does it: KUBECONFIG=prod:lab gives one context,
	// and it points at prod. The lab cluster cannot be reached at all.
	merged := contextConfig(t, []string{prodConf, labConf}, "kubernetes-admin@kubernetes")
	if merged.Host != prod.URL() {
		t.Fatalf("expected the KUBECONFIG merge to resolve to the first file's server %s, got %s", prod.URL(), merged.Host)
	}

	// The workstation's ~/.kube/config is prod's admin.conf as it is.
	st := newStore(t)
	kt.WriteFile(t, st.Path, prod.AdminConf(), 0o600)
	res, err := importFile(t, st, labConf, "lab", func(o *ImportOptions) { o.Verify = true })
	if err != nil {
		t.Fatal(err)
	}
	if res.Verified == nil || res.Verified.ServerVersion != lab.Version() || res.Verified.Username != "kubernetes-admin" {
		t.Fatalf("verify: got %+v", res.Verified)
	}
	for _, e := range res.Entries {
		if e.Action != Added {
			t.Errorf("%s %s: action %s, want added", e.Kind, e.Name, e.Action)
		}
	}

	for _, tc := range []struct {
		context string
		want    *kt.FakeCluster
	}{
		{"kubernetes-admin@kubernetes", prod},
		{"lab", lab},
	} {
		rc := contextConfig(t, []string{st.Path}, tc.context)
		if rc.Host != tc.want.URL() {
			t.Errorf("context %s: server %s, want %s", tc.context, rc.Host, tc.want.URL())
		}
		if !bytes.Equal(rc.CAData, tc.want.CA.CertPEM) {
			t.Errorf("context %s: CA is not %s's CA", tc.context, tc.want.Name)
		}
		if !bytes.Equal(rc.CertData, tc.want.Admin.Cert) || !bytes.Equal(rc.KeyData, tc.want.Admin.Key) {
			t.Errorf("context %s: client certificate/key are not %s's", tc.context, tc.want.Name)
		}
		if got := serverVersion(t, rc); got != tc.want.Version() {
			t.Errorf("context %s reached %s, want %s", tc.context, got, tc.want.Version())
		}
	}

	cfg, err := clientcmd.LoadFromFile(st.Path)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{"kubernetes-admin@kubernetes": false, "lab": true}
	if len(cfg.Contexts) != len(want) {
		t.Fatalf("contexts: %v", sortedKeys(cfg.Contexts))
	}
	for n, imported := range want {
		if _, ok := ContextImported(cfg, n); ok != imported {
			t.Errorf("context %s imported=%v, want %v", n, ok, imported)
		}
	}
	if _, ok := MarkerOf(cfg.Clusters["lab"].Extensions); !ok {
		t.Error("cluster lab carries no hybridctl.dev/imported marker")
	}
	if cfg.CurrentContext != "kubernetes-admin@kubernetes" {
		t.Errorf("current context changed to %q without --set-current", cfg.CurrentContext)
	}

	// Importing prod too, under its own name, reuses nothing by name but
	// notes that the same cluster and user exist as kubernetes/kubernetes-admin.
	res, err = importFile(t, st, prodConf, "prod", func(o *ImportOptions) { o.SetCurrent = true })
	if err != nil {
		t.Fatal(err)
	}
	if got := res.Entries[0].SameAs; len(got) != 1 || got[0] != "kubernetes" {
		t.Errorf("cluster prod: sameAs %v, want [kubernetes]", got)
	}
	if res.CurrentContext != "prod" {
		t.Errorf("--set-current: current context %q", res.CurrentContext)
	}
	if got := serverVersion(t, contextConfig(t, []string{st.Path}, "prod")); got != prod.Version() {
		t.Errorf("context prod reached %s", got)
	}
}

func TestImportIdempotentConflictOverwrite(t *testing.T) {
	dir := t.TempDir()
	a := kt.StartFakeCluster(t, "a")
	b := kt.StartFakeCluster(t, "b")
	aConf := kt.WriteFile(t, filepath.Join(dir, "a.conf"), a.AdminConf(), 0o600)
	bConf := kt.WriteFile(t, filepath.Join(dir, "b.conf"), b.AdminConf(), 0o600)
	st := newStore(t)

	res, err := importFile(t, st, aConf, "lab", nil)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Created || !res.Written || res.Backup != "" {
		t.Fatalf("first import: %+v", res.UpdateResult)
	}
	before := mustRead(t, st.Path)

	// Same content again: nothing to do, nothing written, no backup.
	res, err = importFile(t, st, aConf, "lab", nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Written || res.Backup != "" {
		t.Fatalf("second import wrote: %+v", res.UpdateResult)
	}
	for _, e := range res.Entries {
		if e.Action != Unchanged {
			t.Errorf("%s: %s, want unchanged", e.Name, e.Action)
		}
	}

	// Same names, other cluster: refused, all three conflicts named, file untouched.
	_, err = importFile(t, st, bConf, "lab", nil)
	if KindOf(err) != KindConflict {
		t.Fatalf("want a conflict, got %v", err)
	}
	msg := err.Error()
	for _, want := range []string{`cluster "lab"`, `user "lab-admin"`, a.URL(), b.URL(), "--overwrite", "Nothing was written"} {
		if !strings.Contains(msg, want) {
			t.Errorf("conflict message lacks %q:\n%s", want, msg)
		}
	}
	assertNoSecrets(t, msg, a.Admin.Key, b.Admin.Key)
	if !bytes.Equal(mustRead(t, st.Path), before) {
		t.Fatal("a refused import changed the file")
	}

	// --overwrite replaces, and keeps the old file as a backup.
	res, err = importFile(t, st, bConf, "lab", func(o *ImportOptions) { o.Overwrite = true })
	if err != nil {
		t.Fatal(err)
	}
	if res.Entries[0].Action != Replaced || res.Entries[1].Action != Replaced || res.Entries[2].Action != Unchanged {
		t.Errorf("overwrite actions: %+v", res.Entries)
	}
	if res.Backup == "" || !bytes.Equal(mustRead(t, res.Backup), before) {
		t.Fatalf("backup %q does not hold the previous file", res.Backup)
	}
	if got := serverVersion(t, contextConfig(t, []string{st.Path}, "lab")); got != b.Version() {
		t.Errorf("after overwrite lab reaches %s", got)
	}
	// The context is unchanged, but its marker now names the new source.
	cfg, err := clientcmd.LoadFromFile(st.Path)
	if err != nil {
		t.Fatal(err)
	}
	m, ok := ContextImported(cfg, "lab")
	src, _ := ParseSource(bConf, mustRead(t, bConf), SourceOptions{})
	if !ok || m.Source != bConf || m.SourceSHA256 != src.SHA256 {
		t.Errorf("context marker after overwrite: %+v", m)
	}
}

// TestImportInlinesFiles: a source that references its certificates by
// relative paths (like a kubeconfig next to a pki/ directory) is imported
// with the content embedded, so the result works without the source.
func TestImportInlinesFiles(t *testing.T) {
	c := kt.StartFakeCluster(t, "files")
	src := t.TempDir()
	kt.WriteFile(t, filepath.Join(src, "pki", "ca.crt"), c.CA.CertPEM, 0o600)
	kt.WriteFile(t, filepath.Join(src, "pki", "admin.crt"), c.Admin.Cert, 0o600)
	kt.WriteFile(t, filepath.Join(src, "pki", "admin.key"), c.Admin.Key, 0o600)
	conf := kt.WriteFile(t, filepath.Join(src, "admin.conf"), []byte(`apiVersion: v1
kind: Config
clusters:
- name: kubernetes
  cluster: {server: `+c.URL()+`, certificate-authority: pki/ca.crt}
users:
- name: kubernetes-admin
  user: {client-certificate: pki/admin.crt, client-key: pki/admin.key}
contexts:
- name: kubernetes-admin@kubernetes
  context: {cluster: kubernetes, user: kubernetes-admin, namespace: kube-system}
current-context: kubernetes-admin@kubernetes
`), 0o600)
	t.Chdir(t.TempDir()) // relative paths must resolve against the source, not the working directory
	st := newStore(t)
	if _, err := importFile(t, st, conf, "files", nil); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(src); err != nil {
		t.Fatal(err)
	}
	cfg, err := clientcmd.LoadFromFile(st.Path)
	if err != nil {
		t.Fatal(err)
	}
	cl, u := cfg.Clusters["files"], cfg.AuthInfos["files-admin"]
	if cl.CertificateAuthority != "" || u.ClientCertificate != "" || u.ClientKey != "" {
		t.Errorf("file references left in the import: %q %q %q", cl.CertificateAuthority, u.ClientCertificate, u.ClientKey)
	}
	if cfg.Contexts["files"].Namespace != "kube-system" {
		t.Errorf("namespace not kept: %q", cfg.Contexts["files"].Namespace)
	}
	if got := serverVersion(t, contextConfig(t, []string{st.Path}, "files")); got != c.Version() {
		t.Errorf("reached %s", got)
	}
}

func TestVerifyFailsForForeignCA(t *testing.T) {
	c := kt.StartFakeCluster(t, "real")
	other := kt.NewCA(t, "kubernetes") // same CN as the real CA, different key
	conf := kt.WriteFile(t, filepath.Join(t.TempDir(), "admin.conf"), kt.AdminConf(c.URL(), other.CertPEM, c.Admin.Cert, c.Admin.Key), 0o600)
	st := newStore(t)
	kt.WriteFile(t, st.Path, kt.AdminConf("https://127.0.0.1:1", c.CA.CertPEM, c.Admin.Cert, c.Admin.Key), 0o644)
	before := mustRead(t, st.Path)

	_, err := importFile(t, st, conf, "lab", func(o *ImportOptions) { o.Verify = true; o.VerifyTimeout = 5 * time.Second })
	if KindOf(err) != KindVerify {
		t.Fatalf("want a verify error, got %v", err)
	}
	if !strings.Contains(err.Error(), "not signed by the imported CA") {
		t.Errorf("message does not explain the CA mismatch: %v", err)
	}
	if !bytes.Equal(mustRead(t, st.Path), before) {
		t.Fatal("a failed --verify changed the target")
	}
	if bs, _ := st.ListBackups(); len(bs) != 0 {
		t.Fatalf("a failed --verify left backups: %v", bs)
	}

	// Without --verify the same import is written (the CA is only checked
	// when asked), which shows the failure above came from verification.
	if _, err := importFile(t, st, conf, "lab", nil); err != nil {
		t.Fatal(err)
	}
}

func TestVerifyRejectsAnonymous(t *testing.T) {
	c := kt.StartFakeCluster(t, "anon")
	// A token the fake server does not know: it answers as system:anonymous.
	conf := kt.WriteFile(t, filepath.Join(t.TempDir(), "token.conf"), []byte(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: `+c.URL()+`, certificate-authority-data: `+base64.StdEncoding.EncodeToString(c.CA.CertPEM)+`}}]
users: [{name: u, user: {token: not-a-real-token}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
current-context: x
`), 0o600)
	st := newStore(t)
	_, err := importFile(t, st, conf, "anon", func(o *ImportOptions) { o.Verify = true })
	if KindOf(err) != KindVerify || !strings.Contains(err.Error(), "system:anonymous") {
		t.Fatalf("want a verify error about anonymous, got %v", err)
	}
	assertNoSecrets(t, err.Error(), []byte("not-a-real-token"))
	if _, statErr := os.Stat(st.Path); !errors.Is(statErr, os.ErrNotExist) {
		t.Fatal("a failed --verify created the target")
	}
}

func TestModesAndBackups(t *testing.T) {
	dir := t.TempDir()
	st := newStore(t)
	st.Backups = 3
	tick := time.Date(2026, 11, 29, 22, 0, 0, 0, time.UTC)
	st.Now = func() time.Time { tick = tick.Add(time.Second); return tick }
	// An existing target that is world-readable, as `kubectl config view --flatten > file` leaves it.
	seed := kt.StartFakeCluster(t, "seed")
	kt.WriteFile(t, st.Path, seed.AdminConf(), 0o644)
	if err := os.Chmod(st.Path, 0o644); err != nil {
		t.Fatal(err)
	}
	var names []string
	for i := range 6 {
		c := kt.StartFakeCluster(t, "m")
		name := "m" + string(rune('a'+i))
		names = append(names, name)
		res, err := importFile(t, st, kt.WriteFile(t, filepath.Join(dir, name), c.AdminConf(), 0o600), name, nil)
		if err != nil {
			t.Fatal(err)
		}
		if i == 0 && res.TightenedFrom != "0644" {
			t.Errorf("first write: tightenedFrom %q, want 0644", res.TightenedFrom)
		}
		if i > 0 && res.TightenedFrom != "" {
			t.Errorf("write %d: tightenedFrom %q", i, res.TightenedFrom)
		}
	}
	assertMode(t, st.Path, 0o600)
	// A no-op import writes nothing, so it cannot fix a loose mode: it says so.
	if err := os.Chmod(st.Path, 0o640); err != nil {
		t.Fatal(err)
	}
	res, err := importFile(t, st, filepath.Join(dir, names[5]), names[5], nil)
	if err != nil || res.Written || res.LooseMode != "0640" {
		t.Fatalf("no-op import on a 0640 file: %+v %v", res, err)
	}
	if err := os.Chmod(st.Path, 0o600); err != nil {
		t.Fatal(err)
	}
	backups, err := st.ListBackups()
	if err != nil {
		t.Fatal(err)
	}
	if len(backups) != 3 {
		t.Fatalf("kept %d backups, want 3: %v", len(backups), backups)
	}
	for _, b := range backups {
		assertMode(t, b, 0o600)
	}
	// The newest backup is the file before the last import: it has the
	// first five imports and not the sixth.
	last, err := clientcmd.Load(mustRead(t, backups[len(backups)-1]))
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := last.Contexts[names[4]]; !ok {
		t.Error("newest backup lacks the fifth import")
	}
	if _, ok := last.Contexts[names[5]]; ok {
		t.Error("newest backup already has the sixth import")
	}
	// No temporary files are left behind.
	entries, _ := os.ReadDir(filepath.Dir(st.Path))
	for _, e := range entries {
		if strings.Contains(e.Name(), ".tmp-") {
			t.Errorf("temporary file left: %s", e.Name())
		}
	}
}

func TestNewTargetDirectoryIsPrivate(t *testing.T) {
	c := kt.StartFakeCluster(t, "new")
	st := newStore(t) // .../home/.kube/config, neither directory exists
	if _, err := importFile(t, st, kt.WriteFile(t, filepath.Join(t.TempDir(), "a.conf"), c.AdminConf(), 0o600), "new", nil); err != nil {
		t.Fatal(err)
	}
	assertMode(t, st.Path, 0o600)
	assertMode(t, filepath.Dir(st.Path), 0o700)
}

func TestFailedWriteLeavesOldFile(t *testing.T) {
	dir := t.TempDir()
	a, b := kt.StartFakeCluster(t, "a"), kt.StartFakeCluster(t, "b")
	st := newStore(t)
	if _, err := importFile(t, st, kt.WriteFile(t, filepath.Join(dir, "a"), a.AdminConf(), 0o600), "a", nil); err != nil {
		t.Fatal(err)
	}
	before := mustRead(t, st.Path)
	injected := errors.New("disk full (injected)")
	var tmpSeen string
	st.beforeRename = func(tmp string) error {
		tmpSeen = tmp
		// The temporary file is complete and private before the rename.
		assertMode(t, tmp, 0o600)
		if _, err := clientcmd.LoadFromFile(tmp); err != nil {
			t.Errorf("temporary file does not parse: %v", err)
		}
		return injected
	}
	_, err := importFile(t, st, kt.WriteFile(t, filepath.Join(dir, "b"), b.AdminConf(), 0o600), "b", nil)
	if !errors.Is(err, injected) || KindOf(err) != KindIO {
		t.Fatalf("want the injected I/O error, got %v", err)
	}
	if !bytes.Equal(mustRead(t, st.Path), before) {
		t.Fatal("the target changed although the write failed before the rename")
	}
	if _, err := os.Stat(tmpSeen); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("temporary file %s left behind", tmpSeen)
	}
	// The lock was released: the next import works.
	st.beforeRename = nil
	if _, err := importFile(t, st, filepath.Join(dir, "b"), "b", nil); err != nil {
		t.Fatal(err)
	}
}

// TestReadOnlyDirectoryLeavesOldFile: root ignores directory permissions, so
// as root the test re-runs itself as nobody (internal/testutil/unpriv).
func TestReadOnlyDirectoryLeavesOldFile(t *testing.T) {
	if !unpriv.Run(t) {
		return
	}
	dir := t.TempDir()
	a, b := kt.StartFakeCluster(t, "a"), kt.StartFakeCluster(t, "b")
	st := newStore(t)
	if _, err := importFile(t, st, kt.WriteFile(t, filepath.Join(dir, "a"), a.AdminConf(), 0o600), "a", nil); err != nil {
		t.Fatal(err)
	}
	before := mustRead(t, st.Path)
	kdir := filepath.Dir(st.Path)
	if err := os.Chmod(kdir, 0o500); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.Chmod(kdir, 0o700) })
	_, err := importFile(t, st, kt.WriteFile(t, filepath.Join(dir, "b"), b.AdminConf(), 0o600), "b", nil)
	if KindOf(err) != KindIO {
		t.Fatalf("want an I/O error, got %v", err)
	}
	if !bytes.Equal(mustRead(t, st.Path), before) {
		t.Fatal("the target changed")
	}
}

func TestKubectlLockIsRespected(t *testing.T) {
	c := kt.StartFakeCluster(t, "lock")
	src := kt.WriteFile(t, filepath.Join(t.TempDir(), "a"), c.AdminConf(), 0o600)
	st := newStore(t)
	st.LockTimeout = 300 * time.Millisecond
	// kubectl config set-context holds the kubeconfig by creating FILE.lock.
	kt.WriteFile(t, st.Path+".lock", nil, 0o600)
	_, err := importFile(t, st, src, "lock", nil)
	if KindOf(err) != KindIO || !strings.Contains(err.Error(), st.Path+".lock") {
		t.Fatalf("want a lock error naming %s.lock, got %v", st.Path, err)
	}
	if _, statErr := os.Stat(st.Path); !errors.Is(statErr, os.ErrNotExist) {
		t.Fatal("wrote while kubectl's lock was held")
	}
	// When kubectl lets go, the import goes through, and our own lock files
	// do not block kubectl afterwards.
	if err := os.Remove(st.Path + ".lock"); err != nil {
		t.Fatal(err)
	}
	if _, err := importFile(t, st, src, "lock", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(st.Path + ".lock"); !errors.Is(err, os.ErrNotExist) {
		t.Error("config.lock left behind: kubectl config would fail")
	}
	if _, err := os.Stat(st.Path + lockSuffix); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("%s left behind", st.Path+lockSuffix)
	}
}

func TestLockWaitEndsWithContext(t *testing.T) {
	st := newStore(t)
	if err := os.MkdirAll(filepath.Dir(st.Path), 0o700); err != nil {
		t.Fatal(err)
	}
	release, err := st.lock(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	st2 := *st
	_, err = st2.Update(ctx, func(*api.Config) (bool, error) { t.Error("mutate ran without the lock"); return false, nil })
	if KindOf(err) != KindIO || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("want a deadline error, got %v", err)
	}
}

func assertMode(t testing.TB, path string, want os.FileMode) {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := fi.Mode().Perm(); got != want {
		t.Errorf("%s: mode %04o, want %04o", path, got, want)
	}
}

// assertNoSecrets fails when s contains any secret in any of the forms it
// could leak in: raw, base64, a PEM body line, or Go's %v of a byte slice.
func assertNoSecrets(t testing.TB, s string, secrets ...[]byte) {
	t.Helper()
	for _, sec := range secrets {
		forms := []string{string(sec), base64.StdEncoding.EncodeToString(sec)}
		for _, line := range strings.Split(string(sec), "\n") {
			if len(line) >= 20 && !strings.HasPrefix(line, "-----") {
				forms = append(forms, line)
			}
		}
		if len(sec) >= 16 {
			// client-go's own errors print []byte fields with %v.
			forms = append(forms, strings.Trim(fmt.Sprint(sec[:16]), "[]"))
		}
		for _, f := range forms {
			if f != "" && strings.Contains(s, f) {
				t.Fatalf("output contains secret material (%d bytes matched):\n%s", len(f), s)
			}
		}
	}
}

// TestServerOverride: the guide sets the cluster's server to the
// control-plane endpoint's name; --server does that, and --verify checks the
// certificate against the new address.
func TestServerOverride(t *testing.T) {
	c := kt.StartFakeCluster(t, "o")
	src := kt.WriteFile(t, filepath.Join(t.TempDir(), "a.conf"), kt.AdminConf("https://192.0.2.1:6443", c.CA.CertPEM, c.Admin.Cert, c.Admin.Key), 0o600)
	st := newStore(t)
	res, err := importFile(t, st, src, "o", func(o *ImportOptions) { o.Server = c.URL(); o.Verify = true })
	if err != nil {
		t.Fatal(err)
	}
	if res.Verified == nil || res.Verified.ServerVersion != c.Version() {
		t.Fatalf("verified %+v", res.Verified)
	}
	if got := contextConfig(t, []string{st.Path}, "o").Host; got != c.URL() {
		t.Errorf("server %s, want %s", got, c.URL())
	}
	_, err = importFile(t, st, src, "p", func(o *ImportOptions) { o.Server = "http://192.0.2.1:8080" })
	if KindOf(err) != KindUsage || !strings.Contains(err.Error(), "--server") {
		t.Errorf("http --server: %v", err)
	}
}
