package kubeconfig

import (
	"bytes"
	"testing"

	api "k8s.io/client-go/tools/clientcmd/api"

	kt "github.com/hybridctl/hybridctl/internal/kubeconfig/kubeconfigtest"
)

// TestContentIdentity: what counts as "the same entry". The realistic case
// is a cluster rebuilt with kubeadm reset + init on the same host: same
// server URL, new CA, new admin certificate. It must be a conflict.
func TestContentIdentity(t *testing.T) {
	ca1, ca2 := kt.NewCA(t, "kubernetes"), kt.NewCA(t, "kubernetes")
	cert1, key1 := ca1.Issue(t, "kubernetes-admin", nil)
	cert2, key2 := ca1.Issue(t, "kubernetes-admin", nil)
	const server = "https://10.0.0.1:6443"
	base := func() (*api.Cluster, *api.AuthInfo) {
		return &api.Cluster{Server: server, CertificateAuthorityData: ca1.CertPEM},
			&api.AuthInfo{ClientCertificateData: cert1, ClientKeyData: key1}
	}
	tests := []struct {
		name             string
		edit             func(*api.Cluster, *api.AuthInfo)
		wantCluster      Action
		wantUser         Action
		wantConflictSome bool
	}{
		{"identical", func(*api.Cluster, *api.AuthInfo) {}, Unchanged, Unchanged, false},
		{"same CA, PEM with CRLF and extra newlines", func(c *api.Cluster, _ *api.AuthInfo) {
			c.CertificateAuthorityData = append(bytes.ReplaceAll(ca1.CertPEM, []byte("\n"), []byte("\r\n")), '\n', '\n')
		}, Unchanged, Unchanged, false},
		{"server with a trailing slash", func(c *api.Cluster, _ *api.AuthInfo) { c.Server = "https://10.0.0.1:6443/" }, Unchanged, Unchanged, false},
		{"cluster rebuilt: same server, new CA", func(c *api.Cluster, _ *api.AuthInfo) { c.CertificateAuthorityData = ca2.CertPEM }, Replaced, Unchanged, true},
		{"same CA, other server", func(c *api.Cluster, _ *api.AuthInfo) { c.Server = "https://10.0.0.2:6443" }, Replaced, Unchanged, true},
		{"insecure-skip-tls-verify added", func(c *api.Cluster, _ *api.AuthInfo) { c.InsecureSkipTLSVerify = true }, Replaced, Unchanged, true},
		{"new client certificate", func(_ *api.Cluster, u *api.AuthInfo) { u.ClientCertificateData, u.ClientKeyData = cert2, key2 }, Unchanged, Replaced, true},
		{"token instead of certificate", func(_ *api.Cluster, u *api.AuthInfo) { *u = api.AuthInfo{Token: "abc.def"} }, Unchanged, Replaced, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := api.NewConfig()
			oc, ou := base()
			cfg.Clusters["lab"], cfg.AuthInfos["lab-admin"] = oc, ou
			cfg.Contexts["lab"] = &api.Context{Cluster: "lab", AuthInfo: "lab-admin"}
			nc, nu := base()
			tc.edit(nc, nu)
			nctx := &api.Context{Cluster: "lab", AuthInfo: "lab-admin"}

			_, err := mergeImport(cfg, "lab", nc, nu, nctx, false, &ImportResult{})
			if (KindOf(err) == KindConflict) != tc.wantConflictSome || (err != nil && KindOf(err) != KindConflict) {
				t.Fatalf("without --overwrite: %v", err)
			}
			res := &ImportResult{}
			changed, err := mergeImport(cfg, "lab", nc, nu, nctx, true, res)
			if err != nil {
				t.Fatal(err)
			}
			if res.Entries[0].Action != tc.wantCluster || res.Entries[1].Action != tc.wantUser {
				t.Errorf("cluster %s, user %s; want %s, %s", res.Entries[0].Action, res.Entries[1].Action, tc.wantCluster, tc.wantUser)
			}
			if changed != tc.wantConflictSome {
				t.Errorf("changed=%v", changed)
			}
		})
	}
}
