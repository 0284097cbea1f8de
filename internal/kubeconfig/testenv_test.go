package kubeconfig

import (
	"bytes"
	"context"
	"encoding/base64"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	api "k8s.io/client-go/tools/clientcmd/api"

	kt "github.com/hybridctl/hybridctl/internal/kubeconfig/kubeconfigtest"
	"github.com/hybridctl/hybridctl/internal/testenv"
)

// One real control plane for the package, started by the first test that
// asks for it (the other tests and the helper processes never start it).
func TestMain(m *testing.M) { testenv.Main(m, testenv.Options{}) }

// TestVerifyAgainstRealAPIServer imports the test environment's admin
// kubeconfig (kubeadm's shape) next to another kubeadm cluster's entries of
// the same names: --verify passes against the real kube-apiserver, and the
// imported context then works with client-go. A CA that did not sign the
// server certificate, or a client certificate the server does not trust,
// fails --verify and writes nothing.
func TestVerifyAgainstRealAPIServer(t *testing.T) {
	env := testenv.Get(t)
	ctx := context.Background()
	// The environment's admin credentials, written the way kubeadm writes
	// admin.conf: cluster kubernetes, user kubernetes-admin, context
	// kubernetes-admin@kubernetes, the same names as the cluster the
	// workstation already has.
	envCfg, err := clientcmd.LoadFromFile(env.KubeconfigPath())
	if err != nil {
		t.Fatal(err)
	}
	envCtx := envCfg.Contexts[envCfg.CurrentContext]
	envCluster, envUser := envCfg.Clusters[envCtx.Cluster], envCfg.AuthInfos[envCtx.AuthInfo]
	admin := kt.AdminConf(envCluster.Server, envCluster.CertificateAuthorityData, envUser.ClientCertificateData, envUser.ClientKeyData)
	adminPath := kt.WriteFile(t, filepath.Join(t.TempDir(), "admin.conf"), admin, 0o600)

	st := newStore(t)
	prod := kt.StartFakeCluster(t, "prod") // the cluster ~/.kube/config already has
	kt.WriteFile(t, st.Path, prod.AdminConf(), 0o600)

	res, err := Import(ctx, st, ImportOptions{Source: adminPath, Name: "real", Verify: true, VerifyTimeout: 20 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	v := res.Verified
	if v == nil || !strings.HasPrefix(v.ServerVersion, "v1.37") || v.Username != testenv.AdminUser || !slices.Contains(v.Groups, testenv.AdminGroup) {
		t.Fatalf("verified: %+v", v)
	}
	rc, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(
		&clientcmd.ClientConfigLoadingRules{ExplicitPath: st.Path}, &clientcmd.ConfigOverrides{CurrentContext: "real"}).ClientConfig()
	if err != nil {
		t.Fatal(err)
	}
	if rc.Host != env.Host() || !bytes.Equal(rc.CAData, env.CAData()) {
		t.Fatalf("context real resolves to %s", rc.Host)
	}
	cs, err := kubernetes.NewForConfig(rc)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CoreV1().Namespaces().Get(ctx, "kube-system", metav1.GetOptions{}); err != nil {
		t.Fatalf("the imported context does not work: %v", err)
	}
	if got := contextConfig(t, []string{st.Path}, "kubernetes-admin@kubernetes").Host; got != prod.URL() {
		t.Errorf("the existing kubeadm context now resolves to %s", got)
	}

	before := mustRead(t, st.Path)
	clusterName, userName := "kubernetes", "kubernetes-admin"
	foreign := kt.NewCA(t, "kubernetes")
	badCert, badKey := foreign.Issue(t, testenv.AdminUser, []string{testenv.AdminGroup})

	for _, tc := range []struct {
		name, want string
		edit       func(*api.Config)
	}{
		{"CA that did not sign the server", "not signed by the imported CA", func(c *api.Config) {
			c.Clusters[clusterName].CertificateAuthorityData = foreign.CertPEM
		}},
		{"client certificate from another CA", "401", func(c *api.Config) {
			c.AuthInfos[userName].ClientCertificateData, c.AuthInfos[userName].ClientKeyData = badCert, badKey
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, _ := clientcmd.Load(admin)
			tc.edit(c)
			data, err := clientcmd.Write(*c)
			if err != nil {
				t.Fatal(err)
			}
			src := kt.WriteFile(t, filepath.Join(t.TempDir(), "admin.conf"), data, 0o600)
			_, err = Import(ctx, st, ImportOptions{Source: src, Name: "broken", Verify: true, VerifyTimeout: 20 * time.Second})
			if KindOf(err) != KindVerify || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("want a verify error with %q, got %v", tc.want, err)
			}
			t.Logf("verify failed as expected: %v", err)
			assertNoSecrets(t, err.Error(), badKey, []byte(base64.StdEncoding.EncodeToString(badKey)))
			if !bytes.Equal(mustRead(t, st.Path), before) {
				t.Fatal("a failed --verify changed the target")
			}
		})
	}
	if _, err := os.Stat(st.Path + ".lock"); err == nil {
		t.Error("config.lock left behind")
	}
}
