package kubeconfig

import (
	"fmt"
	"strings"
	"testing"

	kt "github.com/hybridctl/hybridctl/internal/kubeconfig/kubeconfigtest"
	"github.com/hybridctl/hybridctl/internal/manifest"
)

// aliasBomb is an 80 KB kubeconfig that client-go's loader alone expands
// to about 400 MB of JSON: 400,000 uses of a 1,000-byte string, with
// enough plain values that yaml.v2's own ratio check lets it through.
func aliasBomb() string {
	var b strings.Builder
	b.WriteString("apiVersion: v1\nkind: Config\npad: [" + strings.TrimSuffix(strings.Repeat("1,", 40000), ",") + "]\n")
	b.WriteString("l0: &l0 \"" + strings.Repeat("x", 1000) + "\"\n")
	b.WriteString("l1: &l1 [" + strings.TrimSuffix(strings.Repeat("*l0,", 100), ",") + "]\n")
	b.WriteString("l2: &l2 [" + strings.TrimSuffix(strings.Repeat("*l1,", 100), ",") + "]\n")
	b.WriteString("l3: &l3 [" + strings.TrimSuffix(strings.Repeat("*l2,", 20), ",") + "]\n")
	return b.String()
}

// TestLoadConfigAliases: a kubeconfig's aliases are measured before
// client-go expands them: a bomb is refused naming the file, the document
// and the line; aliases that add exactly the per-document limit are read.
func TestLoadConfigAliases(t *testing.T) {
	ca := kt.NewCA(t, "kubernetes")
	cert, key := ca.Issue(t, "kubernetes-admin", []string{"kubeadm:cluster-admins"})
	good := string(kt.AdminConf("https://10.0.0.1:6443", ca.CertPEM, cert, key))

	_, err := ParseSource("src/admin.conf", []byte(aliasBomb()), SourceOptions{Dir: openRoot(t, t.TempDir())})
	if err == nil || KindOf(err) != KindInvalid || !strings.HasPrefix(err.Error(), "src/admin.conf: not a valid kubeconfig: document 1, line 6: aliases expand this document by more than 1 MiB") {
		t.Fatalf("bomb: %v", err)
	}
	pad := func(grow int) string {
		return fmt.Sprintf("x-pad: &p %s\nx-use: *p\n", strings.Repeat("y", grow-3))
	}
	src, err := ParseSource("src/admin.conf", []byte(pad(manifest.MaxAliasExpansionPerDocument)+good), SourceOptions{Dir: openRoot(t, t.TempDir())})
	if err != nil || src.Cluster.Server != "https://10.0.0.1:6443" {
		t.Fatalf("aliases adding exactly the limit: %v", err)
	}
	_, err = LoadConfig("kc", []byte(pad(manifest.MaxAliasExpansionPerDocument+1)+good))
	if err == nil || !strings.HasPrefix(err.Error(), "kc: not a valid kubeconfig: document 1, line 2: aliases expand this document by more than 1 MiB") {
		t.Fatalf("one byte more: %v", err)
	}
}
