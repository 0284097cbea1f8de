package kubeclient

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

// kubectl's connection flags, as kubectl (k8s.io/cli-runtime v0.37)
// declares them: name, shorthand, type, default.
const kubectlFlags = `as||string|""
as-group||stringArray|"[]"
as-uid||string|""
as-user-extra||stringArray|"[]"
cache-dir||string|"CACHE"
certificate-authority||string|""
client-certificate||string|""
client-key||string|""
cluster||string|""
context||string|""
disable-compression||bool|"false"
insecure-skip-tls-verify||bool|"false"
kubeconfig||string|""
namespace|n|string|""
proxy-url||string|""
request-timeout||string|"0"
server|s|string|""
tls-server-name||string|""
token||string|""
user||string|""
`

func TestConfigFlagsAreKubectls(t *testing.T) {
	t.Setenv("KUBECACHEDIR", "")
	fs := pflag.NewFlagSet("x", pflag.ContinueOnError)
	NewConfigFlags().AddFlags(fs)
	var b strings.Builder
	fs.VisitAll(func(f *pflag.Flag) {
		def := f.DefValue
		if f.Name == "cache-dir" {
			if home, _ := os.UserHomeDir(); def == filepath.Join(home, ".kube", "cache") {
				def = "CACHE"
			}
		}
		fmt.Fprintf(&b, "%s|%s|%s|%q\n", f.Name, f.Shorthand, f.Value.Type(), def)
		if f.Usage == "" {
			t.Errorf("--%s has no help", f.Name)
		}
	})
	if b.String() != kubectlFlags {
		t.Errorf("flags:\n%s\nwant kubectl's:\n%s", b.String(), kubectlFlags)
	}
	t.Setenv("KUBECACHEDIR", "/var/cache/kube")
	if got := *NewConfigFlags().CacheDir; got != "/var/cache/kube" {
		t.Errorf("cache-dir default %q, want $KUBECACHEDIR", got)
	}
}

// Each flag overrides its part of the kubeconfig, as kubectl's do.
func TestConfigFlagsOverride(t *testing.T) {
	dir := t.TempDir()
	kc := filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(kc, []byte(`apiVersion: v1
kind: Config
clusters:
- {name: c, cluster: {server: "https://192.0.2.10:6443"}}
- {name: d, cluster: {server: "https://192.0.2.11:6443"}}
users:
- {name: u, user: {token: tu}}
- {name: v, user: {token: tv}}
contexts:
- {name: cx, context: {cluster: c, user: u, namespace: nsx}}
- {name: cy, context: {cluster: d, user: v}}
current-context: cx
`), 0o600); err != nil {
		t.Fatal(err)
	}
	parse := func(args ...string) *ConfigFlags {
		t.Helper()
		f := NewConfigFlags()
		fs := pflag.NewFlagSet("x", pflag.ContinueOnError)
		f.AddFlags(fs)
		if err := fs.Parse(append([]string{"--kubeconfig", kc}, args...)); err != nil {
			t.Fatal(err)
		}
		return f
	}
	ns := func(f *ConfigFlags) string {
		n, _, err := f.ToRawKubeConfigLoader().Namespace()
		if err != nil {
			t.Fatal(err)
		}
		return n
	}

	f := parse()
	c, err := f.ToRESTConfig()
	if err != nil || c.Host != "https://192.0.2.10:6443" || c.BearerToken != "tu" || ns(f) != "nsx" {
		t.Fatalf("the current context: %+v, %v, namespace %s", c, err, ns(f))
	}
	f = parse("--context", "cy")
	if c, err = f.ToRESTConfig(); err != nil || c.Host != "https://192.0.2.11:6443" || c.BearerToken != "tv" || ns(f) != "default" {
		t.Errorf("--context cy: %+v, %v, namespace %s", c, err, ns(f))
	}
	f = parse("--cluster", "d", "--user", "v", "-n", "foo", "--request-timeout", "7s")
	if c, err = f.ToRESTConfig(); err != nil || c.Host != "https://192.0.2.11:6443" || c.BearerToken != "tv" || ns(f) != "foo" || c.Timeout.String() != "7s" {
		t.Errorf("--cluster --user -n --request-timeout: %+v, %v", c, err)
	}
	f = parse("-s", "https://192.0.2.99:443", "--token", "zz", "--as", "me", "--as-group", "g1", "--as-group", "g2", "--as-uid", "u1",
		"--as-user-extra", "a=b", "--as-user-extra", "a=c", "--as-user-extra", "no-equals",
		"--insecure-skip-tls-verify", "--tls-server-name", "tn", "--disable-compression", "--proxy-url", "http://127.0.0.1:3128")
	c, err = f.ToRESTConfig()
	if err != nil {
		t.Fatal(err)
	}
	imp := c.Impersonate
	if c.Host != "https://192.0.2.99:443" || c.BearerToken != "zz" || imp.UserName != "me" || imp.UID != "u1" ||
		strings.Join(imp.Groups, ",") != "g1,g2" || len(imp.Extra) != 1 || strings.Join(imp.Extra["a"], ",") != "b,c" ||
		!c.Insecure || c.ServerName != "tn" || !c.DisableCompression || c.Proxy == nil {
		t.Errorf("the other flags: %+v", c)
	}
	f = parse("--certificate-authority", filepath.Join(dir, "ca"), "--client-certificate", filepath.Join(dir, "cc"), "--client-key", filepath.Join(dir, "ck"))
	if _, err = f.ToRESTConfig(); err == nil || !strings.Contains(err.Error(), filepath.Join(dir, "ca")) || !strings.Contains(err.Error(), filepath.Join(dir, "cc")) {
		t.Errorf("missing certificate files: %v, want them named", err)
	}
	if _, err = parse("--context", "nope").ToRESTConfig(); err == nil || !strings.Contains(err.Error(), `context "nope" does not exist`) {
		t.Errorf("an unknown context: %v", err)
	}
}
