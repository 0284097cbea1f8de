package preflight

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hybridctl/hybridctl/internal/hostfacts"
	"github.com/hybridctl/hybridctl/internal/hostfacts/hostfactstest"
	"github.com/hybridctl/hybridctl/internal/provision/engine"
)

// hostKind is a Linux host the SSH test server plays: its os-release, what
// systemd-detect-virt -c says, the file system type of /sys/fs/cgroup and
// its CapBnd.
type hostKind struct {
	name, osRelease, container, cgroupfs, capbnd string
}

var (
	debianNspawn = hostKind{"Debian 12 nspawn", "ID=debian\nVERSION_ID=\"12\"\nPRETTY_NAME=\"Debian GNU/Linux 12 (bookworm)\"\n", "systemd-nspawn", "tmpfs", "000001fffcffffff"}
	cgroupV1VM   = hostKind{"cgroup v1 VM", "ID=ubuntu\nVERSION_ID=\"26.04\"\nPRETTY_NAME=\"Ubuntu 26.04 LTS\"\n", "none", "tmpfs", "000001ffffffffff"}
	ubuntuVM     = hostKind{"Ubuntu VM", "ID=ubuntu\nVERSION_ID=\"26.04\"\nPRETTY_NAME=\"Ubuntu 26.04 LTS\"\n", "none", "cgroup2fs", "000001ffffffffff"}
	debian13LXC  = hostKind{"Debian 13 LXC", "ID=debian\nVERSION_ID=\"13\"\nPRETTY_NAME=\"Debian GNU/Linux 13 (trixie)\"\n", "lxc", "cgroup2fs", "000001fffdffffff"}
)

// gatherAs runs the real gathering script over SSH with stand-ins that make
// this machine look like k.
func gatherAs(t *testing.T, k hostKind) *hostfacts.Host {
	t.Helper()
	c, srv := hostfactstest.Dial(t, engine.Linux)
	if err := os.WriteFile(filepath.Join(srv.Dir, "os-release"), []byte(k.osRelease), 0o644); err != nil {
		t.Fatal(err)
	}
	srv.Shim("cat", "#!/bin/sh\nif [ \"$1\" = /etc/os-release ]; then exec /bin/cat \"$SHIM_DIR/os-release\"; fi\nexec /bin/cat \"$@\"\n")
	srv.Shim("systemd-detect-virt", "#!/bin/sh\n[ \"$1\" = -c ] || exit 64\necho "+k.container+"\n[ "+k.container+" != none ]\n")
	srv.Shim("stat", "#!/bin/sh\nfor a; do last=$a; done\nif [ \"$last\" = /sys/fs/cgroup ]; then echo "+k.cgroupfs+"; exit 0; fi\nexec /usr/bin/stat \"$@\"\n")
	srv.Shim("awk", "#!/bin/sh\nfor a; do last=$a; done\nif [ \"$last\" = /proc/self/status ]; then echo "+k.capbnd+"; exit 0; fi\nexec /usr/bin/awk \"$@\"\n")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	f, err := hostfacts.GatherHost(ctx, c, linuxWorker, "localhost")
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func findingsOf(fs []Finding, check string) []string {
	var out []string
	for _, f := range fs {
		if f.Check == check {
			out = append(out, string(f.Severity)+": "+f.Message)
		}
	}
	return out
}

// TestHostKindsOverSSH: a Debian 12 nspawn container, a cgroup v1 VM, an
// Ubuntu VM and a Debian 13 LXC container, played by the SSH test server,
// each get their facts and the right preflight result.
func TestHostKindsOverSSH(t *testing.T) {
	x := labExpect
	for _, tc := range []struct {
		kind             hostKind
		allowV1          bool
		container        string
		cgroup           string
		sysRes, sysTime  bool
		cgroupFindings   []string // severity prefixes
		containerPhrases []string
	}{
		{debianNspawn, false, "systemd-nspawn", "v1", false, false, []string{"error: cgroup v1"}, []string{"systemd-nspawn container", "no CAP_SYS_RESOURCE", "no CAP_SYS_TIME"}},
		{debianNspawn, true, "systemd-nspawn", "v1", false, false, nil, []string{"systemd-nspawn container", "no CAP_SYS_RESOURCE", "no CAP_SYS_TIME"}},
		{cgroupV1VM, false, "none", "v1", true, true, []string{"error: cgroup v1"}, nil},
		{ubuntuVM, false, "none", "v2", true, true, nil, nil},
		{debian13LXC, false, "lxc", "v2", true, false, nil, []string{"lxc container", "no CAP_SYS_TIME"}},
	} {
		t.Run(tc.kind.name, func(t *testing.T) {
			f := gatherAs(t, tc.kind)
			if f.Container != tc.container || f.CgroupVersion != tc.cgroup || !f.CapsKnown || f.CapSysResource != tc.sysRes || f.CapSysTime != tc.sysTime {
				t.Fatalf("facts: container %q cgroup %q caps %v resource %v time %v", f.Container, f.CgroupVersion, f.CapsKnown, f.CapSysResource, f.CapSysTime)
			}
			x.AllowCgroupV1 = tc.allowV1
			fs := CheckHost(f, linuxWorker, x)
			got := findingsOf(fs, CheckCgroupVersion)
			if len(got) != len(tc.cgroupFindings) || (len(got) > 0 && !strings.HasPrefix(got[0], tc.cgroupFindings[0])) {
				t.Errorf("cgroup-version findings %v, want %v", got, tc.cgroupFindings)
			}
			ch := strings.Join(findingsOf(fs, CheckContainerHost), "\n")
			for _, p := range tc.containerPhrases {
				if !strings.Contains(ch, "warning: ") || !strings.Contains(ch, p) {
					t.Errorf("container-host findings lack %q:\n%s", p, ch)
				}
			}
			if len(tc.containerPhrases) == 0 && ch != "" {
				t.Errorf("a plain VM gets container-host findings:\n%s", ch)
			}
			// Debian 12 and 13 are recognised, Ubuntu 26.04 is the guide's.
			if os := findingsOf(fs, CheckOSVersion); len(os) > 0 {
				t.Errorf("os-version findings for %s: %v", tc.kind.name, os)
			}
		})
	}
}

// TestOSVersionNearMisses: Debian 11 and an unknown distribution still warn.
func TestOSVersionNearMisses(t *testing.T) {
	for _, osr := range [][2]string{{"debian", "11"}, {"debian", "14"}, {"rocky", "9"}, {"ubuntu", "24.04"}} {
		f := &hostfacts.Host{OSID: osr[0], OSVersionID: osr[1], OSPrettyName: osr[0] + " " + osr[1]}
		got := findingsOf(CheckHost(f, linuxWorker, labExpect), CheckOSVersion)
		if len(got) != 1 || !slices.ContainsFunc(got, func(s string) bool { return strings.HasPrefix(s, "warning: ") }) {
			t.Errorf("%v: %v", osr, got)
		}
	}
}
