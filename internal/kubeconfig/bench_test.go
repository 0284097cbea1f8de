package kubeconfig

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"k8s.io/client-go/tools/clientcmd"
	api "k8s.io/client-go/tools/clientcmd/api"

	kt "github.com/hybridctl/hybridctl/internal/kubeconfig/kubeconfigtest"
)

// BenchmarkImportInto1000Contexts measures one import (lock, read, parse,
// merge, encode, backup, write, fsyncs, rename) into a kubeconfig that
// already holds 1,000 contexts with embedded certificates. Each iteration
// replaces the same entries, alternating between two sources, so the file
// size stays constant.
func BenchmarkImportInto1000Contexts(b *testing.B) {
	ca := kt.NewCA(b, "kubernetes")
	cert, key := ca.Issue(b, "kubernetes-admin", []string{"kubeadm:cluster-admins"})
	cfg := api.NewConfig()
	for i := range 1000 {
		n := fmt.Sprintf("cluster-%04d", i)
		cfg.Clusters[n] = &api.Cluster{Server: fmt.Sprintf("https://10.0.%d.%d:6443", i/250, i%250+1), CertificateAuthorityData: ca.CertPEM}
		cfg.AuthInfos[n+"-admin"] = &api.AuthInfo{ClientCertificateData: cert, ClientKeyData: key}
		cfg.Contexts[n] = &api.Context{Cluster: n, AuthInfo: n + "-admin"}
	}
	data, err := clientcmd.Write(*cfg)
	if err != nil {
		b.Fatal(err)
	}
	dir := b.TempDir()
	st := &Store{Path: kt.WriteFile(b, filepath.Join(dir, "config"), data, 0o600)}
	srcs := make([]string, 2)
	for i := range srcs {
		c := kt.NewCA(b, "kubernetes")
		cc, ck := c.Issue(b, "kubernetes-admin", nil)
		srcs[i] = kt.WriteFile(b, filepath.Join(dir, fmt.Sprintf("src-%d.conf", i)), kt.AdminConf(fmt.Sprintf("https://192.0.2.%d:6443", i+1), c.CertPEM, cc, ck), 0o600)
	}
	b.SetBytes(int64(len(data)))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := Import(context.Background(), st, ImportOptions{Source: srcs[i%2], Name: "bench", Overwrite: true}); err != nil {
			b.Fatal(err)
		}
	}
}
