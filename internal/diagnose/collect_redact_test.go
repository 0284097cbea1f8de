//go:build unix

package diagnose

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hybridctl/hybridctl/internal/hostfacts"
	"github.com/hybridctl/hybridctl/internal/hostfacts/hostfactstest"
	"github.com/hybridctl/hybridctl/internal/provision/engine"
	"github.com/hybridctl/hybridctl/internal/provision/transport"
	"github.com/hybridctl/hybridctl/internal/provision/transport/sshtest"
)

// logSecrets are secrets in the spellings a kubelet log holds them (cloud
// config, credential providers, request headers, proxies, tokens).
var logSecrets = map[string]string{
	"client secret":   `E1206 kubelet.go:1] "cloud config" config={"tenantId": "t1", "clientSecret": "Zx8~Q.azure-client-secret"}`,
	"aws secret key":  `I1206 credential_provider.go:2] env aws_secret_access_key=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY`,
	"basic auth":      `I1206 round_trippers.go:3] "Request Headers" Authorization: Basic cmVnaXN0cnk6UmVnUGFzczE=`,
	"bearer":          `I1206 round_trippers.go:4] curl -k -H "Authorization: Bearer sha256~SecretBearerValue0123" https://x`,
	"aws key id":      `I1206 ecr.go:5] using AKIAIOSFODNN7EXAMPLE`,
	"bootstrap token": `I1206 bootstrap.go:6] using token abcdef.0123456789abcdef`,
	"proxy password":  `I1206 proxy.go:7] HTTPS_PROXY=http://proxyuser:Pr0xyPassw0rd@10.0.0.1:3128`,
}

// logSecretValues are the parts of logSecrets no kept file may hold.
var logSecretValues = []string{"Zx8~Q.azure-client-secret", "wJalrXUtnFEMI", "cmVnaXN0cnk6UmVnUGFzczE=", "SecretBearerValue0123",
	"AKIAIOSFODNN7EXAMPLE", "0123456789abcdef", "Pr0xyPassw0rd"}

// TestCollectRedactsNodeOutput: a node whose kubelet log holds those
// secrets is diagnosed over a real SSH server and collected; no file of
// the collection holds one, and the lines are still there, redacted.
func TestCollectRedactsNodeOutput(t *testing.T) {
	key := sshtest.NewKey(t)
	srv := sshtest.Start(t, key.Signer.PublicKey())
	hostfactstest.InstallNodeShims(t, srv.Dir)
	var log strings.Builder
	for _, l := range logSecrets {
		log.WriteString("1796172000.000001 k8s-lab-node-1 kubelet[812]: " + l + "\n")
	}
	if err := os.WriteFile(filepath.Join(srv.Dir, "rec", "kubelet-log"), []byte(log.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	kh := srv.KnownHostsFile(t)
	c, err := transport.Dial(ctxT(t), transport.Config{Host: "k8s-lab-node-1", Address: srv.Addr, User: "user", KeyFiles: []string{key.Path},
		KnownHosts: &transport.KnownHosts{Path: kh}, ConnectTimeout: 10 * time.Second, OS: engine.Linux, Sudo: true})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = c.Close() }()
	x := labExpect()
	x.API = hostfacts.API{Host: "127.0.0.1", Port: hostfactstest.APIListener(t)}
	f, err := hostfacts.GatherNode(ctxT(t), c, "k8s-lab-node-1", x.API, nil)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "support")
	if err := Collect(ctxT(t), dir, &Result{Nodes: []NodeResult{{Name: "k8s-lab-node-1", Facts: f}}}); err != nil {
		t.Fatal(err)
	}
	var all strings.Builder
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		all.Write(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range logSecretValues {
		if strings.Contains(all.String(), s) {
			t.Errorf("%q is in the collection", s)
		}
	}
	// The test must be able to fail: the log was collected, redacted.
	for _, want := range []string{`"clientSecret": "<redacted>"`, "aws_secret_access_key=<redacted>", "Authorization: Basic <redacted>", "credential_provider.go:2]"} {
		if !strings.Contains(all.String(), want) {
			t.Errorf("the collection lacks %q:\n%s", want, all.String())
		}
	}
}
