// What an image reference says: whether it names a Windows image, and which
// Windows build its tag names; containerd's build compatibility rule.

package checks

import (
	"regexp"
	"strconv"
	"strings"

	"github.com/hybridctl/hybridctl/internal/snapshot"
)

// windowsImage returns the first image of a pod template that is a
// Windows image by its name, or "".
func windowsImage(spec *snapshot.PodSpec) string {
	for _, c := range spec.AllContainers() {
		if IsWindowsImage(c.Image) {
			return c.Image
		}
	}
	return ""
}

// IsWindowsImage reports whether an image reference names a Windows image:
// a Windows base image (servercore, nanoserver, server, IIS, .NET
// Framework), a repository named for Windows (calico/node-windows,
// windows-exporter, sigwindowstools/...), or a tag naming a Windows
// release (ltsc2022, nanoserver-1809, windowsservercore). Multi-arch images
// that also hold a Windows variant are not recognised: by name they are
// Linux images too.
func IsWindowsImage(image string) bool {
	ref := strings.ToLower(image)
	if i := strings.Index(ref, "@"); i >= 0 {
		ref = ref[:i]
	}
	repo, tag := ref, ""
	if i := strings.LastIndex(ref, ":"); i >= 0 && !strings.Contains(ref[i:], "/") {
		repo, tag = ref[:i], ref[i+1:]
	}
	segs := strings.Split(repo, "/")
	last := segs[len(segs)-1]
	switch {
	case strings.Contains(repo, "mcr.microsoft.com/windows"), strings.Contains(repo, "/dotnet/framework/"),
		last == "windowsservercore", last == "nanoserver", last == "iis", last == "servercore",
		strings.Contains(last, "windows"), segs[0] == "sigwindowstools" || len(segs) > 1 && segs[len(segs)-2] == "sigwindowstools":
		return true
	}
	for _, tok := range strings.FieldsFunc(tag, func(r rune) bool { return r == '-' || r == '_' || r == '.' }) {
		switch tok {
		case "windowsservercore", "nanoserver", "servercore", "windows", "ltsc2016", "ltsc2019", "ltsc2022", "ltsc2025":
			return true
		}
	}
	return false
}

func firstImage(spec *snapshot.PodSpec) string {
	for _, c := range spec.AllContainers() {
		if c.Image != "" {
			return c.Image
		}
	}
	return "(no image)"
}

// Windows builds by name.
var windowsBuilds = []struct {
	build int
	names []string
	label string
}{
	{14393, []string{"ltsc2016", "1607"}, "Windows Server 2016 / ltsc2016"},
	{16299, []string{"1709"}, "Windows Server 1709"},
	{17134, []string{"1803"}, "Windows Server 1803"},
	{17763, []string{"ltsc2019", "1809"}, "Windows Server 2019 / ltsc2019"},
	{18362, []string{"1903"}, "Windows Server 1903"},
	{18363, []string{"1909"}, "Windows Server 1909"},
	{19041, []string{"2004"}, "Windows Server 2004"},
	{19042, []string{"20h2"}, "Windows Server 20H2"},
	{20348, []string{"ltsc2022"}, "Windows Server 2022 / ltsc2022"},
	{26100, []string{"ltsc2025"}, "Windows Server 2025 / ltsc2025"},
}

func buildName(b string) string {
	n := buildNumber(b)
	for _, w := range windowsBuilds {
		if w.build == n {
			return w.label
		}
	}
	return "build " + b
}

// buildNumber turns "10.0.26100" (or "26100") into 26100; 0 if not a build.
func buildNumber(b string) int {
	p := strings.Split(b, ".")
	if len(p) >= 3 {
		b = p[2]
	}
	n, err := strconv.Atoi(b)
	if err != nil {
		return 0
	}
	return n
}

var tagBuild = regexp.MustCompile(`(?:^|[^0-9a-z])(ltsc2016|ltsc2019|ltsc2022|ltsc2025|1607|1709|1803|1809|1903|1909|2004|20h2|10\.0\.(\d{5}))(?:$|[^0-9a-z])`)

// ImageBuild returns the Windows build an image tag names (17763, 20348,
// 26100, or a 10.0.NNNNN build), or 0.
func ImageBuild(image string) int {
	tag := image
	if i := strings.LastIndex(image, "@"); i >= 0 {
		tag = image[:i]
	}
	i := strings.LastIndex(tag, ":")
	if i < 0 || strings.Contains(tag[i:], "/") {
		return 0
	}
	tag = strings.ToLower(tag[i+1:])
	m := tagBuild.FindStringSubmatch(tag)
	if m == nil {
		return 0
	}
	if m[2] != "" {
		n, _ := strconv.Atoi(m[2])
		return n
	}
	for _, w := range windowsBuilds {
		if contains(w.names, m[1]) {
			return w.build
		}
	}
	return 0
}

// BuildCompatible is containerd's rule for process isolation: the image's
// build equals the host's, or, from build 20348 on, an older image of
// build 20348 or later on a newer host.
func BuildCompatible(image, host int) bool {
	if image == host {
		return true
	}
	return image >= 20348 && host >= 20348 && image < host
}
