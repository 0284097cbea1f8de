package diagnose

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hybridctl/hybridctl/internal/hostfacts"
	"github.com/hybridctl/hybridctl/internal/hostfacts/hostfactstest"
)

func TestRedact(t *testing.T) {
	secrets := []string{
		"abcdef.0123456789abcdef",
		"eyJhbGciOiJSUzI1NiIsImtpZCI6IjEifQ.eyJzdWIiOiJzeXN0ZW06c2EifQ.c2lnbmF0dXJl",
		"MIIEowIBAAKCAQEA7secretkeymaterial",
		"hunter2hunter2",
		"c2VjcmV0LWNsaWVudC1rZXk=",
		"regpass-123",
	}
	in := `kubelet: bootstrap token abcdef.0123456789abcdef used
Authorization: Bearer eyJhbGciOiJSUzI1NiIsImtpZCI6IjEifQ.eyJzdWIiOiJzeXN0ZW06c2EifQ.c2lnbmF0dXJl
-----BEGIN RSA PRIVATE KEY-----
MIIEowIBAAKCAQEA7secretkeymaterial
-----END RSA PRIVATE KEY-----
password=hunter2hunter2 user=admin
    client-key-data: c2VjcmV0LWNsaWVudC1rZXk=
{"auth": {"username": "mirror", "password": "regpass-123"}}
172.21.41.0/26 via 172.21.41.1 dev vxlan.calico onlink
`
	out := string(Redact([]byte(in)))
	for _, s := range secrets {
		if strings.Contains(out, s) {
			t.Errorf("%q survived redaction:\n%s", s, out)
		}
	}
	// What diagnosis needs stays: addresses, names, the user.
	for _, keep := range []string{"172.21.41.0/26 via 172.21.41.1 dev vxlan.calico onlink", "user=admin", `"username": "mirror"`} {
		if !strings.Contains(out, keep) {
			t.Errorf("redaction removed %q:\n%s", keep, out)
		}
	}
}

func TestCollect(t *testing.T) {
	f := parseLinuxT(t, "k8s-lab-node-1", hostfactstest.Fixture(t, hostfactstest.NodeLinux))
	f.Raw = append(f.Raw, hostfacts.RawFile{Name: "kubelet-log.txt", Data: []byte("x token=abcdef.0123456789abcdef\n")},
		hostfacts.RawFile{Name: "../escape.txt", Data: []byte("no")})
	r := &Result{Nodes: []NodeResult{{Name: "k8s-lab-node-1", Facts: f}, {Name: "k8s-lab-node-2", Error: "connection refused"}}}
	dir := filepath.Join(t.TempDir(), "support")
	err := Collect(context.Background(), dir, r)
	if err == nil || !strings.Contains(err.Error(), "leaves the node's directory") {
		t.Fatalf("a raw name with .. must be refused, got %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "escape.txt")); err == nil {
		t.Fatal("escape.txt written outside the node's directory")
	}
	f.Raw = f.Raw[:len(f.Raw)-1]
	if err := Collect(context.Background(), dir, r); err != nil {
		t.Fatal(err)
	}
	var files []string
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		st, _ := d.Info()
		rel, _ := filepath.Rel(dir, p)
		switch {
		case d.IsDir() && st.Mode().Perm() != 0o700:
			t.Errorf("directory %s is %o, want 0700", rel, st.Mode().Perm())
		case !d.IsDir() && st.Mode().Perm() != 0o600:
			t.Errorf("file %s is %o, want 0600", rel, st.Mode().Perm())
		case strings.Contains(d.Name(), ".tmp-"):
			t.Errorf("temporary file left: %s", rel)
		}
		if !d.IsDir() {
			files = append(files, rel)
			b, _ := os.ReadFile(p)
			if strings.Contains(string(b), "0123456789abcdef") || strings.Contains(string(b), "s3cr3t-registry-password") {
				t.Errorf("%s holds a secret", rel)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Join(files, " ")
	for _, w := range []string{"findings.json", "k8s-lab-node-1/routes.txt", "k8s-lab-node-1/fdb-vxlan.calico.txt", "k8s-lab-node-1/cni/10-calico.conflist.txt", "k8s-lab-node-1/crictl-info-status.json"} {
		if !strings.Contains(got, w) {
			t.Errorf("collect wrote %s; missing %s", got, w)
		}
	}
	if strings.Contains(got, "k8s-lab-node-2") {
		t.Errorf("a node not reached has files: %s", got)
	}
	// An existing directory keeps its mode: --collect /tmp must not close /tmp.
	shared := t.TempDir()
	if err := os.Chmod(shared, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := Collect(context.Background(), shared, r); err != nil {
		t.Fatal(err)
	}
	if st, _ := os.Stat(shared); st.Mode().Perm() != 0o755 {
		t.Errorf("existing directory changed to %o", st.Mode().Perm())
	}
}
