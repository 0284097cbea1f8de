package hosts

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
)

// packageOf names the Debian package of each program the lab runs.
var packageOf = map[string]string{
	"debootstrap":    "debootstrap",
	"systemd-nspawn": "systemd-container",
	"dnsmasq":        "dnsmasq-base",
	"nsenter":        "util-linux",
	"ip":             "iproute2",
}

// Requirements lists what the lab needs on this machine and is missing:
// root, Linux, and the programs above. Empty when the lab can run.
func Requirements() []string {
	var missing []string
	if runtime.GOOS != "linux" {
		return []string{"Linux (this is " + runtime.GOOS + ")"}
	}
	if os.Geteuid() != 0 {
		missing = append(missing, "root (the lab makes bridges, cgroups and containers)")
	}
	for _, p := range []string{"systemd-nspawn", "debootstrap", "dnsmasq", "nsenter", "ip"} {
		if _, err := lookPath(p); err != nil {
			missing = append(missing, err.Error())
		}
	}
	return missing
}

// lookPath finds a program, also in the sbin directories root has.
func lookPath(name string) (string, error) {
	if p, err := exec.LookPath(name); err == nil {
		return p, nil
	}
	for _, d := range []string{"/usr/sbin", "/sbin", "/usr/bin", "/bin"} {
		p := d + "/" + name
		if st, err := os.Stat(p); err == nil && st.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", fmt.Errorf("%s (apt-get install %s; hack/install-deps.sh installs it)", name, packageOf[name])
}

// run runs a program and returns its combined output.
func run(ctx context.Context, name string, args ...string) ([]byte, error) {
	p, err := lookPath(name)
	if err != nil {
		return nil, fmt.Errorf("%s not found: %w", name, err)
	}
	cmd := exec.CommandContext(ctx, p, args...)
	cmd.Env = append(os.Environ(), "LC_ALL=C")
	out, err := cmd.CombinedOutput()
	if err != nil {
		return out, fmt.Errorf("%s %s: %w: %s", name, strings.Join(args, " "), err, strings.TrimSpace(tail(out, 5)))
	}
	return out, nil
}

// tail returns the last n lines of out.
func tail(out []byte, n int) string {
	lines := strings.Split(strings.TrimRight(string(out), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
