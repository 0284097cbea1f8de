package preflight

import (
	"strings"
	"testing"

	"github.com/hybridctl/hybridctl/internal/hostfacts"
)

// TestCheckContainerd: with packages from the distribution, its containerd
// must reach what the kubelet requires; both sides of the limit, Debian
// version forms, a missing package and an unreadable version.
func TestCheckContainerd(t *testing.T) {
	x := Expect{ContainerdMin: "2.0", ContainerdFor: "Kubernetes v1.37", ContainerdSpec: "2.2.2"}
	for _, c := range []struct {
		candidate string
		x         Expect
		err, warn string
	}{
		{"1.6.20~ds1-1+deb12u3", x, "the distribution's containerd is 1.6.20 (apt-cache policy containerd: 1.6.20~ds1-1+deb12u3), and Kubernetes v1.37 requires containerd 2.0 or later: set spec.packages.source: bundle (apply --bundle) to install containerd 2.2.2 from its release tarball", ""},
		{"1.7.28-0ubuntu1", x, "containerd is 1.7.28", ""},
		{"1.99.0-1", x, "containerd is 1.99.0", ""},
		{"2.0.0-1", x, "", ""},
		{"2.0.2~ds1-1ubuntu1", x, "", ""},
		{"1:2.1.4-0ubuntu1", x, "", ""},
		{"2.2.1-0ubuntu1", x, "", ""},
		{"(none)", x, "no containerd package", ""},
		{"", x, "", "could not be read"},
		// Bundle mode or an older Kubernetes: not checked.
		{"1.6.20~ds1-1+deb12u3", Expect{}, "", ""},
	} {
		f := &hostfacts.Host{Host: "lin-1", ContainerdCandidate: c.candidate}
		warns, errs := checkContainerd(Input{Host: linuxWorker, Facts: f, Expect: c.x})
		if got := join(errs); (c.err == "") != (got == "") || !strings.Contains(got, c.err) {
			t.Errorf("%q: errors %q, want %q", c.candidate, got, c.err)
		}
		if got := join(warns); (c.warn == "") != (got == "") || !strings.Contains(got, c.warn) {
			t.Errorf("%q: warnings %q, want %q", c.candidate, got, c.warn)
		}
	}
}

func join(errs []error) string {
	var s []string
	for _, e := range errs {
		s = append(s, e.Error())
	}
	return strings.Join(s, "; ")
}

func TestVersionAtLeast(t *testing.T) {
	for _, c := range []struct {
		v, min string
		ok     bool
	}{
		{"2.0", "2.0", true}, {"2.0.0", "2.0", true}, {"2.0.1", "2.0", true}, {"2.1", "2.0", true}, {"10.0", "2.0", true},
		{"1.7.24", "2.0", false}, {"1.99", "2.0", false}, {"2", "2.0", true}, {"1", "2.0", false},
		{"2.x", "2.0", false}, {"", "2.0", false}, {"v2.0", "2.0", false},
	} {
		if got := VersionAtLeast(c.v, c.min); got != c.ok {
			t.Errorf("VersionAtLeast(%q, %q) = %v, want %v", c.v, c.min, got, c.ok)
		}
	}
	if got := DebianUpstreamVersion("1:2.0.2~ds1-1ubuntu1"); got != "2.0.2" {
		t.Errorf("DebianUpstreamVersion = %q", got)
	}
}
