package spec

// WindowsRelease is a Windows Server release that can run Kubernetes nodes.
type WindowsRelease struct {
	// Build is the OS build as the node label
	// node.kubernetes.io/windows-build shows it.
	Build string
	// Name is the marketing name (Windows Server 2025).
	Name string
	// Year is the release year used in RuntimeClass names.
	Year string
	// ImageTag is the tag suffix of matching container images (ltsc2025).
	ImageTag string
	// CalicoListed says whether Calico for Windows' requirements page
	// lists the release as supported (CalicoWindowsRequirements).
	CalicoListed bool
}

// CalicoWindowsRequirements is Calico for Windows' requirements page: the
// Windows versions it supports.
const CalicoWindowsRequirements = "https://docs.tigera.io/calico/latest/getting-started/kubernetes/windows-calico/requirements"

// RuntimeClass is the name of the RuntimeClass hybridctl creates for the
// release: windows-2025.
func (r WindowsRelease) RuntimeClass() string { return "windows-" + r.Year }

// WindowsReleases lists the known Windows Server releases, oldest first.
func WindowsReleases() []WindowsRelease {
	return []WindowsRelease{
		{Build: "10.0.17763", Name: "Windows Server 2019", Year: "2019", ImageTag: "ltsc2019", CalicoListed: true},
		{Build: "10.0.20348", Name: "Windows Server 2022", Year: "2022", ImageTag: "ltsc2022", CalicoListed: true},
		// Calico's requirements list Windows Server 1809 (2019) and 2022;
		// 2025 only through the Kubernetes table they link to.
		{Build: "10.0.26100", Name: "Windows Server 2025", Year: "2025", ImageTag: "ltsc2025"},
	}
}

// WindowsReleaseForBuild returns the release of a build.
func WindowsReleaseForBuild(build string) (WindowsRelease, bool) {
	for _, r := range WindowsReleases() {
		if r.Build == build {
			return r, true
		}
	}
	return WindowsRelease{}, false
}
