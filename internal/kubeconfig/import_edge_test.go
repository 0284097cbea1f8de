package kubeconfig

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"path/filepath"
	"reflect"
	"testing"

	api "k8s.io/client-go/tools/clientcmd/api"

	kt "github.com/hybridctl/hybridctl/internal/kubeconfig/kubeconfigtest"
)

// TestImportConflictMessageExact: a context of the same name that differs
// only in its namespace is a conflict, named with both descriptions in a
// message that says what was refused, from where and into what; with
// --overwrite it is replaced, and the cluster and user already in the file
// under kubeadm's names are reported as the same.
func TestImportConflictMessageExact(t *testing.T) {
	c := kt.StartFakeCluster(t, "x")
	src := kt.WriteFile(t, filepath.Join(t.TempDir(), "admin.conf"), c.AdminConf(), 0o600)
	st := newStore(t)
	if _, err := importFile(t, st, src, "lab", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Update(context.Background(), func(cfg *api.Config) (bool, error) {
		cfg.Contexts["lab"].Namespace = "team"
		cfg.Clusters["kubernetes"] = cfg.Clusters["lab"].DeepCopy()
		cfg.AuthInfos["kubernetes-admin"] = cfg.AuthInfos["lab-admin"].DeepCopy()
		cfg.AuthInfos["other"] = &api.AuthInfo{Token: "t"}
		return true, nil
	}); err != nil {
		t.Fatal(err)
	}
	before := mustRead(t, st.Path)
	_, err := importFile(t, st, src, "lab", nil)
	want := `refusing to import ` + src + ` as "lab" into ` + st.Path + `: these names are already used for something else:
  context "lab"
    in the file: cluster "lab", user "lab-admin", namespace "team"
    importing:   cluster "lab", user "lab-admin"
Nothing was written. Pick another --name, or pass --overwrite to replace them (the old file is kept as a backup)`
	if KindOf(err) != KindConflict || err.Error() != want {
		t.Fatalf("got %v\nwant %s", err, want)
	}
	if string(mustRead(t, st.Path)) != string(before) {
		t.Fatal("a refused import changed the file")
	}
	res, err := importFile(t, st, src, "lab", func(o *ImportOptions) { o.Overwrite = true })
	if err != nil {
		t.Fatal(err)
	}
	if got := []Action{res.Entries[0].Action, res.Entries[1].Action, res.Entries[2].Action}; !reflect.DeepEqual(got, []Action{Unchanged, Unchanged, Replaced}) {
		t.Errorf("actions %v", got)
	}
	if !reflect.DeepEqual(res.Entries[0].SameAs, []string{"kubernetes"}) || !reflect.DeepEqual(res.Entries[1].SameAs, []string{"kubernetes-admin"}) || res.Entries[2].SameAs != nil {
		t.Errorf("sameAs: %v, %v, %v", res.Entries[0].SameAs, res.Entries[1].SameAs, res.Entries[2].SameAs)
	}
}

// TestImportSourceSizeLimit: a source file of exactly 16 MiB (a valid
// kubeconfig after a long comment) is read whole, its hash taken over
// every byte; one byte more is refused with the size.
func TestImportSourceSizeLimit(t *testing.T) {
	ca := kt.NewCA(t, "kubernetes")
	cert, key := ca.Issue(t, "admin", nil)
	conf := kt.AdminConf("https://10.0.0.1:6443", ca.CertPEM, cert, key)
	dir := t.TempDir()
	pad := maxSourceSize - len(conf) - 2
	exact := append(append(append([]byte("#"), bytes.Repeat([]byte("x"), pad)...), '\n'), conf...)
	if len(exact) != maxSourceSize {
		t.Fatalf("fixture of %d bytes", len(exact))
	}
	src := kt.WriteFile(t, filepath.Join(dir, "exact.conf"), exact, 0o600)
	st := newStore(t)
	if _, err := importFile(t, st, src, "lab", nil); err != nil {
		t.Fatalf("exactly 16 MiB: %v", err)
	}
	cfg, err := st.Read(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	m, ok := ContextImported(cfg, "lab")
	sum := sha256.Sum256(exact)
	if !ok || m.SourceSHA256 != hex.EncodeToString(sum[:]) {
		t.Errorf("the marker's hash is not over the whole file: %+v", m)
	}
	over := kt.WriteFile(t, filepath.Join(dir, "over.conf"), append([]byte("#"), exact...), 0o600)
	_, err = importFile(t, st, over, "lab2", nil)
	if KindOf(err) != KindInvalid || err.Error() != over+": 16777217 bytes is too large for a kubeconfig" {
		t.Errorf("one byte over: %v", err)
	}
}
