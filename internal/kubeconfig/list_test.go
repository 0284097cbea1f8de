package kubeconfig

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/clientcmd"
	api "k8s.io/client-go/tools/clientcmd/api"

	kt "github.com/hybridctl/hybridctl/internal/kubeconfig/kubeconfigtest"
)

func TestListAndRemove(t *testing.T) {
	dir := t.TempDir()
	prod, lab := kt.StartFakeCluster(t, "prod"), kt.StartFakeCluster(t, "lab")
	st := newStore(t)
	at := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	st.Now = func() time.Time { return at }
	kt.WriteFile(t, st.Path, prod.AdminConf(), 0o600)
	labConf := kt.WriteFile(t, filepath.Join(dir, "lab.conf"), lab.AdminConf(), 0o600)
	if _, err := importFile(t, st, labConf, "lab", nil); err != nil {
		t.Fatal(err)
	}
	// A second context that shares the lab cluster and user.
	if _, err := st.Update(context.Background(), func(cfg *api.Config) (bool, error) {
		c := *cfg.Contexts["lab"]
		c.Namespace = "kube-system"
		c.Extensions = nil
		cfg.Contexts["lab-system"] = &c
		return true, nil
	}); err != nil {
		t.Fatal(err)
	}

	res, err := List(context.Background(), st)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Contexts) != 3 {
		t.Fatalf("contexts: %+v", res.Contexts)
	}
	byName := map[string]ContextInfo{}
	for _, c := range res.Contexts {
		byName[c.Name] = c
	}
	if c := byName["kubernetes-admin@kubernetes"]; !c.Current || c.Server != prod.URL() || c.Imported != nil {
		t.Errorf("kubeadm context: %+v", c)
	}
	c := byName["lab"]
	if c.Current || c.Server != lab.URL() || c.User != "lab-admin" || c.Imported == nil {
		t.Fatalf("lab: %+v", c)
	}
	if !c.Imported.ImportedAt.Equal(at) || c.Imported.Source != labConf || c.Imported.SourceContext != "kubernetes-admin@kubernetes" || len(c.Imported.SourceSHA256) != 64 {
		t.Errorf("lab marker: %+v", c.Imported)
	}

	// Removing lab keeps the cluster and user that lab-system still uses.
	rr, err := Remove(context.Background(), st, "lab")
	if err != nil {
		t.Fatal(err)
	}
	if len(rr.Removed) != 1 || len(rr.Kept) != 2 || rr.Backup == "" {
		t.Errorf("remove lab: %+v", rr)
	}
	// Removing lab-system now takes the cluster and user with it.
	rr, err = Remove(context.Background(), st, "lab-system")
	if err != nil {
		t.Fatal(err)
	}
	if len(rr.Removed) != 3 || len(rr.Kept) != 0 {
		t.Errorf("remove lab-system: %+v", rr)
	}
	cfg, err := clientcmd.LoadFromFile(st.Path)
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Contexts) != 1 || cfg.Clusters["lab"] != nil || cfg.AuthInfos["lab-admin"] != nil || cfg.Clusters["kubernetes"] == nil {
		t.Errorf("after removes: contexts %v clusters %v users %v", sortedKeys(cfg.Contexts), sortedKeys(cfg.Clusters), sortedKeys(cfg.AuthInfos))
	}
	assertMode(t, st.Path, 0o600)

	// The current context can be removed; nothing is current afterwards.
	rr, err = Remove(context.Background(), st, "kubernetes-admin@kubernetes")
	if err != nil || !rr.ClearedCurrent {
		t.Fatalf("remove current: %+v %v", rr, err)
	}
	before := mustRead(t, st.Path)
	if _, err := Remove(context.Background(), st, "nope"); KindOf(err) != KindUsage {
		t.Errorf("remove of an unknown context: %v", err)
	}
	if string(mustRead(t, st.Path)) != string(before) {
		t.Error("a failed remove changed the file")
	}
}

func TestFindShadows(t *testing.T) {
	dir := t.TempDir()
	a, b := kt.StartFakeCluster(t, "a"), kt.StartFakeCluster(t, "b")
	fa := kt.WriteFile(t, filepath.Join(dir, "a"), a.AdminConf(), 0o600)
	fb := kt.WriteFile(t, filepath.Join(dir, "b"), b.AdminConf(), 0o600)
	fa2 := kt.WriteFile(t, filepath.Join(dir, "a2"), a.AdminConf(), 0o600)
	sh, err := FindShadows(context.Background(), []string{fa, fb, filepath.Join(dir, "missing")})
	if err != nil {
		t.Fatal(err)
	}
	// cluster kubernetes and user kubernetes-admin differ; the context
	// (same names inside) does not, which is exactly why the trap is silent.
	if len(sh) != 2 || sh[0].Kind != "cluster" || sh[0].Winner != fa || sh[0].Shadowed != fb || sh[1].Kind != "user" {
		t.Errorf("shadows: %+v", sh)
	}
	if sh, err := FindShadows(context.Background(), []string{fa, fa2}); err != nil || len(sh) != 0 {
		t.Errorf("identical files: %+v %v", sh, err)
	}
	if err := os.WriteFile(fb, []byte("clusters: 1"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := FindShadows(context.Background(), []string{fa, fb}); KindOf(err) != KindInvalid {
		t.Errorf("invalid file: %v", err)
	}
}

// TestMarkerSurvivesClientGoRewrite: kubectl config rewrites the file through
// clientcmd's Load and Write; the marker must survive that round trip.
func TestMarkerSurvivesClientGoRewrite(t *testing.T) {
	c := kt.StartFakeCluster(t, "m")
	st := newStore(t)
	if _, err := importFile(t, st, kt.WriteFile(t, filepath.Join(t.TempDir(), "a"), c.AdminConf(), 0o600), "m", nil); err != nil {
		t.Fatal(err)
	}
	raw := mustRead(t, st.Path)
	if !bytes.Contains(raw, []byte("name: "+ExtensionName)) || !bytes.Contains(raw, []byte("importedAt:")) {
		t.Fatalf("marker not in the file as a named extension:\n%s", raw)
	}
	cfg, err := clientcmd.Load(raw)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Contexts["m"].Namespace = "changed-by-kubectl"
	again, err := clientcmd.Write(*cfg)
	if err != nil {
		t.Fatal(err)
	}
	cfg2, err := clientcmd.Load(again)
	if err != nil {
		t.Fatal(err)
	}
	for _, exts := range []map[string]runtime.Object{cfg2.Contexts["m"].Extensions, cfg2.Clusters["m"].Extensions, cfg2.AuthInfos["m-admin"].Extensions} {
		if m, ok := MarkerOf(exts); !ok || m.SourceContext != "kubernetes-admin@kubernetes" {
			t.Errorf("marker lost in a client-go rewrite: %+v", m)
		}
	}
}
