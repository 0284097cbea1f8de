package safeurl

import (
	"net/url"
	"strings"
	"testing"
)

const calico = "https://raw.githubusercontent.com/projectcalico/calico/"

func TestJoin(t *testing.T) {
	for _, c := range []struct {
		elems []string
		want  string // "" when refused
		why   string
	}{
		{[]string{"v3.33.0", "manifests", "tigera-operator.yaml"}, calico + "v3.33.0/manifests/tigera-operator.yaml", ""},
		{[]string{"v3.33.0-rc.1", "manifests", "x.yaml"}, calico + "v3.33.0-rc.1/manifests/x.yaml", ""},
		{[]string{"v3.33.0-x/../../../evil/repo/main", "manifests", "tigera-operator.yaml"}, "", `holds '/'`},
		{[]string{".."}, "", "dot segment"},
		{[]string{"."}, "", "dot segment"},
		{[]string{""}, "", "empty path segment"},
		{[]string{"v3.33.0", ""}, "", "empty path segment"},
		{[]string{`v3\..\x`}, "", `holds '\\'`},
		{[]string{"v3%2e%2e"}, "", `holds '%'`},
		{[]string{"v3?x=1"}, "", `holds '?'`},
		{[]string{"v3#x"}, "", `holds '#'`},
		{[]string{"v3.33.0-x\n\n```sh"}, "", `holds '\n'`},
		{[]string{"a b"}, "", `holds ' '`},
		{[]string{"a\u0085b"}, "", `holds '\u0085'`},
	} {
		got, err := Join(calico, c.elems...)
		if c.want != "" {
			if err != nil || got != c.want {
				t.Errorf("Join(%q) = %q, %v; want %q", c.elems, got, err, c.want)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), c.why) {
			t.Errorf("Join(%q) = %q, %v; want an error saying %s", c.elems, got, err, c.why)
		}
	}
}

func TestUnder(t *testing.T) {
	for _, c := range []struct {
		prefix, u string
		why       string // "" when accepted
	}{
		{calico, calico + "v3.33.0/manifests/a.yaml", ""},
		{calico, calico, ""},
		{"https://pkgs.k8s.io/core:/stable:/", "https://pkgs.k8s.io/core:/stable:/v1.37/deb/", ""},
		{calico + "v3.33.0/manifests/", calico + "v3.33.0/manifests/a.yaml", ""},
		// a version with dot segments, once joined as text
		{calico, calico + "v3.33.0-x/../../../evil/repo/main/manifests/tigera-operator.yaml", "leaves /projectcalico/calico/"},
		// dot segments that stay under the prefix still change what is fetched
		{calico, calico + "v3.33.0-x/../v3.30.0/manifests/a.yaml", "dot segment"},
		{calico, calico + "./a.yaml", "dot segment"},
		{calico, calico + "%2e%2e/%2e%2e/evil", "percent-encoding"},
		{calico, calico + `..\..\evil`, "backslash"},
		{calico, "https://raw.githubusercontent.com/projectcalico/calicox/a", "leaves"},
		{calico, "https://raw.githubusercontent.com/projectcalico/", "leaves"},
		{calico, "http://raw.githubusercontent.com/projectcalico/calico/a", "another scheme"},
		{calico, "https://evil.example/projectcalico/calico/a", "another scheme or host"},
		{calico, "https://raw.githubusercontent.com.evil.example/projectcalico/calico/a", "another scheme or host"},
		{calico, "https://user@raw.githubusercontent.com/projectcalico/calico/a", "user"},
		{calico, calico + "a?x=1", "query"},
		{calico, calico + "a?", "query"},
		{calico, calico + "a#frag", "fragment"},
		{calico, calico + "a\n```sh", "control character"},
		{calico, calico + "a b", "white space"},
		{calico, "/projectcalico/calico/a", "another scheme"},
		{"https://x/no-slash", "https://x/no-slash/a", "does not end in /"},
		{"relative/", "relative/a", "not an absolute URL"},
	} {
		err := Under(c.prefix, c.u)
		if c.why == "" {
			if err != nil {
				t.Errorf("Under(%q, %q) = %v; want it accepted", c.prefix, c.u, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), c.why) {
			t.Errorf("Under(%q, %q) = %v; want an error saying %s", c.prefix, c.u, err, c.why)
		}
	}
}

// FuzzUnder: Under never panics, and whatever it accepts stays under the
// prefix as an HTTP client resolves it: the same scheme and host, a
// cleaned path under the prefix's path, no dot segment, query or fragment.
// Join's results are always accepted.
func FuzzUnder(f *testing.F) {
	for _, s := range []string{"v3.33.0/manifests/a.yaml", "v3.33.0-x/../../../evil/repo/main/manifests/a.yaml", "%2e%2e/x", `..\x`, "a?b", "./a", "a//b", "a/./b"} {
		f.Add(calico, s)
	}
	f.Add("https://pkgs.k8s.io/core:/stable:/", "v1.37/deb/")
	f.Fuzz(func(t *testing.T, prefix, rest string) {
		u := prefix + rest
		if err := Under(prefix, u); err == nil {
			p, _ := url.Parse(prefix)
			v, err := url.Parse(u)
			if err != nil {
				t.Fatalf("Under accepts %q, which does not parse: %v", u, err)
			}
			r := v.ResolveReference(v)
			if r.Scheme != p.Scheme || r.Host != p.Host || !strings.HasPrefix(r.EscapedPath(), p.EscapedPath()) {
				t.Fatalf("Under(%q, %q) accepts a URL that resolves to %s", prefix, u, r)
			}
			for _, seg := range strings.Split(v.EscapedPath(), "/") {
				if seg == "." || seg == ".." {
					t.Fatalf("Under(%q, %q) accepts a dot segment", prefix, u)
				}
			}
			if v.RawQuery != "" || v.Fragment != "" || v.User != nil {
				t.Fatalf("Under(%q, %q) accepts a query, fragment or user", prefix, u)
			}
		}
		if j, err := Join(prefix, strings.Split(rest, "/")...); err == nil {
			if err := Under(prefix, j); err != nil {
				t.Fatalf("Join(%q, %q) = %q, which Under refuses: %v", prefix, rest, j, err)
			}
		}
	})
}
